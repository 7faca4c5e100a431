"""A real KRaft cluster on 127.0.0.1: one controller JVM (process.roles=controller, so
``controller/__cluster_metadata-0`` is a real controller's log) and one broker JVM per broker id,
formatted with Kafka's storage tool, driven through the Admin API (confluent-kafka)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from segtools.errors import SegtoolsError
from segtools.realcluster import config
from segtools.realcluster.kafka_runtime import KafkaRuntime, KafkaUnavailableError
from segtools.realcluster.processes import JvmProcess, run_tool
from segtools.simulate.scenario import Scenario

STORAGE_TOOL = "kafka.tools.StorageTool"
BROKER_MAIN = "kafka.Kafka"


class ClusterError(SegtoolsError):
    """The real cluster did not start or did not answer (the message says which JVM; its log
    is under OUT/kafka/)."""


def require_client() -> Any:
    try:
        import confluent_kafka
    except ImportError:
        raise KafkaUnavailableError(
            "the real engine needs the confluent-kafka client: pip install 'segtools[kafka]'") from None
    return confluent_kafka


def require_consumer() -> Any:
    try:
        import kafka  # type: ignore[import-untyped]
    except ImportError:
        raise KafkaUnavailableError(
            "the real engine reads the final logs with kafka-python's consumer (no consumer "
            "group needed): pip install 'segtools[kafka]'") from None
    return kafka


@dataclass
class PartitionView:
    leader: int | None
    isr: list[int]
    replicas: list[int]


class RealCluster:
    """The JVMs of one scenario run and the Admin API that drives them."""

    def __init__(self, scenario: Scenario, out_dir: str, runtime: KafkaRuntime, *,
                 features: dict[str, int] | None = None, heap: str = "256m") -> None:
        self.scenario = scenario
        self.out = out_dir
        self.runtime = runtime
        self.features = dict(features or {})
        self.heap = heap
        self.kafka_dir = os.path.join(out_dir, "kafka")
        self.ports = config.Ports(config.free_port(),
                                  {b: config.free_port() for b in scenario.cluster.brokers})
        self.controller: JvmProcess | None = None
        self.brokers: dict[int, JvmProcess] = {}
        self.cluster_id = _kafka_uuid()
        self._admin: Any = None
        self._admin_key: tuple[int, ...] = ()
        self._crashed_at: dict[int, int] = {}
        # transactional producers need a transaction coordinator the scenario never faults:
        # one more broker, outside the scenario's ids, holds __transaction_state alone
        self.coordinator_id: int | None = None
        self.coordinator_port = 0
        self.coordinator: JvmProcess | None = None
        if any(p.transactional_id is not None for p in scenario.producers):
            self.coordinator_id = config.coordinator_id(scenario)
            self.coordinator_port = config.free_port()

    # ------------------------------------------------------------------ paths
    def broker_dir(self, b: int) -> str:
        return os.path.join(self.out, f"broker-{b}")

    @property
    def controller_dir(self) -> str:
        return os.path.join(self.out, "controller")

    @property
    def coordinator_dir(self) -> str:
        # under kafka/: the scenario's layout (broker-<id>/) holds the scenario's brokers only
        return os.path.join(self.kafka_dir, "coordinator")

    def _props_path(self, name: str) -> str:
        return os.path.join(self.kafka_dir, f"{name}.properties")

    def bootstrap(self, brokers: list[int] | None = None) -> str:
        ids = brokers if brokers is not None else sorted(self.ports.brokers)
        addrs = [f"127.0.0.1:{self.ports.brokers[b]}" for b in ids]
        if self.coordinator_id is not None:
            addrs.append(f"127.0.0.1:{self.coordinator_port}")  # never faulted: always answers
        return ",".join(addrs)

    # ------------------------------------------------------------------ start
    def _jvm_argv(self, main: str, *args: str) -> list[str]:
        argv = self.runtime.command(main, *args, heap=self.heap)
        log4j = os.path.join(self.kafka_dir, "log4j2.properties")
        argv[1:1] = [f"-Dlog4j2.configurationFile={log4j}", "-Djava.awt.headless=true",
                     f"-Dkafka.logs.dir={self.kafka_dir}"]
        return argv

    def prepare(self) -> None:
        """Write the properties and format every log dir with kafka-storage (in parallel)."""
        os.makedirs(self.kafka_dir, exist_ok=True)
        with open(os.path.join(self.kafka_dir, "log4j2.properties"), "w") as fh:
            fh.write(config.LOG4J2)
        jobs: list[tuple[str, str]] = []
        path = self._props_path("controller")
        with open(path, "w") as fh:
            fh.write(config.controller_properties(self.scenario, self.ports, self.controller_dir))
        jobs.append(("controller", path))
        for b in self.scenario.cluster.brokers:
            path = self._props_path(f"broker-{b}")
            with open(path, "w") as fh:
                fh.write(config.broker_properties(self.scenario, self.ports, b, self.broker_dir(b)))
            jobs.append((f"broker-{b}", path))
        if self.coordinator_id is not None:
            path = self._props_path("coordinator")
            with open(path, "w") as fh:
                fh.write(config.broker_properties(self.scenario, self.ports, self.coordinator_id,
                                                  self.coordinator_dir, port=self.coordinator_port))
            jobs.append(("coordinator", path))
        feature_args: list[str] = []
        for name, level in sorted(self.features.items()):
            feature_args += ["--feature", f"{name}={level}"]

        def fmt(job: tuple[str, str]) -> tuple[str, Any]:
            name, props = job
            argv = self.runtime.command(STORAGE_TOOL, "format", "-t", self.cluster_id, "-c", props,
                                        *(feature_args if name == "controller" else []), heap="128m")
            return name, run_tool(argv, timeout=120)

        with ThreadPoolExecutor(max_workers=2) as pool:
            for name, res in pool.map(fmt, jobs):
                if res.returncode != 0:
                    tail = " ".join((res.stdout + res.stderr).split()[-30:])
                    raise ClusterError(f"kafka-storage format of {name} failed: {tail}")

    def start(self, timeout: float = 90.0) -> None:
        self.prepare()
        self.controller = JvmProcess("controller", self._jvm_argv(BROKER_MAIN, self._props_path("controller")),
                                     os.path.join(self.kafka_dir, "controller.log"))
        for b in self.scenario.cluster.brokers:
            self._spawn_broker(b)
        expected = set(self.scenario.cluster.brokers)
        if self.coordinator_id is not None:
            self.coordinator = JvmProcess("coordinator",
                                          self._jvm_argv(BROKER_MAIN, self._props_path("coordinator")),
                                          os.path.join(self.kafka_dir, "coordinator.log"))
            expected.add(self.coordinator_id)
        self.wait_for(lambda: self.registered() >= expected,
                      timeout, "every broker registered and unfenced")

    def _spawn_broker(self, b: int) -> None:
        self.brokers[b] = JvmProcess(f"broker-{b}", self._jvm_argv(BROKER_MAIN, self._props_path(f"broker-{b}")),
                                     os.path.join(self.kafka_dir, f"broker-{b}.log"))

    # ------------------------------------------------------------------ Admin API
    def admin(self) -> Any:
        """An Admin client that knows only the brokers able to answer now: a request sent to a
        SIGSTOPped broker would hang, so the client is renewed whenever that set changes."""
        answering = tuple(b for b in sorted(self.ports.brokers) if self._answering(b)) \
            or tuple(sorted(self.ports.brokers))
        if self._admin is None or self._admin_key != answering:
            require_client()
            from confluent_kafka.admin import AdminClient

            self._admin_key = answering
            self._admin = AdminClient({"bootstrap.servers": self.bootstrap(list(answering)),
                                       "socket.timeout.ms": 3000,
                                       "reconnect.backoff.max.ms": 200,
                                       "topic.metadata.refresh.interval.ms": 500,
                                       "log_level": 0,
                                       "logger": _quiet_logger()})
        return self._admin

    def running(self) -> list[int]:
        return sorted(b for b, p in self.brokers.items() if p.alive())

    def registered(self) -> set[int]:
        """Brokers the cluster's metadata shows as alive (registered, not fenced)."""
        try:
            md = self.admin().list_topics(timeout=2)
        except Exception:  # noqa: BLE001 - not reachable yet
            return set()
        return set(md.brokers)

    def describe(self) -> dict[tuple[str, int], PartitionView]:
        """Leader, ISR and replicas of every partition of the scenario's topics."""
        if self.brokers and not any(self._answering(b) for b in self.brokers):
            raise ClusterError("no broker is running and not paused")
        try:
            md = self.admin().list_topics(timeout=3)
        except Exception:  # noqa: BLE001 - the broker asked went away: ask a fresh client
            self._admin = None
            md = self.admin().list_topics(timeout=5)
        out: dict[tuple[str, int], PartitionView] = {}
        for t in self.scenario.topics:
            tm = md.topics.get(t.name)
            if tm is None or tm.error is not None:
                continue
            for p, pm in tm.partitions.items():
                out[(t.name, p)] = PartitionView(pm.leader if pm.leader >= 0 else None,
                                                 list(pm.isrs), list(pm.replicas))
        return out

    def high_watermarks(self, *, committed: bool = False) -> dict[tuple[str, int], int]:
        """The leaders' HWs (ListOffsets latest, read_uncommitted) of partitions with a leader;
        with ``committed`` their last stable offsets (read_committed)."""
        from confluent_kafka import IsolationLevel, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
        view = self.describe()
        req = {TopicPartition(t, p): OffsetSpec.latest() for (t, p), v in view.items()
               if v.leader is not None and self._answering(v.leader)}
        out: dict[tuple[str, int], int] = {}
        if not req:
            return out
        futs = self.admin().list_offsets(req, isolation_level=level, request_timeout=3)
        for tp, fut in futs.items():
            try:
                out[(tp.topic, tp.partition)] = fut.result().offset
            except Exception:  # noqa: BLE001 - leader moved meanwhile: no value this time
                pass
        return out

    def _answering(self, b: int) -> bool:
        p = self.brokers.get(b)
        if not self.brokers:  # starting: every broker is about to answer
            return True
        return p is not None and p.alive() and not p.paused

    def create_topics(self, timeout: float = 60.0) -> None:
        from confluent_kafka.admin import NewTopic

        new = []
        for t in self.scenario.topics:
            assert t.assignment is not None
            new.append(NewTopic(t.name, num_partitions=t.partitions, replication_factor=-1,
                                replica_assignment=[list(t.assignment[p]) for p in range(t.partitions)],
                                config={"min.insync.replicas": str(t.min_insync_replicas),
                                        "unclean.leader.election.enable": str(t.unclean_leader_election).lower(),
                                        "compression.type": "producer" if t.compression == "none" else t.compression}))
        if self.coordinator_id is not None:
            # created before any producer asks for a coordinator (which would create it on
            # any broker): one partition on the coordinator broker, with the configs Kafka's
            # TransactionStateManager gives it (compacted, uncompressed)
            new.append(NewTopic("__transaction_state", num_partitions=1, replication_factor=-1,
                                replica_assignment=[[self.coordinator_id]],
                                config={"cleanup.policy": "compact", "min.insync.replicas": "1",
                                        "compression.type": "uncompressed",
                                        "unclean.leader.election.enable": "false",
                                        "segment.bytes": str(100 * 1024 * 1024)}))
        for name, fut in self.admin().create_topics(new, request_timeout=30).items():
            try:
                fut.result()
            except Exception as exc:  # noqa: BLE001
                raise ClusterError(f"creating topic {name} failed: {exc}") from None

        tps = [(t.name, p) for t in self.scenario.topics for p in range(t.partitions)]

        def ready() -> bool:
            # the metadata names a leader before its log exists: an acks=0 record sent then
            # is dropped without a word, so wait until every leader answers ListOffsets
            view = self.describe()
            if not all(tp in view and view[tp].leader is not None for tp in tps):
                return False
            return set(self.high_watermarks()) >= set(tps)
        self.wait_for(ready, timeout, "every partition has a leader that answers")

    def coordinator_batches(self) -> int:
        """How many complete batches the coordinator's __transaction_state log holds: each
        transaction state change (PrepareCommit, CompleteCommit, ...) is one batch. Counted
        from the batch headers' lengths only (offset int64, length int32)."""
        import glob
        import struct

        count = 0
        for path in sorted(glob.glob(os.path.join(self.coordinator_dir, "__transaction_state-0", "*.log"))):
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            pos = 0
            while pos + 12 <= len(data):
                (length,) = struct.unpack_from(">i", data, pos + 8)
                if length <= 0 or pos + 12 + length > len(data):
                    break  # preallocated zeros or a batch still being written
                pos += 12 + length
                count += 1
        return count

    # ------------------------------------------------------------------ faults
    def crash(self, b: int) -> str | None:
        """SIGKILL broker ``b``, then have the controller fence it at once, as the model
        notices a crash at once (heartbeat.py: the controller's own fencing, the one a session
        that ran out gets). Returns why that did not happen, None when it did: the controller
        then fences ``b`` when its session runs out, and the step's checks see the difference."""
        self._crashed_at[b] = self._controller_log_size()
        self.brokers[b].kill()
        return self._fence_now(b)

    def _fence_now(self, b: int) -> str | None:
        from segtools.realcluster import heartbeat

        try:
            with open(os.path.join(self.kafka_dir, "controller.log"), "rb") as fh:
                text = fh.read()
        except OSError as exc:
            return f"broker {b} not fenced at its crash: controller.log: {exc.strerror}"
        if fenced_in_controller_log(text, b):
            return None  # paused past its session before the crash: fenced already
        epoch = heartbeat.broker_epoch(text, b)
        if epoch is None:
            return f"broker {b} not fenced at its crash: no registration in the controller's log"
        try:
            error, _ = heartbeat.request_fencing(self.ports.controller, b, epoch)
        except (OSError, ValueError) as exc:
            return f"broker {b} not fenced at its crash: BrokerHeartbeat: {exc}"
        if error:
            return f"broker {b} not fenced at its crash: the controller answered error code {error}"
        # the fencing and its elections are one batch of records; the brokers' metadata (what
        # the Admin API and the producers see) follows within a fetch round
        if not self.wait_for(lambda: self.fenced_since_crash(b), 5.0, f"broker {b} fenced",
                             raise_on_timeout=False):
            return f"broker {b} not fenced at its crash: no fencing in the controller's log after 5 s"
        if any(p.alive() and not p.paused for c, p in self.brokers.items() if c != b):
            self.wait_for(lambda: self._moved_off(b), 3.0, f"broker {b}'s leaderships moved",
                          raise_on_timeout=False)
        return None

    def _controller_log_size(self) -> int:
        try:
            return os.path.getsize(os.path.join(self.kafka_dir, "controller.log"))
        except OSError:
            return 0

    def metadata_log_size(self) -> int:
        """Bytes in the controller's metadata log segments now (story.py: which step wrote a
        record)."""
        import glob

        return sum(os.path.getsize(f) for f in
                   glob.glob(os.path.join(self.controller_dir, "__cluster_metadata-0", "*.log")))

    def fenced_since_crash(self, b: int) -> bool:
        """Is broker ``b``, crashed, fenced now? Read from the controller's own log (the Admin
        API needs a running broker to answer): its registration's last fencing change. Not
        "a fencing since the crash": a broker paused past its session was fenced before it
        crashed, and the controller writes no second fencing for it."""
        if b not in self._crashed_at:
            return True
        with open(os.path.join(self.kafka_dir, "controller.log"), "rb") as fh:
            return fenced_in_controller_log(fh.read(), b)

    def shutdown(self, b: int) -> bool:
        """Kafka's controlled shutdown of broker ``b``. False when it had to be SIGKILLed.

        While another broker is paused the controller does not grant it: a shutdown is granted
        once every active broker's metadata offset has reached the records that moved the
        leaders off ``b`` (BrokerHeartbeatManager's lowest active offset), and a SIGSTOPped
        broker reports none until it is resumed or fenced. The records that tell the story
        (leaders moved, ``b`` out of the ISRs, its fetchers stopped) are written at once, so
        the run goes on as soon as they are there and ``b`` finishes later (``reap_stopping``);
        waiting here let the paused follower's lag run out (random seed 1007)."""
        p = self.brokers[b]
        others_paused = any(q.paused for c, q in self.brokers.items() if c != b)
        if not others_paused:
            return p.terminate(60.0)
        p.begin_terminate()
        if p.exited(2.0):
            return True
        moved = self.wait_for(lambda: self._moved_off(b), 15.0,
                              f"broker {b}'s leaderships moved", raise_on_timeout=False)
        if not moved:
            return p.finish_terminate(0.0)
        return True

    def _moved_off(self, b: int) -> bool:
        """Does the Admin API show broker ``b`` leading nothing, and out of every ISR that
        has a leader (a partition left without one keeps its last ISR member)?"""
        try:
            view = self.describe()
        except Exception:  # noqa: BLE001 - no broker answering yet: not moved as far as we know
            return False
        return all(v.leader != b and (v.leader is None or b not in v.isr) for v in view.values())

    def stopping(self) -> list[int]:
        """Brokers told to stop that are still in their controlled shutdown."""
        return sorted(b for b, p in self.brokers.items() if p.stopping and p.process_alive())

    def reap_stopping(self, timeout: float) -> list[int]:
        """Brokers still in controlled shutdown once nobody is paused any more get the grant
        at the next heartbeats: wait ``timeout`` s for them to exit; SIGKILL the ones that do
        not (returned)."""
        if any(p.paused for p in self.brokers.values()):
            return []
        return [b for b in self.stopping() if not self.brokers[b].finish_terminate(timeout)]

    def pause(self, b: int) -> None:
        self.brokers[b].pause()

    def resume(self, b: int) -> None:
        self.brokers[b].resume()

    def restart(self, b: int, timeout: float = 90.0) -> None:
        if self.brokers[b].alive():
            raise ClusterError(f"broker {b} is still running")
        self._spawn_broker(b)
        self.wait_for(lambda: b in self.registered(), timeout, f"broker {b} registered again")

    def elect(self, kind: str, partitions: list[tuple[str, int]] | None) -> dict[str, str]:
        """Admin API leader election (PREFERRED or UNCLEAN); the per-partition errors are
        returned, not raised (ELECTION_NOT_NEEDED is a normal answer)."""
        from confluent_kafka import ElectionType, TopicPartition

        et = ElectionType.PREFERRED if kind == "preferred" else ElectionType.UNCLEAN
        tps = None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
        out: dict[str, str] = {}
        try:
            # (confluent-kafka 2.16 rejects the timeout keywords of elect_leaders)
            res = self.admin().elect_leaders(et, tps).result()
        except Exception as exc:  # noqa: BLE001
            return {"*": str(exc)}
        for tp, err in res.items():
            if err is not None:
                out[f"{tp.topic}-{tp.partition}"] = err.name() if hasattr(err, "name") else str(err)
        return out

    def delete_records(self, topic: str, partition: int, before: int) -> str | None:
        from confluent_kafka import TopicPartition

        try:
            futs = self.admin().delete_records([TopicPartition(topic, partition, before)],
                                               request_timeout=15)
            for fut in futs.values():
                fut.result()
        except Exception as exc:  # noqa: BLE001 - e.g. OFFSET_OUT_OF_RANGE past the HW
            return str(exc)
        return None

    # ------------------------------------------------------------------ waiting and stopping
    @staticmethod
    def wait_for(cond: Callable[[], bool], timeout: float, what: str, *, raise_on_timeout: bool = True,
                 interval: float = 0.1) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if cond():
                    return True
            except Exception:  # noqa: BLE001 - a broker restarting does not answer: poll again
                pass
            if time.monotonic() >= deadline:
                if raise_on_timeout:
                    raise ClusterError(f"timed out after {timeout:.0f} s waiting for {what}")
                return False
            time.sleep(interval)

    def stop(self) -> None:
        """End of the run: brokers are SIGKILLed (their dirs stay as the scenario left them,
        without the clean-shutdown marker, like the model's live brokers), then the controller
        is stopped with SIGTERM so its log is complete."""
        self._admin = None
        for p in self.brokers.values():
            if p.process_alive():
                p.kill()
        if self.coordinator is not None and self.coordinator.alive():
            self.coordinator.kill()
        if self.controller is not None and self.controller.alive():
            self.controller.terminate(20.0)
        config.release_ports([self.ports.controller, *self.ports.brokers.values(),
                              *([self.coordinator_port] if self.coordinator_port else [])])


#: the controller's INFO lines for a broker's registration and its fencing changes
_REGISTRATION = re.compile(
    rb"RegisterBrokerRecord\(brokerId=(\d+),[^\n]*?\bfenced=(true|false)"
    rb"|BrokerRegistrationChangeRecord\(brokerId=(\d+), brokerEpoch=\d+, fenced=(-?\d+)")


def fenced_in_controller_log(text: bytes, b: int) -> bool:
    """Is broker ``b`` fenced by the last registration change the controller's log (INFO
    "Replayed ..." lines) shows? False when it shows none."""
    fenced: bool | None = None
    for m in _REGISTRATION.finditer(text):
        if int(m.group(1) or m.group(3)) != b:
            continue
        if m.group(2) is not None:  # RegisterBrokerRecord: a new registration starts fenced
            fenced = m.group(2) == b"true"
        elif m.group(4) != b"0":  # BrokerRegistrationChangeRecord: 1 fenced, -1 unfenced, 0 unchanged
            fenced = m.group(4) == b"1"
    return fenced is True


def _kafka_uuid() -> str:
    import base64
    import uuid

    # like Kafka's Uuid.randomUuid (clients module): never one that starts with '-', which
    # kafka-storage's argument parser would take for an option
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")
        if not text.startswith("-"):
            return text


def _quiet_logger() -> Any:
    import logging

    log = logging.getLogger("segtools.realcluster.librdkafka")
    log.addHandler(logging.NullHandler())
    log.propagate = False
    return log
