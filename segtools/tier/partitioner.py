"""Which ``__remote_log_metadata`` partition holds a topic partition's history
(storage's ``RemoteLogMetadataTopicPartitioner.metadataPartition``)."""

from __future__ import annotations

import base64

from segtools.filters import murmur2


def _java_long_hash(v: int) -> int:
    u = v & 0xFFFFFFFFFFFFFFFF
    h = (u ^ (u >> 32)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def metadata_partition(topic_id: str, partition: int, partitions: int = 50) -> int:
    """Kafka hashes Objects.hash(lsb, msb, partition) as 4 big-endian bytes with murmur2."""
    raw = base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4))
    msb = int.from_bytes(raw[:8], "big", signed=True)
    lsb = int.from_bytes(raw[8:16], "big", signed=True)
    h = 1
    for part in (_java_long_hash(lsb), _java_long_hash(msb), partition):
        h = (31 * h + part) & 0xFFFFFFFF
    return (murmur2(h.to_bytes(4, "big")) & 0x7FFFFFFF) % partitions
