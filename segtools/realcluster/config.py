"""server.properties of the real cluster's controller and brokers, with the timeouts shortened
so a scenario runs in seconds (every value here is written to OUT/kafka/*.properties)."""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from segtools.simulate.scenario import Scenario, Step

#: Kafka 4.x refuses segment.bytes below 1 MiB (LogConfig's validator); smaller scenario
#: values are raised to it (segments then roll later than in the model: records are the same)
MIN_SEGMENT_BYTES = 1024 * 1024

#: how long the controller waits for a heartbeat before it fences a broker. A paused
#: (SIGSTOPped) broker stops heartbeating too: a pause must stay shorter than this, or the
#: controller fences the broker, which the model's `pause` (alive, not fetching) never does.
SESSION_TIMEOUT_MS = 10000
HEARTBEAT_INTERVAL_MS = 500
#: the ISR shrink of a follower that stopped fetching (checked every half of it)
REPLICA_LAG_TIME_MAX_MS = 3500
#: how long a leader parks a follower's fetch when there is nothing new: a fetch parked before
#: a SIGSTOP is answered with whatever arrives meanwhile, into the stopped follower's socket
REPLICA_FETCH_WAIT_MAX_MS = 100
#: how long a step waits for the leaders and ISRs it implies (a crash needs the session timeout)
STEP_WAIT_S = SESSION_TIMEOUT_MS / 1000 + 4
#: the shortest real replica.lag.time.max.ms a scaled scenario may ask for: below it a follower
#: on a loaded machine (2 cores, several JVMs) drops out of the ISR without any fault
MIN_REAL_LAG_MS = 1500
#: what a step costs in real time beyond its scenario time (a produce round trip, a copy of
#: the logs), counted when sizing the session timeout around a pause
STEP_OVERHEAD_MS = 1500


def _longest_pause(scenario: Scenario, cost: Callable[[Step], float]) -> float:
    """The largest total ``cost`` of the steps a broker of ``scenario`` stays paused across
    (from its ``pause`` to its ``resume``, ``crash`` or ``shutdown``)."""
    since: dict[int, float] = {}
    longest = 0.0
    for step in scenario.steps:
        for b in since:
            since[b] += cost(step)
            longest = max(longest, since[b])
        broker = step.args.get("broker")
        if step.kind == "pause" and broker is not None:
            since.setdefault(broker, 0.0)
        elif step.kind in ("resume", "crash", "shutdown") and broker in since:
            del since[broker]
    return longest


def _steps_while_paused(scenario: Scenario) -> int:
    """The most steps other than ``advance`` a broker of ``scenario`` stays paused across:
    each takes real time the scenario's clock does not count."""
    return int(_longest_pause(scenario, lambda step: 0 if step.kind == "advance" else 1))


def time_scale(scenario: Scenario) -> float:
    """Scenario milliseconds per real millisecond: ``cluster.time_scale``, else the one that
    makes the scenario's replica_lag_time_max_ms last REPLICA_LAG_TIME_MAX_MS of real time, or
    longer when a pause spans steps whose real time would otherwise outlast the lag (a
    follower would leave the ISR where the scenario's clock has not moved)."""
    spec = scenario.cluster
    if spec.time_scale:
        return spec.time_scale
    real_lag = max(REPLICA_LAG_TIME_MAX_MS, _steps_while_paused(scenario) * STEP_OVERHEAD_MS + 2000)
    return spec.replica_lag_time_max_ms / real_lag


def replica_lag_ms(scenario: Scenario) -> int:
    """The broker's replica.lag.time.max.ms: the scenario's, scaled to real time."""
    return round(scenario.cluster.replica_lag_time_max_ms / time_scale(scenario))


def _model_step_ms(scenario: Scenario) -> list[tuple[int, bool, bool]]:
    """Per step, the scenario time it takes in the model, whether it sends to a paused
    leader, and whether a send of it timed out. An ``advance`` takes its ``ms``; a
    ``produce`` with ``acks: all`` whose ISR holds a paused follower as long as the leader
    waits for the shrink (or its request timeout); a send to a paused leader its request
    timeout. Falls back to the ``advance``
    steps alone when the model refuses the scenario (the run then fails where it refuses
    it, with its own message)."""
    from segtools.errors import SegtoolsError
    from segtools.simulate.cluster import Cluster
    from segtools.simulate.controller import NO_LEADER

    key = id(scenario)
    cached = _STEP_MS.get(key)
    if cached is not None and cached[0] is scenario:
        return cached[1]
    out: list[tuple[int, bool, bool]] = []
    try:
        model = Cluster(scenario)
        for step in scenario.steps:
            before, acks_before = model.now, len(model.acks)
            to_paused = False
            if step.kind == "produce":
                a = step.args
                n = model.topics[a["topic"]].partitions
                for p in range(n) if a["partition"] is None else (a["partition"],):
                    leader = model.partitions[(a["topic"], p)].leader
                    to_paused |= leader != NO_LEADER and model.brokers[leader].paused
            model.apply(step)
            timed_out = any(a.error == "REQUEST_TIMED_OUT" for a in model.acks[acks_before:])
            out.append((model.now - before, to_paused, timed_out))
    except SegtoolsError:
        out = [(int(step.args["ms"]) if step.kind == "advance" else 0, False, False)
               for step in scenario.steps]
    _STEP_MS[key] = (scenario, out)
    return out


#: _model_step_ms per scenario (the properties of every JVM ask for the session timeout)
_STEP_MS: dict[int, tuple[Scenario, list[tuple[int, bool, bool]]]] = {}

#: the longest a real produce step waits unless it sends to a paused leader (producing.py:
#: request.timeout.ms 8 s, message.timeout.ms 10 s, or longer: produce_request_ms),
#: whatever the model's request timeout
PRODUCE_REAL_MAX_MS = 10000


def produce_request_ms(scenario: Scenario) -> int:
    """librdkafka's request.timeout.ms of a send the model does not time out: 8 s, or long
    enough for the leader to drop a paused follower (it checks every half of
    replica.lag.time.max.ms, so the shrink comes up to 1.5 x it after the last fetch). With a
    12.5 s real lag (S7 on 4.4.0) an 8 s request timed out where the model acked after the
    shrink."""
    return max(8000, round(1.5 * replica_lag_ms(scenario)) + 2000)


def _real_step_ms(scenario: Scenario, step: Step, scale: float) -> float:
    """The real time ``step`` takes beyond its overhead, as the real engine runs it."""
    ms, to_paused, _timed_out = _model_step_ms(scenario)[step.index]
    real = ms / scale
    if step.kind == "produce" and not to_paused:
        # (the real producer waits at most produce_request_ms, its message timeout 10 s)
        real = min(real, max(PRODUCE_REAL_MAX_MS, produce_request_ms(scenario) + 100))
    return real


def real_step_s(scenario: Scenario, step: Step) -> float:
    """The real seconds ``step`` may take beyond its overhead (what the session is sized for)."""
    return _real_step_ms(scenario, step, time_scale(scenario)) / 1000


def longest_pause_ms(scenario: Scenario) -> int:
    """The longest real time a broker of ``scenario`` stays paused (SIGSTOP): the scenario
    time its steps take in the model, scaled (a produce at most as long as the real
    producer waits), plus each step's overhead."""
    scale = time_scale(scenario)
    return round(_longest_pause(
        scenario, lambda step: STEP_OVERHEAD_MS + _real_step_ms(scenario, step, scale)))


def session_timeout_ms(scenario: Scenario) -> int:
    """broker.session.timeout.ms: the model never fences a paused broker, so the session must
    outlast the scenario's longest pause. A crash does not wait for it (the engine has the
    controller fence a crashed broker at once: cluster.crash), but the restart of a crashed
    broker does (registration_timeout_ms), so no longer."""
    return max(SESSION_TIMEOUT_MS, longest_pause_ms(scenario) + 5000)


def registration_timeout_ms(scenario: Scenario) -> int:
    """initial.broker.registration.timeout.ms: a broker restarted after a crash registers a new
    incarnation, which the controller refuses (DuplicateBrokerRegistrationException) while
    the crashed one's heartbeat session is valid, and the engine's fencing at the crash
    (heartbeat.py) refreshed it: up to the session timeout plus the controller's expiry check
    (every eighth of it). Kafka's 60 s default gave up first (random seed 1003, 87 s session)."""
    return 60000 + round(1.25 * session_timeout_ms(scenario))


def step_wait_s(scenario: Scenario) -> float:
    """How long a step waits for the state it implies (a crash needs the session timeout).
    The controller fences a stale broker some seconds after its session ran out (seed 1000,
    4.4.0: 67.4 s after the crash for a 63 s session), so the margin grows with the session."""
    return session_timeout_ms(scenario) / 1000 * 1.15 + 4


#: ports free_port() handed out, each still bound here (see free_port) until release_ports()
_RESERVED: dict[int, socket.socket] = {}
_RESERVED_LOCK = threading.Lock()


def free_port() -> int:
    """A free port on 127.0.0.1 for a JVM to listen on, reserved until :func:`release_ports`.

    A port found free and let go could be handed to another process's bind(0) before the JVM
    binds it: seconds later, after kafka-storage has formatted the dirs, or across a broker's
    crash and restart. On Linux the port stays bound here by a socket that never listens, with
    SO_REUSEADDR: the kernel gives it to no other bind(0), and Java's server sockets (which set
    SO_REUSEADDR on Linux) still bind and listen on it."""
    reserve = sys.platform.startswith("linux")   # elsewhere SO_REUSEADDR does not share a bound port
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if reserve:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    except BaseException:
        sock.close()
        raise
    if not reserve:
        sock.close()
        return port
    with _RESERVED_LOCK:
        _RESERVED[port] = sock
    return port


def release_ports(ports: Iterable[int]) -> None:
    """Let go of ports :func:`free_port` reserved (once their JVMs are gone)."""
    with _RESERVED_LOCK:
        socks = [_RESERVED.pop(p, None) for p in ports]
    for sock in socks:
        if sock is not None:
            sock.close()


@dataclass(frozen=True)
class Ports:
    controller: int
    brokers: dict[int, int]


def controller_id(scenario: Scenario) -> int:
    """3000 (the model's controller id) unless a broker already has it."""
    cid = 3000
    while cid in scenario.cluster.brokers:
        cid += 1
    return cid


def _render(props: dict[str, object]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


def controller_properties(scenario: Scenario, ports: Ports, log_dir: str) -> str:
    cid = controller_id(scenario)
    return _render({
        "process.roles": "controller",
        "node.id": cid,
        "controller.quorum.voters": f"{cid}@127.0.0.1:{ports.controller}",
        "listeners": f"CONTROLLER://127.0.0.1:{ports.controller}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": log_dir,
        "broker.session.timeout.ms": session_timeout_ms(scenario),
        "broker.heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
        # no NoOpRecord every 500 ms: the metadata log keeps only what the scenario did
        "metadata.max.idle.interval.ms": 3600000,
        "controller.quorum.election.timeout.ms": 1000,
        "controller.quorum.fetch.timeout.ms": 2000,
        "auto.leader.rebalance.enable": "false",
        "num.io.threads": 2,
        "num.network.threads": 2,
        "background.threads": 2,
    })


def coordinator_id(scenario: Scenario) -> int:
    """The id of the transaction coordinator's broker (the first free id after the controller's)."""
    cid = controller_id(scenario) + 1
    while cid in scenario.cluster.brokers:
        cid += 1
    return cid


def broker_properties(scenario: Scenario, ports: Ports, broker: int, log_dir: str,
                      port: int | None = None) -> str:
    """``port``: the listener of a broker outside ``ports.brokers`` (the coordinator)."""
    spec = scenario.cluster
    cid = controller_id(scenario)
    n = len(spec.brokers)
    listen = port if port is not None else ports.brokers[broker]
    return _render({
        "process.roles": "broker",
        "node.id": broker,
        "controller.quorum.voters": f"{cid}@127.0.0.1:{ports.controller}",
        "controller.listener.names": "CONTROLLER",
        "listeners": f"PLAINTEXT://127.0.0.1:{listen}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{listen}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": log_dir,
        "broker.heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
        "broker.session.timeout.ms": session_timeout_ms(scenario),
        "initial.broker.registration.timeout.ms": registration_timeout_ms(scenario),
        "replica.lag.time.max.ms": replica_lag_ms(scenario),
        "replica.fetch.wait.max.ms": REPLICA_FETCH_WAIT_MAX_MS,
        "replica.fetch.backoff.ms": 100,
        "replica.high.watermark.checkpoint.interval.ms": 200,
        "log.segment.bytes": max(spec.segment_bytes, MIN_SEGMENT_BYTES),
        "log.index.interval.bytes": spec.index_interval_bytes,
        "log.index.size.max.bytes": max(spec.segment_index_bytes, 4096),
        "auto.create.topics.enable": "false",
        # the model never moves leaders back on its own: only `elect: {preferred: true}` does
        "auto.leader.rebalance.enable": "false",
        "log.cleaner.enable": "false",
        "group.initial.rebalance.delay.ms": 0,
        "offsets.topic.replication.factor": 1,
        "offsets.topic.num.partitions": 1,
        "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1,
        "transaction.state.log.num.partitions": 1,
        "share.coordinator.state.topic.replication.factor": 1,
        "share.coordinator.state.topic.min.isr": 1,
        "default.replication.factor": min(3, n),
        "num.partitions": 1,
        "num.io.threads": 2,
        "num.network.threads": 2,
        "num.replica.fetchers": 1,
        "background.threads": 2,
        "num.recovery.threads.per.data.dir": 1,
        "controlled.shutdown.enable": "true",
    })


LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.kafka.name = org.apache.kafka
logger.kafka.level = INFO
"""
