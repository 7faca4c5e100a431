"""Every command answers --help, is documented in the README, and bad usage exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import SUBCOMMANDS, cli

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_command_has_help_and_is_documented(name):
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    assert f"segtools {name}" in README


def test_unknown_command_is_a_usage_error():
    result = CliRunner().invoke(cli, ["no-such-command"])
    assert result.exit_code == 2
