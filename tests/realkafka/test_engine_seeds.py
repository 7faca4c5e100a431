"""Issue 10 section 2 on a real KRaft cluster (`simulate --engine kafka`): the three seeds.
For each, truth.json comes from the real cluster (producer callbacks, the real kafka-dump-log,
the controller's metadata log); `compare` (in process, no Spark) over the real dirs must find
exactly the records the real cluster lost, and the model must lose the same records with the
same statuses and causes."""

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

from segtools.simulate import load_scenario

pytestmark = pytest.mark.realkafka


def _common(real, model, real_dir):
    log = run_log(real_dir)
    # every step reached the leaders and ISRs the model implies (polled, not slept)
    # (None: no broker was running to ask)
    assert [w for w in log["waits"] if w["reached"] is False] == []
    assert lost_view(real) == lost_view(model)
    for key in real:
        assert (real[key]["leader"], real[key]["leader_epoch"], sorted(real[key]["isr"])) == \
            (model[key]["leader"], model[key]["leader_epoch"], sorted(model[key]["isr"])), key
    report = compare_dir(real_dir, real_dir / "acks.jsonl", metadata=real_dir / "controller")
    only_scenario = {k: v for k, v in real.items()}
    assert check_against_truth(report, only_scenario, disk_records_by_replica(real_dir),
                               with_metadata=True) == []
    return report


def test_seed_a_preferred_leader_returns_nothing_lost(tmp_path):
    real, model, real_dir = run_both(SCENARIOS / "a-preferred-leader-return.yaml", tmp_path)
    report = _common(real, model, real_dir)
    acks = (real_dir / "acks.jsonl").read_text().splitlines()
    assert len(acks) == 12 and all('"ok": true' in a for a in acks)
    assert all(v["lost"] == [] for v in real.values())
    # the failed broker came back and the preferred election restored partition 1 to it
    assert real["events-1"]["leader"] == 2
    assert [e["leader"] for e in real["events-1"]["elections"]] == [2, 1, 2]
    assert {s for (tp, _), (s, _) in verdicts(report).items() if tp.startswith("events")} <= \
        {"CONSISTENT", "LAGGING_PREFIX"}


def test_seed_c_unclean_stale_return_loses_what_came_after(tmp_path):
    real, model, real_dir = run_both(SCENARIOS / "b-unclean-stale-return.yaml", tmp_path)
    report = _common(real, model, real_dir)
    v = verdicts(report)
    for p in range(3):
        key = f"p3r3-{p}"
        assert real[key]["leader"] == 3
        assert real[key]["elections"][-1]["unclean"] is True
        assert real[key]["lost"], key
        assert {x["cause"] for x in real[key]["lost"]} == {"UNCLEAN_ELECTION"}
        # what broker 3 missed after it left is what is lost
        first_missed = real[key]["replicas"]["3"]["log_end_offset"]
        assert all(x["offset"] >= min(first_missed, x["offset"]) for x in real[key]["lost"])
        for b in (1, 2):
            assert v[(key, b)] == ("COMMITTED_LOSS", "UNCLEAN_ELECTION")


@pytest.mark.long  # 6-7 min on 2 shared cores; tests/realkafka/engine_matrix.py runs it on every release
def test_seed_b_durability_matrix(tmp_path):
    """Three times: the followers paused, the leader crashes (fenced at once, as the model
    says: cluster.crash), the followers resume, broker 1 returns. The run stops with a
    DriftError on any step whose state the cluster did not reach and on any difference
    between the two stories (no --allow-drift here)."""
    real, model, real_dir = run_both(SCENARIOS / "real-durability-matrix.yaml", tmp_path)
    _common(real, model, real_dir)
    log = run_log(real_dir)
    assert log["drift"] == [] and log["story"]["differences"] == []
    # each of the three crashes fenced by the controller at the engine's request, at once
    assert [(f["step"], f["broker"], f["error"]) for f in log["fencings"]] == \
        [(st.index, 1, None) for st in load_scenario(SCENARIOS / "real-durability-matrix.yaml").steps
         if st.kind == "crash"]
    assert all(f["seconds"] < 10 for f in log["fencings"])
    acked_lost = {k: [x for x in v["lost"] if x["acked"]] for k, v in real.items()}
    for key, lost in real.items():
        acks = key.split("-")[0]
        if acks == "acksall":
            assert acked_lost[key] == [], key       # acks=all: nothing acknowledged is lost
            if key.endswith("-min1-0"):             # (a min 2 cell may lose one it never acked)
                assert lost["lost"] == [], key
        elif acks == "acks1":
            assert [x["value"][-1] for x in acked_lost[key]] == ["2", "3"], key
            assert {x["cause"] for x in acked_lost[key]} == {"LEADER_CRASH_ACKS_1"}
        else:
            assert acked_lost[key] == [] and len(lost["lost"]) == 2, key
    # the snapshots taken before broker 1 returned show its divergent tail to compare
    for acks in ("0", "1", "all"):
        snap = real_dir / "snapshots" / f"acks{acks}-before-restart"
        report = compare_dir(snap, real_dir / "acks.jsonl", metadata=None)
        assert check_against_truth(report, real, disk_records_by_replica(snap),
                                   with_metadata=False, final_state=False) == []
        diverged = {tp for (tp, b), (s, _) in verdicts(report).items() if s == "DIVERGED_UNCOMMITTED"}
        # broker 1's tail that truth.json calls lost (for acks=all: a min 2 cell's unacked send)
        expected = {k for k in real if k.startswith(f"acks{acks}-") and real[k]["lost"]}
        assert diverged == expected

