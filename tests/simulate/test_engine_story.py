"""The real engine's pieces that need no JVM: the story of a run and the comparison of two
stories (segtools.realcluster.story), the scaled clock and timeouts (config), the features the
lockstep model runs with, the log end read from a broker's files, and the CLI's checks of
--kafka-version / --allow-drift."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli
from segtools.errors import ScenarioError
from segtools.realcluster import config
from segtools.realcluster.features import model_features
from segtools.realcluster.producing import log_end_offset
from segtools.realcluster.story import compare_stories, story_of
from segtools.simulate import load_scenario
from segtools.simulate.cluster import Cluster
from segtools.simulate.scenario import parse_scenario

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
ELR_ON = {"eligible.leader.replicas.version": 1, "transaction.version": 2}


def _model_story(path: Path, features: dict[str, int] | None) -> dict[str, list[dict]]:
    scenario = load_scenario(path)
    if features is not None:
        scenario = replace(scenario, cluster=replace(scenario.cluster, kafka_features=model_features(features)))
    c = Cluster(scenario)
    marks = [len(c.controller.events)]
    for step in scenario.steps:
        c.apply(step)
        marks.append(len(c.controller.events))
    c.finish()
    records = ((t, v, d, i) for i, (t, v, d, _time) in enumerate(c.controller.events))
    return story_of(records, marks, [s.kind for s in scenario.steps])


def test_story_names_each_change_and_its_step():
    story = _model_story(SAMPLES / "scenarios" / "S24-elr-clean-election.yaml", ELR_ON)["orders-0"]
    got = [(c["epoch"], c["leader"], c["isr"], c["elr"], c["election"], c["step"], c["kind"]) for c in story]
    # the scenario's own account (its header): 3 leaves, then 2 (ISR below min ISR 2: ELR),
    # then the leader 1 (ISR empty), and 2 is elected from the ELR when it returns (step 6)
    assert got == [(0, 1, [1, 2, 3], [], "initial", -1, "create"),
                   (0, 1, [1, 2], [], None, 1, "shutdown"),
                   (0, 1, [1], [2], None, 3, "shutdown"),
                   (1, None, [], [1, 2], "offline", 4, "shutdown"),
                   (2, 2, [2], [1], "elr", 6, "restart")]


def test_compare_stories_names_the_first_change_where_they_part():
    on = _model_story(SAMPLES / "scenarios" / "S24-elr-clean-election.yaml", ELR_ON)
    off = _model_story(SAMPLES / "scenarios" / "S24-elr-clean-election.yaml", None)
    assert compare_stories(on, on) == []
    diffs = compare_stories(on, off)
    assert len(diffs) == 1
    assert diffs[0].startswith(
        "orders-0: change 2: the model: epoch 0 leader 1 isr [1] elr [2] at steps[3] (shutdown);")
    # a change the other engine lacks is named as such
    shorter = {"orders-0": on["orders-0"][:-1]}
    assert compare_stories(on, shorter) == [
        "orders-0: change 4: the model: epoch 2 leader 2 isr [2] elr [1] (elr election) at steps[6] "
        "(restart); the cluster: nothing"]
    # the step a change is made at is not part of the story (a real ISR expansion may land
    # one step later than the model's)
    later = {"orders-0": [dict(c, step=c["step"] + 1) for c in on["orders-0"]]}
    assert compare_stories(on, later) == []


def _scenario(**cluster):
    return parse_scenario({"cluster": {"brokers": [1, 2], **cluster},
                           "topics": [{"name": "t", "replication_factor": 2}],
                           "steps": [{"produce": {"topic": "t", "values": ["a"]}}, {"pause": {"broker": 2}},
                                     {"advance": {"ms": 60000}}, {"resume": {"broker": 2}}]})


def test_time_scale_scales_the_replica_lag_and_the_session_outlasts_every_pause():
    default = _scenario()
    # without cluster.time_scale the scenario's 30 s lag lasts REPLICA_LAG_TIME_MAX_MS real ms
    assert config.replica_lag_ms(default) == config.REPLICA_LAG_TIME_MAX_MS
    assert config.time_scale(default) == pytest.approx(30000 / config.REPLICA_LAG_TIME_MAX_MS)
    scaled = _scenario(time_scale=10, replica_lag_time_max_ms=20000)
    assert config.replica_lag_ms(scaled) == 2000
    # the pause spans the advance (60 s of scenario time: 6 s real) and the steps' overhead
    assert config.longest_pause_ms(scaled) == 6000 + 2 * config.STEP_OVERHEAD_MS
    slow = _scenario(time_scale=2)
    assert config.session_timeout_ms(slow) > config.longest_pause_ms(slow) >= 30000
    props = config.broker_properties(slow, config.Ports(1, {1: 2, 2: 3}), 1, "/x")
    assert f"broker.session.timeout.ms={config.session_timeout_ms(slow)}\n" in props
    assert "replica.lag.time.max.ms=15000\n" in props


@pytest.mark.parametrize("bad", [0, -1, 1001, "fast", True])
def test_time_scale_must_be_a_positive_number(bad):
    with pytest.raises(ScenarioError, match="cluster.time_scale"):
        _scenario(time_scale=bad)


def test_the_model_runs_with_the_clusters_features():
    assert model_features({"eligible.leader.replicas.version": 1, "transaction.version": 2,
                           "share.version": 1, "group.version": 1}) == (
        ("eligible.leader.replicas.version", 1), ("transaction.version", 2))
    assert model_features({"transaction.version": 2}) == (
        ("eligible.leader.replicas.version", 0), ("transaction.version", 2))
    # a scenario that names no features is told apart from one that names ELR off
    assert not _scenario().cluster.kafka_features_given
    assert _scenario(kafka_features={"eligible_leader_replicas": False}).cluster.kafka_features_given


def test_log_end_offset_from_the_batch_headers():
    # the oracle: the model's truth.json of the committed sample
    root = SAMPLES / "generated" / "S1-lagging-follower"
    truth = json.loads((root / "truth.json").read_text())
    for b, rep in truth["orders-0"]["replicas"].items():
        assert log_end_offset(str(root / f"broker-{b}" / "orders-0")) == rep["log_end_offset"], b
    assert log_end_offset(str(root / "no-such-partition")) == -1


@pytest.mark.parametrize("args, message", [
    (["--kafka-version", "4.3.1"], "--kafka-version needs --engine kafka"),
    (["--allow-drift"], "--allow-drift needs --engine kafka"),
    (["--engine", "kafka", "--kafka-version", "3.9.0"], "not one of the releases"),
])
def test_cli_refuses_engine_flags_out_of_place(tmp_path, args, message):
    res = CliRunner().invoke(cli, ["simulate", str(SAMPLES / "scenarios" / "S1-lagging-follower.yaml"),
                                   "--out", str(tmp_path / "o"), *args])
    assert res.exit_code == 2 and message in res.output, res.output
    assert not (tmp_path / "o").exists()


class _Proc:
    paused = False

    def alive(self) -> bool:
        return True


class _FakeCluster:
    """What StepRunner asks of a RealCluster, with a leader that never moves."""

    def __init__(self, brokers):
        from segtools.realcluster.cluster import PartitionView, RealCluster

        self.brokers = {b: _Proc() for b in brokers}
        self.view = {("t", 0): PartitionView(1, [1, 2], [1, 2])}
        self.wait_for = RealCluster.wait_for

    def describe(self):
        return self.view


def test_a_step_the_cluster_does_not_reach_stops_the_run_with_one_line(tmp_path):
    from segtools.realcluster.steps import DriftError, StepRunner

    scenario = parse_scenario({"cluster": {"brokers": [1, 2]},
                               "topics": [{"name": "t", "replication_factor": 2, "assignment": {0: [1, 2]}}],
                               "steps": [{"shutdown": {"broker": 1}}]})
    step = scenario.steps[0]
    runner = StepRunner(scenario, _FakeCluster([1, 2]), str(tmp_path))
    runner.wait_s = 0.3
    runner.model.apply(step)          # the model moves the leader to 2; the fake cluster does not
    with pytest.raises(DriftError) as exc:
        runner._settle(step)
    assert str(exc.value) == ("steps[0] (shutdown): the cluster did not reach the scenario's state: "
                              "t-0: leader 1 isr [1,2] (expected leader 2 isr [2]) (--allow-drift keeps going)")
    assert exc.value.exit_code == 1
    assert runner.log.waits[-1]["reached"] is False
    lenient = StepRunner(scenario, _FakeCluster([1, 2]), str(tmp_path), allow_drift=True)
    lenient.wait_s = 0.3
    lenient.model.apply(step)
    lenient._settle(step)
    assert lenient.drift == [{"step": 0, "kind": "shutdown",
                              "what": "t-0: leader 1 isr [1,2] (expected leader 2 isr [2])"}]


def test_nobody_to_ask_is_not_a_miss(tmp_path):
    # every running broker paused: the Admin API has nobody to answer, so
    # the step neither waits (the pause would run) nor records a state not reached
    from segtools.realcluster.steps import PAUSED_SESSION_MARGIN_S, StepRunner

    scenario = parse_scenario({"cluster": {"brokers": [1, 2]},
                               "topics": [{"name": "t", "replication_factor": 2, "assignment": {0: [1, 2]}}],
                               "steps": [{"pause": {"broker": 1}}, {"advance": {"ms": 1000}}]})
    cluster = _FakeCluster([1, 2])
    cluster.brokers[1].paused = True
    cluster.view = {}  # (what describe() gets from nobody)
    runner = StepRunner(scenario, cluster, str(tmp_path), allow_drift=True)
    runner.wait_s = 5.0
    for step in scenario.steps:
        runner.model.apply(step)
    cluster.brokers[2].paused = True
    runner._settle(scenario.steps[1])
    assert runner.log.waits[-1]["reached"] is None and runner.log.waits[-1]["seconds"] == 0.0
    assert runner.drift == []
    cluster.brokers[2].paused = False  # one answers again: the miss is a miss
    # (broker 1 paused so long that 0.3 s of its session is left to wait in)
    cluster.brokers[1].paused_at = time.monotonic() - (
        config.session_timeout_ms(scenario) / 1000 - PAUSED_SESSION_MARGIN_S - 0.3)
    runner._settle(scenario.steps[1])
    assert runner.log.waits[-1]["reached"] is False and runner.drift


@pytest.mark.parametrize("kafka_rule", [False, True])
def test_a_paused_caught_up_follower_stays_in_the_isr_under_kafkas_rule(kafka_rule):
    """Kafka's Replica.isCaughtUp: a follower at the leader's log end is in sync however long
    ago it fetched; it leaves the ISR only once records arrive and it stays behind for
    replica.lag.time.max.ms. The model alone drops it after the lag either way."""
    scenario = parse_scenario({
        "cluster": {"brokers": [1, 2], "replica_lag_time_max_ms": 10000},
        "topics": [{"name": "t", "replication_factor": 2, "assignment": {0: [1, 2]}}],
        "steps": [{"produce": {"topic": "t", "acks": "all", "values": ["a"]}}, {"pause": {"broker": 2}},
                  {"advance": {"ms": 60000}}, {"produce": {"topic": "t", "acks": "1", "values": ["b"]}},
                  {"advance": {"ms": 60000}}]})
    if kafka_rule:
        scenario = replace(scenario, cluster=replace(scenario.cluster, caught_up_stays_in_isr=True))
    c = Cluster(scenario)
    isr = []
    for step in scenario.steps:
        c.apply(step)
        isr.append(list(c.partitions[("t", 0)].isr))
    assert isr[2] == ([1, 2] if kafka_rule else [1])
    assert isr[4] == [1]


def test_cli_a_drifted_run_is_exit_1_with_the_one_line(tmp_path, monkeypatch):
    import segtools.realcluster as realcluster
    from segtools.realcluster.steps import DriftError

    line = "steps[2] (advance): the cluster did not reach the scenario's state: t-0: leader 1 isr [1,2]"

    def drifted(*_args, **_kwargs):
        raise DriftError(line)

    monkeypatch.setattr(realcluster, "run_on_kafka", drifted)
    res = CliRunner().invoke(cli, ["simulate", str(SAMPLES / "scenarios" / "S1-lagging-follower.yaml"),
                                   "--out", str(tmp_path / "o"), "--engine", "kafka"])
    assert res.exit_code == 1
    assert res.output.strip().splitlines() == [f"Error: {line}"]


@pytest.mark.parametrize("kafka_rule", [False, True])
def test_followers_out_of_sync_together_leave_in_one_record_under_kafkas_rule(kafka_rule):
    """Partition.maybeShrinkIsr drops every out-of-sync follower in one AlterPartition."""
    scenario = parse_scenario({
        "cluster": {"brokers": [1, 2, 3], "replica_lag_time_max_ms": 10000},
        "topics": [{"name": "t", "replication_factor": 3, "assignment": {0: [1, 2, 3]}}],
        "steps": [{"pause": {"broker": 2}}, {"pause": {"broker": 3}},
                  {"produce": {"topic": "t", "acks": "1", "values": ["a"]}}, {"advance": {"ms": 60000}}]})
    if kafka_rule:
        scenario = replace(scenario, cluster=replace(scenario.cluster, caught_up_stays_in_isr=True))
    c = Cluster(scenario)
    for step in scenario.steps:
        c.apply(step)
    isrs = [d["isr"] for t, _v, d, _time in c.controller.events if t == "PartitionChangeRecord" and "isr" in d]
    assert isrs == ([[1]] if kafka_rule else [[1, 3], [1]])


def test_a_broker_fenced_before_its_crash_counts_as_fenced():
    # the oracle: a real 4.4.0 controller's log (tests/data/realcluster/README.md): broker 1
    # was fenced while paused and crashed afterwards, with no second fencing; 2 and 3 fenced
    # after their crash; the coordinator 3001 never
    from segtools.realcluster.cluster import fenced_in_controller_log

    text = (REPO / "tests" / "data" / "realcluster" / "controller-fencing-4.4.0.log").read_bytes()
    assert [fenced_in_controller_log(text, b) for b in (1, 2, 3, 3001, 7)] == [True, True, True, False, False]
    # before any fencing line: every broker registered and unfenced
    first_fence = text.index(b"fenced=1")
    head = text[:text.rindex(b"\n", 0, first_fence) + 1]
    assert not any(fenced_in_controller_log(head, b) for b in (1, 2, 3, 3001))
    # a new registration (a restart) starts fenced, its unfencing ends that
    again = text + head.split(b"\n")[0] + b"\n"
    assert fenced_in_controller_log(again, 2) is (b"brokerId=2," in head.split(b"\n")[0])


def test_a_crashed_process_is_not_paused_any_more(tmp_path):
    # a broker paused then crashed: the steps after the crash must wait for their state
    # (steps.py treats a paused broker's steps as look-once)
    from segtools.realcluster.processes import JvmProcess

    proc = JvmProcess("sleeper", ["sleep", "30"], str(tmp_path / "log"))
    try:
        proc.pause()
        assert proc.paused
        proc.kill()
        assert not proc.alive() and not proc.paused
    finally:
        proc.kill()


def test_the_session_outlasts_a_pause_across_an_acks_all_produce():
    # seed 1000 of the long run: broker 1 paused across an acks=all produce whose ISR holds
    # it; the model's leader waits replica_lag_time_max_ms (and an ISR check) for the shrink,
    # and so does the real one: the pause lasts that long in real time too. Before, only
    # advances counted and the real controller fenced the paused broker (10 s session).
    sc = parse_scenario({"cluster": {"brokers": [1, 2], "replica_lag_time_max_ms": 10000, "time_scale": 2},
                         "topics": [{"name": "t", "replication_factor": 2}],
                         "steps": [{"produce": {"topic": "t", "values": ["a"]}}, {"pause": {"broker": 1}},
                                   {"produce": {"topic": "t", "values": ["b"], "acks": "all"}},
                                   {"resume": {"broker": 1}}]})
    model = Cluster(sc)
    for step in sc.steps:
        model.apply(step)
    assert model.partitions[("t", 0)].leader == 2  # (broker 1 is the follower paused)
    waited = model.now - sc.cluster.start_time_ms
    assert waited >= 10000  # the model's own account: the produce waited for the shrink
    # scale 2: the real wait is half of it (the real producer waits at most 10 s)
    assert config.longest_pause_ms(sc) >= waited / 2 + 2 * config.STEP_OVERHEAD_MS - 1
    assert config.session_timeout_ms(sc) > config.longest_pause_ms(sc)
    # a produce the model times out (min ISR not met: 30 s) lasts what the real producer
    # waits, at most produce_request_ms (1.5 x the real lag + 2 s, here 47 s), unless it goes
    # to a paused leader (it then waits its whole scaled request timeout, producing.py)
    timed = parse_scenario({"cluster": {"brokers": [1, 2], "time_scale": 1},
                            "topics": [{"name": "t", "replication_factor": 2, "min_insync_replicas": 2}],
                            "steps": [{"pause": {"broker": 1}},
                                      {"produce": {"topic": "t", "values": ["b"], "acks": "all"}},
                                      {"resume": {"broker": 1}}]})
    assert config.produce_request_ms(timed) == 47000
    assert config.longest_pause_ms(timed) == 30001 + 2 * config.STEP_OVERHEAD_MS
    slow = replace(timed, cluster=replace(timed.cluster, replica_lag_time_max_ms=2000))
    assert config.longest_pause_ms(slow) == config.PRODUCE_REAL_MAX_MS + 2 * config.STEP_OVERHEAD_MS
    to_leader = parse_scenario({"cluster": {"brokers": [1, 2], "time_scale": 1, "request_timeout_ms": 20000},
                                "topics": [{"name": "t", "replication_factor": 2, "assignment": {0: [1, 2]}}],
                                "steps": [{"pause": {"broker": 1}},
                                          {"produce": {"topic": "t", "values": ["b"], "acks": "1"}},
                                          {"resume": {"broker": 1}}]})
    assert config.longest_pause_ms(to_leader) >= 20000 + 2 * config.STEP_OVERHEAD_MS


def test_changes_after_the_last_step_are_listed_not_compared():
    # seed 1004 on 4.4.0: a broker paused until the end was fenced while the engine read the
    # final records (an offline election at "end"); the model's story stops at the last step
    from segtools.realcluster.story import split_at_end

    on = _model_story(SAMPLES / "scenarios" / "S24-elr-clean-election.yaml", ELR_ON)
    n = len(load_scenario(SAMPLES / "scenarios" / "S24-elr-clean-election.yaml").steps)
    assert split_at_end(on, n) == (on, {})
    late = dict(on["orders-0"][-1], step=n, kind="end", leader=None, election="offline")
    inside, after = split_at_end({"orders-0": on["orders-0"] + [late]}, n)
    assert compare_stories(on, inside) == [] and after == {"orders-0": [late]}


def test_a_send_waiting_for_a_shrink_outlasts_the_real_lag():
    # S7 on 4.4.0: its pause spans 7 steps, so its real lag is 12.5 s; the leader drops the
    # paused follower up to 1.5 x that after its last fetch (a check every half of it),
    # while librdkafka gave up after 8 s where the model acked after the shrink
    s7 = load_scenario(SAMPLES / "scenarios" / "S7-simple-unclean-election.yaml")
    lag = config.replica_lag_ms(s7)
    assert lag == 12500
    assert config.produce_request_ms(s7) > 1.5 * lag
    assert config.produce_request_ms(_scenario()) == 8000  # a short lag keeps 8 s


def test_a_kafka_client_failure_in_a_step_is_one_line(tmp_path):
    # campaign seeds 1033 and 1047: librdkafka's fatal idempotence state escaped as a traceback
    from confluent_kafka import KafkaError, KafkaException

    from segtools.errors import SegtoolsError
    from segtools.realcluster.steps import StepRunner

    scenario = parse_scenario({"cluster": {"brokers": [1, 2]},
                               "topics": [{"name": "t", "replication_factor": 2, "assignment": {0: [1, 2]}}],
                               "steps": [{"produce": {"topic": "t", "values": ["a"]}}]})
    runner = StepRunner(scenario, _FakeCluster([1, 2]), str(tmp_path))

    def fails(step, acks):
        raise KafkaException(KafkaError(KafkaError._STATE, "Unable to produce message: Local: Erroneous state"))

    runner._do_produce = fails
    with pytest.raises(SegtoolsError) as exc:
        runner._drive(scenario.steps[0], [])
    assert str(exc.value).startswith("steps[0] (produce): the Kafka client failed: ")
    assert "Erroneous state" in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("held_by_client", [True, False])
def test_a_log_ahead_by_an_idempotent_in_flight_batch_is_the_clients_resend(tmp_path, held_by_client,
                                                                            monkeypatch):
    # librdkafka resends an in-flight idempotent batch as soon as a leader answers; the model
    # writes it at the scenario's resend step. A log ahead by exactly such a batch is reached
    # (and recorded); ahead by anything else it is a drift. Oracle: the committed sample's
    # orders-0 on broker 1 ends at 20 (its truth.json); the model is told 18.
    from segtools.realcluster.steps import StepRunner

    monkeypatch.setattr("segtools.realcluster.steps.REPLICATION_WAIT_S", 0.3)   # the drift case waits it out
    scenario = parse_scenario({"cluster": {"brokers": [1, 2]},
                               "topics": [{"name": "orders", "replication_factor": 1, "assignment": {0: [1]}}],
                               "steps": [{"advance": {"ms": 10}}]})
    cluster = _FakeCluster([1, 2])
    cluster.broker_dir = lambda b: str(SAMPLES / "generated" / "S1-lagging-follower" / f"broker-{b}")
    runner = StepRunner(scenario, cluster, str(tmp_path), allow_drift=True)
    runner.model.replicas[("orders", 0)][1].log_end_offset = 18
    runner.real_pending["idem"] = [{"tp": ("orders", 0), "recs": [("k", "a"), ("k", "b")],
                                    "named": held_by_client}]
    runner._await_replication(scenario.steps[0])
    last = runner.log.waits[-1]
    if held_by_client:
        assert last["reached"] is True and runner.drift == []
        assert last["client_resent_early"] == [
            "orders-0 on broker 1: log end 20 (model 18): the client resent an in-flight "
            "idempotent batch before the resend step"]
    else:   # a hand-written (plain) in-flight batch is never resent by anyone but the step
        assert last["reached"] is False
        assert runner.drift[0]["what"] == "orders-0 on broker 1: log end 20 (expected 18)"


def test_the_last_steps_deferred_check_waits_at_the_end(tmp_path):
    # a broker paused at the scenario's last step: its check looks once and is deferred; no
    # later step checks it, so the end waits as an advance would (random seeds 1044, 1049:
    # the cluster's answer to the last step was missing from the story)
    import threading

    from segtools.realcluster.cluster import PartitionView
    from segtools.realcluster.steps import StepRunner

    scenario = parse_scenario({"cluster": {"brokers": [1, 2, 3]},
                               "topics": [{"name": "t", "replication_factor": 2, "assignment": {0: [1, 2]}}],
                               "steps": [{"pause": {"broker": 3}}, {"shutdown": {"broker": 1}}]})
    cluster = _FakeCluster([1, 2, 3])
    cluster.metadata_log_size = lambda: 7
    runner = StepRunner(scenario, cluster, str(tmp_path))
    runner.wait_s = 5.0
    runner.real_marks = [0, 3, 5]
    for step in scenario.steps:
        runner.model.apply(step)
    cluster.brokers[3].paused = True
    cluster.brokers[3].paused_at = time.monotonic()
    runner._settle(scenario.steps[1])          # the model's leader 2; the cluster still 1
    assert runner.log.waits[-1]["reached"] is None and "deferred" in runner.log.waits[-1]
    # the controller moves the leader a moment later
    threading.Timer(0.3, lambda: cluster.view.update({("t", 0): PartitionView(2, [2], [1, 2])})).start()
    runner._settle_the_end()
    assert runner.log.waits[-1]["reached"] is True and runner.log.waits[-1]["final"] is True
    assert runner.real_marks[-1] == 7           # what the controller wrote belongs to the last step
