"""Issue 10: idempotent and transactional producers on a real KRaft cluster
(`simulate --engine kafka`). truth.json comes from the cluster (librdkafka's delivery
callbacks, the real kafka-dump-log, read_committed and read_uncommitted consumers of the final
leaders); the model must lose the same records with the same causes, and `compare` over the
real dirs must find what the real truth says."""

from __future__ import annotations

import pytest
from cluster_fixtures import (
    SCENARIOS,
    check_against_truth,
    compare_dir,
    disk_records_by_replica,
    lost_view,
    run_both,
    run_log,
    verdicts,
)
from test_forensics4x_engines import _comparable

pytestmark = pytest.mark.realkafka

# an abort, a commit, an idempotent producer, a flush (a no-op on a real broker), and a commit
# whose marker only the old leader has when an unclean election follows (the S19 story with
# the ISR shrunk by a record the paused followers miss: a caught-up follower stays in a real
# ISR however long it is silent). txa and idem have one replica each so that the pause does
# not touch their ISRs (the model drops a silent caught-up follower: see the README).
TXN_SCENARIO = """\
name: real-transactions
seed: 5
cluster: {brokers: [1, 2], segment_index_bytes: 1024, replica_lag_time_max_ms: 3500,
          metadata_log: true, kafka_features: {eligible_leader_replicas: false}}
topics:
  - {name: orders, replication_factor: 2, min_insync_replicas: 1, unclean_leader_election: true,
     assignment: {0: [1, 2]}}
  - {name: txa, replication_factor: 1, assignment: {0: [2]}}
  - {name: idem, replication_factor: 1, assignment: {0: [2]}}
producers:
  - {name: tx, transactional_id: real-tx}
  - {name: idem, idempotent: true}
steps:
  - produce: {topic: idem, partition: 0, acks: all, values: [i0, i1], producer: idem}
  - begin_transaction: {producer: tx}
  - produce: {topic: txa, partition: 0, acks: all, values: [a0, a1], producer: tx}
  - abort_transaction: {producer: tx}
  - flush: {broker: 1}
  - produce: {topic: txa, partition: 0, acks: all, values: [c0], producer: tx}
  - produce: {topic: orders, partition: 0, acks: all, values: [t0, t1, t2], producer: tx}
  - commit_transaction: {producer: tx}
  - begin_transaction: {producer: tx}
  - produce: {topic: orders, partition: 0, acks: all, values: [t3], producer: tx}
  - pause: {broker: 2}
  - produce: {topic: orders, partition: 0, acks: all, values: [t4], producer: tx}
  - commit_transaction: {producer: tx}
  - crash: {broker: 1}
  - resume: {broker: 2}
  - produce: {topic: orders, partition: 0, acks: all, values: [after]}
  - produce: {topic: idem, partition: 0, acks: all, values: [i2], producer: idem}
"""


def _batches(path):
    """(base offset, isTransactional, isControl, producerId, marker) of every batch, read by
    the real kafka-dump-log."""
    import re

    from segtools.realcluster.kafka_runtime import DUMP_LOG_MAIN, kafka_runtime
    from segtools.realcluster.processes import run_tool

    rt = kafka_runtime()
    files = sorted(str(p) for p in path.glob("*.log"))
    res = run_tool(rt.command(DUMP_LOG_MAIN, "--deep-iteration", "--print-data-log",
                              "--files", ",".join(files)))
    assert res.returncode == 0, res.stderr
    out = []
    for line in res.stdout.splitlines():
        m = re.match(r"baseOffset: (\d+) .*?producerId: (-?\d+) .*?isTransactional: (\w+) "
                     r"isControl: (\w+)", line)
        if m:
            out.append([int(m.group(1)), m.group(3) == "true", m.group(4) == "true",
                        int(m.group(2)), None])
        m = re.match(r"\| offset: \d+ .*endTxnMarker: (\w+)", line)
        if m:
            out[-1][4] = m.group(1)
    return [tuple(b) for b in out]


def _transactions(report):
    """Per partition, the comparable transactions section, without ``transaction_version``: a
    scenario without ``cluster.kafka_features`` is a pre-4.x cluster to the model (no feature
    records, v1 markers), while the real one is formatted at Kafka 4.3.1's defaults (2)."""
    out = {}
    for p in report.to_json()["partitions"]:
        if "transactions" in p:
            out[f"{p['topic']}-{p['partition']}"] = {k: v for k, v in _comparable(p["transactions"]).items()
                                                     if k != "transaction_version"}
    return out


def _statuses(report):
    return {k: v for k, v in verdicts(report).items() if not k[0].startswith("__")}


def test_transactions_abort_commit_idempotent_and_a_lost_marker(tmp_path):
    scenario = tmp_path / "txn.yaml"
    scenario.write_text(TXN_SCENARIO)
    real, model, real_dir = run_both(scenario, tmp_path)
    log = run_log(real_dir)
    assert [w for w in log["waits"] if w["reached"] is False] == [] and log["errors"] == []
    # the same records lost for the same reasons, the same final leaders, epochs and ISRs
    assert lost_view(real) == lost_view(model)
    assert lost_view(real) == {"idem-0": [], "txa-0": [],
                               "orders-0": [(5, 0, "t4", True, True, "UNCLEAN_ELECTION")]}
    for key in real:
        assert (real[key]["leader"], real[key]["leader_epoch"], sorted(real[key]["isr"])) == \
            (model[key]["leader"], model[key]["leader_epoch"], sorted(model[key]["isr"])), key
    # what the producers were told: the same offsets and epochs in both engines
    acks_real = (real_dir / "acks.jsonl").read_text()
    assert acks_real == (tmp_path / "model" / "acks.jsonl").read_text()

    # compare over the real dirs agrees with the real truth, and with compare over the model's
    report = compare_dir(real_dir, real_dir / "acks.jsonl", metadata=real_dir / "controller")
    assert check_against_truth(report, real, disk_records_by_replica(real_dir), with_metadata=True) == []
    model_report = compare_dir(tmp_path / "model", tmp_path / "model" / "acks.jsonl",
                               metadata=tmp_path / "model" / "controller")
    assert _statuses(report) == _statuses(model_report)
    # the same transactions section (states, offsets, LSO; producer ids by order of appearance,
    # epochs apart: test_forensics4x_engines.py)
    assert _transactions(report) == _transactions(model_report)

    # real consumers of the final leaders: the aborted records are invisible to read_committed,
    # and the commit whose marker died with broker 1 leaves a hanging transaction (LSO stuck
    # at t3, the first record of the open transaction on the new leader)
    txa, orders = real["txa-0"]["consumed"], real["orders-0"]["consumed"]
    assert [v for _, v in txa["read_committed"]] == ["c0"]
    assert [v for _, v in txa["read_uncommitted"]] == ["a0", "a1", "c0"]
    assert [v for _, v in orders["read_committed"]] == ["t0", "t1", "t2"]
    assert [v for _, v in orders["read_uncommitted"]] == ["t0", "t1", "t2", "t3", "after"]
    assert orders["last_stable_offset"] == 4 and orders["high_watermark"] == 6
    # compare's LSO is the consumer's, stuck at the transaction whose marker died with broker 1
    orders_txns = _transactions(report)["orders-0"]
    assert orders_txns["last_stable_offset"] == orders["last_stable_offset"]
    assert [t["state"] for t in orders_txns["transactions"] if t["first_offset"] == 4] in (["open"], ["hanging"])
    assert [v for _, v in real["idem-0"]["consumed"]["read_committed"]] == ["i0", "i1", "i2"]

    # the real logs (kafka-dump-log): an ABORT and a COMMIT marker on txa; the old leader of
    # orders holds the second COMMIT, the new one does not; the idempotent batches carry one
    # producer id
    txa_batches = _batches(real_dir / "broker-2" / "txa-0")
    assert [(b[0], b[4]) for b in txa_batches if b[2]] == [(2, "ABORT"), (4, "COMMIT")]
    assert all(b[1] for b in txa_batches)
    old = [(b[0], b[4]) for b in _batches(real_dir / "broker-1" / "orders-0") if b[2]]
    new = [(b[0], b[4]) for b in _batches(real_dir / "broker-2" / "orders-0") if b[2]]
    assert old == [(3, "COMMIT"), (6, "COMMIT")] and new == [(3, "COMMIT")]
    idem = _batches(real_dir / "broker-2" / "idem-0")
    assert len({b[3] for b in idem}) == 1 and idem[0][3] >= 0 and not any(b[1] for b in idem)


def test_s10_in_flight_sends_and_resends(tmp_path):
    """S10: an idempotent producer's batch appended by a leader that crashes before answering
    is resent (librdkafka, same producer id and sequence) to the new leader, which lacks it:
    written again in the new epoch (the first copy lost, relocated); a plain producer's batch
    whose answer was lost (a hand-written ProduceRequest whose connection is closed) is sent
    again to a leader that has it: a duplicate."""
    real, model, real_dir = run_both(SCENARIOS / "S10-retry-after-failover.yaml", tmp_path)
    log = run_log(real_dir)
    assert [w for w in log["waits"] if w["reached"] is False] == [] and log["errors"] == []
    assert lost_view(real) == lost_view(model)
    relocated = {k: [(x["offset"], x["relocated_to"]) for x in v["lost"]] for k, v in real.items()}
    assert relocated == {k: [(x["offset"], x["relocated_to"]) for x in v["lost"]] for k, v in model.items()}
    assert relocated == {"orders-0": [(2, 2), (3, 3)], "orders-1": []}
    for key in real:
        assert (real[key]["leader"], real[key]["leader_epoch"], sorted(real[key]["isr"])) == \
            (model[key]["leader"], model[key]["leader_epoch"], sorted(model[key]["isr"])), key
    assert (real_dir / "acks.jsonl").read_text() == (tmp_path / "model" / "acks.jsonl").read_text()
    # read back from the final leaders by a consumer: the duplicate and the resent copies
    assert [v for _, v in real["orders-1"]["consumed"]["read_uncommitted"]] == ["p0", "p0"]
    assert [v for _, v in real["orders-0"]["consumed"]["read_uncommitted"]] == ["i0", "i1", "i2", "i3", "i4"]
    # one producer id on every idempotent batch, the plain ones without
    assert len({b[3] for b in _batches(real_dir / "broker-2" / "orders-0")}) == 1
    assert {b[3] for b in _batches(real_dir / "broker-2" / "orders-1")} == {-1}
    report = compare_dir(real_dir, real_dir / "acks.jsonl", metadata=real_dir / "controller")
    assert check_against_truth(report, real, disk_records_by_replica(real_dir), with_metadata=True) == []
    model_report = compare_dir(tmp_path / "model", tmp_path / "model" / "acks.jsonl", metadata=None)
    assert {k: v[0] for k, v in _statuses(report).items()} == \
        {k: v[0] for k, v in _statuses(model_report).items()}
