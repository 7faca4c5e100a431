"""`segtools advise` on the evidence an incident really leaves (issue 21): never optimistic.

Every case runs the model simulator at test time; the oracles are independent of advise: the
simulator's truth.json and acks.jsonl (what the controller and the producers saw) and the
records on disk read with kafka-python's record reader.

- the last ISR member's dir missing: "cannot tell" naming it, never "loses 0", exit 1, with
  and without --acks and the metadata log; acked records above the candidates' ends counted;
- printed reassignments keep every replica (from the metadata log), or carry a placeholder
  when the replica set is unknown;
- the same offset and leader epoch with different data: a conflict, counted lost;
- "safe" and exit 0 only with every replica given and nothing lost;
- random scenarios, each degraded (a broker dir dropped, no metadata log): no false "safe",
  no lost record that is not on disk, every missing broker named really missing.
"""

from __future__ import annotations

import glob
import json
import os
import re

import pytest
import yaml
from click.testing import CliRunner
from forensics_helpers import data_records_of

from segtools.advise import CANNOT_TELL, LOST, SAFE, advise
from segtools.cli.main import cli
from segtools.simulate import random_scenario, run

# brokers stop 3, then 2, then 1: broker 1 is the last ISR member and alone holds the acks=1
# records c0, c1 (offsets 4, 5) and, in NEWER_EPOCH, d0 written in a later leader epoch
STOPPED_3_2_1 = """\
name: advise-missing-last-isr
seed: 21
cluster: {brokers: [1, 2, 3], metadata_log: true}
topics:
  - {name: adv, partitions: 1, replication_factor: 3, min_insync_replicas: 1,
     unclean_leader_election: true, assignment: {0: [1, 2, 3]}}
steps:
  - produce: {topic: adv, partition: 0, acks: all, values: [a0, a1]}
  - crash: {broker: 3}
  - produce: {topic: adv, partition: 0, acks: all, values: [b0, b1]}
  - crash: {broker: 2}
  - produce: {topic: adv, partition: 0, acks: 1, values: [c0, c1]}
  - crash: {broker: 1}
"""

NEWER_EPOCH = STOPPED_3_2_1 + """\
  - restart: {broker: 1}
  - produce: {topic: adv, partition: 0, acks: 1, values: [d0]}
  - crash: {broker: 1}
"""

# two runs of one scenario (same cluster id, topic id, epochs) differing in one value: the
# replicas of run A and run B hold different data at the same offset and leader epoch
CONFLICT = """\
name: advise-conflict
seed: 4
cluster: {brokers: [1, 2], metadata_log: true}
topics:
  - {name: adv, partitions: 1, replication_factor: 2, min_insync_replicas: 1, assignment: {0: [1, 2]}}
steps:
  - produce: {topic: adv, partition: 0, acks: all, values: [VALUES]}
  - advance: {ms: 5000}
"""


def _simulate(root, text: str):
    result = run(yaml.safe_load(text), str(root))
    return result.truth, [a for a in result.acks if a.get("ok") and a.get("offset") is not None]


def _disk(broker_dir) -> dict:
    """(topic, partition) -> {offset: (leader_epoch, key, value)} of the data records in one
    broker dir, read with kafka-python."""
    out: dict = {}
    for pdir in glob.glob(os.path.join(str(broker_dir), "*-*")):
        topic, _, part = os.path.basename(pdir).rpartition("-")
        if not part.isdigit() or topic == "__cluster_metadata":
            continue
        out[(topic, int(part))] = {o: (e, k, v) for o, e, k, v in data_records_of(pdir)}
    return out


def _advise_cli(args: list[str], tmp_path, name: str = "advice.json"):
    out = tmp_path / name
    result = CliRunner().invoke(cli, ["advise", *args, "--json", str(out)])
    assert "Traceback" not in result.output, result.output
    return result, json.loads(out.read_text()) if out.exists() else None


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    root = tmp_path_factory.mktemp("stopped") / "c"
    truth, acks = _simulate(root, STOPPED_3_2_1)
    return root, truth["adv-0"], acks


@pytest.mark.parametrize("with_acks", [True, False], ids=["acks", "no-acks"])
@pytest.mark.parametrize("with_metadata", [True, False], ids=["metadata", "no-metadata"])
def test_a_missing_last_isr_member_is_cannot_tell_never_loses_0(stopped, tmp_path, with_acks, with_metadata):
    root, truth, acks = stopped
    # the story, from the simulator's truth and the disks: broker 1 is the last ISR member
    # and holds records brokers 2 and 3 lack
    assert truth["leader"] is None and truth["isr"] == [1]
    disks = {b: _disk(root / f"broker-{b}")[("adv", 0)] for b in (1, 2, 3)}
    only_on_1 = {(o, e) for o, (e, _k, _v) in disks[1].items()} - \
        {(o, e) for b in (2, 3) for o, (e, _k, _v) in disks[b].items()}
    assert only_on_1
    args = [str(root / "broker-2"), str(root / "broker-3")]
    args += ["--metadata-log", str(root / "controller")] if with_metadata else ["--no-metadata-log"]
    if with_acks:
        args += ["--acks", str(root / "acks.jsonl")]
    result, doc = _advise_cli(args, tmp_path)
    assert result.exit_code == 1, result.output
    assert "verdict: cannot tell" in result.output
    assert "verdict: safe" not in result.output and "loses no record (" not in result.output
    (adv,) = doc
    assert adv["verdict"] == CANNOT_TELL
    assert all(c["lower_bound"] for c in adv["candidates"])
    if with_metadata:
        # the missing broker named, as what the controller would elect cleanly
        assert [(m["broker"], m["role"]) for m in adv["missing"]] == [(1, "last ISR")]
        assert "missing: broker 1's log dir (last ISR)" in result.output
        assert adv["recommended"] is None and "no recommendation" in result.output
        assert adv["commands"][0].startswith("# cannot tell what electing broker 2 loses: broker 1")
    else:
        assert [m["broker"] for m in adv["missing"]] == [None]
        assert "missing: the controller's metadata log" in result.output
    if with_acks:
        # acked records on no given replica, from the producers' view: part of every cost
        on_given = {(o, e) for b in (2, 3) for o, (e, _k, _v) in disks[b].items()}
        acked_elsewhere = {(a["offset"], a["leader_epoch"]) for a in acks} - on_given
        assert acked_elsewhere == only_on_1          # c0, c1: acks=1, above broker 2's end
        end_2 = max(disks[2]) + 1
        assert all(o >= end_2 for o, _e in acked_elsewhere)
        for c in adv["candidates"]:
            assert {(r["offset"], r["leader_epoch"]) for r in c["lost_from_acks"]} == acked_elsewhere
            assert all(r["source"] == "acks" and r["class"] == "acked" for r in c["lost_from_acks"])
            assert c["lost"]["total"] >= len(acked_elsewhere) and c["lost"]["from_acks"] == len(acked_elsewhere)
        assert "known only from the acks" in result.output


def test_a_missing_leaders_newer_epoch_is_named(tmp_path):
    """Broker 1 restarts alone, is elected again (a new leader epoch) and appends: the
    metadata log shows that epoch, no given dir holds it."""
    root = tmp_path / "c"
    truth, _acks = _simulate(root, NEWER_EPOCH)
    newer = [e["epoch"] for e in truth["adv-0"]["elections"] if e["leader"] == 1 and e["epoch"] > 0]
    assert newer
    (adv,) = advise([root / "broker-2", root / "broker-3"], metadata_log=root / "controller")
    assert adv.verdict == CANNOT_TELL and adv.recommended is None
    (m,) = adv.missing
    assert m.broker == 1 and f"it led leader epoch(s) {newer}" in m.describe()


def test_a_copy_older_than_its_brokers_last_epoch_is_cannot_tell(tmp_path):
    """Broker 1's dir copied early; then it loses its followers, restarts alone, is elected
    in a new epoch and appends d0: the final metadata log has it lead that epoch, its copy
    does not know it. Every broker's dir is given (2 and 3 final), so only the stale copy
    stands between advise and an answer."""
    root = tmp_path / "c"
    text = STOPPED_3_2_1.replace("steps:\n", "steps:\n"
                                 "  - produce: {topic: adv, partition: 0, acks: all, values: [e0]}\n"
                                 "  - snapshot: {name: early}\n")
    text += "  - restart: {broker: 1}\n  - produce: {topic: adv, partition: 0, acks: 1, values: [d0]}\n" \
            "  - crash: {broker: 1}\n"
    truth, acks = _simulate(root, text)
    newer = [e["epoch"] for e in truth["adv-0"]["elections"] if e["leader"] == 1 and e["epoch"] > 0]
    early = _disk(root / "snapshots" / "early" / "broker-1")[("adv", 0)]
    d0 = next(a for a in acks if a["value"] == "d0")
    assert newer == [d0["leader_epoch"]] and d0["offset"] not in early
    given = [root / "snapshots" / "early" / "broker-1", root / "broker-2", root / "broker-3"]
    (adv,) = advise(given, metadata_log=root / "controller", acks_path=root / "acks.jsonl")
    assert adv.verdict == CANNOT_TELL
    (m,) = adv.missing
    assert m.broker == 1 and m.role == "given dir behind the metadata log" and str(newer) in m.decides
    # the acked d0 is on no given dir: counted for every candidate, broker 1's copy included
    assert all((d0["offset"], d0["leader_epoch"]) in {(r.offset, r.leader_epoch) for r in c.lost_from_acks}
               for c in adv.candidates)


def test_every_replica_given_is_safe_and_exit_0(stopped, tmp_path):
    root, truth, acks = stopped
    result, doc = _advise_cli([str(root), "--acks", str(root / "acks.jsonl")], tmp_path)
    assert result.exit_code == 0, result.output
    (adv,) = doc
    assert adv["verdict"] == SAFE and adv["missing"] == [] and adv["recommended"] == 1
    # the oracle: broker 1's disk holds every record of the others and every acked record
    disks = {b: _disk(root / f"broker-{b}")[("adv", 0)] for b in (1, 2, 3)}
    assert all(disks[1].get(o) == rec for b in (2, 3) for o, rec in disks[b].items())
    assert all(disks[1][a["offset"]][0] == a["leader_epoch"] for a in acks)
    # and without broker 3 (not in the last ISR) it cannot be proven: 3 may hold more
    (partial,) = advise([root / "broker-1", root / "broker-2"], metadata_log=root / "controller")
    assert partial.verdict == CANNOT_TELL and [(m.broker, m.role) for m in partial.missing] == [(3, "replica")]
    assert partial.recommended == 1                 # the last ISR member is given


def _plans(lines: list[str]) -> list[str]:
    return [m.group(1) for line in lines if (m := re.match(r"echo '(.*)' > reassign-", line))]


def test_printed_reassignments_never_drop_a_replica(stopped, tmp_path):
    root, truth, _acks = stopped
    given = [root / "broker-2", root / "broker-3"]
    (adv,) = advise(given, metadata_log=root / "controller")
    plans = [p for c in adv.candidates for p in _plans(adv.commands(broker=c.broker))]
    assert len(plans) == 2
    for plan in plans:
        (entry,) = json.loads(plan)["partitions"]
        assert sorted(entry["replicas"]) == sorted(truth["assignment"])   # broker 1 kept
    # without the metadata log the replica set is unknown: the plan names the given brokers
    # and a placeholder that keeps it from parsing until the SRE fills in the rest
    (blind,) = advise(given, find_metadata_log=False)
    for c in blind.candidates:
        lines = blind.commands(broker=c.broker)
        (plan,) = _plans(lines)
        assert "<every other replica of adv-0>" in plan
        with pytest.raises(ValueError):
            json.loads(plan)
        assert any("replica set of adv-0 is unknown" in line for line in lines)


def test_equal_epochs_with_different_data_are_a_conflict_not_a_tie(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    _simulate(a, CONFLICT.replace("VALUES", "v0, v1, v2"))
    _simulate(b, CONFLICT.replace("VALUES", "v0, X1, v2"))
    one, two = _disk(a / "broker-1")[("adv", 0)], _disk(b / "broker-2")[("adv", 0)]
    # the oracle: same offsets and epochs, one value differs
    assert {o: e for o, (e, _k, _v) in one.items()} == {o: e for o, (e, _k, _v) in two.items()}
    differ = {(o, one[o][0]) for o in one if one[o][2] != two[o][2]}
    assert differ == {(1, 0)}
    dirs = [str(a / "broker-1"), str(b / "broker-2"), "--metadata-log", str(a / "controller")]
    compared = CliRunner().invoke(cli, ["compare", *dirs, "--no-spark"])
    assert "LOG_MATCHING_VIOLATION" in compared.output, compared.output
    result, doc = _advise_cli(dirs, tmp_path)
    assert result.exit_code == 1, result.output
    (adv,) = doc
    assert adv["verdict"] == LOST and "conflict: replicas hold different records" in result.output
    for c in adv["candidates"]:
        lost = {(r["offset"], r["leader_epoch"]): r for r in c["lost_records"]}
        assert set(lost) == differ
        assert all(r["conflict"] and r["broker"] != c["broker"] for r in lost.values())
        assert c["lost"]["conflict"] == 1 and c["lost"]["total"] == 1


SEEDS = range(300, 340)


def test_degraded_random_evidence_is_never_falsely_safe(tmp_path):
    """Random fault schedules on the model; each run's evidence degraded: every broker dir,
    each broker dir dropped in turn, no metadata log. Counted: no "safe" without every
    replica; a "safe" one checked against the disks and the producers' acks; every lost
    record advise names is on the disk it names and not the candidate's; every missing
    broker named is really missing."""
    counts = {SAFE: 0, LOST: 0, CANNOT_TELL: 0}
    newer_than_dir: set = set()
    for seed in SEEDS:
        scenario = random_scenario(seed)
        scenario["cluster"]["metadata_log"] = True
        root = tmp_path / f"s{seed}"
        result = run(scenario, str(root))
        brokers = sorted(int(p.name.split("-")[1]) for p in root.glob("broker-*"))
        disks = {b: _disk(root / f"broker-{b}") for b in brokers}
        acked: dict = {}
        for x in result.acks:
            if x.get("ok") and x.get("offset") is not None:
                acked.setdefault((x["topic"], x["partition"]), set()).add((x["offset"], x["leader_epoch"]))
        sets = [(brokers, True)] + [([b for b in brokers if b != d], True) for d in brokers] + [(brokers, False)]
        for given, with_metadata in sets:
            if not any(disks[b] for b in given):
                continue     # no replica left: unusable input (exit 2), not an answer
            out = advise([root / f"broker-{b}" for b in given], acks_path=root / "acks.jsonl",
                         metadata_log=root / "controller" if with_metadata else None,
                         find_metadata_log=False)
            for adv in out:
                tp = (adv.topic, adv.partition)
                truth = result.truth[f"{adv.topic}-{adv.partition}"]
                holders = [b for b in truth["assignment"] if b not in given and tp in disks[b]]
                counts[adv.verdict] += 1
                where = (seed, given, with_metadata, tp)
                if not with_metadata or holders:
                    assert adv.verdict != SAFE, where
                for m in adv.missing:
                    assert (m.broker is None) is (not with_metadata), where
                    if m.broker in given:
                        # a final dir not knowing an epoch its broker led: here always a
                        # power loss (the runs' dirs are final, not early copies), which the
                        # disk cannot tell from an early copy; counted, never a "safe"
                        assert m.role == "given dir behind the metadata log", (where, m)
                        newer_than_dir.add((seed, m.broker, tp))
                    else:
                        assert m.broker is None or m.broker in truth["assignment"], (where, m)
                best = adv.candidates[0]
                mine = disks[best.broker][tp]
                start = min(mine, default=0)
                if adv.verdict == SAFE:
                    for b in given:
                        theirs = disks[b].get(tp, {})
                        assert all(mine.get(o) == rec for o, rec in theirs.items() if o >= start), where
                    assert all(o < start or (o in mine and mine[o][0] == e)
                               for o, e in acked.get(tp, ())), where
                for c in adv.candidates:
                    held = disks[c.broker][tp]
                    for r in c.lost:
                        assert r.broker is not None
                        rec = disks[r.broker][tp][r.offset]
                        assert rec[0] == r.leader_epoch, where
                        assert held.get(r.offset) != rec, where
                    for r in c.lost_from_acks:
                        assert (r.offset, r.leader_epoch) in acked[tp], where
                        assert not any(disks[b].get(tp, {}).get(r.offset, (None,))[0] == r.leader_epoch
                                       for b in given), where
    # the runs exercised all three answers
    assert all(counts.values()), counts
    print("advise verdicts over the degraded sets:", counts,
          "; (seed, broker, partition) whose final dir lacks an epoch it led:", len(newer_than_dir))
    assert sum(counts.values()) > 500, counts
