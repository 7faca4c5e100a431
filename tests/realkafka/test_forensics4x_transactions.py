"""Transactions v2 (KIP-890) on a real Kafka 4.3.1 broker (issue 13): committed, aborted and
killed-mid-transaction producers driven with confluent-kafka, then compare's transaction report
checked against a read_committed consumer (what it reads, where it stops: the last stable
offset) and against the real kafka-dump-log (every marker's type, producer id and epoch).

librdkafka is no KIP-890 client (its transactions keep v1 markers on a v2 cluster), so
Kafka's own Java client runs too: Kafka's TransactionalMessageCopier (kafka-tools 4.3.1)
copies a topic in transactions of 3 and aborts some at random -- transactions v2 for real,
every marker one epoch above its data."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from cluster_fixtures import require_real_kafka

pytestmark = pytest.mark.realkafka

TOPIC = "payments"

#: a transactional producer that dies (SIGKILL) with its transaction open
KILLED = """
import os, signal, sys
from confluent_kafka import Producer
p = Producer({"bootstrap.servers": sys.argv[1], "transactional.id": "killed", "linger.ms": 0})
p.init_transactions(60)
p.begin_transaction()
for i in range(2):
    p.produce(sys.argv[2], value=f"killed-{i}".encode(), partition=0)
p.flush(30)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _producer(bootstrap: str, tid: str):
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 0})
    p.init_transactions(60)
    return p


def _transaction(p, prefix: str, n: int, *, commit: bool) -> None:
    p.begin_transaction()
    for i in range(n):
        p.produce(TOPIC, value=f"{prefix}-{i}".encode(), partition=0)
    p.flush(30)
    if commit:
        p.commit_transaction(60)
    else:
        p.abort_transaction(60)


COPIED = 12


def _java_v2_transactions(runtime, bootstrap: str) -> tuple[list[str], int]:
    """Plain records into ``source``, copied to ``copied`` by Kafka's TransactionalMessageCopier
    (Java client 4.3.1) in transactions of 3 with random aborts; what read_committed reads."""
    from confluent_kafka import Producer

    from segtools.realcluster.processes import run_tool

    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(COPIED):
        p.produce("source", value=f"s{i}".encode(), partition=0)
    p.flush(30)
    del p
    res = run_tool(runtime.command("org.apache.kafka.tools.TransactionalMessageCopier", "--broker-list", bootstrap,
                                   "--transactional-id", "java-copier", "--input-topic", "source",
                                   "--input-partition", "0", "--output-topic", "copied",
                                   "--max-messages", str(COPIED), "--transaction-size", "3",
                                   "--consumer-group", "copier", "--enable-random-aborts",
                                   heap="256m"), timeout=180)
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    return _read_committed(bootstrap, "copied")


def _read_committed(bootstrap: str, topic: str = TOPIC) -> tuple[list[str], int]:
    """Values a read_committed consumer gets, and the end offset it is given (the LSO)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "forensics4x", "enable.auto.commit": False,
                  "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    try:
        _low, end = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=30, cached=False)
        c.assign([TopicPartition(topic, 0, 0)])
        values: list[str] = []
        idle = 0
        while idle < 6:
            msgs = c.consume(100, timeout=0.5)
            idle = idle + 1 if not msgs else 0
            values += [m.value().decode() for m in msgs if m.error() is None]
        return values, end
    finally:
        c.close()


_BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) .*?producerId: (-?\d+) producerEpoch: (-?\d+) "
                    r".*?isTransactional: (\w+) isControl: (\w+)")
_MARKER = re.compile(r"^\| offset: (\d+) .*?endTxnMarker: (COMMIT|ABORT)")
_VALUE = re.compile(r"^\| offset: (\d+) .*?payload: (.*)$")


def _dump(runtime, files: list[str]) -> tuple[dict[int, tuple[int, int, str]], dict[int, str]]:
    """The real kafka-dump-log: markers {offset: (producer id, epoch, COMMIT|ABORT)} and data
    values {offset: value}."""
    from segtools.realcluster.kafka_runtime import DUMP_LOG_MAIN
    from segtools.realcluster.processes import run_tool

    res = run_tool(runtime.command(DUMP_LOG_MAIN, "--deep-iteration", "--print-data-log", "--files",
                                   ",".join(files), heap="256m"), timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    markers: dict[int, tuple[int, int, str]] = {}
    values: dict[int, str] = {}
    batch = None
    for line in res.stdout.splitlines():
        if (m := _BATCH.match(line)) is not None:
            batch = (int(m[3]), int(m[4]))
        elif (m := _MARKER.match(line)) is not None:
            assert batch is not None
            markers[int(m[1])] = (*batch, m[2])
        elif (m := _VALUE.match(line)) is not None:
            values[int(m[1])] = m[2]
    return markers, values


def test_transactions_v2_outcomes_and_lso_match_kafka(tmp_path: Path) -> None:
    import segtools
    from segtools.forensics.elections import load_histories
    from segtools.realcluster.cluster import RealCluster
    from segtools.realcluster.kafka_runtime import kafka_runtime
    from segtools.realcluster.processes import kill_all
    from segtools.simulate.scenario import parse_scenario

    require_real_kafka()
    scenario = parse_scenario({"name": "txn-v2", "cluster": {"brokers": [1], "metadata_log": True,
                                                           "kafka_features": {"transaction_version": 2}},
                               "topics": [{"name": TOPIC, "replication_factor": 1},
                                          {"name": "source", "replication_factor": 1},
                                          {"name": "copied", "replication_factor": 1}], "steps": []})
    runtime = kafka_runtime()
    out = tmp_path / "real"
    out.mkdir()
    cluster = RealCluster(scenario, str(out), runtime, features=dict(scenario.cluster.kafka_features))
    try:
        cluster.start()
        cluster.create_topics()
        bootstrap = cluster.bootstrap()
        a = _producer(bootstrap, "alpha")
        _transaction(a, "a1", 3, commit=True)
        b = _producer(bootstrap, "beta")
        _transaction(b, "b1", 2, commit=False)
        _transaction(a, "a2", 2, commit=True)
        killed = subprocess.run([sys.executable, "-c", KILLED, bootstrap, TOPIC], timeout=120)
        assert killed.returncode == -9
        _transaction(b, "b2", 1, commit=True)          # after the open one: above the LSO
        consumed, lso = _read_committed(bootstrap)
        del a, b                                       # no client left retrying a stopped cluster
        java_copied, java_lso = _java_v2_transactions(runtime, bootstrap)
    finally:
        cluster.stop()
        kill_all()

    histories = load_histories(out / "controller")
    assert histories.features.get("transaction.version") == 2
    report = segtools.compare([str(out / "broker-1")], metadata_log=out / "controller",
                              find_metadata_log=False)
    (part,) = [p for p in report.partitions if p.verdict.topic == TOPIC]
    txns = part.to_json()["transactions"]
    assert txns["transaction_version"] == 2

    markers, values = _dump(runtime, sorted(str(p) for p in (out / "broker-1" / f"{TOPIC}-0").glob("*.log")))
    # every transaction the report closes is closed by the marker kafka-dump-log shows there
    closed = [t for t in txns["transactions"] if "marker_offset" in t]
    assert len(closed) == len(markers) == 4
    for t in closed:
        pid, epoch, kind = markers[t["marker_offset"]]
        assert (t["producer_id"], t["marker_epoch"]) == (pid, epoch)
        assert t["state"] == {"COMMIT": "committed", "ABORT": "aborted"}[kind]
        # librdkafka has no KIP-890 client: the coordinator records ClientTransactionVersion 0
        # or 1 for it and keeps v1 markers (the data's epoch) on a transaction.version 2
        # cluster, so the marker epoch follows the client's version, not the cluster's
        assert t["transactional_id"] in ("alpha", "beta")
        if t["client_transaction_version"] >= 2:
            assert t["marker_epoch"] == t["producer_epoch"] + 1
        else:
            assert t["marker_epoch"] == t["producer_epoch"]
        assert not t.get("marker_epoch_unexpected")
    states = [(values[t["first_offset"]], t["state"]) for t in txns["transactions"]]
    assert states == [("a1-0", "committed"), ("b1-0", "aborted"), ("a2-0", "committed"),
                      ("killed-0", "open"), ("b2-0", "committed")]
    # the last stable offset is where read_committed stops, and it reads exactly the
    # committed transactions below it
    assert txns["last_stable_offset"] == lso
    below = [values[o] for t in txns["transactions"] if t["state"] == "committed" and t["first_offset"] < lso
             for o in range(t["first_offset"], t["last_offset"] + 1)]
    assert consumed == below == ["a1-0", "a1-1", "a1-2", "a2-0", "a2-1"]
    assert any(f["code"] == "TXN_OPEN" for f in part.to_json()["findings"])

    # the Java client's transactions: v2 for real
    (copied,) = [p for p in report.partitions if p.verdict.topic == "copied"]
    ctx = copied.to_json()["transactions"]
    cmarkers, cvalues = _dump(runtime, sorted(str(p) for p in (out / "broker-1" / "copied-0").glob("*.log")))
    assert len(ctx["transactions"]) == len(cmarkers) >= 4
    for t in ctx["transactions"]:
        pid, epoch, kind = cmarkers[t["marker_offset"]]
        assert (t["producer_id"], t["marker_epoch"], t["state"]) == \
            (pid, epoch, {"COMMIT": "committed", "ABORT": "aborted"}[kind])
        assert t["client_transaction_version"] == 2 and t["transactional_id"] == "java-copier"
        assert t["marker_epoch"] == t["producer_epoch"] + 1 and not t.get("marker_epoch_unexpected")
    # the next transaction runs at or above the epoch the last marker carried (an EndTxn of a
    # transaction that wrote nothing here bumps it too, without a marker here)
    chain = [(t["producer_epoch"], t["marker_epoch"]) for t in ctx["transactions"]]
    assert all(nxt[0] >= prev[1] for prev, nxt in zip(chain, chain[1:])), chain
    committed = [cvalues[o] for t in ctx["transactions"] if t["state"] == "committed"
                 for o in range(t["first_offset"], t["last_offset"] + 1)]
    assert sorted(committed) == sorted(java_copied) == sorted(f"s{i}" for i in range(COPIED))
    assert ctx["last_stable_offset"] == java_lso
