"""A real Kafka cluster that tiers: 3 brokers and a controller of the pinned release (4.3.1)
with Kafka's test plugin ``LocalTieredStorage`` (kafka-storage's test jar, jvm/pom.xml's
``tiered-storage`` profile) and the topic-based metadata manager, on 127.0.0.1. Used by the
real-cluster pytest (test_tier_realkafka.py) and the by-hand script (realcluster_check.py).

Real Kafka is required: a missing Java, Maven or jar is an error, never a skip."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
KAFKA_VERSION = "4.3.1"
LIST_OFFSETS_SOURCE = Path(__file__).with_name("ListOffsetsTiered.java")

TIERED_BROKER = [
    "remote.log.storage.system.enable=true",
    "remote.log.storage.manager.class.name="
    "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
    "remote.log.storage.manager.impl.prefix=rsm.config.",
    "remote.log.metadata.manager.listener.name=PLAINTEXT",
    # the copy/expiration task and local retention run every 500 ms: a lean test
    "remote.log.manager.task.interval.ms=500",
    "log.retention.check.interval.ms=500",
    # the log manager's retention task (local retention of tiered segments) would first run
    # 30 s after start-up
    "log.initial.task.delay.ms=0",
]


def classpath(version: str = KAFKA_VERSION) -> str:
    """The broker classpath plus kafka-storage's test jar, resolved by Maven once and cached
    (in $TMPDIR) while every jar it names exists."""
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"segtools-tiered-cp-{version}.txt"
    if out.is_file():
        cp = out.read_text().strip()
        if cp and all(os.path.isfile(j) for j in cp.split(os.pathsep)):
            return cp
    subprocess.run(["mvn", "-q", "-B", "-f", str(REPO / "jvm" / "pom.xml"), "-Ptiered-storage",
                    f"-Dkafka.version={version}", "dependency:build-classpath",
                    f"-Dmdep.outputFile={out}"], check=True, stdin=subprocess.DEVNULL,
                   timeout=300)
    return out.read_text().strip()


@contextmanager
def _tiered_properties(tiered: Path) -> Iterator[None]:
    """Brokers (and the controller, which validates ``remote.storage.enable`` of a topic)
    get the tiering switches while the cluster formats and starts."""
    from segtools.realcluster import config

    broker_props, controller_props = config.broker_properties, config.controller_properties
    extra = "\n".join([*TIERED_BROKER, f"rsm.config.dir={tiered}"])
    config.broker_properties = lambda *a, **k: broker_props(*a, **k) + extra + "\n"  # type: ignore[assignment]
    config.controller_properties = lambda *a, **k: (  # type: ignore[assignment]
        controller_props(*a, **k) + "remote.log.storage.system.enable=true\n")
    try:
        yield
    finally:
        config.broker_properties, config.controller_properties = broker_props, controller_props


class TieredCluster:
    """The running cluster; ``out`` holds broker-N/ log dirs, ``tiered`` the plugin's dir."""

    def __init__(self, out: Path) -> None:
        from segtools.realcluster import cluster
        from segtools.realcluster.kafka_runtime import KafkaRuntime, find_java
        from segtools.simulate import load_scenario

        self.out = out
        self.tiered = out / "tiered"
        self.tiered.mkdir(parents=True)
        self.runtime = KafkaRuntime(find_java(), classpath(), KAFKA_VERSION)
        scenario = load_scenario(REPO / "samples" / "scenarios" / "S0-healthy-baseline.yaml")
        self.rc = cluster.RealCluster(scenario, str(out), self.runtime)

    def start(self) -> None:
        with _tiered_properties(self.tiered):   # start() writes the properties first
            self.rc.start(timeout=120)

    def stop(self) -> None:
        self.rc.stop()

    @property
    def brokers(self) -> list[str]:
        return sorted(str(p) for p in self.out.glob("broker-*"))

    def create_topic(self, name: str, replicas: list[int] | None = None, **conf: str) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        conf = {"remote.storage.enable": "true", "segment.bytes": "1048576",
                "min.insync.replicas": "2", **conf}
        for attempt in range(3):   # a broker still settling may drop the request's connection
            admin = AdminClient({"bootstrap.servers": self.rc.bootstrap()})
            try:
                topic = (NewTopic(name, 1, 3, config=conf) if replicas is None else
                         NewTopic(name, 1, replica_assignment=[replicas], config=conf))
                for fut in admin.create_topics([topic]).values():
                    fut.result(60)
                return
            except Exception as exc:  # noqa: BLE001
                if "TOPIC_ALREADY_EXISTS" in str(exc) and attempt:
                    return
                if attempt == 2:
                    raise
                time.sleep(2)

    def view(self, topic: str) -> tuple[int, list[int]]:
        """(leader, ISR) of ``topic``-0 as a running broker answers now."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.rc.bootstrap()})
        got: list[tuple[int, list[int]]] = []

        def ask() -> bool:
            pm = admin.list_topics(topic, timeout=10).topics[topic].partitions.get(0)
            if pm is not None and pm.leader >= 0:
                got.append((pm.leader, list(pm.isrs)))
            return bool(got)

        self.wait(ask, f"a leader of {topic}-0", timeout=60)
        return got[-1]

    def elect_unclean(self, topic: str, via: list[int]) -> None:
        """An UNCLEAN election of ``topic``-0 through the running brokers ``via``, asked
        until the partition has a leader."""
        from confluent_kafka import ElectionType, TopicPartition
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.rc.bootstrap(via)})

        def elected() -> bool:
            try:
                admin.elect_leaders(ElectionType.UNCLEAN, [TopicPartition(topic, 0)]).result()
            except Exception:  # noqa: BLE001 - the controller not answering yet: ask again
                pass
            pm = admin.list_topics(topic, timeout=10).topics[topic].partitions.get(0)
            return pm is not None and pm.leader in via

        self.wait(elected, f"an unclean leader of {topic}-0", timeout=90)

    def produce(self, topic: str, records: int, size: int = 1000, acks: str = "all",
                prefix: str = "") -> None:
        """Incompressible values: ``records * size`` bytes decide how many segments roll.
        Keys are ``prefix`` + the record's number (which producer's lineage a record is)."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.rc.bootstrap(), "acks": acks,
                             "linger.ms": 5, "batch.size": 16384})
        for i in range(records):
            producer.produce(topic, value=os.urandom(size), key=f"{prefix}{i}".encode())
            if i % 500 == 0:
                producer.poll(0)
        if producer.flush(60) != 0:
            raise AssertionError(f"{topic}: records not acknowledged within 60 s")

    def remote_logs(self, topic: str) -> list[str]:
        return sorted(glob.glob(f"{self.tiered}/kafka-tiered-storage/{topic}-0-*/*.log"))

    def local_logs(self, topic: str) -> dict[str, list[str]]:
        return {b: sorted(glob.glob(f"{b}/{topic}-0/*.log")) for b in self.brokers}

    def wait(self, cond: Any, what: str, timeout: float = 90, fail: bool = True) -> bool:
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                if not fail:
                    return False
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(0.5)
        return True

    def alter_topic(self, topic: str, **conf: str) -> None:
        from confluent_kafka.admin import (
            AdminClient,
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
            ResourceType,
        )

        admin = AdminClient({"bootstrap.servers": self.rc.bootstrap(sorted(
            b for b, p in self.rc.brokers.items() if p.alive()))})
        res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
            for k, v in conf.items()])
        for fut in admin.incremental_alter_configs([res]).values():
            fut.result(60)

    def consume_from(self, topic: str, offset: int, timeout: float = 20, idle: float = 5
                     ) -> tuple[list[tuple[int, str]], str]:
        """What a consumer is served of ``topic``-0 from ``offset`` on: (offset, key) of every
        record until nothing came for ``idle`` s or ``timeout``, and the error that stopped it
        ('' if none; auto.offset.reset=error: an out-of-range fetch is reported, not skipped)."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({"bootstrap.servers": self.rc.bootstrap(sorted(
            b for b, p in self.rc.brokers.items() if p.alive())), "group.id": "tier-check",
            "enable.auto.commit": False, "auto.offset.reset": "error"})
        got: list[tuple[int, str]] = []
        error = ""
        try:
            consumer.assign([TopicPartition(topic, 0, offset)])
            deadline, quiet = time.monotonic() + timeout, time.monotonic() + idle
            while time.monotonic() < min(deadline, quiet):
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error():
                    error = str(msg.error())
                    break
                got.append((msg.offset(), (msg.key() or b"").decode()))
                quiet = time.monotonic() + idle
        finally:
            consumer.close()
        return got, error

    def delete_records(self, topic: str, before: int) -> None:
        """DeleteRecords: ``topic``-0's log start offset moves to ``before``."""
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.rc.bootstrap(sorted(
            b for b, p in self.rc.brokers.items() if p.alive()))})
        for fut in admin.delete_records([TopicPartition(topic, 0, before)]).values():
            fut.result(60)

    def list_offsets(self, *partitions: str) -> dict[str, dict[str, int]]:
        """``topic:partition`` -> EARLIEST, EARLIEST_LOCAL, LATEST_TIERED and LATEST as the
        brokers answer them now, by Kafka's own Admin client."""
        from segtools.realcluster.processes import run_tool

        argv = self.runtime.command(str(LIST_OFFSETS_SOURCE), self.rc.bootstrap(), *partitions,
                                    heap="128m")
        res = run_tool(argv, timeout=120)
        got = {line.split(" ", 2)[1]: json.loads(line.split(" ", 2)[2])
               for line in res.stdout.splitlines() if line.startswith("OFFSETS ")}
        if res.returncode != 0 or set(got) != set(partitions):
            raise AssertionError(f"ListOffsets failed (exit {res.returncode}): "
                                 + " ".join((res.stdout + res.stderr).split()[-40:]))
        return got
