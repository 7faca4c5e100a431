"""A paused leader (a stopped JVM: the real engine's SIGSTOP) reads no produce request.

Seen on the real engine (Kafka 4.4.0, tests/realkafka/engine_matrix.py, random seeds 1000,
1001, 1004): an acks=1 send to a paused leader got no answer and timed out after the
producer's request timeout, and the leader appended it when it was resumed; the model
acknowledged it at once. Real Kafka is the authority: the model now parks the request
in the leader's socket."""

from __future__ import annotations

from segtools.simulate.cluster import Cluster
from segtools.simulate.scenario import parse_scenario


def _run(steps: list[dict]) -> Cluster:
    sc = parse_scenario({"cluster": {"brokers": [1, 2], "request_timeout_ms": 5000},
                         "topics": [{"name": "t", "replication_factor": 2, "min_insync_replicas": 1}],
                         "steps": [{"produce": {"topic": "t", "values": ["a"], "acks": "1"}}, *steps]})
    c = Cluster(sc)
    for step in sc.steps:
        c.apply(step)
    c.finish()
    return c


def _leader_log(c: Cluster) -> list[str | None]:
    ps = c.partitions[("t", 0)]
    return [r.value for b in c.replicas[("t", 0)][ps.leader].batches for r in b.records]


def test_a_send_to_a_paused_leader_times_out_and_lands_when_it_resumes():
    c = _run([{"pause": {"broker": 2}}, {"produce": {"topic": "t", "values": ["b"], "acks": "1"}}])
    assert c.partitions[("t", 0)].leader == 2
    waited = c.now - c.spec.start_time_ms
    assert [(a.value, a.ok, a.error) for a in c.acks] == [("a", True, None), ("b", False, "REQUEST_TIMED_OUT")]
    assert _leader_log(c) == ["a"]  # not read yet
    c2 = _run([{"pause": {"broker": 2}}, {"produce": {"topic": "t", "values": ["b"], "acks": "1"}},
               {"resume": {"broker": 2}}])
    assert _leader_log(c2) == ["a", "b"]  # read on resume, never acknowledged
    assert not next(r for r in c2.records if r.value == "b").acked
    assert waited >= 5000  # the producer waited its request timeout
    # acks=0 does not wait; the record still lands only on resume
    c3 = _run([{"pause": {"broker": 2}}, {"produce": {"topic": "t", "values": ["b"], "acks": "0"}}])
    assert [(a.value, a.ok) for a in c3.acks][1] == ("b", True) and _leader_log(c3) == ["a"]


def test_a_crash_drops_the_requests_of_a_paused_leader():
    c = _run([{"pause": {"broker": 2}}, {"produce": {"topic": "t", "values": ["b"], "acks": "1"}},
              {"crash": {"broker": 2}}, {"restart": {"broker": 2}}])
    assert "b" not in [r.value for r in c.records]
    assert not c.producing.parked


def test_a_paused_follower_still_leaves_the_leader_answering():
    # the follower's pause is what the scenario language's pause was written for: unchanged
    c = _run([{"pause": {"broker": 1}}, {"produce": {"topic": "t", "values": ["b"], "acks": "1"}}])
    assert [(a.value, a.ok) for a in c.acks] == [("a", True), ("b", True)]


def _run3(steps: list[dict], lag_ms: int = 10_000) -> Cluster:
    sc = parse_scenario({"cluster": {"brokers": [1, 2, 3], "request_timeout_ms": 30_000,
                                     "replica_lag_time_max_ms": lag_ms},
                         "topics": [{"name": "t", "replication_factor": 3, "min_insync_replicas": 1}],
                         "steps": [{"produce": {"topic": "t", "values": ["a"], "acks": "1"}}, *steps]})
    c = Cluster(sc)
    for step in sc.steps:
        c.apply(step)
    return c


def _roles() -> tuple[int, list[int]]:
    ps = _run3([]).partitions[("t", 0)]
    return ps.leader, [b for b in ps.replicas if b != ps.leader]


def test_a_paused_leader_runs_no_isr_expiration():
    """Seed 1003 of the real engine (docs/ENGINES.md class 10): a SIGSTOPped leader drops
    nobody from its ISR, however long its paused followers lag; the model's did."""
    leader, (f1, _f2) = _roles()
    c = _run3([{"pause": {"broker": f1}}, {"pause": {"broker": leader}},
               {"produce": {"topic": "t", "values": ["b"], "acks": "1"}},   # times out: 30 s pass
               {"advance": {"ms": 60_000}}])
    ps = c.partitions[("t", 0)]
    assert c.now - c.spec.start_time_ms >= 90_000
    assert ps.leader == leader and sorted(ps.isr) == [1, 2, 3]
    # the same pause of the follower under a running leader: dropped after the lag
    c2 = _run3([{"pause": {"broker": f1}}, {"advance": {"ms": 60_000}}])
    assert f1 not in c2.partitions[("t", 0)].isr


def test_a_paused_leader_serves_no_fetch():
    """Seed 1030 (class 10): a follower restarted while its leader is paused is not back in
    the ISR until the leader runs again (a stopped JVM answers no fetch)."""
    leader, (f1, _f2) = _roles()
    c = _run3([{"crash": {"broker": f1}}, {"produce": {"topic": "t", "values": ["b"], "acks": "1"}},
               {"pause": {"broker": leader}}, {"restart": {"broker": f1}},
               {"advance": {"ms": 1_000}}])
    ps = c.partitions[("t", 0)]
    assert f1 not in ps.isr
    assert c.replicas[("t", 0)][f1].log_end_offset < c.replicas[("t", 0)][leader].log_end_offset
    c.apply(parse_scenario({"cluster": {"brokers": [1, 2, 3]}, "topics": [{"name": "t"}],
                            "steps": [{"resume": {"broker": leader}}]}).steps[0])
    assert f1 in c.partitions[("t", 0)].isr   # fetched at once after the resume
