"""Salvage a damaged ``.log`` segment: find every intact batch past the corruption and rebuild
a clean segment (``.log``, ``.index``, ``.timeindex``) plus a JSON manifest in a NEW folder.

Why: Kafka's ``LogSegment.recover`` (storage/.../log/LogSegment.java) walks the batches and
stops at the first one that fails ``ensureValid`` (size below the overhead, bad CRC, bad
magic): it truncates the segment there, and ``LogLoader.recoverLog`` then deletes the
unflushed segments after it. Every intact batch behind the damage is lost to the broker. This
module scans past a bad batch to the next header that checks out and keeps what is intact.

A position is a batch start when its header checks out (docs/FORMATS.md section 1):
- magic 2: ``batchLength`` >= 49 (the 61-byte v2 header), the batch fits in the file and the
  limit (``segtools.primitives.limits``), ``lastOffsetDelta`` and ``recordsCount`` are not negative, and
  the CRC-32C over ``[attributes, end)`` matches (``DefaultRecordBatch.ensureValid``);
- magic 0/1: size >= 14 (magic 0) / 22 (magic 1) and the CRC-32 over ``[magic, end)`` matches
  (``LegacyRecord.ensureValid``).
The CRC does not cover ``baseOffset`` or ``partitionLeaderEpoch``, so the kept batches must
also form a chain: offsets strictly increasing (from the segment's base offset on) and v2
leader epochs never going down. The longest such chain is kept; a CRC-valid batch outside it
is dropped as ``inconsistent_header``. A changed base offset of the LAST batch that only moves
it further up, or a changed epoch that keeps the order, cannot be told from real data.

Input files are opened read-only; every output goes through ``segtools.files.outputs``.
"""

from __future__ import annotations

import bisect
import json
import os
import struct
import zlib
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, overload

import numpy as np

from segtools.files.outputs import atomic_write, check_output_location, partial_run, prepare_output_dir
from segtools.files.read_window import ReadWindow
from segtools.files.salvage_marker import salvage_holes
from segtools.files.sources import SALVAGE_MARKER, is_partition_dir_name
from segtools.primitives.crc import crc32c
from segtools.primitives.limits import DEFAULT_MAX_BATCH_BYTES
from segtools.records.batch_walk import borrows_header, next_batch
from segtools.records.batches import SegmentBatch, segment_paths
from segtools.records.faults import SCAN_BATCH, SCAN_END, SCAN_SIZE_TOO_SMALL, SCAN_TOO_LARGE, SCAN_TORN_TAIL

from .errors import FormatError, InputError, display_path
from .formats.legacy import LEGACY_LENGTH_STRUCT_FORMAT, RECORD_OVERHEAD_V0, RECORD_OVERHEAD_V1
from .formats.names import LOG_SUFFIX, filename_prefix_from_offset, stem_offset
from .formats.record_batch import CRC_STRUCT_FORMAT, LOG_OVERHEAD, RECORD_BATCH_OVERHEAD
from .writer.index_files import OffsetIndexFile, TimeIndexFile

__all__ = ["SalvagedBatch", "SalvagedBatches", "DroppedRange", "SegmentSalvage", "scan_segment", "salvage",
           "check_batch_at", "SalvageResult", "salvage_holes", "SALVAGE_MARKER"]

_LEN = struct.Struct(LEGACY_LENGTH_STRUCT_FORMAT)
_U32 = struct.Struct(CRC_STRUCT_FORMAT)
_V2_TAIL = struct.Struct(LEGACY_LENGTH_STRUCT_FORMAT)  # int32: lastOffsetDelta at +23; recordsCount at +57
V2_OVERHEAD = RECORD_BATCH_OVERHEAD
LEGACY_MIN_SIZE = {0: RECORD_OVERHEAD_V0, 1: RECORD_OVERHEAD_V1}
_MIN_CANDIDATE = LOG_OVERHEAD + RECORD_OVERHEAD_V0  # the smallest thing that can be a batch
_WINDOW = 1 << 20                   # resync scans this many positions per numpy step


@dataclass(frozen=True, slots=True)
class SalvagedBatch:
    """One intact batch: where it was, where it goes, what it holds."""

    position: int          # in the input segment
    size: int
    base_offset: int
    last_offset: int
    records_count: int
    partition_leader_epoch: int
    magic: int
    max_timestamp: int


@dataclass(frozen=True, slots=True)
class DroppedRange:
    """Bytes of the input that are not in the rebuilt segment, ``[start, end)``."""

    start: int
    end: int
    reason: str            # corrupt | torn_tail | inconsistent_header
    detail: str
    #: offsets around the range (the kept batches before and after it; None at the ends)
    after_offset: int | None = None
    before_offset: int | None = None


_BATCH_FIELDS = ("position", "size", "base_offset", "last_offset", "records_count", "partition_leader_epoch",
                 "magic", "max_timestamp")


class SalvagedBatches(Sequence[SalvagedBatch]):
    """Intact batches as columns (8 int64 per batch, ~64 bytes): a segment of millions of
    batches is not held as an object per batch (~300 bytes with its ints). A SalvagedBatch is
    made on read."""

    __slots__ = ("_cols",)

    def __init__(self, batches: Iterable[SalvagedBatch] = ()) -> None:
        self._cols = tuple(array("q") for _ in _BATCH_FIELDS)
        for b in batches:
            self.append(b)

    def append(self, b: SalvagedBatch) -> None:
        for col, name in zip(self._cols, _BATCH_FIELDS):
            col.append(getattr(b, name))

    def __len__(self) -> int:
        return len(self._cols[0])

    @overload
    def __getitem__(self, i: int) -> SalvagedBatch: ...

    @overload
    def __getitem__(self, i: slice) -> list[SalvagedBatch]: ...

    def __getitem__(self, i: int | slice) -> SalvagedBatch | list[SalvagedBatch]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        return SalvagedBatch(*(col[i] for col in self._cols))

    def __iter__(self) -> Iterator[SalvagedBatch]:
        for vals in zip(*self._cols):
            yield SalvagedBatch(*vals)

    def column(self, name: str) -> array[int]:
        return self._cols[_BATCH_FIELDS.index(name)]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, SalvagedBatches)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SalvagedBatches({len(self)} batches)"


@dataclass
class SegmentSalvage:
    """What the scan of one segment found."""

    path: str
    base_offset: int
    file_size: int
    kept: Sequence[SalvagedBatch] = field(default_factory=SalvagedBatches)
    dropped: list[DroppedRange] = field(default_factory=list)

    @property
    def damaged(self) -> bool:
        return bool(self.dropped)

    @property
    def kafka_truncation_position(self) -> int | None:
        """Where ``LogSegment.recover`` would cut this segment (None: it keeps it whole)."""
        return self.dropped[0].start if self.dropped else None

    def kafka_would_delete(self) -> list[SalvagedBatch]:
        """Intact batches behind the first bad one: Kafka's recovery truncates them away."""
        cut = self.kafka_truncation_position
        return [] if cut is None else [b for b in self.kept if b.position >= cut]


def check_batch_at(buf: Any, pos: int, end: int, *, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> int:
    """Size of the batch starting at ``pos`` when its header checks out, else 0: the one batch
    walk (segtools.records.batch_walk) finds a batch there, and it passes ``ensureValid``.
    ``buf`` holds the file's bytes from 0 (see :func:`_check_window` for a read window)."""
    return _check(buf, pos, pos, end, max_batch_bytes)


def _check(buf: Any, rel: int, pos: int, end: int, max_batch_bytes: int) -> int:
    """:func:`check_batch_at` with ``buf[rel:]`` holding the file's bytes from ``pos`` (the
    whole batch when it fits, else at least its header)."""
    step = next_batch(buf, rel, pos, end, end, max_batch_bytes)
    if step.status != SCAN_BATCH:
        return 0
    size = step.size
    magic = step.magic
    if magic == 2:
        if borrows_header(size, magic):
            return 0   # DefaultRecordBatch.ensureValid: shorter than the 61-byte header
        (last_offset_delta,) = _V2_TAIL.unpack_from(buf, rel + 23)
        (count,) = _V2_TAIL.unpack_from(buf, rel + 57)
        if last_offset_delta < 0 or count < 0:
            return 0
        (crc,) = _U32.unpack_from(buf, rel + 17)
        return size if crc32c(memoryview(buf)[rel + 21:rel + size]) == crc else 0
    if magic in LEGACY_MIN_SIZE:
        if step.size_field < LEGACY_MIN_SIZE[magic]:
            return 0
        (crc,) = _U32.unpack_from(buf, rel + 12)
        return size if zlib.crc32(memoryview(buf)[rel + 16:rel + size]) == crc else 0
    return 0


def _check_window(win: ReadWindow, pos: int, max_batch_bytes: int) -> tuple[int, bytes, int]:
    """``(size, buf, rel)``: the batch at ``pos`` when it checks out (size 0 otherwise) and
    the window bytes holding it. The header is looked at first, so the batch's bytes are
    read only for a header that may start one."""
    buf, rel = win.get(pos, V2_OVERHEAD)
    step = next_batch(buf, rel, pos, win.size, win.size, max_batch_bytes)
    if step.status != SCAN_BATCH:
        return 0, buf, rel
    if step.size > len(buf) - rel:
        if step.magic == 2 and not borrows_header(step.size, 2) and (
                _V2_TAIL.unpack_from(buf, rel + 23)[0] < 0 or _V2_TAIL.unpack_from(buf, rel + 57)[0] < 0):
            return 0, buf, rel   # the header rules it out: a large batch's bytes are not read
        buf, rel = win.get(pos, step.size)
    return _check(buf, rel, pos, win.size, max_batch_bytes), buf, rel


def _candidates(win: ReadWindow, start: int, end: int, max_batch_bytes: int) -> Iterator[int]:
    """Positions in ``[start, end)`` whose magic byte and length field could start a batch, in
    order (numpy over windows: a zeroed or random range is not walked byte by byte)."""
    last = end - _MIN_CANDIDATE   # last position that can hold a batch
    pos = start
    while pos <= last:
        stop = min(pos + _WINDOW, last + 1)
        raw, rel = win.get(pos, stop - pos + 16)
        arr = np.frombuffer(raw, dtype=np.uint8, count=stop - pos + 16, offset=rel)
        n = stop - pos
        magic = arr[16:n + 16]
        length = ((arr[8:n + 8].astype(np.int64) << 24) | (arr[9:n + 9].astype(np.int64) << 16)
                  | (arr[10:n + 10].astype(np.int64) << 8) | arr[11:n + 11].astype(np.int64))
        length = np.where(length >= 1 << 31, length - (1 << 32), length)
        here = np.arange(pos, stop, dtype=np.int64)
        fits = (here + LOG_OVERHEAD + length <= end) & (length + LOG_OVERHEAD <= max_batch_bytes)
        ok = fits & (((magic == 2) & (length >= V2_OVERHEAD - LOG_OVERHEAD))
                     | ((magic == 1) & (length >= 22)) | ((magic == 0) & (length >= 14)))
        hits = [pos + int(i) for i in np.flatnonzero(ok)]
        del arr, magic, length, here, fits, ok, raw   # the window may move while we yield
        yield from hits
        pos = stop


def _parse(buf: Any, rel: int, pos: int, size: int, path: str) -> SalvagedBatch | None:
    try:
        batch = SegmentBatch.from_bytes(bytes(buf[rel:rel + size]), path=path, position=pos)
    except FormatError:
        return None
    if batch.magic < 2 and batch.compression_id != 0 and batch.records_count == 0:
        return None   # a legacy wrapper whose inner messages cannot be read
    return SalvagedBatch(pos, size, batch.base_offset, batch.last_offset, batch.records_count,
                         batch.partition_leader_epoch, batch.magic, batch.max_timestamp)


def _whole_chain(batches: SalvagedBatches, floor: int) -> bool:
    """Whether every batch is in the chain already (offsets strictly increasing from
    ``floor``, v2 epochs never going down): the undamaged case, decided without the chain's
    per-batch lists."""
    base, last, epochs = batches.column("base_offset"), batches.column("last_offset"), \
        batches.column("partition_leader_epoch")
    prev_last, prev_epoch = floor - 1, -1
    for b, e, ep in zip(base, last, epochs):
        if b <= prev_last or e < b:
            return False
        if ep >= 0:
            if ep < prev_epoch:
                return False
            prev_epoch = ep
        prev_last = e
    return True


def _longest_chain(batches: Sequence[SalvagedBatch], floor: int) -> set[int]:
    """Indexes of the longest run of batches (file order) with strictly increasing offsets
    from ``floor`` on, then non-decreasing v2 epochs (patience sorting, O(n log n))."""

    def lis(items: list[int], starts: list[int], ends: list[int], strict: bool) -> list[int]:
        tails: list[int] = []      # smallest end value of a chain of each length
        tail_idx: list[int] = []
        prev = [-1] * len(items)
        for n in range(len(items)):
            # chains this one may extend: tail < start (strict) or tail <= start
            k = bisect.bisect_left(tails, starts[n]) if strict else bisect.bisect_right(tails, starts[n])
            prev[n] = tail_idx[k - 1] if k else -1
            if k == len(tails):
                tails.append(ends[n])
                tail_idx.append(n)
            elif ends[n] < tails[k]:
                tails[k] = ends[n]
                tail_idx[k] = n
        out: list[int] = []
        n = tail_idx[-1] if tail_idx else -1
        while n >= 0:
            out.append(items[n])
            n = prev[n]
        return out[::-1]

    eligible = [i for i, b in enumerate(batches) if b.base_offset >= floor and b.last_offset >= b.base_offset]
    by_offset = lis(eligible, [batches[i].base_offset for i in eligible],
                    [batches[i].last_offset for i in eligible], strict=True)
    # epochs: -1 (legacy, or never assigned) fits anywhere, so only epochs >= 0 take part
    epoch_items = [i for i in by_offset if batches[i].partition_leader_epoch >= 0]
    epochs = [batches[i].partition_leader_epoch for i in epoch_items]
    keep_epochs = set(lis(epoch_items, epochs, epochs, strict=False))
    return {i for i in by_offset if batches[i].partition_leader_epoch < 0 or i in keep_epochs}


def scan_segment(path: str | os.PathLike[str], *, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> SegmentSalvage:
    """Walk a segment, resynchronising past damage; the input is only read (through a bounded
    window: never mapped). A file that changes meanwhile is a ``FileChangedError``."""
    path = os.fspath(path)
    with ReadWindow(path) as win:
        result = _scan(win, max_batch_bytes)
        win.check_unchanged()
    return result


def _scan(win: ReadWindow, max_batch_bytes: int) -> SegmentSalvage:
    path = win.path
    result = SegmentSalvage(path, stem_offset(path) or 0, win.size)  # a renamed copy: 0
    if win.size == 0:
        return result
    found, bad = _walk(win, max_batch_bytes)
    dropped: list[tuple[int, int, str, str]] = list(bad)
    if _whole_chain(found, result.base_offset):
        result.kept = found
        result.dropped = _merge(dropped, found)
        return result
    chain = _longest_chain(found, result.base_offset)
    kept = SalvagedBatches(b for i, b in enumerate(found) if i in chain)
    for i, b in enumerate(found):
        if i not in chain:
            dropped.append((b.position, b.position + b.size, "inconsistent_header",
                            f"CRC-valid batch with offsets {b.base_offset}..{b.last_offset}, leader "
                            f"epoch {b.partition_leader_epoch}: out of order with the longest chain of "
                            "kept batches (base offset and leader epoch are not covered by the CRC, "
                            "so which of the batches holds the wrong values cannot be told)"))
    result.kept = kept
    result.dropped = _merge(dropped, kept)
    return result


def _walk(win: ReadWindow, max_batch_bytes: int
          ) -> tuple[SalvagedBatches, list[tuple[int, int, str, str]]]:
    found = SalvagedBatches()
    bad: list[tuple[int, int, str, str]] = []
    size = win.size
    path = win.path
    pos = 0
    while pos < size:
        n, buf, rel = _check_window(win, pos, max_batch_bytes)
        parsed = _parse(buf, rel, pos, n, path) if n else None
        if parsed is not None:
            found.append(parsed)
            pos += n
            continue
        buf, rel = win.get(pos, V2_OVERHEAD)
        why, walk_ends = _why_bad(buf, pos, size, max_batch_bytes, rel)
        nxt = size
        for cand in _candidates(win, pos + 1, size, max_batch_bytes):
            m, buf, rel = _check_window(win, cand, max_batch_bytes)
            if m and _parse(buf, rel, cand, m, path) is not None:
                nxt = cand
                break
        reason = "torn_tail" if nxt == size and walk_ends else "corrupt"
        bad.append((pos, nxt, reason, why))
        pos = nxt
    return found, bad


def _why_bad(buf: Any, pos: int, end: int, max_batch_bytes: int, rel: int | None = None
             ) -> tuple[str, bool]:
    """One phrase for why the header at ``pos`` does not check out (for the manifest), and
    whether the walk just ends there (a torn tail: too few bytes left, or a batch running
    past the end of the file)."""
    step = next_batch(buf, pos if rel is None else rel, pos, end, end, max_batch_bytes)
    status = step.status
    length = step.size_field
    if status == SCAN_END:
        return f"{end - pos} trailing bytes, too few for a batch header", True
    if status == SCAN_SIZE_TOO_SMALL:
        return f"size field {length} below the minimum 14", False
    if status == SCAN_TORN_TAIL:
        return (f"batch runs past the end of the file (size field {length}, {end - pos} bytes "
                "left)"), True
    if status == SCAN_TOO_LARGE:
        return f"size field {length} above the batch limit {max_batch_bytes}", False
    magic = step.magic
    if magic not in (0, 1, 2):
        return f"unknown magic {magic & 0xFF}", False
    if borrows_header(step.size, magic):
        return f"size field {length} below the v2 batch overhead", False
    if magic == 2 or length >= LEGACY_MIN_SIZE[magic]:
        return "CRC mismatch", False
    return f"size field {length} too small", False


def _merge(dropped: list[tuple[int, int, str, str]], kept: Sequence[SalvagedBatch]) -> list[DroppedRange]:
    """Sorted, adjacent ranges joined, each with the kept offsets around it."""
    dropped.sort()
    merged: list[list[Any]] = []
    for start, end, reason, detail in dropped:
        if merged and merged[-1][1] == start:
            last = merged[-1]
            last[1] = end
            if reason != last[2]:
                last[2] = "corrupt" if "corrupt" in (reason, last[2]) else last[2]
            last[3] = f"{last[3]}; {detail}"
        else:
            merged.append([start, end, reason, detail])
    positions = kept.column("position") if isinstance(kept, SalvagedBatches) else [b.position for b in kept]
    out = []
    for start, end, reason, detail in merged:
        k = bisect.bisect_left(positions, start)
        out.append(DroppedRange(start, end, reason, detail,
                                kept[k - 1].last_offset if k else None,
                                kept[k].base_offset if k < len(kept) else None))
    return out


# ------------------------------------------------------------------------------ rebuild

@dataclass
class SalvageResult:
    out_dir: str
    partition_dir: str
    segments: list[SegmentSalvage]
    manifest_path: str

    @property
    def damaged(self) -> bool:
        return any(s.damaged for s in self.segments)


def _copy_batches(win: ReadWindow, kept: Sequence[SalvagedBatch], dst: str) -> None:
    """The kept batches, byte for byte, from the open input (one batch in memory at a time)."""
    with open(dst, "xb") as fout:
        for b in kept:
            fout.write(win.read(b.position, b.size))
        fout.flush()
        os.fsync(fout.fileno())


def _write_indexes(folder: str, base_offset: int, kept: Sequence[SalvagedBatch],
                   index_interval_bytes: int) -> None:
    """The indexes ``LogSegment.recover`` builds for these batches, trimmed as on close."""
    name = filename_prefix_from_offset(base_offset)
    n_entries = max(2, len(kept) + 2)
    offsets = OffsetIndexFile(os.path.join(folder, name + ".index"), base_offset, n_entries * 8,
                              preallocate=False)
    times = TimeIndexFile(os.path.join(folder, name + ".timeindex"), base_offset, n_entries * 12,
                          preallocate=False)
    valid_bytes = last_index_entry = 0
    max_ts, offset_of_max = -1, -1
    for b in kept:
        if b.max_timestamp > max_ts:
            max_ts, offset_of_max = b.max_timestamp, b.last_offset
        if valid_bytes - last_index_entry > index_interval_bytes:
            offsets.append(b.last_offset, valid_bytes)
            times.maybe_append(max_ts, offset_of_max)
            last_index_entry = valid_bytes
        valid_bytes += b.size
    if max_ts >= 0 or offset_of_max >= 0:   # recover()/close: the largest timestamp seen
        times.maybe_append(max_ts, offset_of_max)
    offsets.trim()
    times.trim()


def _manifest_entry(seg: SegmentSalvage, out_log: str) -> dict[str, Any]:
    runs: list[dict[str, Any]] = []
    out_pos = 0
    for b in seg.kept:
        if runs and runs[-1]["end"] == b.position:
            run = runs[-1]
            run.update(end=b.position + b.size, last_offset=b.last_offset, batches=run["batches"] + 1,
                       records=run["records"] + b.records_count)
        else:
            runs.append({"start": b.position, "end": b.position + b.size, "out_start": out_pos,
                         "first_offset": b.base_offset, "last_offset": b.last_offset,
                         "batches": 1, "records": b.records_count})
        out_pos += b.size
    cut = seg.kafka_truncation_position
    lost = seg.kafka_would_delete()
    return {
        "file": seg.path, "file_size": seg.file_size, "base_offset": seg.base_offset,
        "rebuilt": out_log, "rebuilt_size": out_pos,
        "kept": runs,
        "kept_batches": len(seg.kept), "kept_records": sum(b.records_count for b in seg.kept),
        "dropped": [asdict(d) for d in seg.dropped],
        "dropped_bytes": sum(d.end - d.start for d in seg.dropped),
        "kafka_recovery": {
            # LogSegment.recover truncates at the first batch failing ensureValid
            "truncates_at_position": cut,
            "truncates_to_offset": (lost[0].base_offset if lost else
                                    (seg.kept[-1].last_offset + 1 if cut is not None and seg.kept else
                                     (seg.base_offset if cut is not None else None))),
            "intact_batches_deleted": len(lost),
            "intact_records_deleted": sum(b.records_count for b in lost),
            "intact_ranges_deleted": [[b.position, b.position + b.size, b.base_offset, b.last_offset]
                                      for b in lost],
        },
    }


#: ``schema_version`` of salvage's manifest.json and segtools-salvage.json (segtools/schemas/
#: salvage-manifest, salvage-marker)
SALVAGE_SCHEMA_VERSION = 1


def _marker(src: str, segments: Sequence[SegmentSalvage], entries: Sequence[dict[str, Any]]
            ) -> dict[str, Any]:
    """The rebuilt partition dir's ``segtools-salvage.json``: per rebuilt segment, the byte
    ranges of its original that are not in it, with the kept offsets around each."""
    out: dict[str, Any] = {}
    for seg, entry in zip(segments, entries, strict=True):
        out[os.path.basename(entry["rebuilt"])] = {
            "original": seg.path, "original_size": seg.file_size, "rebuilt_size": entry["rebuilt_size"],
            "holes": [{"original_start": d.start, "original_end": d.end, "bytes": d.end - d.start,
                       "reason": d.reason, "after_offset": d.after_offset,
                       "before_offset": d.before_offset} for d in seg.dropped]}
    return {"schema_version": SALVAGE_SCHEMA_VERSION, "tool": "segtools salvage", "input": src,
            "note": "Records in these byte ranges of the original were not copied: dump reports "
                    "each hole as a finding (exit 1).",
            "segments": out}


def salvage(path: str | os.PathLike[str], out_dir: str | os.PathLike[str], *, force: bool = False,
            index_interval_bytes: int = 4096, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES) -> SalvageResult:
    """Scan ``path`` (a ``.log`` segment or a partition dir) and write into ``out_dir`` (new, or
    empty; never inside the input) ``<partition dir>/`` with one rebuilt segment per input
    segment, and ``manifest.json``."""
    src = os.fspath(path)
    if os.path.isdir(src):
        logs = [p for p in segment_paths(src) if p.endswith(".log")]
        part_name = os.path.basename(os.path.abspath(src))
        evidence = [src]
    elif os.path.isfile(src):
        logs = [src]
        part_name = os.path.basename(os.path.dirname(os.path.abspath(src)))
        evidence = [src, os.path.dirname(os.path.abspath(src))]
    else:
        raise InputError(f"{display_path(src)}: no such file or folder")
    if not logs:
        raise InputError(f"{display_path(src)}: no .log segment in it")
    if not is_partition_dir_name(part_name):
        part_name = "salvaged-0"
    check_output_location(out_dir, evidence)
    out = prepare_output_dir(out_dir, evidence, force=force)
    segments: list[SegmentSalvage] = []
    with partial_run(out, command="segtools salvage") as run:
        part_out = out / part_name
        part_out.mkdir(exist_ok=force)
        entries = []
        for log in logs:
            with ReadWindow(log) as win:
                seg = _scan(win, max_batch_bytes)
                segments.append(seg)
                named = os.path.basename(log).split(".")[0].isdigit()
                base = seg.base_offset if named or not seg.kept else seg.kept[0].base_offset
                out_log = str(part_out / (filename_prefix_from_offset(base) + LOG_SUFFIX))
                _copy_batches(win, seg.kept, out_log)
                # what was scanned and copied is one version of the file, or nothing is kept
                win.check_unchanged()
            _write_indexes(str(part_out), base, seg.kept, index_interval_bytes)
            entries.append(_manifest_entry(seg, out_log))
        for i, (seg, entry) in enumerate(zip(segments, entries, strict=True)):
            # LogLoader.recoverLog: after a segment it had to truncate, the unflushed segments
            # behind it (above the recovery point) are deleted whole
            later = [os.path.basename(x) for x in logs[i + 1:]] if seg.damaged else []
            entry["kafka_recovery"]["later_segments_deleted_if_unflushed"] = later
        manifest = {"schema_version": SALVAGE_SCHEMA_VERSION,
                    "input": src, "partition_dir": str(part_out), "index_interval_bytes": index_interval_bytes,
                    "segments": entries,
                    # only what was checked: a dropped range says which check failed, never why
                    "checks": ["each kept batch: its header's size, magic, lastOffsetDelta and record "
                               "count, and its CRC (CRC-32C over [attributes, end) for v2, CRC-32 "
                               "over [magic, end) for magic 0/1), as Kafka's ensureValid",
                               "the kept batches together: offsets strictly increasing from the "
                               "segment's base offset, v2 leader epochs never decreasing",
                               "not checked: baseOffset and partitionLeaderEpoch beyond that order "
                               "(the CRC does not cover them), and whether a range was damaged by "
                               "the disk, a crash or a person (the bytes do not say)",
                               "the input's size, modification time and inode were the same after "
                               "the copy as at the open"],
                    "notes": ["Kafka's LogSegment.recover truncates a segment at its first invalid batch and "
                              "LogLoader deletes the unflushed segments after it; 'kafka_recovery' lists the "
                              "intact batches that would be lost that way.",
                              "No .txnindex, producer snapshot or leader-epoch-checkpoint is written: start the "
                              "broker on this dir without a clean-shutdown marker (or with a recovery point at "
                              "or below the segment base) so that it rebuilds them."]}
        # the holes, inside the rebuilt partition dir: dump reports them as findings wherever
        # the dir is copied (manifest.json stays beside it)
        atomic_write(str(part_out / SALVAGE_MARKER), json.dumps(_marker(src, segments, entries), indent=1) + "\n")
        manifest_path = str(out / "manifest.json")
        atomic_write(manifest_path, json.dumps(manifest, indent=1) + "\n")
        run.summary = {"segments": len(segments), "damaged": sum(s.damaged for s in segments),
                       "kept_batches": sum(len(s.kept) for s in segments),
                       "dropped_ranges": sum(len(s.dropped) for s in segments)}
    return SalvageResult(str(out), str(part_out), segments, manifest_path)
