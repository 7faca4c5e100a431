"""Issue 21, transactions and keys in `compare --lost-out` and `replay --dry-run`, on the model.

The oracle is the scenario itself: each one runs a transaction whose data reaches only the
leader (the followers are paused out of the ISR), then ends it (commit / abort) before the
leader crashes, after the unclean election (the coordinator writes the marker to the new
leader, which never had the data), or not at all. What the scenario did decides the expected
``txn_state``; the records are the ones the simulator's truth.json lists as lost."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from segtools.cli.main import cli
from segtools.simulate import run
from segtools.simulate.scenario import parse_scenario

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "generated"


def _spec(name: str, before_crash: str | None, after_election: str | None, *,
          keys: list[str] | None = None, later_keys: list[str] | None = None) -> dict:
    txn = {"topic": "orders", "partition": 0, "acks": "all", "values": ["x0", "x1"], "producer": "tx"}
    if keys:
        txn["keys"] = keys
    after = {"topic": "orders", "partition": 0, "acks": "all", "values": ["after"]}
    if later_keys:
        after["keys"] = later_keys
    steps: list[dict] = [
        {"produce": {"topic": "orders", "partition": 0, "acks": "all", "values": ["a0"]}},
        {"pause": {"broker": 2}}, {"pause": {"broker": 3}}, {"advance": {"ms": 20000}},
        {"begin_transaction": {"producer": "tx"}}, {"produce": txn}]
    if before_crash:
        steps.append({before_crash: {"producer": "tx"}})
    steps += [{"crash": {"broker": 1}}, {"resume": {"broker": 2}}, {"resume": {"broker": 3}},
              {"produce": after}]
    if after_election:
        steps.append({after_election: {"producer": "tx"}})
    steps.append({"advance": {"ms": 5000}})
    return {"name": name, "seed": 7,
            "cluster": {"brokers": [1, 2, 3], "segment_index_bytes": 1024, "replica_lag_time_max_ms": 10000},
            "topics": [{"name": "orders", "replication_factor": 3, "min_insync_replicas": 1,
                        "unclean_leader_election": True, "assignment": {0: [1, 2, 3]}}],
            "producers": [{"name": "tx", "transactional_id": "orders-tx"}], "steps": steps}


def _lost_out(tmp_path: Path, spec: dict) -> tuple[Path, list[dict], dict]:
    evidence = tmp_path / spec["name"]
    run(parse_scenario(spec), evidence)
    out = tmp_path / f"{spec['name']}-lost"
    result = CliRunner().invoke(cli, ["compare", str(evidence), "--no-spark", "--acks",
                                      str(evidence / "acks.jsonl"), "--lost-out", str(out),
                                      "--report", str(tmp_path / f"{spec['name']}-report.json")])
    assert result.exit_code == 1, result.output
    rows = pq.read_table(out / "lost.parquet").to_pylist()
    truth = json.loads((evidence / "truth.json").read_text())["orders-0"]
    return out, rows, truth


def _report_copies(tmp_path: Path, name: str) -> dict[tuple[int, int, int], dict]:
    """(broker, offset, leader epoch) -> the compare report's lost_records entry."""
    (part,) = json.loads((tmp_path / f"{name}-report.json").read_text())["partitions"]
    return {(x["broker"], x["offset"], x["leader_epoch"]): x for x in part["lost_records"]}


CASES = [
    # (before the crash, after the election, expected txn_state, a loss for consumers)
    ("commit_transaction", None, "committed", True),
    ("abort_transaction", None, "aborted", False),
    (None, "commit_transaction", "committed", True),     # marker only on the new leader
    (None, "abort_transaction", "aborted", False),
    # no marker anywhere: the outcome is undecided, the log committed the records (acks=all):
    # a possible consumer loss, as the report counts it (CONTRACT section 10), never cleared
    (None, None, "open", True),
]


@pytest.mark.parametrize(("before", "after", "state", "consumer_loss"), CASES)
def test_lost_transactional_records_carry_the_state_of_their_transaction(tmp_path, before, after, state,
                                                                          consumer_loss):
    out, rows, truth = _lost_out(tmp_path, _spec("t", before, after))
    # the lost records are truth's: the two records of the transaction, acknowledged (acks=all)
    assert sorted((r["offset"], r["value"]) for r in rows) == \
        sorted((x["offset"], x["value"].encode()) for x in truth["lost"]) == [(1, b"x0"), (2, b"x1")]
    for r in rows:
        assert r["is_transactional"] and not r["is_control"]
        assert r["producer_id"] >= 0 and r["producer_epoch"] >= 0
        assert r["txn_state"] == state
        assert r["acked"]
        # compare's own flag: the report clears it for an aborted transaction, whether its
        # ABORT marker is lost with it or only on the new leader (issue 21)
        assert r["log_committed"] is (state != "aborted")
        assert r["committed"] is consumer_loss       # cleared only for an aborted transaction
    # lost-out and the compare report say the same of each copy: state and commitment
    report = _report_copies(tmp_path, "t")
    assert [(r["txn_state"], r["committed"]) for r in rows] == \
        [(report[(r["broker"], r["offset"], r["leader_epoch"])]["txn_state"],
          report[(r["broker"], r["offset"], r["leader_epoch"])]["committed"]) for r in rows]
    manifest = json.loads((out / "_SUCCESS").read_text())
    assert manifest["txn_states"] == {state: 2}
    plan = CliRunner().invoke(cli, ["replay", str(out), "--dry-run"])
    if state == "committed":
        assert plan.exit_code == 0, plan.output
        assert "plan: 2 produce, 0 skip, 0 hold" in plan.output
    else:
        assert plan.exit_code == 1, plan.output
        reason = "aborted" if state == "aborted" else "transaction_open"
        assert plan.output.count(f"({reason}; txn {state})") == 2 and "0 produce" in plan.output


def test_the_compare_report_does_not_count_an_aborted_transaction_lost_with_its_marker(tmp_path):
    """The issue's case: the transaction's data and its ABORT marker reached only the old
    leader; acks=all acknowledged the data. Before, compare called both records committed,
    acknowledged losses (COMMITTED_LOSS)."""
    evidence = tmp_path / "e"
    run(parse_scenario(_spec("a", "abort_transaction", None)), evidence)
    report = tmp_path / "r.json"
    result = CliRunner().invoke(cli, ["compare", str(evidence), "--no-spark", "--acks",
                                      str(evidence / "acks.jsonl"), "--report", str(report)])
    assert result.exit_code == 1, result.output
    (part,) = json.loads(report.read_text())["partitions"]
    lost = part["lost_records"]
    assert [(x["offset"], x["value"]) for x in lost] == [(1, "x0"), (2, "x1")]
    assert not any(x["committed"] for x in lost)
    assert "COMMITTED_LOSS" not in result.output


def test_an_unreadable_marker_makes_the_state_unknown_and_keeps_the_logs_commitment(tmp_path):
    """The lost replica's COMMIT marker with its control type damaged: nothing proves the
    outcome, so the records are `unknown` (still a possible consumer loss) and replay holds them."""
    import shutil

    evidence = tmp_path / "e"
    run(parse_scenario(_spec("c", "commit_transaction", None)), evidence)
    seg = next((evidence / "broker-1" / "orders-0").glob("*.log"))
    data = bytearray(seg.read_bytes())
    # the marker batch is the last on broker 1 (a0, x0, x1, COMMIT): its control key is
    # version int16 + type int16 right after the record's key length varint
    marker = _last_batch_position(bytes(data))
    at = bytes(data).index(b"\x00\x00\x00\x01", marker + 61)    # version 0, type 1 (COMMIT)
    data[at + 2:at + 4] = b"\x00\x09"                          # a type Kafka does not know
    seg.write_bytes(bytes(data))
    out = tmp_path / "lost"
    result = CliRunner().invoke(cli, ["compare", str(evidence), "--no-spark", "--acks",
                                      str(evidence / "acks.jsonl"), "--lost-out", str(out)])
    assert result.exit_code == 1, result.output
    rows = pq.read_table(out / "lost.parquet").to_pylist()
    assert [r["txn_state"] for r in rows] == ["unknown", "unknown"]
    # nothing proves the transaction aborted: the log's commitment stands (truth: committed),
    # flagged by the state, as the report keeps it
    truth = json.loads((evidence / "truth.json").read_text())["orders-0"]
    assert [r["committed"] for r in rows] == [r["log_committed"] for r in rows] == \
        [x["committed"] for x in sorted(truth["lost"], key=lambda x: x["offset"])] == [True, True]
    plan = CliRunner().invoke(cli, ["replay", str(out), "--dry-run"])
    assert plan.exit_code == 1 and plan.output.count("(transaction_unknown; txn unknown)") == 2
    shutil.rmtree(evidence)


def _damage_marker(evidence: Path, marker_type: bytes) -> None:
    """Give broker 1's last batch (the marker) a control type Kafka does not know."""
    seg = next((evidence / "broker-1" / "orders-0").glob("*.log"))
    data = bytearray(seg.read_bytes())
    at = bytes(data).index(b"\x00\x00" + marker_type, _last_batch_position(bytes(data)) + 61)
    data[at + 2:at + 4] = b"\x00\x09"
    seg.write_bytes(bytes(data))


def test_the_txnindex_stands_in_for_an_unreadable_abort_marker(tmp_path):
    """The ABORT marker's type damaged: broker 1's .txnindex (written with the marker) still
    lists the aborted range, so the records are `aborted`; without the .txnindex, `unknown`."""
    for keep_index in (True, False):
        evidence = tmp_path / f"e{keep_index}"
        run(parse_scenario(_spec("a", "abort_transaction", None)), evidence)
        _damage_marker(evidence, b"\x00\x00")               # version 0, type 0 (ABORT)
        if not keep_index:
            for f in (evidence / "broker-1" / "orders-0").glob("*.txnindex"):
                f.unlink()
        out = tmp_path / f"lost{keep_index}"
        result = CliRunner().invoke(cli, ["compare", str(evidence), "--no-spark", "--lost-out", str(out)])
        assert result.exit_code == 1, result.output
        states = [r["txn_state"] for r in pq.read_table(out / "lost.parquet").to_pylist()]
        assert states == (["aborted", "aborted"] if keep_index else ["unknown", "unknown"])


def _last_batch_position(data: bytes) -> int:
    pos = last = 0
    while pos + 12 <= len(data):
        last = pos
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
    return last


def test_a_key_with_a_newer_surviving_value_is_held_back(tmp_path):
    """The lost transaction wrote keys k1 and k2; after the election k1 got a newer value:
    replaying k1's lost value would overwrite it (a compacted topic, a KTable)."""
    out, rows, _truth = _lost_out(tmp_path, _spec("k", "commit_transaction", None, keys=["k1", "k2"],
                                                 later_keys=["k1"]))
    by_key = {r["key"]: r for r in rows}
    assert by_key[b"k1"]["superseded_by"] == 1      # "after" at offset 1 of the new leader
    assert by_key[b"k2"]["superseded_by"] is None
    plan_file = tmp_path / "plan.json"
    held = CliRunner().invoke(cli, ["replay", str(out), "--dry-run", "--plan-out", str(plan_file)])
    assert held.exit_code == 1, held.output
    plan = json.loads(plan_file.read_text())
    got = {p["key"]: (p["action"], p["reason"]) for p in plan["plan"]}
    # k2 belongs to the same transaction as the held k1: not replayed alone
    assert got == {"k1": ("hold", "superseded"), "k2": ("hold", "transaction_incomplete")}
    assert plan["counts"] == {"produce": 0, "skip": 0, "hold": 2, "refuse": 0}
    assert not plan["cluster_checked"]
    forced = CliRunner().invoke(cli, ["replay", str(out), "--dry-run", "--include-superseded"])
    assert forced.exit_code == 0 and "2 produce" in forced.output, forced.output


def test_non_transactional_samples_are_state_none_and_consumer_losses_stay_committed(tmp_path):
    runner = CliRunner()
    checked = 0
    for name in ("S7-simple-unclean-election", "S9-acks-all-uncommitted-tail", "S19-txn-marker-lost"):
        out = tmp_path / name
        sample = SAMPLES / name
        result = runner.invoke(cli, ["compare", str(sample), "--no-spark", "--acks",
                                     str(sample / "acks.jsonl"), "--lost-out", str(out)])
        assert result.exit_code in (0, 1), result.output
        for r in pq.read_table(out / "lost.parquet").to_pylist():
            assert r["txn_state"] == "none" and not r["is_transactional"]
            assert r["committed"] == r["log_committed"]
            checked += 1
    assert checked >= 5


def _random_txn_spec(seed: int) -> tuple[dict, str]:
    """A transaction on a leader left alone (1 or 2 followers paused out of the ISR), ended
    before the crash, after the unclean election, or never; sometimes with plain records
    around it and records of a second producer. Returns the scenario and how it ended."""
    import random

    rng = random.Random(seed)
    paused = rng.choice([[2, 3], [2, 3], [3, 2]])
    n = rng.randint(1, 4)
    keys = [f"k{rng.randrange(4)}" for _ in range(n)]
    txn = {"topic": "orders", "partition": 0, "acks": "all", "values": [f"x{i}" for i in range(n)],
           "keys": keys, "producer": "tx", "batch_size": rng.randint(1, 2)}
    when = rng.choice(["before", "after", "never"])
    end = rng.choice(["commit_transaction", "abort_transaction"])
    steps: list[dict] = [{"produce": {"topic": "orders", "partition": 0, "acks": "all", "values": ["a0"]}}]
    steps += [{"pause": {"broker": b}} for b in paused] + [{"advance": {"ms": 20000}}]
    if rng.random() < 0.5:
        steps.append({"produce": {"topic": "orders", "partition": 0, "acks": "1", "values": ["p0"]}})
    steps += [{"begin_transaction": {"producer": "tx"}}, {"produce": txn}]
    if rng.random() < 0.5:
        steps.append({"produce": {"topic": "orders", "partition": 0, "acks": "all", "values": ["p1"],
                                  "producer": "idem"}})
    if when == "before":
        steps.append({end: {"producer": "tx"}})
    if rng.random() < 0.5:
        steps.append({"advance": {"ms": 6000}})     # the HW checkpoint catches up
    steps += [{"crash": {"broker": 1}}] + [{"resume": {"broker": b}} for b in paused]
    steps.append({"produce": {"topic": "orders", "partition": 0, "acks": "all", "values": ["after"],
                              "keys": [rng.choice(["k0", "k9"])]}})
    if when == "after":
        steps.append({end: {"producer": "tx"}})
    steps.append({"advance": {"ms": 5000}})
    spec = {"name": f"txn-{seed}", "seed": seed,
            "cluster": {"brokers": [1, 2, 3], "segment_index_bytes": 1024, "replica_lag_time_max_ms": 10000},
            "topics": [{"name": "orders", "replication_factor": 3, "min_insync_replicas": 1,
                        "unclean_leader_election": True, "assignment": {0: [1, 2, 3]}}],
            "producers": [{"name": "tx", "transactional_id": "orders-tx"}, {"name": "idem", "idempotent": True}],
            "steps": steps}
    outcome = "never" if when == "never" else ("committed" if end == "commit_transaction" else "aborted")
    return spec, outcome


ALLOWED = {"committed": {"committed", "unknown"}, "aborted": {"aborted", "unknown"},
           "never": {"open", "unknown"}}


def test_random_transactions_never_get_a_state_their_scenario_contradicts(tmp_path):
    """40 seeded variations; the oracle is the scenario's own end step. Every lost
    transactional record's state is allowed by it (committed only after a commit, aborted only
    after an abort), `committed` (a consumer loss) only for a committed transaction, and
    non-transactional lost records are `none`."""
    exact = lost_txn = 0
    for seed in range(40):
        spec, outcome = _random_txn_spec(seed)
        evidence = tmp_path / f"s{seed}"
        run(parse_scenario(spec), evidence)
        out = tmp_path / f"s{seed}-lost"
        result = CliRunner().invoke(cli, ["compare", str(evidence), "--no-spark", "--acks",
                                          str(evidence / "acks.jsonl"), "--lost-out", str(out)])
        assert result.exit_code in (0, 1), (seed, result.output)
        for r in pq.read_table(out / "lost.parquet").to_pylist():
            if not r["is_transactional"]:
                assert r["txn_state"] == "none", (seed, r)
                continue
            lost_txn += 1
            assert r["value"].startswith(b"x"), (seed, r)
            assert r["txn_state"] in ALLOWED[outcome], (seed, outcome, r["txn_state"])
            # a consumer loss unless the transaction aborted (open/unknown keep the log's flag)
            assert r["committed"] == (r["log_committed"] and outcome != "aborted"), (seed, r)
            exact += r["txn_state"] == {"committed": "committed", "aborted": "aborted", "never": "open"}[outcome]
    assert lost_txn >= 40
    assert exact == lost_txn      # the model's evidence always holds the marker or its absence
