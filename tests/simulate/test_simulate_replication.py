"""Replication rules, checked on the log dirs read back with kafka-python (not on our own model):
acknowledged records where acks.jsonl says, no acks=all loss with min.insync >= 2 unless unclean
or power loss, unclean-election loss recomputed from the logs, the KIP-101 divergence scenarios,
determinism."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sim_oracle import partition_dirs, records_by_offset

from segtools.simulate import random_scenario, run, simulate

SCENARIOS = Path(__file__).resolve().parents[2] / "samples" / "scenarios"


def load_out(out: Path):
    truth = json.loads((out / "truth.json").read_text())
    acks = [json.loads(line) for line in (out / "acks.jsonl").read_text().splitlines()]
    logs = {(b, name): records_by_offset(p) for b, name, p in partition_dirs(str(out))}
    return truth, acks, logs


def final_log(truth, logs, tp):
    leader = truth[tp]["leader"] if truth[tp]["leader"] is not None else truth[tp]["last_leader"]
    return logs[(leader, tp)]


def check_acks_against_logs(out: Path) -> int:
    """Every acknowledged record is at its acks.jsonl offset in the final leader's log unless
    truth.json lists it as lost, and then it is not there."""
    truth, acks, logs = load_out(out)
    checked = 0
    for a in acks:
        if not a["ok"] or a["offset"] is None:
            continue
        tp = f"{a['topic']}-{a['partition']}"
        lost = {(x["offset"], x["leader_epoch"]) for x in truth[tp]["lost"]}
        got = final_log(truth, logs, tp).get(a["offset"])
        expected = (a["leader_epoch"], None if a["key"] is None else a["key"].encode(),
                    a["value"].encode())
        if (a["offset"], a["leader_epoch"]) in lost:
            assert got != expected, f"{tp}@{a['offset']} listed lost but present"
        else:
            assert got == expected, f"{tp}@{a['offset']}: acked {expected}, log has {got}"
        checked += 1
    return checked


def test_s2_high_watermark_truncation_loses_committed_record(tmp_path):
    out = tmp_path / "hw"
    simulate(SCENARIOS / "S2-kip101-hw-truncation.yaml", out)
    truth, acks, logs = load_out(out)
    a, b = logs[(1, "kip101-0")], logs[(2, "kip101-0")]
    assert a[1][2] == b"m3" and b[1][2] == b"m2"  # fork at offset 1
    assert a[1][0] > b[1][0]                        # A's m3 is in a later epoch
    assert a[0] == b[0]
    acked_m2 = next(x for x in acks if x["value"] == "m2")
    assert acked_m2["ok"] and acked_m2["offset"] == 1  # it was acknowledged under acks=all
    lost = truth["kip101-0"]["lost"]
    assert [(x["value"], x["committed"], x["acked"], x["cause"]) for x in lost] == \
        [("m2", True, True, "TRUNCATED")]
    assert check_acks_against_logs(out) == 3


def test_s2_leader_epoch_truncation_keeps_everything(tmp_path):
    out = tmp_path / "le"
    simulate(SCENARIOS / "S2-kip101-leader-epoch.yaml", out)
    truth, acks, logs = load_out(out)
    a = logs[(1, "kip101-0")]
    assert [v for _, (_, _, v) in sorted(a.items())] == [b"m1", b"m2", b"m3"]
    assert truth["kip101-0"]["lost"] == []
    assert check_acks_against_logs(out) == 3


def test_s3_high_watermark_truncation_forks_in_the_middle(tmp_path):
    out = tmp_path / "hw"
    simulate(SCENARIOS / "S3-kip101-divergent-logs.yaml", out)
    truth, acks, logs = load_out(out)
    a, b = logs[(1, "kip101-0")], logs[(2, "kip101-0")]
    assert a[1][2] == b"m2" and b[1][2] == b"m3"   # different records at offset 1, below both HWs
    assert a[2] == b[2] and a[2][2] == b"m4"       # ... and the same record again at offset 2
    hwc = {b: int((out / f"broker-{b}" / "replication-offset-checkpoint").read_text().split()[-1])
           for b in (1, 2)}
    assert hwc[1] > 1 and hwc[2] > 1
    # the epoch maps disagree on where the later epoch starts (the S3 signature)
    lec = {b: (out / f"broker-{b}" / "kip101-0" / "leader-epoch-checkpoint").read_text().split("\n")[2:4]
           for b in (1, 2)}
    assert lec[1][1].split()[0] == lec[2][1].split()[0] and lec[1][1] != lec[2][1]
    assert [(x["value"], x["cause"]) for x in truth["kip101-0"]["lost"]] == [("m2", "POWER_LOSS")]


def test_s3_leader_epoch_truncation_keeps_replicas_identical(tmp_path):
    out = tmp_path / "le"
    simulate(SCENARIOS / "S3-kip101-leader-epoch.yaml", out)
    a = out / "broker-1" / "kip101-0" / "00000000000000000000.log"
    b = out / "broker-2" / "kip101-0" / "00000000000000000000.log"
    assert a.read_bytes() == b.read_bytes()  # same batches, byte for byte
    truth = json.loads((out / "truth.json").read_text())
    assert [(x["value"], x["cause"]) for x in truth["kip101-0"]["lost"]] == [("m2", "POWER_LOSS")]


UNCLEAN = {
    "name": "unclean", "seed": 5,
    "cluster": {"brokers": [1, 2, 3], "replica_lag_time_max_ms": 10000},
    "topics": [{"name": "orders", "partitions": 1, "replication_factor": 3, "min_insync_replicas": 1,
                "unclean_leader_election": True, "assignment": {0: [1, 2, 3]}}],
    "steps": [
        {"produce": {"topic": "orders", "acks": "all", "values": ["a", "b", "c"]}},
        {"pause": {"broker": 3}},
        {"produce": {"topic": "orders", "acks": "all", "values": ["d"]}},
        {"pause": {"broker": 2}},
        {"advance": {"ms": 20000}},
        {"produce": {"topic": "orders", "acks": "all", "values": ["e", "f", "g"]}},
        {"produce": {"topic": "orders", "acks": "1", "values": ["h"]}},
        {"advance": {"ms": 6000}},
        {"crash": {"broker": 1}},
        {"resume": {"broker": 2}},
        {"resume": {"broker": 3}},
        {"produce": {"topic": "orders", "acks": "all", "values": ["x", "y"]}},
    ],
}


def test_unclean_election_loses_exactly_what_truth_lists(tmp_path):
    out = tmp_path / "out"
    run(UNCLEAN, out)
    truth, acks, logs = load_out(out)
    t = truth["orders-0"]
    assert t["leader"] == 2 and t["elections"][-1]["unclean"] is True
    leader = logs[(2, "orders-0")]
    # recompute independently: records on any broker's disk missing from the leader's log
    on_disk = set()
    for recs in logs.values():
        for offset, (epoch, _key, value) in recs.items():
            if leader.get(offset, (None,))[0] != epoch:
                on_disk.add((offset, epoch, value.decode()))
    listed = {(x["offset"], x["leader_epoch"], x["value"]) for x in t["lost"]}
    assert listed == on_disk
    # d reached broker 2 before it paused; e..h were only on broker 1
    assert {x["value"] for x in t["lost"]} == {"e", "f", "g", "h"}
    assert all(x["cause"] == "UNCLEAN_ELECTION" for x in t["lost"])
    acked = {x["value"] for x in t["lost"] if x["acked"] and x["committed"]}
    # the ISR was {1} alone: the HW followed its LEO, so even the acks=1 record was committed
    assert acked == {"e", "f", "g", "h"}
    assert check_acks_against_logs(out) == len(acks)


def test_high_watermark_reaches_followers_one_fetch_later():
    sc = {"name": "hw", "seed": 1, "cluster": {"brokers": [1, 2]},
          "topics": [{"name": "t", "replication_factor": 2, "assignment": {0: [1, 2]}}],
          "steps": [{"produce": {"topic": "t", "acks": "1", "values": ["a", "b"]}}]}
    c = run(sc, None).cluster
    leader, follower = c.replicas[("t", 0)][1], c.replicas[("t", 0)][2]
    # after the step the follower fetched the records; the leader learns that at the next fetch
    assert follower.log_end_offset == 2 and leader.high_watermark == 0
    c.fetch_round()
    assert leader.high_watermark == 2 and follower.high_watermark == 0
    c.fetch_round()
    assert follower.high_watermark == 2


def test_isr_shrinks_after_lag_time_and_grows_back():
    sc = {"name": "isr", "seed": 1, "cluster": {"brokers": [1, 2], "replica_lag_time_max_ms": 10000},
          "topics": [{"name": "t", "replication_factor": 2, "assignment": {0: [1, 2]}}],
          "steps": [{"pause": {"broker": 2}}, {"produce": {"topic": "t", "acks": "1", "values": ["a"]}},
                    {"advance": {"ms": 9000}}]}
    result = run(sc, None)
    c = result.cluster
    assert c.partitions[("t", 0)].isr == [1, 2]
    # Kafka's isr-expiration task runs every replica_lag_time_max_ms / 2: the check at 10 s
    # finds a lag of exactly 10 s (not more), the one at 15 s drops the follower
    c.apply(type(c.scenario.steps[0])(9, "advance", {"ms": 5900}))
    assert c.partitions[("t", 0)].isr == [1, 2]
    c.apply(type(c.scenario.steps[0])(9, "advance", {"ms": 200}))
    assert c.partitions[("t", 0)].isr == [1]
    c.apply(type(c.scenario.steps[0])(10, "resume", {"broker": 2}))
    c.fetch_until_quiet()
    assert c.partitions[("t", 0)].isr == [1, 2]


def test_acks_all_below_min_isr_fails_without_append():
    sc = {"name": "min", "seed": 1, "cluster": {"brokers": [1, 2]},
          "topics": [{"name": "t", "replication_factor": 2, "min_insync_replicas": 2,
                      "assignment": {0: [1, 2]}}],
          "steps": [{"crash": {"broker": 2}},
                    {"produce": {"topic": "t", "acks": "all", "values": ["a"]}},
                    {"produce": {"topic": "t", "acks": "1", "values": ["b"]}}]}
    r = run(sc, None)
    assert [(a["ok"], a["error"], a["offset"]) for a in r.acks] == \
        [(False, "NOT_ENOUGH_REPLICAS", None), (True, None, 0)]


@pytest.mark.parametrize("seed", range(60))
def test_acks_all_min_isr_2_never_loses_acked_records(seed, tmp_path):
    sc = random_scenario(seed, brokers=3 + seed % 2, replication_factor=3, min_insync_replicas=2,
                         unclean_leader_election=False, power_loss=False, unclean_elections=False,
                         acks=["all", "all", "1"])
    out = tmp_path / "out"
    run(sc, out)
    truth, acks, logs = load_out(out)
    for a in acks:
        if a["ok"] and a["acks"] == "all":
            tp = f"{a['topic']}-{a['partition']}"
            got = final_log(truth, logs, tp).get(a["offset"])
            assert got == (a["leader_epoch"], a["key"].encode(), a["value"].encode()), (seed, a)
            assert not any(x["offset"] == a["offset"] and x["leader_epoch"] == a["leader_epoch"]
                           for x in truth[tp]["lost"])
    check_acks_against_logs(out)


@pytest.mark.parametrize("seed", range(100, 160))
def test_random_faults_truth_matches_logs(seed, tmp_path):
    """Any schedule (unclean, power loss): acks vs logs agree with truth.json, and every record
    still on some disk but missing from the final leader's log is listed as lost."""
    out = tmp_path / "out"
    run(random_scenario(seed, truncation="leader-epoch" if seed % 3 else "high-watermark"), out)
    truth, acks, logs = load_out(out)
    check_acks_against_logs(out)
    for tp, t in truth.items():
        final = final_log(truth, logs, tp)
        listed = {(x["offset"], x["leader_epoch"]) for x in t["lost"]}
        start = t["replicas"][str(t["leader"] if t["leader"] is not None else t["last_leader"])]["log_start_offset"]
        for (b, name), recs in logs.items():
            if name != tp:
                continue
            for offset, (epoch, _, _) in recs.items():
                if offset >= start and final.get(offset, (None,))[0] != epoch:
                    assert (offset, epoch) in listed, (seed, tp, b, offset, epoch)


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_scenario_and_seed_give_byte_identical_output(tmp_path):
    sc = random_scenario(7, metadata_log=True)
    sc["steps"].insert(3, {"snapshot": {"name": "mid"}})
    run(sc, tmp_path / "one")
    run(sc, tmp_path / "two")
    one, two = _tree(tmp_path / "one"), _tree(tmp_path / "two")
    assert one.keys() == two.keys() and len(one) > 20
    assert one == two
    sc["seed"] = 8
    run(sc, tmp_path / "three")
    assert _tree(tmp_path / "three") != one  # the seed matters (topic ids, cluster id, values)


def test_s10_resend_after_failover_relocates_or_duplicates(tmp_path):
    out = tmp_path / "out"
    simulate(SCENARIOS / "S10-retry-after-failover.yaml", out)
    truth, acks, logs = load_out(out)
    leader = logs[(2, "orders-0")]
    old = logs[(1, "orders-0")]
    # idempotent: the same send sits at offsets 2..3 under epoch 0 on the dead leader and under
    # epoch 1 on the new one; truth lists the old copies as lost but relocated
    assert [old[o][0] for o in (2, 3)] == [0, 0] and [leader[o][0] for o in (2, 3)] == [1, 1]
    assert [(x["offset"], x["relocated_to"], x["acks"]) for x in truth["orders-0"]["lost"]] == \
        [(2, 2, "all"), (3, 3, "all")]
    # non-idempotent: the first attempt was replicated, the resend wrote p0 a second time
    dup = logs[(2, "orders-1")]
    assert [dup[o][2] for o in sorted(dup)] == [b"p0", b"p0"]
    assert truth["orders-1"]["lost"] == []
    assert check_acks_against_logs(out) == 6


def test_resend_of_a_send_no_leader_took_keeps_its_sequence():
    """An in-flight send to an offline partition keeps its sequence numbers; later sends take
    new ones, so the resend cannot be mistaken for (and answered with) another batch."""
    sc = {"name": "seq", "seed": 1, "cluster": {"brokers": [1, 2]},
          "topics": [{"name": "t", "replication_factor": 1, "assignment": {0: [1]}}],
          "producers": [{"name": "p", "idempotent": True}],
          "steps": [{"crash": {"broker": 1}},
                    {"produce": {"topic": "t", "acks": "all", "values": ["a"], "producer": "p",
                                 "in_flight": True}},
                    {"restart": {"broker": 1}},
                    {"produce": {"topic": "t", "acks": "all", "values": ["b", "c"], "producer": "p",
                                 "batch_size": 2}},
                    {"resend": {"producer": "p"}}]}
    r = run(sc, None)
    assert [(a["value"], a["offset"]) for a in r.acks] == [("b", 0), ("c", 1), ("a", 2)]
    batches = r.cluster.replicas[("t", 0)][1].batches
    assert [(b.base_sequence, len(b.records)) for b in batches] == [(1, 2), (0, 1)]


def test_s12_wiped_disk_restarts_the_log_from_empty(tmp_path):
    out = tmp_path / "out"
    simulate(SCENARIOS / "S12-empty-disk-leader.yaml", out)
    truth = json.loads((out / "truth.json").read_text())
    before = out / "snapshots" / "before-rejoin"
    leader = records_by_offset(str(before / "broker-1" / "orders-0"))
    stale = records_by_offset(str(before / "broker-2" / "orders-0"))
    epoch = truth["orders-0"]["leader_epoch"]
    assert sorted(leader) == [0, 1, 2] and {e for e, _, _ in leader.values()} == {epoch}
    assert (before / "broker-1" / "orders-0" / "leader-epoch-checkpoint").read_text() == f"0\n1\n{epoch} 0\n"
    assert sorted(stale) == list(range(10)) and {e for e, _, _ in stale.values()} == {0}
    lost = truth["orders-0"]["lost"]
    assert [x["offset"] for x in lost] == list(range(10)) and all(x["committed"] for x in lost)


def test_output_does_not_depend_on_the_process_hash_seed(tmp_path):
    """Same bytes from two interpreters with different PYTHONHASHSEED (set/dict order traps)."""
    import subprocess
    import sys

    code = ("import sys; from segtools.simulate import random_scenario, run; "
            "[run(random_scenario(s, metadata_log=True), f'{sys.argv[1]}/{s}') for s in (5, 21, 34)]")
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", code, str(tmp_path / seed)], check=True, env=env)
    assert _tree(tmp_path / "1") == _tree(tmp_path / "2")
    assert len(_tree(tmp_path / "1")) > 30


def test_delete_records_past_the_high_watermark_fails_and_deletes_nothing():
    # Kafka's Partition.deleteRecordsOnLeader: an offset above the HW is OFFSET_OUT_OF_RANGE;
    # the log start does not move at all (it is not clamped to the HW)
    sc = {"name": "del", "seed": 1, "cluster": {"brokers": [1, 2]},
          "topics": [{"name": "t", "replication_factor": 2, "assignment": {0: [1, 2]}}],
          "steps": [{"produce": {"topic": "t", "acks": "all", "values": ["a", "b", "c", "d"]}},
                    {"delete_records": {"topic": "t", "partition": 0, "before_offset": 100}}]}
    truth = run(sc, None).truth["t-0"]
    assert truth["high_watermark"] == 4
    assert {b: r["log_start_offset"] for b, r in truth["replicas"].items()} == {"1": 0, "2": 0}
    sc["steps"][1]["delete_records"]["before_offset"] = 3
    truth = run(sc, None).truth["t-0"]
    assert {b: r["log_start_offset"] for b, r in truth["replicas"].items()} == {"1": 3, "2": 3}
