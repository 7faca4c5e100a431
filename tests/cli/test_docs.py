"""The docs ship inside the package: `segtools docs` lists and shows every one of them, and a
built wheel carries them (an incident host may have segtools but not the repository)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from click.testing import CliRunner

from segtools.cli.docs import GUIDE
from segtools.cli.main import cli

REPO = Path(__file__).resolve().parents[2]


def test_every_doc_is_listed_and_shown_verbatim():
    on_disk = {p.stem for p in (REPO / "docs").glob("*.md")}
    assert {name for name, _ in GUIDE} == on_disk
    listing = CliRunner().invoke(cli, ["docs"])
    assert listing.exit_code == 0
    for name, _ in GUIDE:
        assert name in listing.output
        shown = CliRunner().invoke(cli, ["docs", name.lower()])
        assert shown.exit_code == 0
        assert shown.output == (REPO / "docs" / f"{name}.md").read_text(encoding="utf-8")


def test_an_unknown_doc_is_a_usage_error():
    result = CliRunner().invoke(cli, ["docs", "../README"])
    assert result.exit_code == 2 and "RUNBOOK" in result.output


def test_the_wheel_carries_the_docs(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                    "-w", str(tmp_path), str(REPO)], check=True, capture_output=True, timeout=600)
    wheel = next(tmp_path.glob("segtools-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for name, _ in GUIDE:
        assert f"segtools/docs/{name}.md" in names
    # and the JSON Schemas of the outputs (issue 26)
    from segtools import schemas

    for name in schemas.NAMES:
        assert f"segtools/schemas/{name}.schema.json" in names
