"""Every JSON output of compare, advise, collect and verify validates against the schema shipped
in segtools/schemas (issue 26). The outputs come from simulated incidents (lost, cannot tell,
safe; a tampered bundle), so the optional branches of each schema are exercised."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from segtools import schemas
from segtools.cli.main import cli
from tests.forensics.test_answers import FALSE_ALL_CLEAR, QUIET, _simulate


def _check(doc: object, name: str) -> None:
    jsonschema.Draft202012Validator(schemas.load(name)).validate(doc)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("schemas")
    (root / "a").mkdir()
    (root / "b").mkdir()
    return {"fac": _simulate(root / "a", FALSE_ALL_CLEAR, "fac"), "quiet": _simulate(root / "b", QUIET, "quiet")}


def test_every_shipped_schema_is_a_valid_schema():
    assert set(schemas.NAMES) == {p.name.removesuffix(".schema.json")
                                  for p in Path(schemas.__file__).parent.glob("*.schema.json")}
    for name in schemas.NAMES:
        jsonschema.Draft202012Validator.check_schema(schemas.load(name))


@pytest.mark.parametrize("case", [("fac", True), ("fac", False), ("quiet", False)])
def test_compare_report_validates(runs, case):
    run, with_acks = runs[case[0]], case[1]
    dirs = [str(p) for p in sorted(run.glob("broker-*"))]
    res = CliRunner().invoke(cli, ["compare", *dirs, "--no-spark", "--report", "-",
                                   *(["--acks", str(run / "acks.jsonl")] if with_acks else [])])
    assert res.exit_code in (0, 1), res.output
    doc = json.loads(res.stdout)
    _check(doc, "compare-report")
    # the schema is not vacuous: a report missing its answer, or with an unknown one, fails
    broken = {**doc, "summary": {**doc["summary"], "answer": "probably fine"}}
    with pytest.raises(jsonschema.ValidationError):
        _check(broken, "compare-report")


def test_advise_json_validates(runs):
    for run in runs.values():
        dirs = [str(p) for p in sorted(run.glob("broker-*"))]
        res = CliRunner().invoke(cli, ["advise", *dirs, "--acks", str(run / "acks.jsonl"), "--json", "-"])
        assert res.exit_code in (0, 1), res.output
        doc = json.loads(res.stdout)
        _check(doc, "advise")
        # not vacuous: an element without its version, or with a verdict that is not one of the three
        with pytest.raises(jsonschema.ValidationError):
            _check([{k: v for k, v in doc[0].items() if k != "schema_version"}], "advise")
        with pytest.raises(jsonschema.ValidationError):
            _check([{**doc[0], "verdict": "probably safe"}], "advise")


def test_collect_manifest_and_verify_validate(runs, tmp_path):
    run = runs["fac"]
    bundle = tmp_path / "bundle"
    res = CliRunner().invoke(cli, ["collect", *[str(p) for p in sorted(run.glob("broker-*"))], "--out", str(bundle)])
    assert res.exit_code == 0, res.output
    manifest = json.loads((bundle / "MANIFEST.json").read_text())
    _check(manifest, "bundle-manifest")
    with pytest.raises(jsonschema.ValidationError):      # a file entry without its digest
        _check({**manifest, "files": [{k: v for k, v in manifest["files"][0].items() if k != "sha256"}]},
               "bundle-manifest")
    ok = CliRunner().invoke(cli, ["verify", str(bundle), "--output", "json"])
    assert ok.exit_code == 0
    _check(json.loads(ok.stdout), "verify")
    # a changed file: problems listed, still valid
    victim = next(p for p in bundle.rglob("*.log") if p.stat().st_size)
    data = victim.read_bytes()
    victim.write_bytes(bytes([data[0] ^ 0xFF]) + data[1:])
    bad = CliRunner().invoke(cli, ["verify", str(bundle), "--output", "json"])
    assert bad.exit_code == 1
    doc = json.loads(bad.stdout)
    assert doc["problems"]
    _check(doc, "verify")
    with pytest.raises(jsonschema.ValidationError):      # "ok" must be a boolean
        _check({**doc, "ok": "no"}, "verify")


def test_replay_plan_to_stdout_validates(tmp_path):
    from tests.forensics.test_acks_formats import DIVERGED

    run = _simulate(tmp_path, DIVERGED, "div")
    lost = tmp_path / "lost"
    res = CliRunner().invoke(cli, ["compare", str(run / "broker-1"), str(run / "broker-2"), "--no-spark",
                                   "--lost-out", str(lost)])
    assert res.exit_code == 1, res.output
    plan = CliRunner().invoke(cli, ["replay", str(lost), "--dry-run", "--plan-out", "-"])
    assert plan.exit_code in (0, 1), plan.output
    doc = json.loads(plan.stdout)           # stdout is the plan alone; the text went to stderr
    assert "lost records:" in plan.stderr and not (tmp_path / "-").exists()
    _check(doc, "replay-plan")
    with pytest.raises(jsonschema.ValidationError):      # an action replay does not have
        _check({**doc, "plan": [{**doc["plan"][0], "action": "overwrite"}]}, "replay-plan")
    # the two records the stale replica holds and the surviving lineage lost (truth.json)
    truth = json.loads((run / "truth.json").read_text())["t-0"]
    assert doc["records"] == len({(x["offset"], x["leader_epoch"]) for x in truth["lost"]}) > 0
