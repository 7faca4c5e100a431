"""Epoch maps: leader epoch -> start offset, as Kafka's LeaderEpochFileCache keeps them.

A replica's map is derived from its batches (the smallest base offset per epoch) and then
reconciled with its ``leader-epoch-checkpoint`` following FORENSICS.md S14: the batches are
trusted, a leader's empty tail epoch is kept (KAFKA-7415), stale entries past the log end are
clipped and reported as information only.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from segtools.forensics.model import BatchFacts

#: Kafka's UNDEFINED_EPOCH: legacy (magic 0/1) batches carry no epoch.
UNDEFINED_EPOCH = -1


@dataclass(slots=True)
class EpochMap:
    """Ordered (epoch, start_offset) entries plus the log end offset they end at."""

    entries: list[tuple[int, int]]
    log_end_offset: int
    notes: list[tuple[str, str]] = field(default_factory=list)   # (code, detail) from reconcile

    @property
    def epochs(self) -> list[int]:
        return [e for e, _ in self.entries]

    def latest_epoch(self) -> int | None:
        return self.entries[-1][0] if self.entries else None

    def has_epoch(self, epoch: int) -> bool:
        i = bisect.bisect_left(self.epochs, epoch)
        return i < len(self.entries) and self.entries[i][0] == epoch

    def start_of(self, epoch: int) -> int | None:
        for e, start in self.entries:
            if e == epoch:
                return start
        return None

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        """Kafka's ``endOffsetFor``: the largest epoch <= ``epoch`` and the start offset of the
        next higher epoch (or the log end offset when it is the latest). When ``epoch`` is
        below every known epoch, returns (epoch, start offset of the first known epoch).
        An empty map answers (UNDEFINED_EPOCH, log end offset)."""
        if not self.entries:
            return (UNDEFINED_EPOCH, self.log_end_offset)
        epochs = self.epochs
        i = bisect.bisect_right(epochs, epoch)        # entries[:i] have epoch <= requested
        if i == 0:
            return (epoch, self.entries[0][1])
        floor_epoch = epochs[i - 1]
        end = self.entries[i][1] if i < len(self.entries) else self.log_end_offset
        return (floor_epoch, end)

    def largest_epoch_below(self, epoch: int) -> int | None:
        i = bisect.bisect_left(self.epochs, epoch)
        return self.epochs[i - 1] if i > 0 else None

    def epoch_at(self, offset: int) -> int | None:
        """Epoch whose range holds ``offset`` (None below the first entry)."""
        starts = [s for _, s in self.entries]
        i = bisect.bisect_right(starts, offset)
        return self.entries[i - 1][0] if i > 0 else None


def epoch_entries_from_batches(batches: Iterable[BatchFacts]) -> list[tuple[int, int]]:
    """The first base offset of each epoch, in log order, applying Kafka's assign() rule: a new
    entry drops earlier entries whose epoch or start offset is >= the new one's. Legacy batches
    (epoch -1) add nothing."""
    entries: list[tuple[int, int]] = []
    for b in batches:
        epoch = b.partition_leader_epoch
        if epoch < 0:
            continue
        if entries and entries[-1][0] == epoch:
            continue
        while entries and (entries[-1][0] >= epoch or entries[-1][1] >= b.base_offset):
            entries.pop()
        entries.append((epoch, b.base_offset))
    return entries


def build_epoch_map(batches: Sequence[BatchFacts], log_end_offset: int,
                    checkpoint: Sequence[tuple[int, int]] | None, log_start_offset: int = 0) -> EpochMap:
    """Epoch map from the batches, reconciled with the leader-epoch-checkpoint (S14)."""
    entries = epoch_entries_from_batches(batches)
    notes: list[tuple[str, str]] = []
    if checkpoint:
        from_batches = dict(entries)
        ckpt = list(checkpoint)
        last_batch_epoch = entries[-1][0] if entries else None
        first_start = entries[0][1] if entries else log_end_offset
        for i, (epoch, start) in enumerate(ckpt):
            if epoch in from_batches:
                # retention rewrites the first entry to (epoch, new log start): not a finding
                rewritten = i == 0 and start <= max(log_start_offset, first_start)
                if start != from_batches[epoch] and start > first_start and not rewritten:
                    notes.append(("CKPT_EPOCH_START_DIFFERS",
                                  f"epoch {epoch}: checkpoint {start}, batches {from_batches[epoch]}"))
                continue
            if last_batch_epoch is not None and epoch < last_batch_epoch:
                # An epoch with no batches below the latest one: replaced entry or retention
                # rewrite of the first entry; nothing to trust it for.
                continue
            if start == log_end_offset:
                # A leader records (epoch, LEO) before writing (KAFKA-7415).
                notes.append(("EMPTY_TAIL_EPOCH", f"epoch {epoch} at {start}"))
                if not entries or (epoch > entries[-1][0] and start >= entries[-1][1]):
                    entries.append((epoch, start))
            elif start > log_end_offset:
                notes.append(("STALE_EPOCH_CKPT", f"epoch {epoch} start {start} >= LEO {log_end_offset}"))
            else:
                # epoch above the batches' latest but starting inside the log: not written by
                # batches we hold, checkpoint claims it; trust the batches.
                notes.append(("STALE_EPOCH_CKPT", f"epoch {epoch} start {start} has no batches"))
        ckpt_epochs = {e for e, _ in ckpt}
        for epoch, start in epoch_entries_from_batches(batches):
            if epoch not in ckpt_epochs and (not ckpt or epoch >= ckpt[0][0]):
                notes.append(("CKPT_MISSING_EPOCH", f"epoch {epoch} (first at {start}) not in checkpoint"))
    if len({e for e, _ in entries}) < len(entries):   # pragma: no cover - guarded by assign rule
        raise AssertionError("duplicate epochs in epoch map")
    return EpochMap(entries=entries, log_end_offset=log_end_offset, notes=notes)
