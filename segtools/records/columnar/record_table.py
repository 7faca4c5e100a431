"""One row per record (RECORD_SCHEMA): iter_record_batches, read_records."""

from __future__ import annotations

import datetime
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from segtools.errors import (
    FormatError,
    InputError,
    os_input_error,
)
from segtools.formats.record_batch import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    LOG_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
    V2_MIN_BATCH_LENGTH,
)
from segtools.primitives import codecs as _codecs
from segtools.primitives.limits import resolve_max_batch_bytes
from segtools.records.columnar.arrow_columns import (
    _BOOL,
    _INT8,
    _INT32,
    _INT64,
    _TS_US,
    _compression_column,
    _const_int32,
    _const_string,
    _np_arrow,
    validity,
)
from segtools.records.columnar.decompress import _decompressed_run
from segtools.records.columnar.engines import RecordDecoder, _pick_decoder, _pick_engine
from segtools.records.columnar.headers import _done, _Headers, _iter_headers
from segtools.records.columnar.rows import _decode_legacy, _Part, _RowChunk, _slice_rows
from segtools.records.columnar.window import _located, _open_segment, _Segment, _SegmentFile, _text
from segtools.records.faults import (
    RECORD_BATCH_OVERHEAD,
)
from segtools.records.schema import RECORD_SCHEMA
from segtools.records.v2_decoder import check_v2_batch

#: record bytes (compressed or not) gathered into one output chunk; keeps every binary column
#: far below Arrow's 2 GiB offset limit (CONVENTIONS.md pitfall 7)
_CHUNK_BYTES = 64 * 1024 * 1024

_TS_LIMIT = np.iinfo(np.int64).max // 1000


def _timestamps_us(ts_ms: np.ndarray) -> pa.Array:
    """ms -> Arrow timestamp[us, UTC]; values that overflow in microseconds become null."""
    ok = (ts_ms <= _TS_LIMIT) & (ts_ms >= -_TS_LIMIT)
    if ok.all():
        return _np_arrow(ts_ms * 1000, _TS_US)
    us = np.ascontiguousarray(np.where(ok, ts_ms, 0) * 1000, dtype=np.int64)
    bitmap, nulls = validity(ok)   # not pa.array(mask=): it imports pandas
    return pa.Array.from_buffers(_TS_US, int(us.shape[0]), [bitmap, pa.py_buffer(us)], null_count=nulls)


def _per_row(values: np.ndarray, b: np.ndarray, lo: int, hi: int, dtype: Any) -> np.ndarray:
    """values[b] as ``dtype``; a broadcast fill when every batch in [lo, hi] agrees (common:
    one producer, one epoch), which is much cheaper than a gather."""
    window = values[lo:hi + 1]
    if window.shape[0] and (window == window[0]).all():
        return np.full(b.shape[0], window[0], dtype=dtype)
    gathered: np.ndarray = values[b].astype(dtype, copy=False)
    return gathered


def _record_batch(rc: _RowChunk, h: _Headers, seg: _Segment) -> pa.RecordBatch:
    n = int(rc.offset.shape[0])
    b = rc.batch
    lo, hi = (int(b.min()), int(b.max())) if n else (0, -1)
    attrs = _per_row(h.attributes, b, lo, hi, np.int16)
    magic = _per_row(h.magic, b, lo, hi, np.int8)
    v2 = magic >= 2
    crc_valid = _per_row(_done(h.crc_valid), b, lo, hi, bool)
    if rc.record_crc_ok is not None:
        crc_valid = crc_valid & rc.record_crc_ok
    return pa.RecordBatch.from_arrays([
        rc.key,
        rc.value,
        _const_string(seg.topic, n),
        _const_int32(seg.partition, n),
        _np_arrow(rc.offset, _INT64),
        _timestamps_us(rc.timestamp_ms),
        _np_arrow(_per_row(_done(h.timestamp_type), b, lo, hi, np.int32), _INT32),
        rc.headers,
        _np_arrow(_per_row(h.partition_leader_epoch, b, lo, hi, np.int32), _INT32),
        _np_arrow(h.base_offset[b], _INT64),
        _np_arrow(_per_row(h.producer_id, b, lo, hi, np.int64), _INT64),
        _np_arrow(_per_row(h.producer_epoch, b, lo, hi, np.int32), _INT32),
        _np_arrow(rc.sequence, _INT32),
        _np_arrow(((attrs & TRANSACTIONAL_FLAG_MASK) != 0) & v2, _BOOL),
        _np_arrow(((attrs & CONTROL_FLAG_MASK) != 0) & v2, _BOOL),
        _const_int32(seg.broker, n),
        _np_arrow(rc.timestamp_ms, _INT64),
        _np_arrow(magic, _INT8),
        _compression_column(attrs & COMPRESSION_CODEC_MASK),
        _np_arrow(crc_valid, _BOOL),
        _np_arrow(h.position[b], _INT64),
        _const_string(_text(os.path.basename(seg.path)), n),
    ], schema=RECORD_SCHEMA)


@dataclass(frozen=True)
class _Filters:
    include_control: bool
    start_offset: int | None
    end_offset: int | None
    start_timestamp: int | None
    end_timestamp: int | None

    @property
    def rows_filtered(self) -> bool:
        return any(v is not None for v in (self.start_offset, self.end_offset,
                                             self.start_timestamp, self.end_timestamp))

    def batch_skip(self, h: _Headers) -> np.ndarray:
        """Batches that cannot hold a wanted row: only decided on trustworthy (CRC-valid) v2
        headers, so a corrupt header never hides records."""
        skip = np.zeros(len(h), bool)
        if not self.include_control:
            skip |= (h.magic >= 2) & ((h.attributes & CONTROL_FLAG_MASK) != 0)
        trusted = _done(h.crc_valid) & (h.magic >= 2)
        last = h.base_offset + h.last_offset_delta
        if self.start_offset is not None:
            skip |= trusted & (last < self.start_offset)
        if self.end_offset is not None:
            skip |= trusted & (h.base_offset >= self.end_offset)
        return skip

    def row_mask(self, rc: _RowChunk) -> np.ndarray:
        mask = np.ones(rc.offset.shape[0], bool)
        if self.start_offset is not None:
            mask &= rc.offset >= self.start_offset
        if self.end_offset is not None:
            mask &= rc.offset < self.end_offset
        if self.start_timestamp is not None:
            mask &= rc.timestamp_ms >= self.start_timestamp
        if self.end_timestamp is not None:
            mask &= rc.timestamp_ms < self.end_timestamp
        return mask


def _ms(value: Any) -> int | None:
    """Timestamp filter value in epoch ms: int ms or datetime (naive = UTC; pandas Timestamp
    is a datetime)."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:      # naive means UTC, as everywhere in segtools output
            value = value.replace(tzinfo=datetime.UTC)
        return int(round(value.timestamp() * 1000))
    raise InputError(f"timestamp filter must be epoch milliseconds or a datetime, got {value!r}")


def _until_format_error(items: Iterator[Any], failed: list[FormatError]) -> Iterator[Any]:
    """``items`` up to the first that raises :class:`FormatError`, which is put in ``failed``:
    the caller hands out the good batches it holds before raising it."""
    try:
        yield from items
    except FormatError as exc:
        failed.append(exc)


def _iter_row_chunks(mf: _SegmentFile, kernel: Any, decode: RecordDecoder, filters: _Filters,
                     max_rows: int,
                     max_uncompressed: int, start: int = 0,
                     seen: list[_Headers] | None = None) -> Iterator[tuple[_RowChunk, _Headers]]:
    """Decoded rows of one file in groups of at most ``max_rows`` rows / ``_CHUNK_BYTES``.

    Runs of uncompressed v2 batches are cut with cumulative sums (no Python work per batch);
    compressed batches are decompressed one by one; legacy entries go one by one through the
    object reader.
    """
    for h in _iter_headers(mf, kernel, limit=max_uncompressed, start=start):
        if seen is not None:   # every batch's header, also of batches without rows
            seen.append(h)
        n = len(h)
        region = h.batch_length + 12 - RECORD_BATCH_OVERHEAD
        # each record takes at least 7 bytes: a hostile recordsCount cannot inflate buffers
        cap = np.minimum(np.maximum(h.records_count, 0), region // 7)
        codec = h.attributes & COMPRESSION_CODEC_MASK
        # DefaultRecordBatch.iterator(): a v2 batch of count 0 yields nothing, whatever its
        # record bytes hold (they are neither decompressed nor checked for leftovers)
        short = h.batch_length < V2_MIN_BATCH_LENGTH
        empty = (h.magic >= 2) & (h.records_count == 0) & ~short
        # shorter than the v2 header or a negative count: check_v2_batch raises the object
        # reader's error (any magic >= 2 is decoded as v2, as Kafka does)
        odd = (h.magic >= 2) & (short | (h.records_count < 0))
        kind = np.where(filters.batch_skip(h) | empty, _SKIP,
                        np.where(h.magic < 2, _LEGACY, np.where(
                            odd, _ODD, np.where(codec == 0, _PLAIN, _PACKED))))
        plain = kind == _PLAIN
        cum_cap = np.concatenate([[0], np.cumsum(np.where(plain, cap, 0))])
        cum_bytes = np.concatenate([[0], np.cumsum(np.where(plain, region, 0))])
        cuts = np.flatnonzero(np.diff(kind)) + 1
        run_starts = np.concatenate([[0], cuts]).tolist()
        run_ends = np.concatenate([cuts, [n]]).tolist()

        parts: list[_Part] = []   # [start, end) ranges of batch indexes, see _Part
        payloads: dict[int, bytes] = {}   # the python engine's decompressed records
        rows = 0
        nbytes = 0

        # flush() is called inside the loops below and must see the current parts/h/payloads
        def flush() -> _RowChunk:
            return decode(mf, h, parts, payloads)  # noqa: B023

        for s, e in zip(run_starts, run_ends):
            k = kind[s]
            if k == _SKIP:
                continue
            if k == _ODD:
                if parts:
                    yield flush(), h
                check_v2_batch(path=mf.path, position=int(h.position[s]),
                               base_offset=int(h.base_offset[s]),
                               size=int(h.batch_length[s]) + LOG_OVERHEAD,
                               count=int(h.records_count[s]), codec=int(codec[s]),
                               limit=max_uncompressed)
            if k == _LEGACY:
                if parts:
                    yield flush(), h
                    parts, payloads, rows, nbytes = [], {}, 0, 0
                for rc in _decode_legacy(mf, h, s, e, max_rows):
                    yield rc, h
                continue
            if k == _PLAIN:
                while s < e:
                    j_rows = int(np.searchsorted(cum_cap, cum_cap[s] + (max_rows - rows), "right")) - 1
                    j_bytes = int(np.searchsorted(cum_bytes, cum_bytes[s] + (_CHUNK_BYTES - nbytes),
                                                  "right")) - 1
                    j = min(j_rows, j_bytes, e)
                    if j <= s:
                        if parts:              # no room left: emit, then retry with a fresh chunk
                            yield flush(), h
                            parts, payloads, rows, nbytes = [], {}, 0, 0
                            continue
                        j = s + 1              # one batch larger than a chunk: never split
                    parts.append((s, j, None, None, None))
                    rows += int(cum_cap[j] - cum_cap[s])
                    nbytes += int(cum_bytes[j] - cum_bytes[s])
                    s = j
                continue
            failed: list[FormatError] = []
            if kernel is not None:   # compressed, numba engine: many batches per call
                for item in _until_format_error(_packed_run(kernel, mf, h, s, e, max_uncompressed),
                                                failed):
                    if len(item) == 2:   # one payload from the library: scalar bookkeeping
                        i, payload = item
                        c1 = min(max(int(h.records_count[i]), 0), len(payload) // 7)
                        if parts and (rows + c1 > max_rows or nbytes + len(payload) > _CHUNK_BYTES):
                            yield flush(), h
                            parts, payloads, rows, nbytes = [], {}, 0, 0
                        last = parts[-1] if parts else None
                        if last is not None and last[1] == i and isinstance(last[2], list):
                            parts[-1] = (last[0], i + 1, last[2], last[3], last[4])
                        else:
                            last = (i, i + 1, [], [], [])
                            parts.append(last)
                        last[2].append(pa.py_buffer(payload).address)
                        last[3].append(len(payload))
                        last[4].append(payload)
                        rows += c1
                        nbytes += len(payload)
                        continue
                    a, b, addr, length, keep = item
                    c = np.minimum(np.maximum(h.records_count[a:b], 0), length // 7)
                    cum_c = np.concatenate([[0], np.cumsum(c)])
                    cum_b = np.concatenate([[0], np.cumsum(length)])
                    q = 0
                    while q < b - a:
                        j_rows = int(np.searchsorted(cum_c, cum_c[q] + (max_rows - rows), "right")) - 1
                        j_bytes = int(np.searchsorted(cum_b, cum_b[q] + (_CHUNK_BYTES - nbytes),
                                                      "right")) - 1
                        j = min(j_rows, j_bytes, b - a)
                        if j <= q:
                            if parts:
                                yield flush(), h
                                parts, payloads, rows, nbytes = [], {}, 0, 0
                                continue
                            j = q + 1
                        parts.append((a + q, a + j, addr[q:j], length[q:j], keep))
                        rows += int(cum_c[j] - cum_c[q])
                        nbytes += int(cum_b[j] - cum_b[q])
                        q = j
            else:   # compressed, python engine: batch by batch
                for i, payload in _until_format_error(
                        _decompressed_run(mf, h, s, e, max_uncompressed), failed):
                    c1 = min(max(int(h.records_count[i]), 0), len(payload) // 7)
                    if parts and (rows + c1 > max_rows or nbytes + len(payload) > _CHUNK_BYTES):
                        yield flush(), h
                        parts, payloads, rows, nbytes = [], {}, 0, 0
                    if parts and parts[-1][1] == i:   # ranges of batch indexes, not an array a batch
                        parts[-1] = (parts[-1][0], i + 1, None, None, None)
                    else:
                        parts.append((i, i + 1, None, None, None))
                    payloads[i] = payload
                    rows += c1
                    nbytes += len(payload)
            if failed:
                if parts:  # the good batches before the broken one come out first
                    yield flush(), h
                raise failed[0]
        if parts:
            yield flush(), h


#: compressed input per call of the lz4/snappy kernel; its arena holds _PACK_RATIO times that
#: plus room for the largest LZ4 block (a batch that does not fit goes into the next arena)
_PACK_INPUT = 2 << 20
_PACK_RATIO = 4
_PACK_SLACK = 4 << 20


_JIT_CODECS: Any = None
_JIT_CODECS_TRIED = False


def _jit_codecs() -> Any:
    """segtools.records.jit_codecs once it has compiled (or loaded from cache) and decoded a
    tiny xerial snappy stream right; None otherwise (a broken numba install means the codec
    libraries, as for every codec before, not a crash)."""
    global _JIT_CODECS, _JIT_CODECS_TRIED
    if not _JIT_CODECS_TRIED:
        _JIT_CODECS_TRIED = True
        try:
            from segtools.records import jit_codecs as jc

            stream = np.frombuffer(_codecs.XERIAL_HEADER + b"\0\0\0\x03\x01\x00a", np.uint8)
            arena = np.zeros(64, np.uint8)
            starts, ends = np.zeros(1, np.int64), np.full(1, stream.shape[0], np.int64)
            out_start, out_len = np.zeros(1, np.int64), np.zeros(1, np.int64)
            done, status = jc.decompress_many(stream, starts, ends,
                                              np.full(1, jc.CODEC_SNAPPY, np.int8), 64, arena,
                                              out_start, out_len)
            if (done, status, bytes(arena[:int(out_len[0])])) == (1, jc.DONE, b"a"):
                _JIT_CODECS = jc
        except Exception as exc:  # noqa: BLE001 - numba/llvmlite broken in some way
            warnings.warn(f"segtools: numba codec kernel unusable ({type(exc).__name__}: {exc}); "
                          "decompressing batch by batch", RuntimeWarning, stacklevel=2)
    return _JIT_CODECS


def _packed_run(kernel: Any, mf: _SegmentFile, h: _Headers, s: int, e: int,
                max_uncompressed: int) -> Iterator[_Part | tuple[int, bytes]]:
    """The compressed batches ``s..e-1`` decompressed, in order: lz4 and snappy payloads many
    at a time into an arena (:mod:`segtools.records.jit_codecs`), as a part for
    :func:`_decode_kernel`; other codecs, and any batch that kernel refuses, one by one through
    :mod:`segtools.primitives.codecs` (:func:`_decompressed_run`: ``(index, payload)``), which
    raises the error if the batch is broken."""
    jc = _jit_codecs()
    if jc is None:
        yield from _decompressed_run(mf, h, s, e, max_uncompressed)
        return
    codec = (h.attributes[s:e] & COMPRESSION_CODEC_MASK).astype(np.int8)
    # check_v2_batch's count bound, refused here so the library path raises it
    fits = h.records_count[s:e] <= max_uncompressed // 7
    ok = ((codec == jc.CODEC_LZ4) | (codec == jc.CODEC_SNAPPY)) & fits
    cuts = np.flatnonzero(np.diff(ok.astype(np.int8))) + 1
    bounds = [0, *cuts.tolist(), e - s]
    begin = h.position[s:e] - h.base + RECORD_BATCH_OVERHEAD
    finish = h.position[s:e] - h.base + 12 + h.batch_length[s:e]
    cum_in = np.concatenate([[0], np.cumsum(finish - begin)])
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        if not ok[lo]:
            yield from _decompressed_run(mf, h, s + lo, s + hi, max_uncompressed)
            continue
        p = lo
        while p < hi:
            q = max(p + 1, min(hi, int(np.searchsorted(cum_in, cum_in[p] + _PACK_INPUT, "right")) - 1))
            arena_buf = pa.allocate_buffer(_PACK_RATIO * int(cum_in[q] - cum_in[p]) + _PACK_SLACK)
            arena = np.frombuffer(arena_buf, dtype=np.uint8)
            out_start = np.empty(q - p, np.int64)
            out_len = np.empty(q - p, np.int64)
            done, status = jc.decompress_many(mf.array, begin[p:q], finish[p:q], codec[p:q],
                                              max_uncompressed, arena, out_start, out_len)
            done = int(done)
            if done:
                yield (s + p, s + p + done, out_start[:done] + arena_buf.address,
                       out_len[:done], arena_buf)
            p += done
            if status == jc.DONE or (status == jc.FULL and done):
                continue
            # refused (or alone too large for an arena): the library decides
            yield from _decompressed_run(mf, h, s + p, s + p + 1, max_uncompressed)
            p += 1


_SKIP, _PLAIN, _PACKED, _LEGACY, _ODD = 0, 1, 2, 3, 4


def iter_record_batches(path: str | os.PathLike[str] | bytes, *, topic: str | None = None,
                        partition: int | None = None, broker: int | None = None,
                        max_rows: int = 65536, include_control: bool = True,
                        start_offset: int | None = None, end_offset: int | None = None,
                        start_timestamp: Any = None, end_timestamp: Any = None,
                        engine: str = "auto", max_batch_bytes: int | None = None,
                        max_uncompressed_bytes: int | None = None,
                        start_position: int = 0, located: bool = False) -> Iterator[pa.RecordBatch]:
    """Records under ``path`` as ``RECORD_SCHEMA`` RecordBatches of at most ``max_rows`` rows
    (the rows of one larger Kafka batch come as several slices).

    Filters: ``start_offset`` inclusive, ``end_offset`` exclusive; ``start_timestamp``
    inclusive, ``end_timestamp`` exclusive (epoch ms or datetime, compared with the record
    timestamp as Kafka reports it); ``include_control=False`` drops control batches.
    ``max_batch_bytes`` (older name ``max_uncompressed_bytes``) bounds one batch on disk and
    decompressed (segtools.primitives.limits); above it ``BatchTooLargeError`` names the batch.
    ``start_position``: for one segment file, the byte position of a batch (``position`` of
    :func:`iter_batch_batches`) to start reading at; the bytes before it are not read.
    ``located``: as for :func:`iter_batch_batches` (one segment file, identity as given).
    """
    limit = resolve_max_batch_bytes(max_batch_bytes, max_uncompressed_bytes=max_uncompressed_bytes)
    kernel = _pick_engine(engine)
    decode = _pick_decoder(engine, kernel)
    filters = _Filters(include_control, start_offset, end_offset, _ms(start_timestamp),
                       _ms(end_timestamp))
    rows = max(1, int(max_rows))
    for seg in _located(path, topic, partition, broker, located):
        with _open_segment(seg) as mf:
            try:
                for rc, h in _iter_row_chunks(mf, kernel, decode, filters, rows, limit, start_position):
                    n = int(rc.offset.shape[0])
                    # one Kafka batch can hold more rows than max_rows: its decoded rows are
                    # turned into Arrow max_rows at a time, so only the decoded columns and
                    # one output batch are held at once
                    for start in range(0, n, rows):
                        part = rc if n <= rows else _slice_rows(rc, start, min(n, start + rows))
                        rb = _record_batch(part, h, seg)
                        if filters.rows_filtered:
                            rb = rb.filter(pa.array(filters.row_mask(part)))
                            if not rb.num_rows:
                                continue
                        yield rb
            except FormatError:
                mf.check_unchanged()
                raise
            except OSError as exc:
                raise os_input_error(seg.path, exc) from None


def read_records(path: str | os.PathLike[str] | bytes, **kw: Any) -> pa.Table:
    """All records under ``path`` as one table (concatenation of :func:`iter_record_batches`)."""
    return pa.Table.from_batches(list(iter_record_batches(path, **kw)), schema=RECORD_SCHEMA)
