"""Which scenarios a real cluster can run: everything else is refused before any JVM starts,
with an error naming the step (``ScenarioError``, exit 2)."""

from __future__ import annotations

from segtools.errors import ScenarioError
from segtools.simulate.scenario import ClusterSpec, Scenario, Step

#: Why the real engine accepts `flush` and does nothing for it. In the model a flush only
#: decides what a later `crash: {lose_unflushed: true}` (a power loss) removes, and the real
#: engine refuses that crash: a SIGKILLed broker loses nothing the kernel's page cache holds.
#: Kafka itself never fsyncs a partition on request: UnifiedLog.flush runs only from the
#: log.flush.interval.messages / log.flush.interval.ms settings (default: never, Long.MAX_VALUE
#: in server-common's ServerLogConfigs) and on segment roll or clean shutdown, and there is no
#: admin request that triggers it. So after a flush the real broker's files are the same as
#: without it; only the recovery-point-offset-checkpoint the model rewrites at a flush keeps
#: Kafka's own 60 s schedule (log.flush.offset.checkpoint.interval.ms).
FLUSH_IS_A_NO_OP = True


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
    model = Cluster(scenario)
    for step in scenario.steps:
        a = step.args
        if step.kind == "crash" and a.get("lose_unflushed"):
            raise _refuse(step, "a power loss (lose_unflushed) needs control of the page cache")
        if step.kind == "crash" and a.get("wipe_disk"):
            raise _refuse(step, "wipe_disk (a replaced disk) is not driven on a real broker")
        # `flush` is accepted and does nothing: see FLUSH_IS_A_NO_OP
        if step.kind == "elect" and a.get("leader") is not None:
            raise _refuse(step, "the Admin API elects the preferred leader or an unclean one, "
                                "it cannot choose a given broker")
        if step.kind == "restart" and model.brokers[a["broker"]].alive:
            raise _refuse(step, f"broker {a['broker']} is running: a bounce faster than the "
                                "controller's session timeout cannot be done with a JVM start "
                                "(crash or shutdown it first)")
        model.apply(step)
