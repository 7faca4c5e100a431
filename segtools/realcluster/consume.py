"""What a consumer of each final leader reads, in both isolation levels (truth.json's
``consumed``): the transaction outcome as a client sees it, independent of any log parsing.

kafka-python's consumer is used because it reads without a consumer group (librdkafka's needs
a ``group.id`` and would create ``__consumer_offsets`` on some broker of the scenario)."""

from __future__ import annotations

import time
from typing import Any

from segtools.realcluster.cluster import PartitionView, RealCluster

#: how long one read may take (a few records: far less in practice)
READ_TIMEOUT_S = 10.0
#: how long a leader is retried: one just elected may answer ListOffsets with a retriable
#: error (e.g. OFFSET_NOT_AVAILABLE until its HW reaches its epoch's start) for a while
LEADER_RETRY_S = 15.0


def read_final(cluster: RealCluster, view: dict[tuple[str, int], PartitionView]) -> dict[str, Any]:
    """``{"<topic>-<partition>": {"read_committed": [[offset, value], ...],
    "read_uncommitted": [...], "last_stable_offset": n, "high_watermark": n} | None}``; None
    where the partition has no leader that answers. One consumer per leader and isolation
    level reads all that leader's partitions."""
    out: dict[str, Any] = {}
    by_leader: dict[int, list[tuple[str, int]]] = {}
    for (topic, part), v in sorted(view.items()):
        proc = cluster.brokers.get(v.leader) if v.leader is not None else None
        if v.leader is None or proc is None or not proc.alive() or proc.paused:
            out[f"{topic}-{part}"] = None
        else:
            by_leader.setdefault(v.leader, []).append((topic, part))
    for leader, tps in sorted(by_leader.items()):
        deadline = time.monotonic() + LEADER_RETRY_S
        while True:
            try:
                committed = _read(cluster, leader, tps, "read_committed")
                uncommitted = _read(cluster, leader, tps, "read_uncommitted")
            except Exception as exc:  # noqa: BLE001 - a leader just elected may not serve yet
                if time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                for topic, part in tps:
                    out[f"{topic}-{part}"] = {"error": f"{type(exc).__name__}: {exc}"}
                break
            for tp in tps:
                out[f"{tp[0]}-{tp[1]}"] = {"read_committed": committed[tp][0],
                                           "read_uncommitted": uncommitted[tp][0],
                                           "last_stable_offset": committed[tp][1],
                                           "high_watermark": uncommitted[tp][1]}
            break
    return out


def _read(cluster: RealCluster, leader: int, tps: list[tuple[str, int]],
          isolation: str) -> dict[tuple[str, int], tuple[list[list[Any]], int]]:
    from kafka import KafkaConsumer, TopicPartition  # type: ignore[import-untyped]

    parts = {TopicPartition(t, p): (t, p) for t, p in tps}
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{cluster.ports.brokers[leader]}",
                             group_id=None, enable_auto_commit=False, isolation_level=isolation,
                             request_timeout_ms=5000)
    try:
        consumer.assign(list(parts))
        # ListOffsets in this isolation: the HW (read_uncommitted) or the LSO (read_committed)
        ends = consumer.end_offsets(list(parts))
        consumer.seek_to_beginning(*parts)
        got: dict[Any, list[list[Any]]] = {tp: [] for tp in parts}
        deadline = time.monotonic() + READ_TIMEOUT_S
        while any(consumer.position(tp) < ends[tp] for tp in parts) and time.monotonic() < deadline:
            for tp, recs in consumer.poll(timeout_ms=500).items():
                got[tp] += [[r.offset, None if r.value is None else r.value.decode("utf-8", "replace")]
                            for r in recs]
        for tp in parts:
            if consumer.position(tp) < ends[tp]:
                raise TimeoutError(f"{isolation} read of {tp.topic}-{tp.partition} stopped at offset "
                                   f"{consumer.position(tp)} before {ends[tp]}")
        return {parts[tp]: (got[tp], ends[tp]) for tp in parts}
    finally:
        consumer.close()
