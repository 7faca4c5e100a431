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


REPO = Path(__file__).resolve().parents[2]


def _help(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_help_shows_examples_that_use_real_flags(name):
    """Two or three examples per command, each a `segtools NAME ...` line whose --flags all
    exist on the command (so the examples cannot drift from the options)."""
    import shlex

    text = _help([name, "--help"])
    assert "Examples:" in text
    examples = [line.strip() for line in text.split("Examples:", 1)[1].splitlines()
                if line.strip().startswith(f"segtools {name}")]
    assert 2 <= len(examples) <= 3, examples
    command = cli.get_command(None, name)  # type: ignore[arg-type]
    flags = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
    for example in examples:
        for token in shlex.split(example.split(" | ")[0]):
            if token.startswith("--"):
                assert token in flags, f"{example!r}: {token} is not a {name} option"


@pytest.mark.parametrize("args", [[]] + [[name] for name in sorted(SUBCOMMANDS)])
def test_help_cites_only_documents_that_ship(args):
    import re

    text = _help([*args, "--help"])
    assert "../shared" not in text and "shared/" not in text
    cited = re.findall(r"[\w./-]*\.md\b", text)
    for doc in cited:
        assert "/" in doc or doc == "README.md", \
            f"bare document name {doc!r}: say where it is (docs/...)"
        assert (REPO / doc).is_file(), f"{doc} is cited by --help but not in the repository"
