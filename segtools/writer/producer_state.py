"""Producer state as ``ProducerStateManager`` keeps it, for snapshots and the txn index.

Rules from ``ProducerAppendInfo`` (storage/.../log/ProducerAppendInfo.java): a data batch
records (epoch, last sequence, last offset, offset delta, max timestamp) and opens a
transaction at its base offset if it is transactional and none is open; a COMMIT/ABORT marker
closes the open transaction (a marker with no open transaction completes nothing), sets the
coordinator epoch and the last timestamp. ``lastStableOffset(completedTxn)`` is the first
offset of the earliest other open transaction, else the marker offset + 1.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .batch_header import BatchHeader

__all__ = ["ProducerState", "ProducerStateTracker", "CompletedTxn"]


@dataclass(frozen=True, slots=True)
class ProducerState:
    """One entry of a producer snapshot (FORMATS.md section 8)."""

    producer_id: int
    epoch: int
    last_sequence: int = -1          # -1 when no data batch is known
    last_offset: int = -1            # -1 when no data batch is known
    offset_delta: int = 0
    timestamp: int = -1
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


def _java_long_hash_bucket(producer_id: int, table_size: int) -> int:
    """Bucket of a ``Long`` key in a ``java.util.HashMap`` of ``table_size`` slots."""
    value = producer_id & 0xFFFFFFFFFFFFFFFF
    h = (value ^ (value >> 32)) & 0xFFFFFFFF          # Long.hashCode
    return (h ^ (h >> 16)) & (table_size - 1)        # HashMap.hash + index


class ProducerStateTracker:
    def __init__(self) -> None:
        #: insertion-ordered (first batch seen first), like the HashMap's bucket chains
        self.producers: dict[int, ProducerState] = {}
        self._table_size = 16  # HashMap default capacity; doubles past 0.75 load, never shrinks

    def ongoing_first_offsets(self) -> dict[int, int]:
        return {pid: s.current_txn_first_offset for pid, s in self.producers.items()
                if s.current_txn_first_offset >= 0}

    def last_stable_offset(self, txn: CompletedTxn) -> int:
        others = [first for pid, first in self.ongoing_first_offsets().items()
                  if pid != txn.producer_id]
        return min(others) if others else txn.last_offset + 1

    def update(self, batch: BatchHeader, *, txn_first_offset: int | None = None) -> CompletedTxn | None:
        """Apply one appended batch; returns the transaction a marker completed, if any.
        ``txn_first_offset`` overrides the tracked first offset of the marker's transaction
        (for logs whose earlier part this tracker never saw)."""
        if batch.magic < 2 or batch.producer_id < 0:
            return None
        pid = batch.producer_id
        state = self.producers.get(pid) or ProducerState(producer_id=pid, epoch=batch.producer_epoch)
        if batch.producer_epoch != state.epoch:
            # a new epoch forgets the old batch metadata (ProducerStateEntry.maybeUpdateProducerEpoch)
            state = replace(state, epoch=batch.producer_epoch, last_sequence=-1, last_offset=-1,
                            offset_delta=0)
        if batch.is_control:
            if batch.records_count == 0 or batch.control_type not in (0, 1):
                self._put(pid, state)
                return None
            first = state.current_txn_first_offset
            if txn_first_offset is not None:
                first = txn_first_offset
            completed = None
            if first >= 0:
                completed = CompletedTxn(pid, first, batch.base_offset, batch.control_type == 0)
            coordinator_epoch = batch.coordinator_epoch
            self._put(pid, replace(
                state, current_txn_first_offset=-1, timestamp=batch.max_timestamp,
                coordinator_epoch=coordinator_epoch if coordinator_epoch is not None
                else state.coordinator_epoch))
            return completed
        current = state.current_txn_first_offset
        if batch.is_transactional and current < 0:
            current = batch.base_offset
        self._put(pid, replace(
            state, last_sequence=batch.last_sequence, last_offset=batch.last_offset,
            offset_delta=batch.last_offset - batch.base_offset, timestamp=batch.max_timestamp,
            current_txn_first_offset=current))
        return None

    def _put(self, pid: int, state: ProducerState) -> None:
        self.producers[pid] = state
        while len(self.producers) > self._table_size * 3 // 4:
            self._table_size *= 2

    def entries(self) -> list[ProducerState]:
        """Entries in the order Kafka's ``writeSnapshot`` iterates its ``HashMap<Long, _>``:
        by bucket, then by insertion within a bucket."""
        # sorted() is stable, so insertion order is kept within a bucket
        return sorted(self.producers.values(),
                      key=lambda s: _java_long_hash_bucket(s.producer_id, self._table_size))
