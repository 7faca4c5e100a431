"""Which scenarios a real cluster can run: everything else is refused before any JVM starts,
with an error naming the step (``ScenarioError``, exit 2)."""

from __future__ import annotations

from segtools.errors import ScenarioError
from segtools.simulate.scenario import ClusterSpec, Scenario, Step


def _refuse(step: Step, why: str) -> ScenarioError:
    return ScenarioError(f"steps[{step.index}] ({step.kind}): the real engine cannot do this: {why} "
                         "(run it with --engine model)")


def check_supported(scenario: Scenario) -> None:
    """Raise ScenarioError for the first thing a real Kafka cluster cannot do. The model is
    run alongside (it is cheap) to know which brokers are alive at each step."""
    from segtools.simulate.cluster import Cluster

    spec = scenario.cluster
    if spec.truncation != "leader-epoch":
        raise ScenarioError(f"cluster.truncation: {spec.truncation!r} is the truncation of old Kafka "
                            "versions; a real Kafka 4 cluster always truncates by leader epoch "
                            "(run it with --engine model)")
    if spec.start_time_ms != ClusterSpec.__dataclass_fields__["start_time_ms"].default:
        raise ScenarioError("cluster.start_time_ms: a real cluster runs on the wall clock; a forced "
                            "virtual clock cannot be given to it (run it with --engine model)")
    if scenario.producers:
        raise ScenarioError("producers: idempotent and transactional producers are not driven by "
                            "the real engine yet (run it with --engine model)")
    model = Cluster(scenario)
    for step in scenario.steps:
        a = step.args
        if step.kind == "crash" and a.get("lose_unflushed"):
            raise _refuse(step, "a power loss (lose_unflushed) needs control of the page cache")
        if step.kind == "crash" and a.get("wipe_disk"):
            raise _refuse(step, "wipe_disk (a replaced disk) is not driven on a real broker")
        if step.kind == "flush":
            raise _refuse(step, "a broker cannot be told from outside to fsync now")
        if step.kind in ("begin_transaction", "commit_transaction", "abort_transaction", "resend"):
            raise _refuse(step, "transactions and resends need the model's producer")
        if step.kind == "produce" and a.get("in_flight"):
            raise _refuse(step, "a lost produce response (in_flight) cannot be forced")
        if step.kind == "elect" and a.get("leader") is not None:
            raise _refuse(step, "the Admin API elects the preferred leader or an unclean one, "
                                "it cannot choose a given broker")
        if step.kind == "restart" and model.brokers[a["broker"]].alive:
            raise _refuse(step, f"broker {a['broker']} is running: a bounce faster than the "
                                "controller's session timeout cannot be done with a JVM start "
                                "(crash or shutdown it first)")
        model.apply(step)
