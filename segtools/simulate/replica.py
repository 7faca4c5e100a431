"""One replica of one partition, in memory: its batches, leader-epoch cache, HW and the values its
checkpoint files held when they were last written.

Batches are shared objects: a follower stores exactly the leader's batch (same offsets, same
partition leader epoch, same bytes), as Kafka does.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class SimRecord:
    """One produced record and what the producer/cluster know about it (shared by all copies)."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int
    key: str | None
    value: str | None
    headers: tuple[tuple[str, str | None], ...]
    timestamp: int
    acks: str
    acked: bool = False
    committed: bool = False
    seq: int = 0  # production order, for stable output
    resent_as: SimRecord | None = None  # the copy a producer resend wrote


@dataclass(eq=False)
class SimBatch:
    """One record batch as the leader wrote it. ``raw`` is built lazily by the file writer."""

    base_offset: int
    last_offset: int
    epoch: int
    records: list[SimRecord]
    timestamp: int
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    is_transactional: bool = False
    control_type: str | None = None  # "COMMIT" | "ABORT" for transaction markers
    compression: str = "none"
    raw: bytes | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ReplicaLog:
    """The log of one replica plus the replica-local state Kafka keeps next to it."""

    def __init__(self, broker: int) -> None:
        self.broker = broker
        self.batches: list[SimBatch] = []
        self._bases: list[int] = []
        self.log_end_offset = 0
        self.log_start_offset = 0
        self.epochs: list[tuple[int, int]] = []  # leader-epoch cache: (epoch, start_offset)
        self.epoch_file: list[tuple[int, int]] = []  # leader-epoch-checkpoint as last written
        self.high_watermark = 0
        self.hw_checkpoint: int | None = None
        self.flushed_offset = 0  # everything below is on disk (survives a power loss)
        self.recovery_checkpoint: int | None = None
        self.log_start_checkpoint: int | None = None
        self.torn_tail: SimBatch | None = None  # first batch a power loss cut: half of it stays
        self._segment_bases: list[int] = [0]
        self._segment_used = 0
        self.needs_truncation = False  # set on restart: the next fetch goes through truncation
        # the leader / leader epoch this replica last followed (truncation runs when they change)
        self.known_leader = -1
        self.known_epoch = -1
        # leader-side view of this follower (reset when leadership changes)
        self.fetch_offset: int | None = None
        self.last_caught_up_ms = 0
        self.last_fetch_leader_leo = 0
        self.last_fetch_ms = 0

    # ----- reading
    def latest_epoch(self) -> int:
        return self.epochs[-1][0] if self.epochs else -1

    def epoch_at(self, offset: int) -> int:
        """partitionLeaderEpoch of the batch holding ``offset`` (-1 if none)."""
        b = self.batch_at(offset)
        return -1 if b is None else b.epoch

    def batch_at(self, offset: int) -> SimBatch | None:
        i = bisect.bisect_right(self._bases, offset) - 1
        if i >= 0 and self.batches[i].last_offset >= offset:
            return self.batches[i]
        return None

    def batches_from(self, offset: int) -> list[SimBatch]:
        """Whole batches a fetch at ``offset`` returns (the one holding it, then the rest)."""
        i = bisect.bisect_right(self._bases, offset) - 1
        if i < 0 or self.batches[i].last_offset < offset:
            i += 1
        return self.batches[i:]

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch as the leader answers it (LeaderEpochFileCache.endOffsetFor):
        the largest epoch <= ``epoch`` and the start of the next higher one (or the LEO)."""
        if not self.epochs:
            return -1, -1
        starts = [e for e, _ in self.epochs]
        i = bisect.bisect_right(starts, epoch) - 1
        if i < 0:
            # below every known epoch: Kafka answers with the first known start offset
            return epoch, self.epochs[0][1]
        if i == len(self.epochs) - 1:
            return self.epochs[i][0], self.log_end_offset
        return self.epochs[i][0], self.epochs[i + 1][1]

    def has_epoch(self, epoch: int) -> bool:
        return any(e == epoch for e, _ in self.epochs)

    def has_record(self, offset: int, epoch: int) -> bool:
        b = self.batch_at(offset)
        return b is not None and b.epoch == epoch and offset >= self.log_start_offset

    # ----- writing
    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        """Add an epoch entry; like Kafka, drop entries that are not below it in both epoch and
        start offset. New entries are flushed to leader-epoch-checkpoint synchronously."""
        if self.epochs and self.epochs[-1][0] == epoch:
            return
        if self.epochs and self.epochs[-1][0] > epoch:
            return  # an older epoch is never added after a newer one
        self.epochs = [(e, s) for e, s in self.epochs if e < epoch and s < start_offset]
        self.epochs.append((epoch, start_offset))
        self.epoch_file = list(self.epochs)

    def append(self, batch: SimBatch, size: int = 0, segment_bytes: int = 0) -> None:
        if batch.epoch > self.latest_epoch():
            self.assign_epoch(batch.epoch, batch.base_offset)
        if segment_bytes and self._segment_used and self._segment_used + size > segment_bytes:
            # roll: Kafka flushes the finished segment (what a power loss cannot take)
            self._segment_bases.append(batch.base_offset)
            self._segment_used = 0
            self.flushed_offset = max(self.flushed_offset, batch.base_offset)
        self._segment_used += size
        batch.extra.setdefault("size", size)
        self.batches.append(batch)
        self._bases.append(batch.base_offset)
        self.log_end_offset = batch.last_offset + 1

    def truncate_to(self, offset: int) -> list[SimBatch]:
        """Remove every batch holding an offset >= ``offset`` (Kafka cuts at batch starts).
        Returns the removed batches. The epoch-cache truncation reaches the file lazily."""
        removed: list[SimBatch] = []
        if offset >= self.log_end_offset:
            return removed  # Kafka: nothing to truncate, the epoch cache is left alone
        while self.batches and self.batches[-1].last_offset >= offset:
            removed.append(self._pop())
        removed.reverse()
        self.log_end_offset = removed[0].base_offset if removed else offset
        while len(self._segment_bases) > 1 and self._segment_bases[-1] > self.log_end_offset:
            self._segment_bases.pop()
        self._segment_used = sum(b.extra.get("size", 0) for b in self.batches
                                 if b.base_offset >= self._segment_bases[-1])
        self.epochs = [(e, s) for e, s in self.epochs if s < self.log_end_offset]
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        self.flushed_offset = min(self.flushed_offset, self.log_end_offset)
        return removed

    def _pop(self) -> SimBatch:
        self._bases.pop()
        return self.batches.pop()

    def truncate_fully_and_start_at(self, offset: int) -> list[SimBatch]:
        removed = list(self.batches)
        self.batches.clear()
        self._bases.clear()
        self.log_start_offset = self.log_end_offset = offset
        self._segment_bases = [offset]
        self._segment_used = 0
        self.epochs = []
        self.high_watermark = offset
        self.flushed_offset = offset
        return removed

    def set_log_start(self, offset: int) -> None:
        """DeleteRecords / retention: move the log start and rewrite the first epoch entry."""
        if offset <= self.log_start_offset:
            return
        self.log_start_offset = offset
        if self.epochs:
            keep = [(e, s) for e, s in self.epochs if s > offset]
            floor = [(e, s) for e, s in self.epochs if s <= offset]
            if floor:
                keep.insert(0, (floor[-1][0], offset))
            self.epochs = keep
        self.high_watermark = max(self.high_watermark, min(offset, self.log_end_offset))

    def flush(self) -> None:
        self.flushed_offset = self.log_end_offset
