"""--report - / --json - (issue 26): the JSON document alone on stdout, the text on stderr,
the same document the FILE form writes; no file named '-' is created."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli
from tests.forensics.test_answers import FALSE_ALL_CLEAR, _simulate


@pytest.fixture(scope="module")
def fac(tmp_path_factory):
    return _simulate(tmp_path_factory.mktemp("fac"), FALSE_ALL_CLEAR, "fac")


def _run(args, cwd):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, args)
    finally:
        os.chdir(old)


def _drop_times(doc):
    # wall-clock fields differ between two runs; everything else must not
    if isinstance(doc, dict):
        return {k: _drop_times(v) for k, v in doc.items() if k not in ("generated_at", "elapsed_s", "started_at")}
    if isinstance(doc, list):
        return [_drop_times(x) for x in doc]
    return doc


def test_compare_report_dash_writes_json_to_stdout(fac, tmp_path):
    dirs = [str(fac / "broker-1"), str(fac / "broker-2"), "--acks", str(fac / "acks.jsonl"), "--no-spark"]
    res = _run(["compare", *dirs, "--report", "-"], tmp_path)
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)            # the whole of stdout is one JSON document
    assert doc["summary"]["answer"] == "lost"
    assert "answer: LOST" in res.stderr and "answer: LOST" not in res.stdout
    assert not (tmp_path / "-").exists()
    res2 = _run(["compare", *dirs, "--report", str(tmp_path / "r.json")], tmp_path)
    assert res2.exit_code == 1
    assert _drop_times(json.loads((tmp_path / "r.json").read_text())) == _drop_times(doc)


def test_advise_json_dash_writes_json_to_stdout(fac, tmp_path):
    dirs = [str(fac / "broker-1"), str(fac / "broker-2"), "--acks", str(fac / "acks.jsonl")]
    res = _run(["advise", *dirs, "--json", "-"], tmp_path)
    assert res.exit_code in (0, 1), res.output
    doc = json.loads(res.stdout)
    assert [(a["topic"], a["partition"]) for a in doc] == [("t", 0)]
    assert "t-0:" in res.stderr
    assert not (tmp_path / "-").exists()
    res2 = _run(["advise", *dirs, "--json", str(tmp_path / "a.json")], tmp_path)
    assert res2.exit_code == res.exit_code
    assert json.loads((tmp_path / "a.json").read_text()) == doc
