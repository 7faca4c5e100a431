"""One row per batch (BATCH_SCHEMA): iter_batch_batches, read_batch_table, scan_batches; and
iter_batch_columns, the same rows as numpy columns."""

from __future__ import annotations

import os
import warnings
from collections.abc import Generator, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from segtools.errors import (
    FormatError,
    os_input_error,
)
from segtools.formats.record_batch import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_FLAG_MASK,
)
from segtools.primitives.limits import resolve_max_batch_bytes
from segtools.records.columnar.arrow_columns import (
    _INT8,
    _INT16,
    _INT32,
    _INT64,
    _compression_column,
    _const_int32,
    _const_string,
    _np_arrow,
    _timestamp_type_column,
    bool_array,
)
from segtools.records.columnar.engines import _pick_engine
from segtools.records.columnar.headers import (
    _HEADER_DTYPES,
    _SCAN_CHUNK,
    _done,
    _fill_legacy,
    _Headers,
    _iter_headers,
)
from segtools.records.columnar.window import _located, _open_segment, _Segment, _SegmentFile, _text
from segtools.records.schema import BATCH_SCHEMA


def header_columns(h: _Headers) -> dict[str, np.ndarray]:
    """The numeric and boolean fields of ``BATCH_SCHEMA`` of a finished header chunk, by name,
    as numpy (uncast): the one derivation behind the batch table and compare's columns."""
    magic2 = h.magic >= 2   # legacy messages have no transactional, control or horizon bits
    return {
        "position": h.position, "size": h.batch_length + 12, "base_offset": h.base_offset,
        "last_offset": _done(h.last_offset), "batch_length": h.batch_length,
        "partition_leader_epoch": h.partition_leader_epoch, "magic": h.magic, "crc": h.crc,
        "crc_valid": _done(h.crc_valid), "attributes": h.attributes,
        "is_transactional": ((h.attributes & TRANSACTIONAL_FLAG_MASK) != 0) & magic2,
        "is_control": ((h.attributes & CONTROL_FLAG_MASK) != 0) & magic2,
        "has_delete_horizon": ((h.attributes & DELETE_HORIZON_FLAG_MASK) != 0) & magic2,
        "last_offset_delta": h.last_offset_delta, "base_timestamp": h.base_timestamp,
        "max_timestamp": h.max_timestamp, "producer_id": h.producer_id,
        "producer_epoch": h.producer_epoch, "base_sequence": h.base_sequence,
        "records_count": h.records_count,
    }


def segment_name(seg: _Segment) -> str:
    """The ``segment`` column's text: the file's name (undecodable bytes as U+FFFD)."""
    return _text(os.path.basename(seg.path)) or ""


def _batch_table(h: _Headers, seg: _Segment) -> pa.RecordBatch:
    n = len(h)
    c = header_columns(h)
    codec = (h.attributes & COMPRESSION_CODEC_MASK).astype(np.int32)
    return pa.RecordBatch.from_arrays([
        _const_string(seg.topic, n),
        _const_int32(seg.partition, n),
        _const_int32(seg.broker, n),
        _const_string(segment_name(seg), n),
        _np_arrow(c["position"], _INT64),
        _np_arrow(c["size"], _INT32),
        _np_arrow(c["base_offset"], _INT64),
        _np_arrow(c["last_offset"], _INT64),
        _np_arrow(c["batch_length"], _INT32),
        _np_arrow(c["partition_leader_epoch"], _INT32),
        _np_arrow(c["magic"], _INT8),
        _np_arrow(c["crc"], _INT64),
        bool_array(c["crc_valid"]),
        _np_arrow(c["attributes"], _INT16),
        _compression_column(codec),
        _timestamp_type_column(_done(h.timestamp_type)),
        bool_array(c["is_transactional"]),
        bool_array(c["is_control"]),
        bool_array(c["has_delete_horizon"]),
        _np_arrow(c["last_offset_delta"], _INT32),
        _np_arrow(c["base_timestamp"], _INT64),
        _np_arrow(c["max_timestamp"], _INT64),
        _np_arrow(c["producer_id"], _INT64),
        _np_arrow(c["producer_epoch"], _INT16),
        _np_arrow(c["base_sequence"], _INT32),
        _np_arrow(c["records_count"], _INT32),
    ], schema=BATCH_SCHEMA)


def iter_batch_batches(path: str | os.PathLike[str] | bytes, *, topic: str | None = None,
                       partition: int | None = None, broker: int | None = None,
                       engine: str = "auto", max_rows: int = _SCAN_CHUNK,
                       max_batch_bytes: int | None = None,
                       max_uncompressed_bytes: int | None = None,
                       located: bool = False) -> Iterator[pa.RecordBatch]:
    """One ``BATCH_SCHEMA`` row per batch (legacy: per outer message), in bounded chunks.

    A batch above ``max_batch_bytes`` on disk raises ``BatchTooLargeError``; a batch larger
    than the read window is checked (CRC-32C) over streamed reads, never held whole.
    ``located``: ``path`` is one segment file as discovery
    (:func:`segtools.files.sources.resolve`) listed it, and ``topic``, ``partition``, ``broker``
    are its identity; it is read without being discovered again."""
    for h, seg in _iter_header_chunks(path, topic, partition, broker, engine, max_rows,
                                      max_batch_bytes, max_uncompressed_bytes, located):
        yield _batch_table(h, seg)


def iter_batch_columns(path: str | os.PathLike[str] | bytes, *, topic: str | None = None,
                       partition: int | None = None, broker: int | None = None,
                       engine: str = "auto", max_rows: int = _SCAN_CHUNK,
                       max_batch_bytes: int | None = None,
                       max_uncompressed_bytes: int | None = None,
                       located: bool = False) -> Iterator[tuple[dict[str, np.ndarray], str]]:
    """:func:`iter_batch_batches`' rows as numpy columns (:func:`header_columns`: the numeric
    and boolean fields by name) with their segment's name, the same chunks and errors, no
    Arrow table: building one cost ~0.12 ms a chunk, most of compare's scan of a segment of
    one batch (a broker of thousands of small partitions)."""
    for h, seg in _iter_header_chunks(path, topic, partition, broker, engine, max_rows,
                                      max_batch_bytes, max_uncompressed_bytes, located):
        yield header_columns(h), segment_name(seg)


def _iter_header_chunks(path: str | os.PathLike[str] | bytes, topic: str | None,
                        partition: int | None, broker: int | None, engine: str, max_rows: int,
                        max_batch_bytes: int | None, max_uncompressed_bytes: int | None,
                        located: bool) -> Iterator[tuple[_Headers, _Segment]]:
    """The finished header chunks of every segment under ``path``, with their segment."""
    limit = resolve_max_batch_bytes(max_batch_bytes, max_uncompressed_bytes=max_uncompressed_bytes)
    kernel = _pick_engine(engine)
    rows = max(1, int(max_rows))
    for seg in _located(path, topic, partition, broker, located):
        # no record bytes are kept: a window that stays in the CPU's cache between the copy
        # and the CRC beats a large one (issue 25: 16 MiB windows ran at half the copy+CRC
        # floor); the windows' header chunks are joined up to max_rows rows per table. No
        # read-ahead: a window's CRC takes less than its read, and the hand-off to the reading
        # thread cost more than the overlap won (32 MiB segment: 9.1 -> 6.9 ms). Plain batches
        # come from the fused scan (_scan_plain), the rest from the general walk
        with _open_segment(seg, _HEADER_WINDOW, read_ahead=False) as mf:
            try:
                start = 0
                if kernel is not None and kernel.HARDWARE_CRC_IN_KERNEL and os.name == "posix":
                    handover = yield from _scan_plain(mf, kernel, seg, rows, limit)
                    if handover is None:
                        continue
                    start = handover
                held: list[_Headers] = []
                count = 0
                headers = _iter_headers(mf, kernel, rows, limit, need_bytes=False, start=start)
                while True:
                    try:
                        h = next(headers)
                    except StopIteration:
                        break
                    except Exception:
                        if held:   # what came before the damage comes out first
                            yield _join_headers(held), seg
                        raise
                    if held and count + len(h) > rows:
                        yield _join_headers(held), seg
                        held, count = [], 0
                    held.append(h)
                    count += len(h)
                if held:
                    yield _join_headers(held), seg
            except FormatError:
                mf.check_unchanged()
                raise
            except OSError as exc:
                raise os_input_error(seg.path, exc) from None


def _scan_plain(mf: _SegmentFile, kernel: Any, seg: _Segment, rows: int,
                limit: int) -> Generator[tuple[_Headers, _Segment], None, int | None]:
    """Header chunks of the file's plain batches from its start, read, walked and CRC-checked in one
    compiled call per ``rows`` rows (``scan_file``: the Python work per window cost more than
    the window's read and CRC). Returns where the general walk takes over (the first batch
    that is not plain: legacy, damaged, CRC-invalid, larger than the window, a torn tail), or
    None when the file ended cleanly."""
    fd, buf = mf.read_buffer(_HEADER_WINDOW)
    cap = max(1, min(rows, mf.size // RECORD_BATCH_OVERHEAD + 1))
    pos = 0
    while True:
        cols: dict[str, Any] = {name: np.empty(cap, dtype=dt) for name, dt in _HEADER_DTYPES.items()}
        n, pos, reason = kernel.scan_file(fd, pos, mf.size, buf, limit, cap, *cols.values())
        if n:
            h = _Headers(**{name: col[:n] for name, col in cols.items()})
            h.crc_valid = np.ones(n, dtype=bool)   # a batch whose CRC does not match is handed over
            _fill_legacy(h, mf, limit)   # all v2: derives last_offset and timestamp_type
            yield h, seg
        if reason != kernel.FILE_SCAN_FULL:
            return None if reason == kernel.FILE_SCAN_DONE else int(pos)


#: read window of the header scan without record bytes (iter_batch_batches)
_HEADER_WINDOW = 1 << 20


def _join_headers(chunks: list[_Headers]) -> _Headers:
    """Finished header chunks as one (the columns _batch_table reads; no legacy objects)."""
    if len(chunks) == 1:
        return chunks[0]
    cols: dict[str, Any] = {name: np.concatenate([getattr(c, name) for c in chunks]) for name in _HEADER_DTYPES}
    h = _Headers(**cols)
    h.crc_valid = np.concatenate([_done(c.crc_valid) for c in chunks])
    h.last_offset = np.concatenate([_done(c.last_offset) for c in chunks])
    h.timestamp_type = np.concatenate([_done(c.timestamp_type) for c in chunks])
    return h


def read_batch_table(path: str | os.PathLike[str], **kw: Any) -> pa.Table:
    """All batches under ``path`` as one table (concatenation of :func:`iter_batch_batches`)."""
    return pa.Table.from_batches(list(iter_batch_batches(path, **kw)), schema=BATCH_SCHEMA)


def scan_batches(path: str | os.PathLike[str], **kw: Any) -> pa.Table:
    """Deprecated name of :func:`read_batch_table`: it returns a whole table, and ``scan_*``
    means lazy to Polars users (docs/CONVENTIONS.md, public API names)."""

    warnings.warn("segtools.scan_batches is now segtools.read_batch_table (it returns a whole table)",
                  DeprecationWarning, stacklevel=2)
    return read_batch_table(path, **kw)
