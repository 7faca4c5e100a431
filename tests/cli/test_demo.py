"""`segtools demo` runs every step on embedded defaults and its findings match the truth, and
never deletes a folder it did not write (issue 9)."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from segtools.cli.errors import TroubleError
from segtools.cli.main import cli


def _snapshot(root):
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None, p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*"))}


def test_demo_refuses_a_non_empty_folder_without_force(tmp_path):
    precious = tmp_path / "precious"
    (precious / "notes").mkdir(parents=True)
    (precious / "case.txt").write_text("evidence log")
    (precious / "notes/a.md").write_text("a")
    before = _snapshot(precious)
    result = CliRunner().invoke(cli, ["demo", "--out", str(precious)])
    assert result.exit_code == 2, result.output
    assert "not empty" in result.output and "--force" in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert _snapshot(precious) == before


def test_demo_force_never_deletes_what_it_did_not_write(tmp_path):
    precious = tmp_path / "precious"
    (precious / "cluster").mkdir(parents=True)          # the user's own folder named like the demo's
    (precious / "cluster/keep.txt").write_text("mine")
    before = _snapshot(precious)
    result = CliRunner().invoke(cli, ["demo", "--out", str(precious), "--force"])
    assert result.exit_code == 2 and "cluster" in result.output, result.output
    assert _snapshot(precious) == before


def test_a_previous_demo_folder_is_replaced_entry_by_entry(tmp_path):
    from segtools.cli.demo import DEMO_ENTRIES, DEMO_MARKER, _prepare_out

    out = tmp_path / "demo-out"
    (out / "cluster/broker-1").mkdir(parents=True)
    (out / "report.json").write_text("{}")
    (out / DEMO_MARKER).write_text("x")
    (out / "my-notes.txt").write_text("kept")
    _prepare_out(out, force=False)
    assert not any((out / name).exists() for name in DEMO_ENTRIES)
    assert (out / "my-notes.txt").read_text() == "kept"
    with pytest.raises(TroubleError):
        _prepare_out(tmp_path / "demo-out" / "my-notes.txt", force=True)   # a file, not a folder


@pytest.mark.spark
def test_demo_runs_end_to_end(spark, tmp_path):
    out = tmp_path / "demo"
    out.mkdir()
    (out / "keep.txt").write_text("not the demo's")   # --force adds to the folder, deletes nothing
    result = CliRunner().invoke(cli, ["demo", "--out", str(out), "--force"])
    assert result.exit_code == 0, result.output
    assert (out / "keep.txt").read_text() == "not the demo's"
    assert "exit code 1: findings" in result.output          # the unclean election is found
    page = out / "report.html"
    assert f"the HTML report: {page}" in result.output
    html = page.read_text(encoding="utf-8")
    assert html.lstrip().lower().startswith("<!doctype html") and "COMMITTED_LOSS" in html
    truth = json.loads((out / "cluster/truth.json").read_text())
    report = json.loads((out / "report.json").read_text())
    truly_lost = {(k, r["offset"], r["committed"], r["acked"]) for k, p in truth.items() for r in p["lost"]}
    assert truly_lost, "the demo scenario must lose records"
    assert all(committed for _, _, committed, _ in truly_lost)   # the demo's point: committed loss
    reported = {(f"{p['topic']}-{p['partition']}", r["offset"], r["committed"], r["acked"])
                for p in report["partitions"] for r in p["lost_records"]}
    assert reported == truly_lost
    statuses = {r["status"] for p in report["partitions"] for r in p["replicas"]}
    assert statuses == {"COMMITTED_LOSS", "LAGGING_PREFIX", "CONSISTENT"}
    exported = sum(pq.read_metadata(f).num_rows for f in (out / "parquet").rglob("*.parquet"))
    survivors = sum(truth[k]["replicas"]["3"]["log_end_offset"] for k in truth)
    assert exported == survivors
