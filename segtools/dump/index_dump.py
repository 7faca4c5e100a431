"""`.index` and `.txnindex` as kafka-dump-log checks and prints them (DUMP_LOG.md sections 4
and 6), and the index-file helpers time_index_dump.py shares.

Kafka opens indexes with ``entries = floor(length / entry size)``, zero-filled preallocated
tail included, and stops at the first slot whose offset equals the base offset after slot 0.
The slots up to that tail come from ``segtools.files.indexes`` (read in bounded steps, never
mapped); the count comes from the file size, and the few tail slots a lookup or sanity check
touches are read one at a time.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from segtools.dump import text
from segtools.dump.options import release_tuple
from segtools.errors import FormatError, IndexCorruptionError, InputError
from segtools.files.indexes import (
    IndexFile,
    read_offset_index,
    read_time_index,
    read_txn_index,
    unpack_index_slot,
)
from segtools.formats.indexes import OFFSET_INDEX_ENTRY_SIZE, TIME_INDEX_ENTRY_SIZE
from segtools.formats.legacy import LEGACY_LENGTH_STRUCT_FORMAT
from segtools.formats.names import dump_stem_offset
from segtools.formats.record_batch import LAST_OFFSET_DELTA_OFFSET
from segtools.records.batch_walk import walk_error
from segtools.records.faults import SCAN_BATCH
from segtools.records.segment_file import SegmentFile

if TYPE_CHECKING:
    from segtools.dump.context import DumpContext

_LAST_OFFSET_DELTA = struct.Struct(LEGACY_LENGTH_STRUCT_FORMAT)  # an int32 at byte 23
_LAST_OFFSET_END = LAST_OFFSET_DELTA_OFFSET + _LAST_OFFSET_DELTA.size
_WARM_BYTES = 8192                       # AbstractIndex.warmEntries: 8 KiB of slots


#: read-ahead of the index peek: index entries jump (a corrupt index backwards and forwards), so
#: each peek reads what it needs and a little more, as the old per-entry reads did
_PEEK_WINDOW = 64


def base_offset_of(path: str) -> int:
    """Long.parseLong of the name up to the first '.' (DUMP_LOG.md 4)."""
    try:
        return dump_stem_offset(path)
    except ValueError:
        raise InputError(f"{path}: cannot read a base offset from the file name "
                         f"(expected <20 digits>.<suffix>)") from None


def sibling(path: str, suffix: str) -> str:
    directory = os.path.dirname(os.path.abspath(path))
    return os.path.join(directory, os.path.basename(path).split(".")[0] + suffix)


def _first_batch_last_offset(log: SegmentFile, position: int, limit: int) -> int:
    """lastOffset of the first batch of ``log.slice(position, limit)`` (DumpLogSegments reads
    the slice's first batch), found by the one batch walk (segtools.records.batch_walk). Raises
    FormatError where Kafka throws; no batch in the slice is kafka-dump-log's
    NoSuchElementException."""
    size = log.size
    if position < 0 or position > size:
        raise FormatError(f"index points past the end of the log ({size} bytes)",
                          path=log.path, position=position, field="position")
    no_batch = FormatError(f"no complete batch within {limit} bytes (--max-message-size)",
                           path=log.path, position=position)
    # FileRecords.slice: --max-message-size bytes at most
    step = log.step_at(position, end=min(size, position + limit))
    if step.status != SCAN_BATCH:
        error = walk_error(step, path=log.path, file_size=size)
        raise no_batch if error is None else error
    if step.magic < 2:
        return step.base_offset  # the offset field of a legacy entry is its last offset
    # any magic above 1 is a v2 batch: Kafka loads its 61-byte header from the file even when
    # the length field says the batch is shorter (the walk checked those bytes exist)
    head, rel = log.get(position, _LAST_OFFSET_END)
    return int(step.base_offset + _LAST_OFFSET_DELTA.unpack_from(head, rel + LAST_OFFSET_DELTA_OFFSET)[0])


_REAL_CHUNK = 65536  # slots turned into Python ints at a time while iterating


class Slots:
    """Index slots: a preallocated 10 MiB index of an unclosed segment has a million zero slots
    we must not turn into Python objects.

    ``self[i]`` is (absolute offset, position) for ``.index`` and (timestamp, absolute offset)
    for ``.timeindex``. ``Slots(data, ...)`` reads slots from bytes; ``Slots.open(path, ...)``
    from a file, without mapping it: a broker trimming an index at roll must not kill the dump
    with SIGBUS."""

    def __init__(self, data: bytes, base: int, kind: str) -> None:
        self.base = base
        self.time = kind == "time"
        self.size = TIME_INDEX_ENTRY_SIZE if self.time else OFFSET_INDEX_ENTRY_SIZE
        self.count = len(data) // self.size
        self.data = data
        self.path: str | None = None
        self._file: IndexFile | None = None
        self._first: Any = None   # numpy int64 arrays of the slots before the zero tail
        self._second: Any = None

    @classmethod
    @contextmanager
    def open(cls, path: str, base: int, kind: str) -> Iterator[Slots]:
        slots = cls(b"", base, kind)
        with IndexFile(path, time=slots.time) as index:
            slots.path = path
            slots._file = index
            slots.count = index.length // slots.size
            read = read_time_index if slots.time else read_offset_index
            real = read(path, strict=False, trim=True)[:slots.count]
            if slots.time:
                slots._first = real["timestamp"].astype("int64")
                slots._second = real["relative_offset"].astype("int64") + base
            else:
                slots._first = real["relative_offset"].astype("int64") + base
                slots._second = real["position"].astype("int64")
            yield slots

    @property
    def length(self) -> int:
        """Bytes Kafka's index object covers (what its sanity check divides)."""
        if self._file is None:
            return len(self.data)
        return self._file.length

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> tuple[int, int]:
        if i < 0:
            i += self.count
        if self._first is not None and i < len(self._first):
            return int(self._first[i]), int(self._second[i])
        if self._file is None:
            a, b = unpack_index_slot(self.data[i * self.size:(i + 1) * self.size], time=self.time)
        else:
            a, b = self._file.slot(i)
        return (a, self.base + b) if self.time else (self.base + a, b)

    def offset(self, i: int) -> int:
        return self[i][1 if self.time else 0]

    def real(self) -> Iterator[tuple[int, int]]:
        """Slots up to the zero tail: Kafka stops at the first slot after slot 0 whose offset
        equals the base offset."""
        if self._first is not None:
            for start in range(0, len(self._first), _REAL_CHUNK):
                yield from zip(self._first[start:start + _REAL_CHUNK].tolist(),
                               self._second[start:start + _REAL_CHUNK].tolist())
            return
        for i in range(self.count):
            entry = self[i]
            if i > 0 and entry[1 if self.time else 0] == self.base:
                return
            yield entry


def segment_log(ctx: DumpContext, path: str) -> str | None:
    """The .log an index file belongs to; None (and a finding) when it is missing."""
    log_path = sibling(path, ".log")
    if os.path.exists(log_path):
        return log_path
    ctx.error("missing_log", FormatError(
        f"cannot check {os.path.basename(path)}: its log segment {log_path} does not exist",
        path=path))
    return None


def dump_index(ctx: DumpContext, path: str) -> None:
    base = base_offset_of(path)
    log_path = segment_log(ctx, path)
    if log_path is None:
        return
    with Slots.open(path, base, "offset") as slots:
        _dump_index_slots(ctx, path, log_path, base, slots, slots.length)


def _dump_index_slots(ctx: DumpContext, path: str, log_path: str, base: int, slots: Slots,
                      length: int) -> None:
    opts = ctx.options
    if not slots:
        ctx.sink.note(f"{text.java_file(path)} is empty.", {"empty": True})
        return
    if opts.index_sanity_check:
        abs_path = text.java_absolute_path(path)
        last_offset = slots.offset(-1)
        if last_offset < base:
            ctx.error("index_sanity_check", IndexCorruptionError(
                f"Corrupt index found, index file ({abs_path}) has non-zero size but the last "
                f"offset is {last_offset} which is less than the base offset {base}", path=path))
        elif length % 8 != 0:
            ctx.error("index_sanity_check", IndexCorruptionError(
                f"Index file {abs_path} is corrupt, found {length} bytes which is neither "
                f"positive nor a multiple of 8", path=path))
        else:
            ctx.sink.note(f"{text.java_file(path)} passed sanity check.", {"sanity_check": "passed"})
        return

    abs_path = text.java_absolute_path(path)
    mismatches: list[tuple[int, int]] = []
    unused_mismatch = None
    with SegmentFile(log_path, window=_PEEK_WINDOW) as log:
        for i, (offset, position) in enumerate(slots.real()):
            # slot 0 reading (base, 0) is what a preallocated index holds before its first
            # entry (an active segment, or one a crash left unflushed): Kafka checks it like
            # any entry, but it is not corruption
            unused = i == 0 and offset == base and position == 0
            try:
                log_offset = _first_batch_last_offset(log, position, opts.max_message_size)
            except FormatError as exc:
                # (every 4.x release checked against its real tool; 3.9's text kept as it was)
                if unused and release_tuple(opts.kafka_version) >= (4, 0):
                    # no batch at position 0: the log is empty (a preallocated, never-written
                    # active segment). kafka-dump-log dies here before printing the slot
                    # (DumpLogSegments.dumpIndex, Scala and Java alike: the first batch of an empty log,
                    # NoSuchElementException); an empty active segment is healthy: a warning
                    ctx.sink.finding("empty_log_index", {
                        "problem": False, "message": f"{os.path.basename(log_path)} has no "
                        f"batch at position 0: its index slots are unused"},
                        line=f"Warning: {text.java_file(path)}: {os.path.basename(log_path)} "
                             f"holds no batch (an empty active segment): its index slots are "
                             f"unused (kafka-dump-log dies on this file: "
                             f"NoSuchElementException)", stream="err")
                    break
                if not unused:
                    ctx.error("index_entry_unreadable", IndexCorruptionError(
                        f"entry {i} (offset {offset}, position {position}) does not lead to a "
                        f"batch of {os.path.basename(log_path)}: {exc.reason}", path=path,
                        position=i * 8, field="position"), offset=offset, log_position=position)
            else:
                if log_offset != offset:
                    mismatches.append((offset, log_offset))
                    if unused:
                        unused_mismatch = (offset, log_offset)
            if not opts.verify_index_only:
                ctx.sink.entry("index_entry", text.offset_index_line(offset, position),
                               {"offset": offset, "position": position})
    if mismatches:
        mismatches.reverse()  # Kafka prepends: newest first
        ctx.summaries.set_newest_first("index_mismatches", abs_path, mismatches)
        for i, (a, b) in enumerate(mismatches):
            unused = unused_mismatch is not None and i == len(mismatches) - 1
            ctx.deferred("index_offset_mismatch", {"index_offset": a, "log_offset": b,
                                                   "unused_slot": unused}, is_problem=not unused)


def lookup_position(offset_slots: Slots | list[tuple[int, int]], base: int, target: int) -> int:
    """OffsetIndex.lookup(target).position over all slots (zero tail included), with
    AbstractIndex's warm/cold split so the result matches Kafka even on unsorted slots."""
    entries = len(offset_slots)
    if entries == 0:
        return 0

    def search(lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            found = offset_slots[mid][0]  # absolute offset
            if found > target:
                hi = mid - 1
            elif found < target:
                lo = mid
            else:
                return mid
        return lo

    first_hot = max(0, entries - 1 - _WARM_BYTES // 8)
    if offset_slots[first_hot][0] < target:
        slot = search(first_hot, entries - 1)
    elif offset_slots[0][0] > target:
        slot = -1
    else:
        slot = search(0, first_hot)
    return 0 if slot == -1 else offset_slots[slot][1]


def dump_txn_index(ctx: DumpContext, path: str) -> None:
    """One line per complete 34-byte entry; ``version`` is the first byte only (Kafka quirk)."""

    base_offset_of(path)  # Kafka parses it (and fails on a bad name) before reading
    # Kafka 4.4 reads the version as the int16 it is and accepts 0 only, stopping at the first
    # other one; earlier releases read its first byte and reject only positive ones
    whole_version = release_tuple(ctx.options.kafka_version) >= (4, 4)
    previous_last = None
    for i, txn in enumerate(read_txn_index(path, strict=False)):
        version, last = (txn.version_int16 if whole_version else txn.version), txn.last_offset
        if whole_version and version != 0:
            ctx.error("txn_index_version", FormatError(
                f"Unexpected aborted transaction version {version} in transaction index {path}, "
                "supported version range is 0 to 0", path=path, position=i * 34, field="version"))
            return
        if version > 0:
            ctx.error("txn_index_version", FormatError(
                f"Unexpected aborted transaction version {version}", path=path,
                position=i * 34, field="version"))
        _txn_entry(ctx, i, txn, version, last, previous_last)
        previous_last = last


def _txn_entry(ctx: DumpContext, i: int, txn: Any, version: int, last: int, previous_last: int | None) -> None:
    if previous_last is not None and last <= previous_last:
        ctx.flag("txn_index_not_increasing",
                 {"position": i * 34, "last_offset": last, "previous_last_offset": previous_last})
    ctx.sink.entry("aborted_txn",
                   text.txn_index_line(version, txn.producer_id, txn.first_offset, last,
                                       txn.last_stable_offset),
                   {"version": version, "producer_id": txn.producer_id,
                    "first_offset": txn.first_offset, "last_offset": last,
                    "last_stable_offset": txn.last_stable_offset})
