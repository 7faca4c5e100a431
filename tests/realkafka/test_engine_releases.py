"""The real engine tells each scenario's story on the current Kafka releases (issue 22): time
as the scenario says, the release's own default features, and the same leaders, epochs,
ISR/ELR changes and election kinds as the model run with those features.

S24-elr-clean-election names no features: Kafka 4.1 and later format it with eligible leader
replicas on (kafka-storage version-mapping of the release; that story is test_engine_elr.py),
4.0 with them off (here: the partition stays offline). S1-lagging-follower needs time: the
paused follower leaves the ISR only after replica.lag.time.max.ms (scaled from the scenario's
30 s)."""

from __future__ import annotations

import pytest
from cluster_fixtures import SCENARIOS, lost_view, run_both
from cluster_fixtures import story_checks as _story_checks

pytestmark = pytest.mark.realkafka

ELR = "eligible.leader.replicas.version"


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
