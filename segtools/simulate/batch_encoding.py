"""The bytes of a simulated batch: built once from the leader's :class:`SimBatch`, shared by
every replica (the cluster sizes segments with them, ``files.py`` writes them)."""

from __future__ import annotations

from segtools.simulate.replica import SimBatch
from segtools.writer import NewRecord, build_batch, build_control_batch


def _text(s: str | None) -> bytes | None:
    return None if s is None else s.encode("utf-8")


def batch_bytes(batch: SimBatch) -> bytes:
    """The batch as the leader wrote it (built once, shared by every replica)."""
    if batch.raw is None:
        if batch.control_type is not None:
            batch.raw = build_control_batch(
                batch.control_type, base_offset=batch.base_offset, producer_id=batch.producer_id,
                producer_epoch=batch.producer_epoch, partition_leader_epoch=batch.epoch,
                timestamp=batch.timestamp)
        else:
            records = [NewRecord(_text(r.key), _text(r.value),
                                 tuple((k, _text(v)) for k, v in r.headers), r.timestamp)
                       for r in batch.records]
            batch.raw = build_batch(
                records, base_offset=batch.base_offset, partition_leader_epoch=batch.epoch,
                compression=batch.compression, producer_id=batch.producer_id,
                producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
                is_transactional=batch.is_transactional)
    return batch.raw
