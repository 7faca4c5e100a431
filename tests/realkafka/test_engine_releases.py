"""The real engine tells each scenario's story on the current Kafka releases (issue 22): time
as the scenario says, the release's own default features, and the same leaders, epochs,
ISR/ELR changes and election kinds as the model run with those features.

S24-elr-clean-election names no features: Kafka 4.1 and later format it with eligible leader
replicas on (kafka-storage version-mapping of the release), 4.0 with them off. With ELR the
ISR empties when the last leader stops and broker 2 is elected from the ELR when it returns: a
clean election that `compare` (the controller's log) and `advise` (the offline snapshot) see
as such. S1-lagging-follower needs time: the paused follower leaves the ISR only after
replica.lag.time.max.ms (scaled from the scenario's 30 s)."""

from __future__ import annotations

import pytest
from cluster_fixtures import SCENARIOS, lost_view, run_both, run_log

pytestmark = pytest.mark.realkafka

ELR = "eligible.leader.replicas.version"


def _story_checks(real_dir):
    log = run_log(real_dir)
    assert [w for w in log["waits"] if w["reached"] is False] == []
    assert log["drift"] == [] and log["allow_drift"] is False
    assert log["story"]["differences"] == []
    assert log["story"]["model"] == log["story"]["cluster"] or all(
        [(c["epoch"], c["leader"], c["isr"], c["elr"], c["election"]) for c in log["story"]["model"][k]]
        == [(c["epoch"], c["leader"], c["isr"], c["elr"], c["election"]) for c in log["story"]["cluster"][k]]
        for k in log["story"]["model"])
    return log


# 4.3.1 has the same ELR default as 4.4.0: `long` (pytest -m long) keeps the suite in budget
@pytest.mark.parametrize("release", [pytest.param("4.3.1", marks=pytest.mark.long), "4.4.0"])
def test_elr_clean_election_with_the_releases_defaults(tmp_path, release):
    from segtools.advise import advise
    from segtools.forensics.elections import load_histories

    real, model, real_dir = run_both(SCENARIOS / "S24-elr-clean-election.yaml", tmp_path, kafka_version=release)
    log = _story_checks(real_dir)
    assert log["kafka_version"] == release
    assert log["format_features"] == {}          # nothing forced: the release's defaults
    assert log["features"][ELR] == 1
    story = log["story"]["cluster"]["orders-0"]
    assert [(c["leader"], c["election"]) for c in story if c["election"]] == \
        [(1, "initial"), (None, "offline"), (2, "elr")]
    # compare's reading of the real controller log: the election of broker 2 is clean (elr)
    hist = load_histories(real_dir / "controller")[("orders", 0)]
    assert hist.leader == 2 and hist.election_class(hist.leader_epoch) == "elr"
    assert not hist.elections[hist.leader_epoch].unclean
    # advise, asked while the partition was offline: broker 2 is a clean choice (in the ELR)
    adv = [a for a in advise([real_dir / "snapshots" / "before-return"], acks_path=real_dir / "acks.jsonl")
           if a.topic == "orders"]
    assert len(adv) == 1 and adv[0].state is not None
    assert adv[0].state.leader is None and adv[0].state.isr == () and 2 in adv[0].state.elr
    assert adv[0].state.election_for(2) == "clean" and adv[0].state.election_for(3) == "unclean"
    # nothing committed is lost, and the model (ELR on, as the cluster) loses the same
    assert [x for x in real["orders-0"]["lost"] if x["committed"]] == []
    assert lost_view(real) == lost_view(model)
    assert real["orders-0"]["leader"] == model["orders-0"]["leader"] == 2


def test_kafka_40_formats_without_elr_and_the_partition_stays_offline(tmp_path):
    real, model, real_dir = run_both(SCENARIOS / "S24-elr-clean-election.yaml", tmp_path, kafka_version="4.0.0")
    log = _story_checks(real_dir)
    assert log["features"][ELR] == 0
    assert real["orders-0"]["leader"] is None and model["orders-0"]["leader"] is None
    assert [(c["leader"], c["election"]) for c in log["story"]["cluster"]["orders-0"] if c["election"]] == \
        [(1, "initial"), (None, "offline")]


def test_paused_follower_leaves_the_isr_after_the_scaled_lag(tmp_path):
    real, model, real_dir = run_both(SCENARIOS / "S1-lagging-follower.yaml", tmp_path, kafka_version="4.4.0")
    log = _story_checks(real_dir)
    # 30 s of scenario lag at the default scale is REPLICA_LAG_TIME_MAX_MS of real time; the
    # produce after the pause waited (acks=all) until the shrink, no longer than the lag + a check
    assert log["replica_lag_time_max_ms"] == 3500
    produce = next(t for t in log["timings"] if t["step"] == 3)
    assert 3.0 <= produce["seconds"] <= 3.5 * 1.5 + 3
    assert real["orders-0"]["isr"] == model["orders-0"]["isr"] == [1, 2]
    assert lost_view(real) == lost_view(model)


def test_acks_all_sends_time_out_before_the_lag_as_the_scenario_says(tmp_path):
    """S9: request_timeout_ms 1 s against a 30 s lag. The sends to a leader whose followers are
    paused time out (never acknowledged) and the followers stay in the ISR; the crash of the
    leader then elects broker 2 cleanly and the leader's unreplicated tail is lost as
    UNCOMMITTED, not by an unclean election."""
    real, model, real_dir = run_both(SCENARIOS / "S9-acks-all-uncommitted-tail.yaml", tmp_path,
                                     kafka_version="4.3.1")
    _story_checks(real_dir)
    lost = real["orders-0"]["lost"]
    assert lost and {(x["acked"], x["cause"]) for x in lost} == {(False, "UNCOMMITTED")}
    assert [e["unclean"] for e in real["orders-0"]["elections"]] == [False, False]
    assert lost_view(real) == lost_view(model)
