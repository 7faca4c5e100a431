"""The differential soundness harness (issue 21) in CI: a bounded sample of scenarios x
degradations, compare and advise checked against the simulator's truth; the long run is
benchmarks/soundness.py (--cases 2000).

The harness itself is checked first (the degradations remove what they claim, the checker flags
answers planted against the truth), so the sample's verdict is worth something."""

from __future__ import annotations

import os
from collections import Counter

import pytest
from fuzz_budget import examples
from soundness_check import (
    VIOLATIONS,
    Answer,
    Outcome,
    advise_answer,
    check_compare,
    compare_answer,
    justified,
    log_starts,
    run_scenario,
)
from soundness_degrade import (
    EPOCH_CKPT,
    HW_CKPT,
    KINDS,
    LOG_START_CKPT,
    _segment_bases,
    aborted_values,
    degrade,
    sample_scenarios,
    scenarios,
)

import segtools
from segtools.files.checkpoints import read_offset_checkpoint

# the CI sample: three sample scenarios (unclean return of a stale replica, an empty disk
# elected, a power loss of the last replica) and three random ones (0: an offline partition
# whose last leader's dir matters to advise; 1: the stale-replica-truncated case;
# 19: a dropped last leader's records reported lost)
SAMPLE_NAMES = ("b-unclean-stale-return", "S12-empty-disk-leader", "S11b-last-replica-standing")
RANDOM_SEEDS = (0, 1, 19)


def _sample() -> list[tuple[str, dict]]:
    chosen = [(n, sc) for n, sc in sample_scenarios() if n in SAMPLE_NAMES]
    assert len(chosen) == len(SAMPLE_NAMES)
    randoms = dict(scenarios(max(RANDOM_SEEDS) + 1, samples=False))
    return chosen + [(f"random-{s}", randoms[f"random-{s}"]) for s in RANDOM_SEEDS]


@pytest.fixture(scope="module")
def sample_outcomes(tmp_path_factory) -> list[Outcome]:
    outs: list[Outcome] = []
    for name, sc in _sample():
        outs += run_scenario(name, sc, str(tmp_path_factory.mktemp(name)))
    return outs


def _violations(outcomes: list[Outcome], what: str) -> list[str]:
    return [d for o in outcomes for d in o.details if f": {what}: " in d]


# -- the harness itself --------------------------------------------------------------------------

def _files(root: str) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), root) for d, _s, fs in os.walk(root) for f in fs}


def test_degradations_remove_what_they_claim(tmp_path):
    name, sc = next((n, s) for n, s in sample_scenarios() if n == "b-unclean-stale-return")
    sets = {ev.kind: ev for ev in degrade(name, sc, str(tmp_path))}
    assert set(sets) == set(KINDS)        # this scenario admits every degradation
    base = str(tmp_path / "base")
    base_files = _files(base)
    assert _files(sets["full"].root) == base_files and sets["full"].missing == ()
    for kind in ("drop_last_leader", "drop_holder"):
        ev = sets[kind]
        (victim,) = [int(m.split(":")[1]) for m in ev.missing]
        assert not os.path.exists(os.path.join(ev.root, f"broker-{victim}"))
        assert set(ev.brokers) == {1, 2, 3} - {victim}
    # truth: broker 3 leads everything at the end, the stale brokers 1 and 2 hold the lost records
    assert sets["drop_last_leader"].missing == ("log_dir:3",)
    assert sets["drop_holder"].missing[0] in ("log_dir:1", "log_dir:2")
    bare = sets["bare"]
    assert bare.missing == ("log_dir:3", "acks", "metadata_log")
    assert set(bare.brokers) == {1, 2} and bare.acks is None and bare.metadata_log is None
    assert sets["no_acks"].acks is None and not os.path.exists(os.path.join(sets["no_acks"].root, "acks.jsonl"))
    assert sets["no_metadata_log"].metadata_log is None and sets["full"].metadata_log is not None
    assert not os.path.exists(os.path.join(sets["no_metadata_log"].root, "controller"))
    gone = {f for f in base_files if os.path.basename(f) in (HW_CKPT, EPOCH_CKPT) and f.startswith("broker-")}
    assert gone and _files(sets["no_checkpoints"].root) == base_files - gone
    # stale: no high watermark above the written one, some below it
    lower = 0
    for b in (1, 2, 3):
        old = read_offset_checkpoint(os.path.join(base, f"broker-{b}", HW_CKPT)).entries
        new = read_offset_checkpoint(os.path.join(sets["stale_checkpoints"].root, f"broker-{b}", HW_CKPT)).entries
        assert set(old) == set(new) and all(new[k] <= old[k] for k in old)
        lower += sum(new[k] < old[k] for k in old)
    assert lower > 0
    # retention: the oldest segment gone, the log start checkpoint at the next one
    ev = sets["retention"]
    for token in ev.missing:
        _, b, pname, start = token.split(":")
        pdir = os.path.join(ev.root, f"broker-{b}", pname)
        assert _segment_bases(pdir)[0] == int(start) > 0
        topic, _, part = pname.rpartition("-")
        assert read_offset_checkpoint(os.path.join(ev.root, f"broker-{b}", LOG_START_CKPT)).entries[
            (topic, int(part))] == int(start)
        assert _segment_bases(os.path.join(base, f"broker-{b}", pname))[0] < int(start)
    # after a restart: the stale brokers came back, their truth is the later run's
    ev = sets["after_restart"]
    assert ev.missing == ("pre_restart_log_dir:1", "pre_restart_log_dir:2")
    assert all(r["alive"] for p in ev.truth.values() for r in p["replicas"].values())
    assert not all(r["alive"] for p in sets["full"].truth.values() for r in p["replicas"].values())


class _Planted:
    def __init__(self, report: dict, exit_code: int) -> None:
        self._report, self.exit_code = report, exit_code

    def report_json(self) -> dict:
        return self._report


def test_checker_flags_planted_answers(tmp_path, monkeypatch):
    """Answers planted against the truth: an all-clear over acked loss, a survivor called lost,
    a 'cannot tell' naming evidence the set has; and a justified 'cannot tell' passes."""
    name, sc = next((n, s) for n, s in sample_scenarios() if n == "b-unclean-stale-return")
    sets = {ev.kind: ev for ev in degrade(name, sc, str(tmp_path), ("full", "drop_last_leader"))}
    full = sets["full"]
    acked_lost = [r for p in full.truth.values() for r in p["lost"] if r["acked"]]
    assert acked_lost                                   # the truth the plants are judged by
    p0 = next(iter(full.truth.values()))

    def plant(report: dict, code: int) -> Outcome:
        monkeypatch.setattr(segtools, "compare", lambda *_a, **_k: _Planted(report, code))
        out = Outcome("planted", name)
        check_compare(full, out, log_starts(full))
        return out

    clean = plant({"summary": {"verdict": "CLEAN"}, "partitions": []}, 0)
    assert clean.violations["false_all_clear"] == 1
    survivor = plant({"summary": {"verdict": "COMMITTED_LOSS"}, "partitions": [
        {"topic": p0["topic"], "partition": p0["partition"],
         "lost_records": [{"broker": 3, "offset": 0, "leader_epoch": 0}]}]}, 1)
    assert survivor.violations["false_loss"] == 1 and survivor.violations["false_all_clear"] == 0
    wrong = plant({"summary": {"verdict": {"value": "cannot_tell", "missing": ["acks"]}}, "partitions": []}, 1)
    assert wrong.violations["unjustified_cannot_tell"] == 1
    unnamed = plant({"summary": {"verdict": "cannot_tell"}, "partitions": []}, 1)
    assert unnamed.violations["unjustified_cannot_tell"] == 1
    dropped = sets["drop_last_leader"]
    starts = log_starts(dropped)
    assert justified(dropped, {"evidence": "log_dir", "broker": 3}, starts) is True
    assert justified(dropped, "the log dir of broker 1", starts) is False
    assert justified(dropped, "metadata log", starts) is False
    assert justified(sets["full"], {"evidence": "acks"}, starts) is False


def test_adapters_read_today_and_intended_verdicts():
    assert compare_answer({"summary": {"verdict": "CLEAN"}}, 0) == Answer("safe")
    assert compare_answer({"summary": {"verdict": "PROBLEMS"}}, 1) == Answer("problems")
    assert compare_answer({"summary": {"verdict": "COMMITTED_LOSS"}}, 1) == Answer("lost")
    assert compare_answer({"summary": {"verdict": "cannot_tell", "missing_evidence": ["acks"]}}, 1) == \
        Answer("cannot_tell", ["acks"])
    assert compare_answer({"summary": {"verdict": "cannot_tell"}}, 0).verdict == "safe"   # exit 0 is all-clear
    assert advise_answer({"candidates": [{"lost": {"total": 0}}]}, 0).verdict == "safe"
    assert advise_answer({"candidates": [{"lost": {"total": 2}}]}, 1).verdict == "lost"
    assert advise_answer({"verdict": {"value": "cannot_tell", "missing": [{"log_dir": 1}]},
                          "candidates": [{"lost": {"total": 0}}]}, 1) == Answer("cannot_tell", [{"log_dir": 1}])


# -- the sample ----------------------------------------------------------------------------------

def test_sample_reaches_every_degradation_without_tracebacks(sample_outcomes):
    kinds = Counter(o.kind for o in sample_outcomes)
    assert set(kinds) == set(KINDS), kinds
    assert sum(o.cases for o in sample_outcomes) >= 50
    assert any(o.answers.get("advise:safe", 0) + o.answers.get("advise:lost", 0)
               + o.answers.get("advise:cannot_tell", 0) for o in sample_outcomes)   # advise ran
    assert not _violations(sample_outcomes, "crash")
    assert not _violations(sample_outcomes, "unjustified_cannot_tell")


def test_sample_no_false_loss(sample_outcomes):
    assert _violations(sample_outcomes, "false_loss") == []


def test_sample_no_false_all_clear(sample_outcomes):
    assert _violations(sample_outcomes, "false_all_clear") == []


@pytest.mark.slow
def test_random_scenarios_sound(tmp_path):
    """10 random scenarios (about 75 evidence sets; SEGTOOLS_FUZZ_SCALE multiplies them, and
    benchmarks/soundness.py runs 2,000 sets): no violation of any kind."""
    outs: list[Outcome] = []
    for name, sc in scenarios(examples(10), first_seed=100, samples=False):
        outs += run_scenario(name, sc, str(tmp_path / name))
    found = {k: _violations(outs, k) for k in VIOLATIONS}
    assert {k: v for k, v in found.items() if v} == {}


def test_missing_evidence_is_read_by_kind(tmp_path):
    name, sc = next((n, s) for n, s in sample_scenarios() if n == "b-unclean-stale-return")
    (bare,) = degrade(name, sc, str(tmp_path), ("bare",))
    starts = log_starts(bare)
    # broker 3's log dir, the acks and the metadata log are missing; brokers 1 and 2 are there
    assert justified(bare, "the last ISR member's log dir (broker 3; the metadata log's ISR)", starts) is True
    assert justified(bare, {"kind": "log_dir", "broker": 2}, starts) is False
    assert justified(bare, {"evidence": "acks"}, starts) is True
    assert justified(bare, "metadata log", starts) is True
    assert justified(bare, "segments below the log start of broker 1", starts) is False
    assert justified(bare, "a crystal ball", starts) is None


def test_aborted_transactions_are_read_from_the_scenario():
    steps = [{"begin_transaction": {"producer": "tx"}},
             {"produce": {"topic": "t0", "producer": "tx", "values": ["v1", "v2"]}},
             {"abort_transaction": {"producer": "tx"}},
             {"begin_transaction": {"producer": "tx"}},
             {"produce": {"topic": "t0", "producer": "tx", "values": ["v3"]}},
             {"commit_transaction": {"producer": "tx"}},
             {"produce": {"topic": "t0", "values": ["v4"]}}]
    assert aborted_values({"steps": steps}) == {("t0", "v1"), ("t0", "v2")}


def test_real_engine_kinds_remove_what_they_claim(tmp_path):
    """The kinds the real sample uses (real_kinds), on the model run of the same story: a pair
    removes both parts, a topic set holds that topic's dirs and truth only, and retention on
    one-segment logs (a real broker's) cuts each at its second batch, moving the log-start and
    leader-epoch checkpoints there."""
    import yaml
    from soundness_degrade import real_kinds

    from segtools.files.checkpoints import read_leader_epoch_checkpoint
    from tests.forensics.test_answers import SOLE_ISR_WITHIN_EPOCH

    sc = yaml.safe_load(SOLE_ISR_WITHIN_EPOCH)
    sc["cluster"]["brokers"] = [1, 2, 3]
    sc["topics"].append({"name": "u", "replication_factor": 1, "assignment": {0: [3]}})
    sc["steps"].insert(0, {"produce": {"topic": "u", "partition": 0, "acks": "all", "values": ["u0", "u1"]}})
    kinds = real_kinds("u", "t")
    sets = {ev.kind: ev for ev in degrade("real-kinds", sc, str(tmp_path),
                                          ("full", "no_acks+retention", "no_metadata_log+no_acks", "topic:u",
                                           "topic:u+drop_last_leader"))}
    assert len(kinds) >= 30 and {"no_metadata_log+no_acks", "topic:u", "retention"} <= set(kinds)
    both = sets["no_metadata_log+no_acks"]
    assert both.acks is None and both.metadata_log is None and set(both.missing) == {"acks", "metadata_log"}
    only_u = sets["topic:u"]
    assert set(only_u.truth) == {"u-0"}
    assert {os.path.basename(p) for d in only_u.broker_dirs for p in _partition_dirs_of(d)} == {"u-0"}
    assert "topic:u+drop_last_leader" not in sets          # u's only replica dropped: no evidence left
    # retention (in a pair: alone, the model's kind deletes whole segments only): the logs here
    # are one segment each, like a real broker's
    full, cut = sets["full"], sets["no_acks+retention"]
    assert [m for m in cut.missing if m.startswith("segments_below:")]
    for b in (1, 2):          # t's replicas (u's on broker 3 holds one batch: nothing to cut)
        pdir = os.path.join(cut.root, f"broker-{b}", "t-0")
        orig = os.path.join(full.root, f"broker-{b}", "t-0")
        (base,) = _segment_bases(orig)
        batches = _base_offsets(os.path.join(orig, f"{base:020d}.log"))
        (new_base,) = _segment_bases(pdir)
        assert new_base == batches[1]               # the first batch is gone
        start = read_offset_checkpoint(os.path.join(cut.root, f"broker-{b}", LOG_START_CKPT)).entries
        assert start[("t", 0)] == new_base
        epochs = read_leader_epoch_checkpoint(os.path.join(pdir, EPOCH_CKPT))
        assert epochs[0].start_offset == new_base
        assert _base_offsets(os.path.join(pdir, f"{new_base:020d}.log")) == batches[1:]


def _partition_dirs_of(broker_dir: str) -> list[str]:
    return [os.path.join(broker_dir, n) for n in os.listdir(broker_dir) if os.path.isdir(os.path.join(broker_dir, n))]


def _base_offsets(segment: str) -> list[int]:
    """Base offsets of a segment's batches, read by kafka-python (not segtools' reader)."""
    from kafka.record import MemoryRecords

    with open(segment, "rb") as fh:
        records = MemoryRecords(fh.read())
    out = []
    while (b := records.next_batch()) is not None:
        out.append(b.base_offset)
    return out
