"""Issue 13: an unclean stop only the log dir shows (no ``.kafka_cleanshutdown``, the broker
fenced at the end of the metadata log) is also a ``metadata.brokers`` event of the report
(docs/REPORT.md "Unclean shutdowns"); a clean stop is not. The same rule on a real cluster:
tests/realkafka/test_forensics4x_engines.py."""

from __future__ import annotations

from pathlib import Path

import segtools
from segtools.simulate import parse_scenario, run


def _run(tmp_path: Path, last_step: dict) -> dict:
    scenario = parse_scenario({
        "name": "stops", "cluster": {"brokers": [1, 2, 3], "metadata_log": True},
        "topics": [{"name": "t", "replication_factor": 3, "assignment": {0: [1, 2, 3]}}],
        "steps": [{"produce": {"topic": "t", "partition": 0, "acks": "all", "values": ["v0", "v1"]}},
                  last_step]})
    run(scenario, tmp_path / "out")
    return segtools.compare([str(tmp_path / "out")]).to_json()


def test_crashed_broker_is_an_unclean_shutdown_event(tmp_path: Path) -> None:
    report = _run(tmp_path, {"crash": {"broker": 3}})
    events = report["metadata"]["brokers"]
    registered = [e["broker_epoch"] for e in events if e["event"] == "registered" and e["broker"] == 3]
    assert events[-1] == {"event": "unclean shutdown", "broker": 3, "broker_epoch": None,
                          "previous_broker_epoch": registered[-1], "detected_by": "log_dir",
                          "log_dirs": [str(tmp_path / "out" / "broker-3")]}
    assert [e for e in events if e["event"] == "unclean shutdown"] == [events[-1]]
    assert not (tmp_path / "out" / "broker-3" / ".kafka_cleanshutdown").exists()


def test_clean_stop_and_running_brokers_are_no_event(tmp_path: Path) -> None:
    report = _run(tmp_path, {"shutdown": {"broker": 3}})
    assert (tmp_path / "out" / "broker-3" / ".kafka_cleanshutdown").exists()
    assert [e for e in report["metadata"]["brokers"] if e["event"] == "unclean shutdown"] == []
