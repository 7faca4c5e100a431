"""`--offsets-decoder` and `--share-group-state-decoder` against the real kafka-dump-log on the
``__consumer_offsets`` and ``__share_group_state`` files a real Kafka 4.3.1 broker wrote.

One KRaft broker (segtools.realcluster, features at 4.3's defaults: share.version=1,
streams.version=1) serves: a KIP-848 consumer group (confluent-kafka with
``group.protocol=consumer``, subscribing by regular expression, committing offsets), and a
share group (Kafka's own ConsoleShareConsumer class from the jars, which acknowledges what it
reads), and a KIP-1071 streams group (Kafka Streams 4.3.1 with ``group.protocol=streams``,
StreamsGroupDriver.java) whose records are types 17-23.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import parity_harness as h
import pytest
from cluster_fixtures import require_real_kafka

pytestmark = pytest.mark.realkafka

SCENARIO = {
    "name": "decoder-topics",
    "seed": 1,
    "cluster": {"brokers": [1]},
    "topics": [{"name": "dec-orders", "partitions": 2, "replication_factor": 1, "assignment": {0: [1], 1: [1]}},
               {"name": "dec-share", "replication_factor": 1, "assignment": {0: [1]}},
               {"name": "dec-streams-out", "replication_factor": 1, "assignment": {0: [1]}}],
    "steps": [{"advance": {"ms": 1}}],
}
#: one partition each, so the test reads one file per internal topic
EXTRA_BROKER_PROPS = "share.coordinator.state.topic.num.partitions=1\n"
RECORDS = 6


def _consume(bootstrap: str, group: str, subscription: list[str]) -> int:
    """Read every record of dec-orders in a KIP-848 group, commit, leave."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "group.protocol": "consumer", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    seen = 0
    try:
        consumer.subscribe(subscription)
        deadline = time.monotonic() + 60
        while seen < 2 * RECORDS and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen += 1
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()   # the member leaves: its records get tombstones
    return seen


def _streams_driver(runtime, work: Path, bootstrap: str) -> list[str]:
    """The command that runs StreamsGroupDriver.java (compiled here against the pinned jars):
    a Kafka Streams app in the streams group ``dec-streams`` copying dec-orders."""
    import subprocess

    source = Path(__file__).with_name("StreamsGroupDriver.java")
    javac = shutil.which("javac", path=str(Path(runtime.java).parent)) or shutil.which("javac")
    assert javac is not None, "javac not found: the decoder tests need a JDK 17"
    proc = subprocess.run([javac, "-d", str(work), "-cp", runtime.classpath, str(source)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"cannot compile {source.name}: {proc.stderr}"
    argv = runtime.command("StreamsGroupDriver", bootstrap, "dec-streams", "dec-orders", "dec-streams-out",
                           str(2 * RECORDS), str(work / "state"), heap="256m")
    argv[argv.index("-cp") + 1] = f"{work}:{runtime.classpath}"
    return argv


@pytest.fixture(scope="module")
def broker_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two internal partitions as the broker left them, copied into a work dir."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    from segtools.kafka_runtime import kafka_runtime
    from segtools.realcluster.cluster import RealCluster
    from segtools.realcluster.processes import kill_all, run_tool
    from segtools.simulate.scenario import parse_scenario

    require_real_kafka()
    out = tmp_path_factory.mktemp("decoder-cluster")

    class Cluster(RealCluster):
        def prepare(self) -> None:
            super().prepare()
            for b in self.scenario.cluster.brokers:
                with open(self._props_path(f"broker-{b}"), "a") as fh:
                    fh.write(EXTRA_BROKER_PROPS)

    runtime = kafka_runtime()
    cluster = Cluster(parse_scenario(SCENARIO), str(out), runtime, features={})
    try:
        cluster.start()
        cluster.create_topics()
        bootstrap = cluster.bootstrap()
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for i in range(RECORDS):
            producer.produce("dec-orders", key=f"k{i}", value=f"v{i}", partition=i % 2)
            producer.produce("dec-orders", key=f"k{i}", value=f"w{i}", partition=(i + 1) % 2)
            producer.produce("dec-share", key=f"s{i}", value=f"share-{i}", partition=0)
        assert producer.flush(30) == 0
        assert _consume(bootstrap, "dec-regex", ["^dec-ord.*"]) == 2 * RECORDS
        # a share group reads from its start only when told so (share.auto.offset.reset)
        group = ConfigResource(ResourceType.GROUP, "dec-share-group", incremental_configs=[
            ConfigEntry("share.auto.offset.reset", "earliest",
                        incremental_operation=AlterConfigOpType.SET)])
        for fut in cluster.admin().incremental_alter_configs([group]).values():
            fut.result(30)
        share = run_tool(runtime.command(
            "org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server", bootstrap,
            "--topic", "dec-share", "--group", "dec-share-group", "--max-messages", str(RECORDS),
            "--timeout-ms", "30000", heap="256m"), timeout=120)
        assert share.stdout.splitlines() == [f"share-{i}" for i in range(RECORDS)], share.stderr[-2000:]
        streams = run_tool(_streams_driver(runtime, tmp_path_factory.mktemp("streams-driver"), bootstrap),
                           timeout=180)
        assert streams.returncode == 0, (streams.stdout + streams.stderr)[-3000:]
        assert sorted(streams.stdout.split()) == sorted(f"{x}{i}".upper() for i in range(RECORDS) for x in "vw")
    finally:
        cluster.stop()
        kill_all()
    ws = tmp_path_factory.mktemp("decoder-ws")
    for part in ("__consumer_offsets-0", "__share_group_state-0"):
        src = out / "broker-1" / part
        shutil.copytree(src, ws / part)
    return ws


def _dump_both(kafka_dump_log: h.KafkaDumpLog, ws: Path, flag: str, part: str) -> tuple[h.Outcome, h.Outcome]:
    logs = sorted((ws / part).glob("*.log"))
    assert logs, f"no segment in {part}"
    job = [flag, "--files", ",".join(str(p.relative_to(ws)) for p in logs)]
    ours = h.run_ours(job, ws)
    kafka = kafka_dump_log.run_jobs([job], ws)[0]
    return kafka, ours


def test_offsets_decoder_on_a_real_kip848_and_share_group_coordinator_log(
        kafka_dump_log: h.KafkaDumpLog, broker_files: Path) -> None:
    kafka, ours = _dump_both(kafka_dump_log, broker_files, "--offsets-decoder", "__consumer_offsets-0")
    assert not kafka.crashed, kafka.exception[:500]
    assert ours.stdout == kafka.stdout, h.first_difference(kafka.stdout, ours.stdout)
    assert ours.status == 0, ours.stderr
    types = {int(line.split('key: {"type":"')[1].split('"')[0])
             for line in kafka.stdout.splitlines() if 'key: {"type":"' in line}
    # offsets, consumer-group metadata/members/assignments, the regex resolution (16), and the
    # share group's records (10-15)
    assert {1, 3, 5, 6, 7, 8, 16} <= types, types
    assert {10, 11, 12, 13, 14, 15} & types, types
    # the streams group (KIP-1071): metadata (17), member (19), target assignment (20, 21),
    # current assignment (22) and topology (23); 18 (partition metadata) is not required
    assert {17, 19, 20, 21, 22, 23} <= types, types
    assert '"subtopologyId":"0","sourceTopics":["dec-orders"]' in kafka.stdout.replace(" ", "")
    # librdkafka sends the pattern in parentheses: "(^dec-ord.*)"
    assert '"regularExpression":"(^dec-ord.*)"' in kafka.stdout
    assert "payload: <DELETE>" in kafka.stdout
    assert "Unknown record type" not in kafka.stdout and "skipping" not in kafka.stdout


def test_share_group_state_decoder_on_a_real_share_coordinator_log(
        kafka_dump_log: h.KafkaDumpLog, broker_files: Path) -> None:
    kafka, ours = _dump_both(kafka_dump_log, broker_files, "--share-group-state-decoder",
                             "__share_group_state-0")
    assert not kafka.crashed, kafka.exception[:500]
    assert ours.stdout == kafka.stdout, h.first_difference(kafka.stdout, ours.stdout)
    assert ours.status == 0, ours.stderr
    assert 'key: {"type":"0","data":{"groupId":"dec-share-group"' in kafka.stdout
    assert '"stateBatches":[' in kafka.stdout
    assert "skipping" not in kafka.stdout
