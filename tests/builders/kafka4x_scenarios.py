"""The KIP-966 scenario of issue 13 (eligible leader replicas on and off) and what compare
reports on it: shared by the real-cluster test (tests/realkafka/test_forensics4x_elr.py) and
the model-only one (tests/simulate/test_simulate_kafka4x.py). The scenario's story and the
expected results are told in the real-cluster test."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def scenario_spec(elr: bool) -> dict[str, Any]:
    return {
        "name": f"elr-{'on' if elr else 'off'}", "seed": 966,
        "cluster": {"brokers": [1, 2, 3], "metadata_log": True,
                    "kafka_features": {"eligible_leader_replicas": elr, "transaction_version": 2}},
        "topics": [{"name": "orders", "partitions": 1, "replication_factor": 3, "min_insync_replicas": 2,
                    "unclean_leader_election": False, "assignment": {0: [1, 3, 2]}},
                   {"name": "audit", "partitions": 1, "replication_factor": 1, "min_insync_replicas": 1,
                    "assignment": {0: [1]}}],
        "steps": [
            {"produce": {"topic": "orders", "partition": 0, "acks": "all", "count": 10, "value_bytes": 8}},
            {"produce": {"topic": "audit", "partition": 0, "acks": "all", "count": 4, "value_bytes": 8}},
            {"shutdown": {"broker": 3}},
            {"produce": {"topic": "orders", "partition": 0, "acks": "all", "count": 5, "value_bytes": 8}},
            {"shutdown": {"broker": 2}},
            {"crash": {"broker": 1}},
            {"restart": {"broker": 3}},
            {"restart": {"broker": 2}},
            {"elect": {"topic": "orders", "partition": 0, "unclean": True}},
            {"produce": {"topic": "orders", "partition": 0, "acks": "1", "count": 3, "value_bytes": 8}},
            # past the model's 5 s high-watermark checkpoint interval (a real one writes every 200 ms)
            {"advance": {"ms": 6000}},
            {"snapshot": {"name": "before-return"}},
            {"restart": {"broker": 1}},
        ]}


def summarize(out: Path) -> dict[str, Any]:
    """What compare reports on the snapshot taken before broker 1 returns, with the
    controller's whole metadata log."""
    import segtools
    from segtools.forensics.elections import load_histories
    from segtools.forensics.loss import AckIndex

    histories = load_histories(out / "controller")
    report = segtools.compare([str(out / "snapshots" / "before-return")], find_metadata_log=False,
                              acks=AckIndex.load(out / "acks.jsonl"), metadata_log=out / "controller")
    # the real brokers' own copies of __cluster_metadata are in their dirs too: scenario topics only
    parts = {f"{p.verdict.topic}-{p.verdict.partition}": p.to_json() for p in report.partitions
             if p.verdict.topic in ("orders", "audit")}
    return {
        "replicas": {(k, r["broker"]): (r["status"], r["cause"], (r.get("cause_election") or {}).get("class"))
                     for k, p in parts.items() for r in p["replicas"]},
        "lost": sorted((k, x["broker"], x["offset"], x["leader_epoch"], x["value"], x["committed"])
                       for k, p in parts.items() for x in p["lost_records"]),
        "classes": {k: [(c["leader"], c["election_class"]) for c in h.changes if "election_class" in c]
                    for (t, n), h in histories.items() for k in [f"{t}-{n}"] if t in ("orders", "audit")},
        "unclean_restarts": [(e["broker"], e["detected_by"]) for e in histories.unclean_shutdowns],
        "frozen": [f["code"] for f in parts["orders-0"]["findings"] if f["code"] == "HW_FROZEN_UNDER_MIN_ISR"],
    }
