"""A partition directory written the way a Kafka broker writes it.

Follows ``LogSegment`` (append, roll, recover, truncateTo), ``LocalLog``/``UnifiedLog``
(roll offsets, truncation, log start offset, producer snapshots) and ``LogLoader`` (recovery
after the recovery point) -- see FORMATS.md sections 5-8 and 11. Batches are appended as
given (offsets already assigned, like a follower's append).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import astuple, dataclass, replace
from typing import Any

import numpy as np

from segtools.files.indexes import read_offset_index, read_time_index, read_txn_index
from segtools.formats.names import (
    LOG_SUFFIX,
    SEGMENT_FILE_RE,
    SNAPSHOT_SUFFIX,
    filename_prefix_from_offset,
    offset_from_filename,
)
from segtools.records.segment_file import SegmentFile

from ..errors import FormatError, InputError
from .batch_header import BatchHeader, parse_batch_header, split_batches
from .index_files import AbortedTxnEntry, OffsetIndexFile, TimeIndexFile, TxnIndexFile
from .producer_state import ProducerState, ProducerStateTracker

__all__ = ["LogWriter", "AppendInfo", "segment_file_name"]

_INT32_MAX = 2**31 - 1


def segment_file_name(offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` style names (20-digit zero-padded offset)."""
    return filename_prefix_from_offset(offset) + suffix


@dataclass(frozen=True, slots=True)
class AppendInfo:
    base_offset: int     # first offset of the first appended batch (legacy: its offset field)
    last_offset: int     # last offset of the last appended batch
    position: int        # byte position of the chunk in the segment's .log
    segment_base: int    # base offset of the segment that received it


class _Segment:
    """One segment: ``.log`` plus its indexes, and the in-memory counters of ``LogSegment``."""

    def __init__(self, directory: str, base_offset: int, *, index_bytes: int,
                 active: bool) -> None:
        self.base_offset = base_offset
        self.log_path = os.path.join(directory, segment_file_name(base_offset, ".log"))
        if not os.path.exists(self.log_path):
            with open(self.log_path, "wb"):
                pass
        self.size = os.path.getsize(self.log_path)
        self.offset_index = OffsetIndexFile(
            os.path.join(directory, segment_file_name(base_offset, ".index")), base_offset,
            index_bytes, preallocate=active)
        self.time_index = TimeIndexFile(
            os.path.join(directory, segment_file_name(base_offset, ".timeindex")), base_offset,
            index_bytes, preallocate=active)
        self.txn_index = TxnIndexFile(
            os.path.join(directory, segment_file_name(base_offset, ".txnindex")))
        self.max_timestamp_so_far = -1
        self.offset_of_max_timestamp = -1
        self.bytes_since_last_index_entry = 0
        self.last_offset: int | None = None  # last offset of the last batch in the .log
        #: max timestamp of the first append into the segment (``rollingBasedTimestamp``)
        self.rolling_based_timestamp: int | None = None

    @property
    def paths(self) -> list[str]:
        return [self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path]

    def can_convert(self, offset: int) -> bool:
        return 0 <= offset - self.base_offset <= _INT32_MAX

    def should_roll(self, chunk_size: int, last_offset: int, max_timestamp: int,
                    segment_bytes: int, segment_ms: int | None) -> bool:
        """``LogSegment.shouldRoll``. The time rule compares batch timestamps (no jitter; a
        segment without timestamps never rolls on time here, Kafka would use its wall clock).
        An empty segment never rolls (Kafka would replace it by an identical empty one)."""
        if self.size == 0:
            return False
        reached_roll_ms = (segment_ms is not None and self.rolling_based_timestamp is not None
                           and self.rolling_based_timestamp >= 0
                           and max_timestamp - self.rolling_based_timestamp > segment_ms)
        return (self.size > segment_bytes - chunk_size or reached_roll_ms
                or self.offset_index.is_full() or self.time_index.is_full()
                or not self.can_convert(last_offset))

    def index_batch(self, batch: BatchHeader, position: int, interval: int) -> None:
        """The per-batch bookkeeping of ``LogSegment.append``/``recover``."""
        if batch.max_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = batch.max_timestamp
            self.offset_of_max_timestamp = batch.last_offset
        if self.bytes_since_last_index_entry > interval:
            self.offset_index.append(batch.last_offset, position)
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp)
            self.bytes_since_last_index_entry = 0
        self.bytes_since_last_index_entry += batch.size
        self.last_offset = batch.last_offset

    def final_time_entry(self) -> None:
        """The entry ``onBecomeInactiveSegment``/``close`` add (skipping the full check)."""
        if self.max_timestamp_so_far >= 0 or self.offset_of_max_timestamp >= 0:
            self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp)

    def become_inactive(self) -> None:
        self.final_time_entry()
        self.offset_index.trim()
        self.time_index.trim()

    def reactivate(self) -> None:
        self.offset_index.resize(self.offset_index.max_size)
        self.time_index.resize(self.time_index.max_size)

    def read_batches(self) -> tuple[list[BatchHeader], int]:
        """Headers of the valid batches at the start of the ``.log`` and the byte count they
        cover, like ``LogSegment.recover`` (storage/.../internals/log/LogSegment.java): the
        one batch walk (segtools.records.batch_walk, FileLogInputStream.nextBatch, no size limit)
        steps from batch to batch; where it stops, or a batch fails ``ensureValid`` (size,
        magic, CRC) or ``ensureOffsetInRange``, recover catches the exception and truncates
        there."""
        headers: list[BatchHeader] = []
        pos = 0
        if self.size == 0:
            return headers, pos
        # read-only with a bounded window, not mmap: the file may be truncated under us
        # (another process, a test), which must be an error, not SIGBUS
        with SegmentFile(self.log_path) as log:
            for step in log.batches_from(0):   # stops at a torn tail or CorruptRecordException
                buf, rel = log.batch_bytes(step)
                try:
                    header = parse_batch_header(buf, rel, path=self.log_path, file_position=pos)
                except FormatError:
                    break
                if not header.crc_valid or not self.can_convert(header.last_offset):
                    break
                headers.append(replace(header, position=pos))
                pos += header.size
        return headers, pos


class LogWriter:
    """Write one partition directory (``<topic>-<partition>``) like a broker's ``UnifiedLog``.

    ``append`` takes batch bytes with offsets already assigned (``build_batch`` output or
    several batches back to back). Segments roll at ``segment_bytes``; indexes get an entry
    every ``index_interval_bytes``; producer snapshots are written on roll and close.
    Opening an existing directory loads its segments (clean-shutdown style: indexes read back,
    producer state replayed from the logs); call :meth:`recover` to treat it as unclean.
    """

    def __init__(self, partition_dir: str | os.PathLike[str], *, segment_bytes: int = 1073741824,
                 index_interval_bytes: int = 4096, segment_index_bytes: int = 10485760,
                 create: bool = True, keep_deleted_files: bool = False,
                 segment_ms: int | None = None) -> None:
        self.dir = os.fspath(partition_dir)
        if segment_bytes < 14:
            raise ValueError("segment_bytes must be at least 14")
        if segment_index_bytes < 12 * 2:
            raise ValueError("segment_index_bytes must hold at least two time index entries")
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.segment_index_bytes = segment_index_bytes
        #: deleted segments/snapshots are renamed to ``*.deleted`` and left there (what a
        #: broker leaves behind when it stops within ``file.delete.delay.ms``)
        self.keep_deleted_files = keep_deleted_files
        #: ``segment.ms``: roll when an append's max timestamp is more than this after the max
        #: timestamp of the segment's first append (None: size/index rules only)
        self.segment_ms = segment_ms
        if not os.path.isdir(self.dir):
            if not create:
                raise InputError(f"partition directory not found: {self.dir}")
            os.makedirs(self.dir)
        self._segments: list[_Segment] = []
        self._producers = ProducerStateTracker()
        self._log_start_offset = 0
        self._log_end_offset = 0
        self._recovery_point = 0
        self._last_snapshot_offset: int | None = None
        self._closed = False
        self._load()

    # ------------------------------------------------------------------ properties
    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def recovery_point(self) -> int:
        return self._recovery_point

    @property
    def segments(self) -> list[int]:
        """Base offsets of the segments, oldest first."""
        return [s.base_offset for s in self._segments]

    @property
    def active_segment_base(self) -> int:
        return self._segments[-1].base_offset

    def producer_states(self) -> list[ProducerState]:
        return self._producers.entries()

    # ------------------------------------------------------------------ loading
    def _load(self) -> None:
        # the writer's own output dir: its live segments by the formats/ name rule
        bases = sorted(int(m["offset"]) for n in os.listdir(self.dir)
                       if (m := SEGMENT_FILE_RE.match(n)) and m["kind"] == LOG_SUFFIX
                       and not m["extra"])
        snapshots = self._snapshot_offsets()
        self._last_snapshot_offset = snapshots[-1] if snapshots else None
        if not bases:
            self._segments = [self._new_segment(0, active=True)]
            return
        for base in bases:
            segment = _Segment(self.dir, base, index_bytes=self.segment_index_bytes,
                               active=False)
            segment.offset_index.entries = self._read_pairs(segment.offset_index.path, base,
                                                            offset_first=True)
            segment.time_index.entries = self._read_pairs(segment.time_index.path, base,
                                                          offset_first=False)
            segment.txn_index.entries = self._read_txn(segment.txn_index.path)
            self._segments.append(segment)
        self._log_start_offset = bases[0]
        self._replay(rebuild_from=None)
        self._segments[-1].reactivate()
        self._recovery_point = self._log_end_offset

    @staticmethod
    def _read_pairs(path: str, base: int, *, offset_first: bool) -> list[tuple[int, int]]:
        """An index's entries read back through the one index reader (files/indexes): every
        whole slot, up to the zero tail (``.index``: a later slot with relative offset 0;
        ``.timeindex``: a later slot of timestamp 0 and relative offset 0)."""
        if not os.path.exists(path):
            return []
        if offset_first:
            slots = read_offset_index(path, strict=False, trim=True)
            return list(zip((slots["relative_offset"].astype("int64") + base).tolist(),
                            slots["position"].astype("int64").tolist()))
        slots = read_time_index(path, strict=False, trim=False)
        ts = slots["timestamp"].astype("int64")
        rel = slots["relative_offset"].astype("int64")
        tail = np.flatnonzero((ts[1:] == 0) & (rel[1:] == 0))
        n = int(tail[0]) + 1 if len(tail) else len(slots)
        return list(zip(ts[:n].tolist(), (rel[:n] + base).tolist()))

    @staticmethod
    def _read_txn(path: str) -> list[AbortedTxnEntry]:
        if not os.path.exists(path):
            return []
        return [AbortedTxnEntry(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
                for t in read_txn_index(path, strict=False)]

    def _replay(self, rebuild_from: int | None) -> int:
        """Walk every segment: recompute producer state, log end offset and the per-segment
        max timestamps; segments with base >= ``rebuild_from`` get their indexes rebuilt like
        ``LogSegment.recover`` (and an invalid tail truncated, later segments deleted).
        Returns the number of bytes truncated."""
        self._producers = ProducerStateTracker()
        truncated = 0
        end_offset = self._log_start_offset
        kept: list[_Segment] = []
        for i, segment in enumerate(self._segments):
            segment.size = os.path.getsize(segment.log_path)  # a crash may have left more bytes
            rebuild = rebuild_from is not None and (
                i + 1 == len(self._segments) or self._segments[i + 1].base_offset > rebuild_from)
            headers, valid = segment.read_batches()
            if rebuild:
                segment.offset_index.reset()
                segment.time_index.reset()
                segment.txn_index.reset()
            segment.max_timestamp_so_far = -1
            segment.offset_of_max_timestamp = -1
            segment.bytes_since_last_index_entry = 0
            segment.last_offset = None
            # loadFirstBatchTimestamp: the first batch's max timestamp drives segment.ms
            segment.rolling_based_timestamp = headers[0].max_timestamp if headers else None
            position = 0
            for header in headers:
                if rebuild:
                    segment.index_batch(header, position, self.index_interval_bytes)
                else:
                    segment.last_offset = header.last_offset
                    if header.max_timestamp > segment.max_timestamp_so_far:
                        segment.max_timestamp_so_far = header.max_timestamp
                        segment.offset_of_max_timestamp = header.last_offset
                completed = self._producers.update(header)
                if completed is not None and completed.is_aborted and rebuild:
                    segment.txn_index.append(AbortedTxnEntry(
                        completed.producer_id, completed.first_offset, completed.last_offset,
                        self._producers.last_stable_offset(completed)))
                position += header.size
                end_offset = max(end_offset, header.last_offset + 1)
            kept.append(segment)
            if rebuild:
                cut = segment.size - valid
                if cut > 0:
                    os.truncate(segment.log_path, valid)
                    segment.size = valid
                    truncated += cut
                segment.offset_index.trim()
                segment.final_time_entry()
                segment.time_index.trim()
                if cut > 0:
                    for later in self._segments[i + 1:]:
                        self._delete_segment_files(later)
                    break
            end_offset = max(end_offset, segment.base_offset)
        self._segments = kept
        self._log_end_offset = end_offset
        # LocalLog: the log end offset is never below the active segment's base offset
        self._log_end_offset = max(self._log_end_offset, self._segments[-1].base_offset)
        return truncated

    # ------------------------------------------------------------------ files
    def _new_segment(self, base_offset: int, *, active: bool) -> _Segment:
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            path = os.path.join(self.dir, segment_file_name(base_offset, suffix))
            if os.path.exists(path):  # LocalLog.roll deletes leftovers with the new names
                os.remove(path)
        return _Segment(self.dir, base_offset, index_bytes=self.segment_index_bytes,
                        active=active)

    def _remove_file(self, path: str) -> None:
        if not os.path.exists(path):
            return
        if self.keep_deleted_files:
            os.replace(path, path + ".deleted")
        else:
            os.remove(path)

    def _delete_segment_files(self, segment: _Segment) -> None:
        for path in segment.paths:
            self._remove_file(path)

    def _snapshot_offsets(self) -> list[int]:
        return sorted(offset_from_filename(n) for n in os.listdir(self.dir)
                      if (m := SEGMENT_FILE_RE.match(n)) and m["kind"] == SNAPSHOT_SUFFIX
                      and not m["extra"])

    def _snapshot_path(self, offset: int) -> str:
        return os.path.join(self.dir, segment_file_name(offset, ".snapshot"))

    def _take_snapshot(self, offset: int) -> None:
        """``ProducerStateManager.takeSnapshot``: only when the offset moved past the last one."""
        if self._last_snapshot_offset is not None and offset <= self._last_snapshot_offset:
            return
        from segtools.files.snapshots import ProducerSnapshotEntry, write_producer_snapshot

        write_producer_snapshot(self._snapshot_path(offset),
                                [ProducerSnapshotEntry(*astuple(e)) for e in self._producers.entries()])
        self._last_snapshot_offset = offset

    def _delete_snapshots(self, *, below: int | None = None, above: int | None = None) -> None:
        for offset in self._snapshot_offsets():
            if (below is not None and offset < below) or (above is not None and offset > above):
                self._remove_file(self._snapshot_path(offset))
        remaining = self._snapshot_offsets()
        self._last_snapshot_offset = remaining[-1] if remaining else None

    # ------------------------------------------------------------------ append
    def _check_open(self) -> None:
        if self._closed:
            raise InputError(f"log writer for {self.dir} is closed")

    def _roll(self, expected_next_offset: int) -> _Segment:
        """``UnifiedLog.roll``: new base = max(expected next offset, log end offset); the old
        active segment is finished and a producer snapshot named after the new base written."""
        new_base = max(expected_next_offset, self._log_end_offset)
        active = self._segments[-1]
        active.become_inactive()
        segment = self._new_segment(new_base, active=True)
        self._segments.append(segment)
        self._take_snapshot(new_base)
        return segment

    def append(self, batch_bytes: bytes | bytearray | memoryview, *,
               validate: bool = True, txn_first_offset: int | None = None) -> AppendInfo:
        """Append one or more whole batches (offsets already assigned) to the active segment,
        rolling first when Kafka would. Index entries follow ``LogSegment.append``: per batch,
        when more than ``index_interval_bytes`` were appended since the last entry, an offset
        index entry (batch last offset, batch position) and a time index entry (max timestamp
        so far, last offset of the batch holding it).

        ``validate`` (default) rejects a CRC mismatch and offsets that do not follow the log end
        offset; ``validate=False`` writes such bytes anyway (to build corrupt evidence).
        ``txn_first_offset``, for an ABORT/COMMIT marker, overrides the first offset of the
        producer's transaction (else the tracked one) used for the ``.txnindex`` entry.
        """
        self._check_open()
        data = bytes(batch_bytes)
        if not data:
            raise InputError("nothing to append")
        headers = split_batches(data, require_valid_crc=validate)
        first, last = headers[0], headers[-1]
        if validate:
            previous = self._log_end_offset - 1
            for header in headers:
                if header.base_offset <= previous:
                    raise InputError(
                        f"batch offset {header.base_offset} does not follow the log end offset "
                        f"{self._log_end_offset} (offsets must increase)")
                if header.last_offset < header.base_offset:
                    raise InputError(f"batch last offset {header.last_offset} is below its base "
                                     f"offset {header.base_offset}")
                previous = header.last_offset
        last_offset = max(h.last_offset for h in headers)
        segment = self._segments[-1]
        max_timestamp = max(h.max_timestamp for h in headers)
        if segment.should_roll(len(data), last_offset, max_timestamp, self.segment_bytes,
                               self.segment_ms):
            # UnifiedLog.maybeRoll: the roll offset is the first offset of the first batch
            # (for legacy batches the offset field, i.e. the last inner offset)
            segment = self._roll(first.base_offset)
        if not segment.can_convert(last_offset) or not segment.can_convert(first.base_offset):
            raise InputError(f"offsets {first.base_offset}..{last_offset} cannot be stored in "
                             f"segment {segment.base_offset} (relative offset out of int32)")
        position = segment.size
        if position == 0:
            segment.rolling_based_timestamp = max_timestamp
        with open(segment.log_path, "r+b") as f:
            f.seek(position)
            f.write(data)
        segment.size += len(data)
        batch_position = position
        for header in headers:
            segment.index_batch(header, batch_position, self.index_interval_bytes)
            batch_position += header.size
            completed = self._producers.update(
                header, txn_first_offset=txn_first_offset if header.is_control else None)
            if completed is not None and completed.is_aborted:
                segment.txn_index.append(AbortedTxnEntry(
                    completed.producer_id, completed.first_offset, completed.last_offset,
                    self._producers.last_stable_offset(completed)))
        self._log_end_offset = max(self._log_end_offset, last_offset + 1)
        return AppendInfo(first.base_offset, last.last_offset, position, segment.base_offset)

    def append_batches(self, batches: Sequence[bytes], **kwargs: Any) -> list[AppendInfo]:
        """Append each batch separately (one ``append`` call per batch)."""
        return [self.append(b, **kwargs) for b in batches]

    def roll(self) -> int:
        """Force a roll (e.g. ``segment.ms`` elapsed); returns the new segment's base offset.
        Rolling an empty active segment is a no-op, as in Kafka."""
        self._check_open()
        if self._segments[-1].size == 0:
            return self._segments[-1].base_offset
        return self._roll(self._log_end_offset).base_offset

    # ------------------------------------------------------------------ flush / recover
    def flush(self) -> int:
        """fsync every file and move the recovery point to the log end offset (returned).
        As the recovery-point checkpoint that follows does
        (``deleteSnapshotsAfterRecoveryPointCheckpoint``), producer snapshots are then deleted
        below ``min(base of the segment before the active one, base of the segment before the
        recovery point)``: those of the last two segments stay."""
        self._check_open()
        for segment in self._segments:
            for path in segment.paths:
                if os.path.exists(path):
                    fd = os.open(path, os.O_RDONLY)
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)
        self._recovery_point = self._log_end_offset
        self._delete_snapshots(below=self._min_snapshot_offset_to_retain())
        return self._recovery_point

    def _lower_segment_base(self, offset: int) -> int | None:
        """Base of the segment with the largest base offset strictly below ``offset``."""
        lower = [s.base_offset for s in self._segments if s.base_offset < offset]
        return lower[-1] if lower else None

    def _min_snapshot_offset_to_retain(self) -> int:
        active = self._segments[-1].base_offset
        two_segments = self._lower_segment_base(active)
        recovery = self._lower_segment_base(self._recovery_point)
        return min(active if two_segments is None else two_segments,
                   self._recovery_point if recovery is None else recovery)

    def recover(self, from_offset: int | None = None) -> int:
        """``LogLoader.recoverLog``: re-validate the batches of every segment holding offsets
        at or after ``from_offset`` (default: the recovery point), truncate the first invalid or
        torn tail (and delete all later segments), rebuild those segments' offset, time and txn
        indexes. Returns the number of bytes truncated."""
        self._check_open()
        if from_offset is None:
            from_offset = self._recovery_point
        truncated = self._replay(rebuild_from=from_offset)
        for segment in self._segments[:-1]:
            segment.offset_index.trim()
            segment.time_index.trim()
        self._segments[-1].reactivate()  # the active segment's indexes are preallocated again
        self._delete_snapshots(above=self._log_end_offset)
        self._recovery_point = self._log_end_offset
        return truncated

    # ------------------------------------------------------------------ truncation / deletion
    def truncate_to(self, offset: int) -> None:
        """``UnifiedLog.truncateTo``: drop everything at and after ``offset``. The segment
        holding ``offset`` is cut at the start of the batch containing it; later segments are
        deleted; the indexes lose their entries at or after ``offset`` and the (new) active
        segment's indexes are preallocated again."""
        self._check_open()
        if offset < 0:
            raise ValueError("cannot truncate to a negative offset")
        if offset >= self._log_end_offset:
            return
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return
        keep = [s for s in self._segments if s.base_offset <= offset]
        for segment in self._segments[len(keep):]:
            self._delete_segment_files(segment)
        self._segments = keep
        active = keep[-1]
        headers, _ = active.read_batches()
        cut = active.size
        for header in headers:
            if header.last_offset >= offset:
                cut = header.position
                break
        active.offset_index.truncate_to(offset)
        active.time_index.truncate_to(offset)
        active.txn_index.truncate_to(offset)
        active.reactivate()
        if cut < active.size:
            os.truncate(active.log_path, cut)
            active.size = cut
        self._delete_snapshots(above=offset)
        # rebuilds producer state and each segment's max timestamp (readLargestTimestamp) and
        # restarts the index byte counter at 0, as LogSegment.truncateTo does
        self._replay(rebuild_from=None)
        self._log_end_offset = offset
        self._recovery_point = min(self._recovery_point, offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and snapshot; continue with an empty segment at ``offset``."""
        self._check_open()
        for segment in self._segments:
            self._delete_segment_files(segment)
        self._delete_snapshots(below=2**63 - 1)
        self._segments = [self._new_segment(offset, active=True)]
        self._producers = ProducerStateTracker()
        self._log_start_offset = offset
        self._log_end_offset = offset
        self._recovery_point = offset

    def delete_records_before(self, offset: int) -> list[int]:
        """Raise the log start offset to ``offset`` (DeleteRecords) and delete the segments
        wholly below it (a segment goes when the next one starts at or below the log start
        offset; the active segment stays). Returns the deleted base offsets."""
        self._check_open()
        if offset > self._log_end_offset:
            raise ValueError(f"log start offset {offset} beyond log end offset "
                             f"{self._log_end_offset}")
        if offset <= self._log_start_offset:
            return []
        self._log_start_offset = offset
        deleted = []
        while len(self._segments) > 1 and self._segments[1].base_offset <= offset:
            segment = self._segments.pop(0)
            self._delete_segment_files(segment)
            deleted.append(segment.base_offset)
        # UnifiedLog.deleteProducerSnapshots: the snapshot named after each deleted segment
        for base in deleted:
            self._remove_file(self._snapshot_path(base))
        remaining = self._snapshot_offsets()
        self._last_snapshot_offset = remaining[-1] if remaining else None
        return deleted

    def close(self) -> None:
        """Clean shutdown: final time-index entries, indexes trimmed, a producer snapshot at
        the log end offset."""
        if self._closed:
            return
        for segment in self._segments:
            segment.become_inactive()
        self._take_snapshot(self._log_end_offset)
        self._closed = True

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
