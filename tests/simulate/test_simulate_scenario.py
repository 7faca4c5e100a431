"""Scenario parsing and validation (CONTRACT.md section 3)."""

from __future__ import annotations

import random

import pytest

from segtools.errors import ScenarioError, SegtoolsError
from segtools.simulate import load_scenario, parse_scenario, random_scenario
from segtools.simulate.scenario import default_assignment

BASE = {
    "name": "t", "seed": 1,
    "cluster": {"brokers": [1, 2, 3]},
    "topics": [{"name": "orders", "partitions": 2, "replication_factor": 3}],
    "steps": [],
}


def with_steps(*steps):
    return {**BASE, "steps": list(steps)}


def test_defaults_follow_kafka():
    sc = parse_scenario(BASE)
    assert sc.cluster.truncation == "leader-epoch"
    assert sc.cluster.replica_lag_time_max_ms == 30000  # KIP-537 default since 2.5
    assert sc.cluster.high_watermark_checkpoint_interval_ms == 5000
    t = sc.topics[0]
    assert t.min_insync_replicas == 1 and t.unclean_leader_election is False
    assert all(sorted(r) == [1, 2, 3] for r in t.assignment.values())


class FixedStart(random.Random):
    """startIndex = nextReplicaShift = 0, as in the example of AdminUtils' documentation."""

    def randrange(self, *args, **kw):
        return 0


def test_default_assignment_matches_kafka_documentation_example():
    # AdminUtils.assignReplicasToBrokers doc: 5 brokers, 10 partitions, RF 3, fixed start 0
    got = default_assignment((0, 1, 2, 3, 4), 10, 3, FixedStart())
    assert got[0] == (0, 1, 2)
    assert got[4] == (4, 0, 1)
    assert got[5] == (0, 2, 3)
    assert got[9] == (4, 1, 2)


@pytest.mark.parametrize("data, where", [
    ({**BASE, "cluster": {"brokers": []}}, "cluster.brokers"),
    ({**BASE, "cluster": {"brokers": [1, 1]}}, "cluster.brokers"),
    ({**BASE, "cluster": {"brokers": [1], "truncation": "zk"}}, "cluster.truncation"),
    ({**BASE, "cluster": {"brokers": [1], "bogus": 1}}, "bogus"),
    ({**BASE, "topics": [{"name": "a", "replication_factor": 4}]}, "topics[0].replication_factor"),
    ({**BASE, "topics": [{"name": "a", "partitions": 1, "replication_factor": 2,
                          "assignment": {0: [1, 9]}}]}, "topics[0].assignment[0]"),
    (with_steps({"crash": {"broker": 7}}), "steps[0] (crash).broker"),
    (with_steps({"produce": {"topic": "nope"}}), "steps[0] (produce).topic"),
    (with_steps({"produce": {"topic": "orders", "acks": 2}}), "steps[0] (produce).acks"),
    (with_steps({"produce": {"topic": "orders", "partition": 5}}), "steps[0] (produce).partition"),
    (with_steps({"produce": {"topic": "orders", "values": ["a"], "keys": ["x", "y"]}}),
     "steps[0] (produce).keys"),
    (with_steps({"advance": {"ms": -1}}), "steps[0] (advance).ms"),
    (with_steps({"explode": {}}), "steps[0]"),
    (with_steps({"crash": {"broker": 1}, "pause": {"broker": 2}}), "steps[0]"),
    (with_steps({"elect": {"topic": "orders"}}), "steps[0] (elect)"),
    (with_steps({"commit_transaction": {"producer": "p"}}), "steps[0] (commit_transaction).producer"),
    ("just a string", "scenario"),
])
def test_invalid_scenarios_name_the_field(data, where):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data)
    assert where in str(info.value)
    assert isinstance(info.value, SegtoolsError)


def test_load_bad_yaml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("cluster: [unclosed\n")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(bad)
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "missing.yaml")


def test_json_is_valid_yaml(tmp_path):
    f = tmp_path / "s.json"
    f.write_text('{"cluster": {"brokers": [1]}, "topics": [{"name": "a"}], '
                 '"steps": [{"produce": {"topic": "a", "acks": -1, "values": ["x"]}}]}')
    sc = load_scenario(f)
    assert sc.steps[0].args["acks"] == "all"


@pytest.mark.parametrize("seed", range(40))
def test_random_scenarios_are_valid(seed):
    sc = parse_scenario(random_scenario(seed))
    assert sc.steps
    assert random_scenario(seed) == random_scenario(seed)


@pytest.mark.parametrize("data, where", [
    (with_steps({"produce": {"topic": "orders", "count": 10**9}}), "steps[0] (produce)"),
    (with_steps({"produce": {"topic": "orders", "count": 1000, "value_bytes": 10**6}}), "steps[0] (produce)"),
    (with_steps({"advance": {"ms": 10**15}}), "steps[0] (advance).ms"),
    ({**BASE, "topics": [{"name": "a", "partitions": 10**6}]}, "topics[0].partitions"),
    # each step within the per-step limit, the sum not (YAML aliases make this a tiny file)
    ({**BASE, "steps": [{"produce": {"topic": "orders", "count": 10**6}}] * 20}, "steps[10] (produce)"),
    ({**BASE, "steps": [{"produce": {"topic": "orders", "count": 1000, "value_bytes": 60000}}] * 20},
     "steps[17] (produce)"),
])
def test_sizes_are_bounded(data, where):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(data)
    assert where in str(info.value)


def test_long_advances_are_cheap(monkeypatch):
    # work is counted, not timed: a 9-year advance with a 1 ms checkpoint interval must not
    # run the periodic checkpoint once per interval (2.8e11 runs) once nothing can change
    from segtools.simulate import run
    from segtools.simulate.cluster import Cluster

    runs = []
    original = Cluster._checkpoint_high_watermarks

    def counted(self):
        runs.append(self.now)
        return original(self)

    monkeypatch.setattr(Cluster, "_checkpoint_high_watermarks", counted)

    sc = {**BASE, "cluster": {"brokers": [1, 2, 3], "high_watermark_checkpoint_interval_ms": 1},
          "steps": [{"produce": {"topic": "orders", "acks": "all", "values": ["a"]}},
                    {"pause": {"broker": 3}},
                    {"advance": {"ms": 9 * 365 * 86_400_000}},
                    {"produce": {"topic": "orders", "acks": "all", "values": ["b"]}}]}
    r = run(sc, None)
    assert 0 < len(runs) < 1_000_000   # until the paused follower leaves the ISR, then none
    assert all(a["ok"] for a in r.acks)
    assert all(3 not in p.isr for p in r.cluster.partitions.values())  # the paused one was dropped


def test_kafka_topic_name_rule():
    for bad in ("a b", "a/b", "ü", "x" * 250, ".."):
        with pytest.raises(ScenarioError, match="topic name"):
            parse_scenario({**BASE, "topics": [{"name": bad}]})
    parse_scenario({**BASE, "topics": [{"name": "Orders_v2.x-1"}]})


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 300), st.text(max_size=6),
                  st.sampled_from(["all", "orders", "leader-epoch", "high-watermark"]))
_value = st.recursive(_leaf, lambda c: st.one_of(st.lists(c, max_size=3),
                                                 st.dictionaries(st.text(max_size=8), c, max_size=3)),
                      max_leaves=8)
_step_kinds = st.sampled_from(["produce", "crash", "restart", "pause", "resume", "advance",
                               "elect", "delete_records", "snapshot", "flush", "resend",
                               "shutdown", "commit_transaction", "bogus"])
_step_args = st.dictionaries(st.sampled_from(["topic", "partition", "acks", "values", "keys",
                                              "count", "broker", "ms", "leader", "unclean",
                                              "preferred", "before_offset", "name", "producer",
                                              "lose_unflushed", "in_flight", "batch_size"]),
                             _value, max_size=4)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(st.dictionaries(_step_kinds, _step_args, min_size=1, max_size=1), max_size=6),
       cluster=st.dictionaries(st.sampled_from(["brokers", "truncation", "segment_bytes",
                                                "replica_lag_time_max_ms", "metadata_log"]),
                               _value, max_size=3),
       topic=st.dictionaries(st.sampled_from(["name", "partitions", "replication_factor",
                                              "min_insync_replicas", "assignment"]), _value,
                             max_size=3))
def test_hostile_scenarios_fail_only_with_scenario_error(steps, cluster, topic):
    from segtools.simulate import run

    data = {"cluster": {"brokers": [1, 2, 3], **cluster},
            "topics": [{"name": "orders", **topic}], "steps": steps}
    try:
        sc = parse_scenario(data)
    except ScenarioError:
        return
    run(sc, None)  # whatever validated must also run
