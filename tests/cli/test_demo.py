"""`segtools demo` runs every step on embedded defaults and its findings match the truth."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from segtools.cli.main import cli

pytestmark = pytest.mark.spark


def test_demo_runs_end_to_end(spark, tmp_path):
    out = tmp_path / "demo"
    result = CliRunner().invoke(cli, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "exit code 1: findings" in result.output          # the unclean election is found
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
