"""Issue 13: the same transactions scenario under both engines gives the same report.

One scenario (transaction.version 2; a committed, an aborted and an open transaction -- the
``dead`` producer never ends its transaction, as one killed mid-transaction -- then a crash of
the follower) runs on a real Kafka 4.3.1 cluster (`simulate --engine kafka`) and under the
model; ``segtools.compare`` over each output must give the same ``transactions`` per partition
(states, offsets, LSO, counts), the same statuses and lost records, and the same unclean
shutdown event in ``metadata.brokers``. The oracles are the real cluster's read_committed
consumer (its records and last stable offset, ``consumed`` in the real truth) and the real
kafka-dump-log.

The one difference, documented in README ("the real engine"): the real engine's producers are
librdkafka, no KIP-890 client. Kafka derives a transaction's version from the client's EndTxn
request version, not from the cluster's feature (server-common TransactionVersion.java,
``transactionVersionForEndTxn``: EndTxn v5+ is TV_2), so on this TV2 cluster librdkafka's
markers carry the data's epoch (v1 markers) and its epoch never moves, while the model's
producer is a TV2 client: every EndTxn bumps the epoch and the marker carries the new one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cluster_fixtures import lost_view, require_real_kafka, run_log
from test_forensics4x_transactions import _dump

pytestmark = pytest.mark.realkafka

SCENARIO = """\
name: txn-v2-both-engines
seed: 7
cluster: {brokers: [1, 2], metadata_log: true, kafka_features: {transaction_version: 2}}
topics:
  - {name: payments, replication_factor: 2, min_insync_replicas: 1, assignment: {0: [1, 2]}}
producers:
  - {name: alpha, transactional_id: alpha}
  - {name: beta, transactional_id: beta}
  - {name: dead, transactional_id: dead}
steps:
  - begin_transaction: {producer: alpha}
  - produce: {topic: payments, partition: 0, acks: all, values: [a1-0, a1-1, a1-2], producer: alpha}
  - commit_transaction: {producer: alpha}
  - begin_transaction: {producer: beta}
  - produce: {topic: payments, partition: 0, acks: all, values: [b1-0, b1-1], producer: beta}
  - abort_transaction: {producer: beta}
  - begin_transaction: {producer: alpha}
  - produce: {topic: payments, partition: 0, acks: all, values: [a2-0, a2-1], producer: alpha}
  - commit_transaction: {producer: alpha}
  - begin_transaction: {producer: dead}
  - produce: {topic: payments, partition: 0, acks: all, values: [dead-0, dead-1], producer: dead}
  - begin_transaction: {producer: beta}
  - produce: {topic: payments, partition: 0, acks: all, values: [b2-0], producer: beta}
  - commit_transaction: {producer: beta}
  - produce: {topic: payments, partition: 0, acks: all, values: [plain]}
  - crash: {broker: 2}
"""

#: what the transactions are, in log order: (first value, records, state)
EXPECTED = [("a1-0", 3, "committed"), ("b1-0", 2, "aborted"), ("a2-0", 2, "committed"),
            ("dead-0", 2, "open"), ("b2-0", 1, "committed")]


def _comparable(txns: dict[str, Any]) -> dict[str, Any]:
    """The transactions section without what differs by construction: producer ids (the
    real coordinator starts at 0, the model at 1000) become their order of appearance, epochs
    and timestamps are left out (compared apart)."""
    ids: dict[int, int] = {}
    rows = []
    for t in txns["transactions"]:
        rows.append({"producer": ids.setdefault(t["producer_id"], len(ids)),
                     **{k: t.get(k) for k in ("first_offset", "last_offset", "records", "state",
                                              "marker_offset")}})
    return {"transaction_version": txns["transaction_version"],
            "last_stable_offset": txns["last_stable_offset"], "counts": txns["counts"], "transactions": rows}


def _partitions(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{p['topic']}-{p['partition']}": p for p in report["partitions"] if not p["topic"].startswith("__")}


def test_transactions_and_unclean_stop_same_report_on_both_engines(tmp_path: Path) -> None:
    import segtools
    from segtools.realcluster import run_on_kafka
    from segtools.realcluster.kafka_runtime import kafka_runtime
    from segtools.simulate import load_scenario, run

    require_real_kafka()
    (tmp_path / "txn.yaml").write_text(SCENARIO)
    scenario = load_scenario(tmp_path / "txn.yaml")
    real = run_on_kafka(scenario, tmp_path / "real").truth
    model = run(scenario, tmp_path / "model").truth
    log = run_log(tmp_path / "real")
    assert [w for w in log["waits"] if w["reached"] is False] == [] and log["errors"] == []

    reports = {side: segtools.compare([str(tmp_path / side)], acks=tmp_path / side / "acks.jsonl").to_json()
               for side in ("real", "model")}
    parts = {side: _partitions(r) for side, r in reports.items()}
    assert parts["real"].keys() == parts["model"].keys() == {"payments-0"}
    txns = {side: p["payments-0"]["transactions"] for side, p in parts.items()}

    # the real consumer: read_committed stops at the open transaction (the LSO) and reads the
    # committed records below it
    consumed = real["payments-0"]["consumed"]
    assert consumed["last_stable_offset"] == txns["real"]["last_stable_offset"] == 10
    assert [v for _, v in consumed["read_committed"]] == ["a1-0", "a1-1", "a1-2", "a2-0", "a2-1"]
    values = dict(map(tuple, consumed["read_uncommitted"]))
    assert [(values[t["first_offset"]], t["records"], t["state"]) for t in txns["real"]["transactions"]] == EXPECTED

    # the real kafka-dump-log: each closed transaction's marker, its producer and epoch
    logs = sorted(str(f) for f in (tmp_path / "real" / "broker-1" / "payments-0").glob("*.log"))
    markers, _values = _dump(kafka_runtime(), logs)
    assert markers == {t["marker_offset"]: (t["producer_id"], t["marker_epoch"],
                                            {"committed": "COMMIT", "aborted": "ABORT"}[t["state"]])
                       for t in txns["real"]["transactions"] if "marker_offset" in t}
    assert len(markers) == 4

    # the same transactions report under the model
    assert _comparable(txns["real"]) == _comparable(txns["model"])
    assert txns["real"]["transaction_version"] == 2
    # the epochs: librdkafka (real) keeps v1 markers, the model's TV2 client bumps per EndTxn
    assert all(t["marker_epoch"] == t["producer_epoch"] for t in txns["real"]["transactions"] if "marker_epoch" in t)
    assert all(t["marker_epoch"] == t["producer_epoch"] + 1
               for t in txns["model"]["transactions"] if "marker_epoch" in t)
    assert not any(t.get("marker_epoch_unexpected") for side in txns.values() for t in side["transactions"])

    # the same statuses, lost records and findings
    def statuses(p: dict[str, Any]) -> list[tuple[int, str, Any]]:
        return [(r["broker"], r["status"], r["cause"]) for r in p["replicas"]]

    assert statuses(parts["real"]["payments-0"]) == statuses(parts["model"]["payments-0"])
    assert lost_view(real) == lost_view(model) == {"payments-0": []}
    assert [x for p in parts["real"].values() for x in p["lost_records"]] == \
        [x for p in parts["model"].values() for x in p["lost_records"]] == []
    codes = {side: sorted({f["code"] for f in p["payments-0"]["findings"]}) for side, p in parts.items()}
    assert codes["real"] == codes["model"] and {"TXN_OPEN", "UNCLEAN_SHUTDOWN"} <= set(codes["real"])

    # the crashed follower: no .kafka_cleanshutdown in its log dir and fenced at the end of
    # the metadata log, so metadata.brokers lists its unclean stop (docs/REPORT.md)
    assert real["payments-0"]["replicas"]["2"]["alive"] is False
    assert not (tmp_path / "real" / "broker-2" / ".kafka_cleanshutdown").exists()
    for side, rep in reports.items():
        events = [e for e in rep["metadata"]["brokers"] if e["event"] == "unclean shutdown"]
        last_reg = [e["broker_epoch"] for e in rep["metadata"]["brokers"]
                    if e["event"] == "registered" and e["broker"] == 2][-1]
        assert events == [{"event": "unclean shutdown", "broker": 2, "broker_epoch": None,
                           "previous_broker_epoch": last_reg, "detected_by": "log_dir",
                           "log_dirs": [str(tmp_path / side / "broker-2")]}], side
