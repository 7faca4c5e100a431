"""The terminal summary counts a record lost from several replicas once."""

from __future__ import annotations

from pathlib import Path

import segtools
from segtools.forensics.report import render_summary
from segtools.simulate import run

SCENARIO = {
    "name": "two-replicas-lose-the-same-records", "seed": 3,
    "cluster": {"brokers": [1, 2, 3], "replica_lag_time_max_ms": 10000},
    "topics": [{"name": "t", "partitions": 1, "replication_factor": 3, "min_insync_replicas": 1,
                "unclean_leader_election": True, "assignment": {0: [1, 2, 3]}}],
    "steps": [
        {"produce": {"topic": "t", "partition": 0, "acks": "all", "count": 4}},
        {"pause": {"broker": 3}},
        {"advance": {"ms": 15000}},
        {"produce": {"topic": "t", "partition": 0, "acks": 1, "count": 5}},
        {"crash": {"broker": 1}},
        {"crash": {"broker": 2}},
        {"resume": {"broker": 3}},
        {"produce": {"topic": "t", "partition": 0, "acks": 1, "count": 2}},
    ],
}


def test_lost_records_are_counted_once(tmp_path: Path):
    result = run(SCENARIO, str(tmp_path))
    truly_lost = result.truth["t-0"]["lost"]
    assert len(truly_lost) == 5
    report = segtools.compare([str(tmp_path / f"broker-{b}") for b in (1, 2, 3)], find_metadata_log=False)
    assert sum(len(p.lost) for p in report.partitions) == 10        # 5 records x 2 replicas
    totals = next(line for line in render_summary(report).splitlines() if "lost record(s)" in line)
    assert "5 lost record(s) (on 10 replica copies)" in totals
