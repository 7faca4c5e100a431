"""The header scan: batch header columns of a window, walked like Kafka's FileLogInputStream."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from segtools.formats.record_batch import (
    ATTRIBUTES_OFFSET,
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    V2_MIN_BATCH_LENGTH,
)
from segtools.primitives import crc as _crc
from segtools.primitives.limits import DEFAULT_MAX_BATCH_BYTES
from segtools.records.batch_walk import borrows_header, next_batch, stops_silently, walk_error
from segtools.records.columnar.window import _CRC_STEP, _SegmentFile
from segtools.records.faults import (
    RECORD_BATCH_OVERHEAD,
    SCAN_MORE,
    SCAN_SIZE_TOO_SMALL,
    SCAN_TOO_LARGE,
    SCAN_TORN_TAIL,
    SCAN_V2_TOO_SHORT,
)

#: batches per header-scan call (bounds the per-chunk header columns to a few MB)
_SCAN_CHUNK = 65536


@dataclass
class _Headers:
    """Header columns of one scan chunk (numpy arrays, one entry per batch)."""

    position: np.ndarray
    base_offset: np.ndarray
    batch_length: np.ndarray
    partition_leader_epoch: np.ndarray
    magic: np.ndarray
    crc: np.ndarray
    attributes: np.ndarray
    last_offset_delta: np.ndarray
    base_timestamp: np.ndarray
    max_timestamp: np.ndarray
    producer_id: np.ndarray
    producer_epoch: np.ndarray
    base_sequence: np.ndarray
    records_count: np.ndarray
    crc_valid: np.ndarray | None = None
    # legacy entries: filled from the object reader
    last_offset: np.ndarray | None = None
    timestamp_type: np.ndarray | None = None
    legacy: dict[int, Any] | None = None
    base: int = 0          # file position of the window the positions point into

    def __len__(self) -> int:
        return int(self.position.shape[0])


def _done(column: np.ndarray | None) -> np.ndarray:
    """A column ``_finish_chunk`` (``_fill_legacy``) has filled: typed as set (no check)."""
    return cast(np.ndarray, column)


_HEADER_DTYPES = {
    "position": np.int64, "base_offset": np.int64, "batch_length": np.int64,
    "partition_leader_epoch": np.int32, "magic": np.int8, "crc": np.int64,
    "attributes": np.int16, "last_offset_delta": np.int32, "base_timestamp": np.int64,
    "max_timestamp": np.int64, "producer_id": np.int64, "producer_epoch": np.int16,
    "base_sequence": np.int32, "records_count": np.int32,
}


def _scan_chunk(sf: _SegmentFile, rel: int, kernel: Any, max_batches: int,
                limit: int = DEFAULT_MAX_BATCH_BYTES) -> tuple[_Headers, int, int]:
    """Headers of the window from window offset ``rel``: (headers, next window offset, status).
    The walk is :mod:`segtools.records.batch_walk`'s (the kernel's ``scan_headers`` is its twin), over
    the window: a status is judged against the window's end (:func:`_raise_scan_status` judges
    against the file's)."""
    # an entry takes at least 26 bytes (12 + RECORD_OVERHEAD_V0), which bounds the row count
    max_batches = max(1, min(max_batches, (sf.filled - rel) // 26 + 1))
    if kernel is not None:
        # the kernel's output columns are reused window after window (allocating fourteen
        # columns of up to 65,536 rows per call cost more than scanning a 1 MiB window);
        # the rows found are copied out
        out = getattr(sf, "_scan_out", None)
        if out is None or out["position"].shape[0] < max_batches:
            out = {name: np.empty(max_batches, dtype=dt) for name, dt in _HEADER_DTYPES.items()}
            sf._scan_out = out
        n, next_rel, status = kernel.scan_headers(
            sf.array, rel, sf.filled, max_batches, sf.filled, limit, out["position"],
            out["base_offset"],
            out["batch_length"], out["partition_leader_epoch"], out["magic"], out["crc"],
            out["attributes"], out["last_offset_delta"], out["base_timestamp"],
            out["max_timestamp"], out["producer_id"], out["producer_epoch"],
            out["base_sequence"], out["records_count"])
        if 4 * n > out["position"].shape[0]:   # mostly filled: hand the columns over
            cols: dict[str, Any] = {name: arr[:n] for name, arr in out.items()}
            sf._scan_out = None
        else:
            cols = {name: arr[:n].copy() for name, arr in out.items()}
    else:
        from segtools.records import v2_decoder

        lists, next_rel, status = v2_decoder.scan_headers(sf.view, rel, sf.filled, max_batches,
                                                           sf.filled, limit)
        cols = {name: np.asarray(lists[name], dtype=dt) for name, dt in _HEADER_DTYPES.items()}
    cols["position"] = cols["position"] + sf.base
    return _Headers(**cols, base=sf.base), int(next_rel), int(status)


def _check_crcs(sf: _SegmentFile, h: _Headers, kernel: Any) -> np.ndarray:
    """crc_valid per batch: CRC-32C of bytes [21, end) for v2 (legacy filled in later)."""
    if kernel is not None and kernel.HARDWARE_CRC_IN_KERNEL:
        out = np.empty(len(h), dtype=bool)
        kernel.crc_check(sf.array, h.base, h.position, h.batch_length, h.magic, h.crc,
                         V2_MIN_BATCH_LENGTH, out)
        return out
    v2 = h.magic >= 2
    starts = h.position - h.base + ATTRIBUTES_OFFSET
    ends = np.maximum(h.position - h.base + LOG_OVERHEAD + h.batch_length, starts)
    computed = np.zeros(len(h), dtype=np.uint32)
    if kernel is not None and kernel.HARDWARE_CRC_IN_KERNEL:
        kernel.crc_ranges(sf.array, starts, ends, computed)
    else:
        view = sf.view
        for i in np.flatnonzero(v2).tolist():
            computed[i] = _crc.crc32c(view[int(starts[i]):int(ends[i])])
    # DefaultRecordBatch.isValid(): a batch shorter than its 61-byte header never is
    valid: np.ndarray = v2 & (computed.astype(np.int64) == h.crc) & (h.batch_length >= V2_MIN_BATCH_LENGTH)
    return valid


def _raise_scan_status(mf: _SegmentFile, pos: int, limit: int) -> None:
    """Raise the walk's error where it stopped at file position ``pos`` (inside the loaded
    window), judged against the whole file (:func:`segtools.records.batch_walk.next_batch`)."""
    error = walk_error(next_batch(mf.view, pos - mf.base, pos, mf.size, mf.size, limit),
                       path=mf.path, file_size=mf.size, limit=limit)
    if error is not None:
        mf.check_unchanged(pos, min(HEADER_SIZE_UP_TO_MAGIC, mf.base + mf.filled - pos))
        raise error


def _legacy_batch(mf: _SegmentFile, pos: int, size: int, limit: int) -> Any:
    """The object reader's view of one legacy (magic 0/1) entry: its fields and records."""
    from segtools.records.batches import SegmentBatch

    rel = pos - mf.base
    return SegmentBatch.from_bytes(bytes(mf.view[rel:rel + 12 + size]), path=mf.path,
                                  position=pos, max_batch_bytes=limit)


def _fill_legacy(h: _Headers, mf: _SegmentFile, limit: int = DEFAULT_MAX_BATCH_BYTES) -> None:
    """Columns of magic 0/1 entries from the object reader; v2 columns derived from headers."""
    h.last_offset = h.base_offset + h.last_offset_delta
    h.timestamp_type = np.where((h.attributes & TIMESTAMP_TYPE_MASK) != 0, 1, 0).astype(np.int8)
    legacy_rows = np.flatnonzero(h.magic < 2)
    if not legacy_rows.size:
        return
    h.legacy = {}
    for i in legacy_rows.tolist():
        b = _legacy_batch(mf, int(h.position[i]), int(h.batch_length[i]), limit)
        h.legacy[i] = b
        h.base_offset[i] = b.base_offset
        h.last_offset[i] = b.last_offset
        h.partition_leader_epoch[i] = b.partition_leader_epoch
        h.crc[i] = b.crc
        _done(h.crc_valid)[i] = bool(b.crc_valid)
        h.attributes[i] = b.attributes
        h.last_offset_delta[i] = b.last_offset_delta
        h.base_timestamp[i] = b.base_timestamp
        h.max_timestamp[i] = b.max_timestamp
        h.producer_id[i] = b.producer_id
        h.producer_epoch[i] = b.producer_epoch
        h.base_sequence[i] = b.base_sequence
        h.records_count[i] = b.records_count
        h.timestamp_type[i] = {"NoTimestampType": -1, "CreateTime": 0,
                               "LogAppendTime": 1}[b.timestamp_type]


def _scan_window(sf: _SegmentFile, kernel: Any, rel: int, max_batches: int,
                 limit: int = DEFAULT_MAX_BATCH_BYTES) -> tuple[list[_Headers], int, int]:
    """Header chunks of the loaded window from ``rel``: (chunks, next window offset, status).
    CRCs and legacy fields are not filled yet (see :func:`_finish_chunk`)."""
    chunks = []
    while True:
        h, rel, status = _scan_chunk(sf, rel, kernel, max_batches, limit)
        if len(h):
            chunks.append(h)
        if status != SCAN_MORE:
            return chunks, rel, status


def _finish_chunk(sf: _SegmentFile, h: _Headers, kernel: Any,
                  limit: int = DEFAULT_MAX_BATCH_BYTES) -> _Headers:
    h.crc_valid = _check_crcs(sf, h, kernel)
    _fill_legacy(h, sf, limit)
    if not h.crc_valid.all():
        # a mismatch read from a file being rewritten is not on disk: read those batches again
        for i in np.flatnonzero(~h.crc_valid).tolist():
            sf.check_unchanged(int(h.position[i]), int(h.batch_length[i]) + 12)
    return h


def _streamed_header(sf: _SegmentFile, pos: int, total: int, limit: int) -> _Headers:
    """The header row of a v2 batch larger than the window, its CRC-32C computed over
    streamed reads so memory does not grow with the batch."""
    from segtools.records.batches import V2_HEADER

    head = bytes(sf.crc_step_read(pos, RECORD_BATCH_OVERHEAD))
    if len(head) < RECORD_BATCH_OVERHEAD:
        raise sf.changed("the file shrank", pos)
    values = V2_HEADER.unpack_from(head)
    crc = _crc.crc32c(head[21:])
    done = RECORD_BATCH_OVERHEAD
    while done < total:
        chunk = sf.crc_step_read(pos + done, min(_CRC_STEP, total - done))
        if not chunk.shape[0]:
            raise sf.changed("the file shrank", pos)
        crc = _crc.crc32c(memoryview(cast(bytearray, chunk)), crc)
        done += int(chunk.shape[0])
    row = (pos, values[0], values[1]) + values[2:]
    cols: dict[str, Any] = {name: np.array([v], dtype=dt) for (name, dt), v in zip(_HEADER_DTYPES.items(), row)}
    h = _Headers(**cols, base=sf.base)
    h.crc_valid = np.array([crc == values[4]])
    _fill_legacy(h, sf, limit)
    if not h.crc_valid[0]:
        sf.check_unchanged()
    return h


def _iter_headers(sf: _SegmentFile, kernel: Any, max_batches: int = _SCAN_CHUNK,
                  limit: int = DEFAULT_MAX_BATCH_BYTES,
                  need_bytes: bool = True, start: int = 0) -> Iterator[_Headers]:
    """Header chunks of one file in file order, walked like FileLogInputStream. Each chunk's
    bytes stay in ``sf``'s window until the consumer asks for the next chunk. Raises after
    yielding what came before the damage.

    A window's headers are walked first (cheap), so the read of the next window can start in
    the background while this one's CRCs are computed and its records decoded.

    A batch above ``limit`` on disk raises ``BatchTooLargeError`` before it is read. A v2
    batch larger than the window is read whole only when ``need_bytes`` (records are
    decoded); otherwise its CRC is computed over streamed reads.

    ``start``: the byte position of a batch to begin the walk at (0: the file's start)."""
    sf.load(start)
    while True:
        chunks, rel, status = _scan_window(sf, kernel, 0, max_batches, limit)
        next_pos = sf.base + rel
        # a short v2 batch whose borrowed header bytes lie past the window: read on from it
        fatal = status in (SCAN_SIZE_TOO_SMALL, SCAN_TOO_LARGE) or (
            status == SCAN_V2_TOO_SHORT and (sf.at_eof or rel == 0))
        if not fatal and not sf.at_eof and rel > 0:
            sf.prefetch(next_pos)
        for h in chunks:
            yield _finish_chunk(sf, h, kernel, limit)
        if fatal:
            _raise_scan_status(sf, next_pos, limit)
        if sf.at_eof:
            if status == SCAN_TORN_TAIL:   # a tail cut by a concurrent writer is no finding
                sf.check_unchanged(next_pos, min(12, sf.base + sf.filled - next_pos))
            return            # SCAN_END or a torn tail: Kafka stops here without an error
        if rel == 0:
            # one batch larger than the window: the walk's decision against the whole file
            step = next_batch(sf.view, 0, next_pos, sf.size, sf.size, limit)
            if stops_silently(step.status):
                return
            _raise_scan_status(sf, next_pos, limit)
            total = step.size
            if not need_bytes and not borrows_header(total, step.magic) and step.magic >= 2:
                yield _streamed_header(sf, next_pos, total, limit)
                sf.load(next_pos + total)
                continue
            sf.load(next_pos, total)
            chunks, next_rel, status = _scan_window(sf, kernel, 0, 1, limit)
            for h in chunks:
                yield _finish_chunk(sf, h, kernel, limit)
            if status in (SCAN_SIZE_TOO_SMALL, SCAN_V2_TOO_SHORT, SCAN_TOO_LARGE):
                _raise_scan_status(sf, sf.base + next_rel, limit)
            if next_rel == 0:    # the file shrank while we read it
                raise sf.changed("the file shrank")
            next_pos = sf.base + next_rel
        sf.load(next_pos)
