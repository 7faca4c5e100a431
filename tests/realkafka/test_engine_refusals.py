"""`simulate --engine kafka` refuses, before any JVM starts, what a real cluster cannot do,
with an error naming the step (exit 2); and the scenario key for Kafka's features."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from cluster_fixtures import SCENARIOS, java_processes_of

from segtools.cli.main import cli
from segtools.errors import ScenarioError
from segtools.realcluster import check_supported
from segtools.simulate import load_scenario, parse_scenario, run

# which sample scenarios a real Kafka 4.3 cluster can run, and why the others cannot
REFUSED = {
    "S0-healthy-baseline": "steps[1] (elect)",          # elect a given broker
    "S11a-follower-power-loss": "steps[4] (crash)",     # lose_unflushed (its flush is accepted)
    "S11b-last-replica-standing": "steps[5] (crash)",   # lose_unflushed
    "S12-empty-disk-leader": "steps[2] (crash)",        # wipe_disk
    "S17-torn-tail": "steps[3] (crash)",                # lose_unflushed
    "S2-kip101-hw-truncation": "cluster.truncation",
    "S2-kip101-leader-epoch": "steps[4] (restart)",     # bounce of a running broker
    "S3-kip101-divergent-logs": "cluster.truncation",
    "S3-kip101-leader-epoch": "steps[5] (crash)",       # lose_unflushed
    "S5-kip101-only-epoch-regression": "cluster.truncation",
    "S6-kafka7164-missed-truncation": "cluster.truncation",
    "S6-leader-epoch-no-missed-truncation": "steps[3] (elect)",
}


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_sample_is_runnable_or_refused_with_its_step(path):
    scenario = load_scenario(path)
    if path.stem in REFUSED:
        with pytest.raises(ScenarioError) as exc:
            check_supported(scenario)
        assert str(exc.value).startswith(REFUSED[path.stem]), str(exc.value)
        assert "--engine model" in str(exc.value)
    else:
        check_supported(scenario)


def test_refused_before_any_jvm_starts(tmp_path):
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["simulate", str(SCENARIOS / "S11b-last-replica-standing.yaml"),
                                    "--engine", "kafka", "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert "steps[5] (crash)" in res.output and "lose_unflushed" in res.output
    assert "Traceback" not in res.output
    assert not out.exists()
    assert java_processes_of(out) == []


def test_kafka_home_needs_the_kafka_engine(tmp_path):
    res = CliRunner().invoke(cli, ["simulate", str(SCENARIOS / "a-preferred-leader-return.yaml"),
                                    "--kafka-home", str(tmp_path), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "--engine kafka" in res.output


def test_kafka_home_that_is_not_a_distribution_is_a_usage_error(tmp_path):
    res = CliRunner().invoke(cli, ["simulate", str(SCENARIOS / "a-preferred-leader-return.yaml"),
                                    "--engine", "kafka", "--kafka-home", str(tmp_path),
                                    "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "libs/*.jar" in res.output and "Traceback" not in res.output


def _base(**cluster):
    return {"cluster": {"brokers": [1, 2], **cluster},
            "topics": [{"name": "t", "replication_factor": 2}],
            "steps": [{"produce": {"topic": "t", "values": ["a"]}}]}


def test_kafka_features_key():
    s = parse_scenario(_base(kafka_features={"eligible_leader_replicas": True, "transaction_version": 1}))
    assert dict(s.cluster.kafka_features) == {"eligible.leader.replicas.version": 1,
                                              "transaction.version": 1}
    # ELR is off unless asked for (the model elects without it)
    assert dict(parse_scenario(_base()).cluster.kafka_features) == {"eligible.leader.replicas.version": 0}
    with pytest.raises(ScenarioError, match="cluster.kafka_features"):
        parse_scenario(_base(kafka_features={"metadata_version": 3}))
    with pytest.raises(ScenarioError, match="transaction_version"):
        parse_scenario(_base(kafka_features={"transaction_version": 7}))
    # the model implements KIP-966 (forensics4x): it runs, and writes the feature levels
    result = run(s, None)
    assert result.cluster.controller.elr_enabled


def test_forced_virtual_clock_is_refused():
    with pytest.raises(ScenarioError, match="start_time_ms"):
        check_supported(parse_scenario(_base(start_time_ms=5)))


def test_producers_transactions_flush_in_flight_and_resend_are_accepted():
    base = {"cluster": {"brokers": [1, 2]},
            "topics": [{"name": "t", "replication_factor": 2}],
            "producers": [{"name": "tx", "transactional_id": "tx-1"}, {"name": "i", "idempotent": True}]}
    check_supported(parse_scenario({**base, "steps": [
        {"begin_transaction": {"producer": "tx"}},
        {"produce": {"topic": "t", "values": ["a"], "producer": "tx"}},
        {"abort_transaction": {"producer": "tx"}},
        {"produce": {"topic": "t", "values": ["b"], "producer": "i"}},
        {"produce": {"topic": "t", "values": ["c"], "producer": "i", "in_flight": True}},
        {"produce": {"topic": "t", "values": ["d"], "in_flight": True}},
        {"flush": {"broker": 1}},
        {"resend": {"producer": "i"}},
        {"resend": {}},
        {"commit_transaction": {"producer": "tx"}}]}))
