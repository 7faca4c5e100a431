"""A one-broker real Kafka cluster whose partitions are copied in from evidence (shared by the
salvage and replay tests): topics are created, the broker stops, each copied partition dir
replaces the empty one (partition.metadata gets the new topic id, the root checkpoints
entries for it), the clean-shutdown marker goes so Kafka's log recovery runs on the copies,
and the broker starts again."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cluster_fixtures import require_real_kafka


@contextlib.contextmanager
def broker_with(partitions: dict[str, Path], out: Path) -> Iterator[tuple[Any, Path, int]]:
    """``partitions``: topic name -> partition dir (partition 0) to copy in. Yields (cluster,
    broker log dir, byte position in the broker's log4j file where the restart begins)."""
    require_real_kafka()
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import NewTopic

    from segtools.realcluster.cluster import RealCluster
    from segtools.realcluster.kafka_runtime import kafka_runtime
    from segtools.realcluster.processes import kill_all
    from segtools.simulate import parse_scenario

    scenario = parse_scenario({"cluster": {"brokers": [1]},
                               "topics": [{"name": "unused", "replication_factor": 1}], "steps": []})
    out.mkdir(parents=True, exist_ok=True)
    cluster = RealCluster(scenario, str(out), kafka_runtime())
    try:
        cluster.start()
        for fut in cluster.admin().create_topics(
                [NewTopic(t, num_partitions=1, replication_factor=1) for t in partitions],
                request_timeout=60).values():
            fut.result()
        ids: dict[str, str] = {}

        def described() -> bool:
            for name, fut in cluster.admin().describe_topics(TopicCollection(list(partitions))).items():
                ids[name] = str(fut.result().topic_id).replace("+", "-").replace("/", "_").rstrip("=")
            return True

        cluster.wait_for(described, 60, "the topics described")
        broker = out / "broker-1"
        cluster.wait_for(lambda: all((broker / f"{t}-0").is_dir() for t in partitions), 60, "topic dirs created")
        assert cluster.shutdown(1)
        ends = {}
        for topic, src in partitions.items():
            dst = broker / f"{topic}-0"
            shutil.rmtree(dst)
            shutil.copytree(src, dst)
            for p in dst.iterdir():   # only the log files: Kafka rebuilds the rest
                if p.suffix not in (".log", ".index", ".timeindex", ".txnindex", ".snapshot"):
                    p.unlink()
            (dst / "partition.metadata").write_text(f"version: 0\ntopic_id: {ids[topic]}\n")
            ends[topic] = _log_end(dst)
        for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                     "log-start-offset-checkpoint"):
            path = broker / name
            lines = path.read_text().split("\n")[2:] if path.exists() else []
            entries = [ln for ln in lines if ln.strip() and ln.split(" ")[0] not in partitions]
            entries += [f"{t} 0 {ends[t] if name.startswith('replication') else 0}" for t in partitions]
            path.write_text("0\n" + f"{len(entries)}\n" + "\n".join(entries) + "\n")
        (broker / ".kafka_cleanshutdown").unlink(missing_ok=True)
        mark = os.path.getsize(out / "kafka" / "broker-1.log")
        cluster.restart(1)
        yield cluster, broker, mark
    finally:
        cluster.stop()
        kill_all()


def _log_end(partition_dir: Path) -> int:
    from segtools.records.batches import iter_batches

    last = -1
    for batch in iter_batches(str(partition_dir)):
        last = batch.last_offset
    return last + 1
