"""The coordinator's log (``__transaction_state``) decides a lost transaction no marker in the
evidence decides (issue 21).

The model ends a transaction (commit or abort) whose data reach only the old leader; the
follower elected uncleanly gets the marker again from the coordinator. Its copies of that
marker are made unreadable here (the evidence keeps no readable marker: state ``unknown``),
and a ``__transaction_state-0`` partition the coordinator would have written for the story
(Kafka's v1 sequence: Empty at InitProducerId, Ongoing with the partition, PrepareX,
CompleteX) is put beside broker 2's partitions. Oracles: the scenario's own end step and
truth.json's lost records; Kafka's protocol for the coordinator records, not segtools' output.
A record above the coordinator replica's high-watermark checkpoint decides nothing, nor does
an undecided (Ongoing) transaction.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from segtools.cli.main import cli
from segtools.files.checkpoints import read_offset_checkpoint, write_offset_checkpoint
from segtools.forensics.transactions import _decided_in
from segtools.internal_topics import transaction_state as ts
from segtools.simulate import run
from segtools.simulate.scenario import parse_scenario
from segtools.writer import LogWriter, NewRecord, build_batch

PID, EPOCH = 1000, 0
STATUS = {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4,
          "CompleteAbort": 5}


def _story(end: str) -> dict:
    return {"name": f"coord-{end}", "seed": 3,
            "cluster": {"brokers": [1, 2, 3], "segment_index_bytes": 1024, "replica_lag_time_max_ms": 10000},
            "topics": [{"name": "orders", "replication_factor": 3, "min_insync_replicas": 1,
                        "unclean_leader_election": True, "assignment": {0: [1, 2, 3]}}],
            "producers": [{"name": "tx", "transactional_id": "orders-tx"}],
            "steps": [
                {"produce": {"topic": "orders", "partition": 0, "acks": "all", "values": ["a0"]}},
                {"pause": {"broker": 2}}, {"pause": {"broker": 3}}, {"advance": {"ms": 20000}},
                {"begin_transaction": {"producer": "tx"}},
                {"produce": {"topic": "orders", "partition": 0, "acks": "all", "values": ["x0", "x1"],
                             "producer": "tx"}},
                {"flush": {"broker": 1}}, {end: {"producer": "tx"}},
                {"crash": {"broker": 1, "lose_unflushed": True}},
                {"resume": {"broker": 2}}, {"resume": {"broker": 3}},
                {"produce": {"topic": "orders", "partition": 0, "acks": "all", "values": ["after"]}},
                {"advance": {"ms": 5000}}]}


def _damage_markers(evidence: Path) -> int:
    """Give every marker of the producer in the evidence a control type Kafka does not know
    (walking the v2 batch headers: length at 8, attributes at 21, producer id at 43; the one
    record starts at 61: length, attributes, timestamp and offset deltas, key length (one byte
    each here), then the key: version int16, type int16)."""
    damaged = 0
    for seg in evidence.glob("broker-*/orders-0/*.log"):
        data = bytearray(seg.read_bytes())
        pos = 0
        while pos + 61 <= len(data):
            size = 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
            control = int.from_bytes(data[pos + 21:pos + 23], "big") & 0x20
            if control and int.from_bytes(data[pos + 43:pos + 51], "big", signed=True) == PID:
                assert data[pos + 65:pos + 68] == b"\x08\x00\x00"      # key of 4 bytes, version 0
                data[pos + 68:pos + 70] = b"\x00\x09"
                damaged += 1
            pos += size
        seg.write_bytes(bytes(data))
    return damaged


def _coordinator(log_dir: Path, statuses: list[str], hw: int) -> None:
    """``__transaction_state-0`` in ``log_dir`` with one record per status (v1: the epoch stays)
    and ``hw`` as its replication-offset-checkpoint entry."""
    pdir = log_dir / "__transaction_state-0"
    w = LogWriter(str(pdir))
    for i, status in enumerate(statuses):
        parts = [] if status in ("Empty", "CompleteCommit", "CompleteAbort") else \
            [{"topic": "orders", "partitionIds": [0]}]
        value = ts.encode_value(0, {"producerId": PID, "producerEpoch": EPOCH, "transactionTimeoutMs": 60000,
                                    "transactionStatus": STATUS[status], "transactionPartitions": parts,
                                    "transactionLastUpdateTimestampMs": 1000 + i,
                                    "transactionStartTimestampMs": 1000})
        w.append(build_batch([NewRecord(ts.encode_key("orders-tx"), value, (), 1000 + i)], base_offset=i))
    w.close()
    ck = log_dir / "replication-offset-checkpoint"
    entries = dict(read_offset_checkpoint(ck).entries)
    entries[("__transaction_state", 0)] = hw
    write_offset_checkpoint(ck, [(t, p, o) for (t, p), o in sorted(entries.items())])


def _lost_out(tmp_path: Path, evidence: Path) -> tuple[list[dict], list[dict]]:
    tmp_path.mkdir(exist_ok=True)
    out = tmp_path / "lost"
    report = tmp_path / "report.json"
    result = CliRunner().invoke(cli, ["compare", str(evidence), "--no-spark", "--acks", str(evidence / "acks.jsonl"),
                                      "--lost-out", str(out), "--report", str(report)])
    assert result.exit_code == 1, result.output
    part = next(p for p in json.loads(report.read_text())["partitions"] if p["topic"] == "orders")
    return pq.read_table(out / "lost.parquet").to_pylist(), part["lost_records"]


@pytest.mark.parametrize(("end", "closing", "state"), [
    ("commit_transaction", ["PrepareCommit", "CompleteCommit"], "committed"),
    ("abort_transaction", ["PrepareAbort", "CompleteAbort"], "aborted"),
    ("commit_transaction", ["PrepareCommit"], "committed"),      # decided, markers not yet done
])
def test_the_coordinators_committed_record_decides_a_transaction_no_marker_shows(tmp_path, end, closing, state):
    evidence = tmp_path / "e"
    run(parse_scenario(_story(end)), evidence)
    truth = json.loads((evidence / "truth.json").read_text())["orders-0"]
    assert [(x["offset"], x["value"]) for x in truth["lost"]] == [(1, "x0"), (2, "x1")]
    assert _damage_markers(evidence) >= 2         # the new leader's and its follower's copies
    rows, _ = _lost_out(tmp_path / "before", evidence)
    assert [r["txn_state"] for r in rows] == ["unknown", "unknown"]
    statuses = ["Empty", "Ongoing", *closing]
    _coordinator(evidence / "broker-2", statuses, hw=len(statuses))
    rows, reported = _lost_out(tmp_path, evidence)
    assert [(r["offset"], r["value"], r["txn_state"]) for r in rows] == [(1, b"x0", state), (2, b"x1", state)]
    assert [r["committed"] for r in rows] == [r["log_committed"] and state == "committed" for r in rows]
    assert [(x["offset"], x["txn_state"], x["committed"]) for x in reported] == \
        [(r["offset"], r["txn_state"], r["committed"]) for r in rows]


@pytest.mark.parametrize(("statuses", "hw"), [
    (["Empty", "Ongoing", "PrepareCommit", "CompleteCommit"], 2),   # the decision above the HW
    (["Empty", "Ongoing"], 2),                                        # undecided
    (["Ongoing", "PrepareCommit", "CompleteCommit"], 3),              # v1 session start missing
])
def test_what_the_coordinator_log_does_not_prove_leaves_the_state_unknown(tmp_path, statuses, hw):
    evidence = tmp_path / "e"
    run(parse_scenario(_story("commit_transaction")), evidence)
    _damage_markers(evidence)
    _coordinator(evidence / "broker-2", statuses, hw=hw)
    rows, _ = _lost_out(tmp_path, evidence)
    assert [r["txn_state"] for r in rows] == ["unknown", "unknown"]


def _rec(status: str, epoch: int, parts: bool = True, tv: int = 0, pid: int = PID) -> dict:
    return {"producerId": pid, "producerEpoch": epoch, "transactionStatus": STATUS[status],
            "clientTransactionVersion": tv,
            "transactionPartitions": [{"topic": "orders", "partitionIds": [0]}] if parts else []}


def test_transactions_v2_are_matched_by_the_bumped_epoch_v1_only_when_one_fits():
    # v2 (KIP-890): the transaction of data epoch 4 ends with epoch 5, the next one with 6
    seq = [_rec("Ongoing", 4, tv=2), _rec("PrepareAbort", 5, tv=2), _rec("CompleteAbort", 5, False, tv=2),
           _rec("Ongoing", 5, tv=2), _rec("PrepareCommit", 6, tv=2), _rec("CompleteCommit", 6, False, tv=2)]
    assert _decided_in(seq, PID, 4, "orders", 0) == "aborted"
    assert _decided_in(seq, PID, 5, "orders", 0) == "committed"
    assert _decided_in(seq, PID, 6, "orders", 0) is None
    assert _decided_in(seq, PID + 1, 4, "orders", 0) is None
    # v1: two transactions of one session on the partition: which one held the record is unknown
    two = [_rec("Empty", 0, False), _rec("Ongoing", 0), _rec("PrepareCommit", 0), _rec("CompleteCommit", 0, False),
           _rec("Ongoing", 0), _rec("PrepareAbort", 0), _rec("CompleteAbort", 0, False)]
    assert _decided_in(two, PID, 0, "orders", 0) is None
    # one of them on another partition only: the other decides
    other = [{**r, "transactionPartitions": [{"topic": "else", "partitionIds": [0]}]} if 4 <= i <= 5 else r
             for i, r in enumerate(two)]
    assert _decided_in(other, PID, 0, "orders", 0) == "committed"
    # a timeout abort fences with epoch + 1 (v1); the next session (Empty) is not ours
    fenced = [_rec("Empty", 0, False), _rec("Ongoing", 0), _rec("PrepareAbort", 1), _rec("CompleteAbort", 1, False),
              _rec("Empty", 2, False), _rec("Ongoing", 2), _rec("PrepareCommit", 2)]
    assert _decided_in(fenced, PID, 0, "orders", 0) == "aborted"


def test_cannot_tell_next_to_listed_records_never_reads_as_nothing_lost(tmp_path):
    """The markers and the metadata log are gone: the two lost records of the transaction are
    listed, the answer is cannot tell; its words must not say nothing was seen lost."""
    evidence = tmp_path / "e"
    run(parse_scenario(_story("commit_transaction")), evidence)
    _damage_markers(evidence)
    result = CliRunner().invoke(cli, ["compare", str(evidence), "--no-spark", "--acks", str(evidence / "acks.jsonl")])
    assert result.exit_code == 1, result.output
    assert "2 lost record(s)" in result.output
    answer = next(line for line in result.output.splitlines() if line.startswith("answer:"))
    assert answer.startswith("answer: CANNOT TELL") and "nothing seen lost" not in answer, answer
