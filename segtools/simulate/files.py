"""Write the simulated brokers' state as real Kafka log directories.

Each partition log is replayed batch by batch through :class:`segtools.writer.LogWriter`, so
segments roll at ``segment_bytes`` and indexes follow ``LogSegment.append``. A broker that shut
down cleanly gets trimmed indexes, a producer snapshot and ``.kafka_cleanshutdown``; a crashed or
still running one keeps preallocated indexes and whatever checkpoints were last written (a crash
with ``lose_unflushed`` also leaves the first lost batch half written: a torn tail).
"""

from __future__ import annotations

import json
import os

from segtools.files.checkpoints import (
    write_leader_epoch_checkpoint,
    write_meta_properties,
    write_offset_checkpoint,
    write_partition_metadata,
)
from segtools.formats.names import LOG_SUFFIX, filename_prefix_from_offset
from segtools.formats.primitives import uuid_to_base64url
from segtools.simulate.batch_encoding import batch_bytes
from segtools.simulate.cluster import Cluster
from segtools.simulate.replica import ReplicaLog
from segtools.writer import LogWriter


def write_cluster(cluster: Cluster, out_dir: str) -> None:
    """Every broker's log dir under ``out_dir/broker-<id>/``."""
    for broker in sorted(cluster.brokers):
        write_broker(cluster, broker, os.path.join(out_dir, f"broker-{broker}"))


def write_broker(cluster: Cluster, broker: int, log_dir: str) -> None:
    st = cluster.brokers[broker]
    spec = cluster.spec
    os.makedirs(log_dir, exist_ok=True)
    write_meta_properties(os.path.join(log_dir, "meta.properties"), {
        "cluster.id": cluster.cluster_id, "directory.id": uuid_to_base64url(st.directory_id),
        "node.id": str(broker), "version": "1"}, now=spec.start_time_ms / 1000)
    hw: list[tuple[str, int, int]] = []
    recovery: list[tuple[str, int, int]] = []
    log_start: list[tuple[str, int, int]] = []
    for tp in sorted(cluster.replicas):
        r = cluster.replicas[tp].get(broker)
        if r is None:
            continue
        first_segment = _write_partition(cluster, tp, r, os.path.join(log_dir, f"{tp[0]}-{tp[1]}"),
                                         clean=st.clean_shutdown, crashed=not st.alive and not st.clean_shutdown)
        if r.hw_checkpoint is not None:
            hw.append((tp[0], tp[1], r.hw_checkpoint))
        if r.recovery_checkpoint is not None:
            recovery.append((tp[0], tp[1], r.recovery_checkpoint))
        if r.log_start_checkpoint is not None and r.log_start_checkpoint > first_segment:
            log_start.append((tp[0], tp[1], r.log_start_checkpoint))
    write_offset_checkpoint(os.path.join(log_dir, "replication-offset-checkpoint"), hw)
    write_offset_checkpoint(os.path.join(log_dir, "recovery-point-offset-checkpoint"), recovery)
    write_offset_checkpoint(os.path.join(log_dir, "log-start-offset-checkpoint"), log_start)
    marker = os.path.join(log_dir, ".kafka_cleanshutdown")
    if st.clean_shutdown:
        with open(marker, "w", encoding="utf-8") as fh:
            fh.write(json.dumps({"version": 0, "brokerEpoch": st.broker_epoch}, separators=(",", ":")))
    elif os.path.exists(marker):
        os.remove(marker)


def _write_partition(cluster: Cluster, tp: tuple[str, int], r: ReplicaLog, pdir: str, *,
                     clean: bool, crashed: bool) -> int:
    spec = cluster.spec
    writer = LogWriter(pdir, segment_bytes=spec.segment_bytes,
                       index_interval_bytes=spec.index_interval_bytes,
                       segment_index_bytes=spec.segment_index_bytes)
    start = r.batches[0].base_offset if r.batches else r.log_start_offset
    if start > 0:
        writer.truncate_fully_and_start_at(start)
    for batch in r.batches:
        writer.append(batch_bytes(batch), txn_first_offset=batch.extra.get("txn_first_offset"))
    if r.log_start_offset > writer.log_start_offset:
        writer.delete_records_before(min(r.log_start_offset, writer.log_end_offset))
    first_segment: int = writer.segments[0]
    if clean:
        writer.close()
    if crashed and r.torn_tail is not None:
        torn = batch_bytes(r.torn_tail)
        with open(os.path.join(pdir, filename_prefix_from_offset(writer.active_segment_base) + LOG_SUFFIX), "ab") as fh:
            fh.write(torn[: max(1, len(torn) // 2)])
    write_leader_epoch_checkpoint(os.path.join(pdir, "leader-epoch-checkpoint"), r.epoch_file)
    write_partition_metadata(os.path.join(pdir, "partition.metadata"), cluster.topic_ids[tp[0]])
    return first_segment
