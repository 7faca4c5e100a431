"""What a consumer of each final leader reads, in both isolation levels (truth.json's
``consumed``): the transaction outcome as a client sees it, independent of any log parsing.

kafka-python's consumer is used because it reads without a consumer group (librdkafka's needs
a ``group.id`` and would create ``__consumer_offsets`` on some broker of the scenario)."""

from __future__ import annotations

import time
from typing import Any

from segtools.realcluster.cluster import PartitionView, RealCluster

#: how long one partition's read may take (a few records: far less in practice)
READ_TIMEOUT_S = 10.0


def read_final(cluster: RealCluster, view: dict[tuple[str, int], PartitionView]) -> dict[str, Any]:
    """``{"<topic>-<partition>": {"read_committed": [[offset, value], ...],
    "read_uncommitted": [...], "last_stable_offset": n, "high_watermark": n} | None}``; None
    where the partition has no leader that answers."""
    out: dict[str, Any] = {}
    for (topic, part), v in sorted(view.items()):
        name = f"{topic}-{part}"
        proc = cluster.brokers.get(v.leader) if v.leader is not None else None
        if v.leader is None or proc is None or not proc.alive() or proc.paused:
            out[name] = None
            continue
        deadline = time.monotonic() + READ_TIMEOUT_S
        while True:
            try:
                committed, lso = _read(cluster, v.leader, topic, part, "read_committed")
                uncommitted, hw = _read(cluster, v.leader, topic, part, "read_uncommitted")
            except Exception as exc:  # noqa: BLE001 - a leader just elected may not serve yet
                if time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                out[name] = {"error": f"{type(exc).__name__}: {exc}"}
                break
            out[name] = {"read_committed": committed, "read_uncommitted": uncommitted,
                         "last_stable_offset": lso, "high_watermark": hw}
            break
    return out


def _read(cluster: RealCluster, leader: int, topic: str, part: int,
          isolation: str) -> tuple[list[list[Any]], int]:
    from kafka import KafkaConsumer, TopicPartition  # type: ignore[import-untyped]

    tp = TopicPartition(topic, part)
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{cluster.ports.brokers[leader]}",
                             group_id=None, enable_auto_commit=False, isolation_level=isolation,
                             request_timeout_ms=8000)
    try:
        consumer.assign([tp])
        # ListOffsets in this isolation: the HW (read_uncommitted) or the LSO (read_committed)
        end = consumer.end_offsets([tp])[tp]
        consumer.seek_to_beginning(tp)
        got: list[list[Any]] = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for rec in consumer.poll(timeout_ms=500).get(tp, []):
                got.append([rec.offset, None if rec.value is None else rec.value.decode("utf-8", "replace")])
        if consumer.position(tp) < end:
            raise TimeoutError(f"{isolation} read stopped at offset {consumer.position(tp)} before {end}")
        return got, end
    finally:
        consumer.close()
