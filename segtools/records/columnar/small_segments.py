"""Many small segments read as groups: one read and one decode per group (export's path)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import pyarrow as pa

from segtools.primitives.limits import resolve_max_batch_bytes
from segtools.records.columnar.arrow_columns import _INT32, _INT64, _np_arrow, numpy_values, validity
from segtools.records.columnar.engines import _pick_decoder, _pick_engine
from segtools.records.columnar.headers import _SCAN_CHUNK, _done, _Headers
from segtools.records.columnar.record_table import _Filters, _iter_row_chunks, _record_batch
from segtools.records.columnar.window import _read_group, _Segment, _text
from segtools.records.schema import RECORD_SCHEMA

#: segments up to this size are read with their neighbours as one group
SMALL_SEGMENT_BYTES = 1 << 20
_GROUP_BYTES = 8 << 20
_GROUP_FILES = 256


class _Unusual(Exception):
    """Internal: a group of small segments holds something the per-file reader must judge."""


class _Concatenated:
    """The :class:`_SegmentFile` interface over small segment files read back to back into one
    buffer, all of it loaded. Whatever would make the per-file reader look again (a bad CRC,
    a torn tail, a read past the end) is :class:`_Unusual`: the group is then read file by
    file, so every error and finding is the per-file reader's own."""

    def __init__(self, data: np.ndarray, path: str) -> None:
        self.path = path
        self.name = os.path.basename(path)
        data.flags.writeable = False
        self.array = data
        self.view = memoryview(cast(bytearray, data))
        self.base = 0
        self.filled = self.size = int(data.shape[0])
        self.at_eof = True

    def load(self, pos: int, need: int = 0) -> None:
        if pos != 0:
            raise _Unusual

    def prefetch(self, pos: int) -> None:
        pass

    def changed(self, why: str, pos: int | None = None) -> Exception:
        return _Unusual()

    def check_unchanged(self, pos: int | None = None, n: int = 0) -> None:
        raise _Unusual

    def crc_step_read(self, pos: int, n: int) -> np.ndarray:
        raise _Unusual


class SmallSegments:
    """Records of a partition replica's small segments (up to ``SMALL_SEGMENT_BYTES``), decoded
    a group of neighbours at a time: one header walk, one decode and one Arrow batch for up to
    ``_GROUP_FILES`` files, handed out per segment as zero-copy slices. Per-file set-up (the
    read window, the header and row columns, 22 Arrow columns) cost several times reading a
    one-batch segment, so exporting partitions of thousands of such segments was slow
    (issue 23).

    A group is used only when it reads exactly as its files do one by one: every file a run of
    complete batches with valid CRCs, ending at its own end. Anything else (damage, a torn tail,
    a file changed since discovery) makes :meth:`batches` return None for the group's files:
    the caller reads them with :func:`iter_record_batches`, whose errors and findings are the
    reference. Rows are those of :func:`iter_record_batches` with the same filters."""

    def __init__(self, segments: list[str], sizes: list[int], *, topic: str | None,
                 partition: int | None, broker: int | None, engine: str = "auto",
                 include_control: bool = True, max_batch_bytes: int | None = None) -> None:
        self._segments = segments
        self._sizes = sizes
        # lookups come in file order: the one after the last found is tried first; a map of
        # every path (~100 bytes a segment) is made only for a lookup out of order
        self._next = 0
        self._index: dict[str, int] | None = None
        #: per file, its replica's identity (one for all here; see across)
        self._owners = [_Segment("", _text(topic), partition, broker)] * len(segments)
        self._kernel = _pick_engine(engine)
        self._decoder = _pick_decoder(engine, self._kernel)
        self._filters = _Filters(include_control, None, None, None, None)
        self._limit = resolve_max_batch_bytes(max_batch_bytes)
        self._rows: dict[int, tuple[pa.RecordBatch, int, int] | None] = {}

    @classmethod
    def across(cls, replicas: Sequence[tuple[Sequence[str], Sequence[int], str | None, int | None, int | None]],
               **options: Any) -> SmallSegments:
        """One reader over the small segments of several replicas (each: segments, sizes,
        topic, partition, broker), read in the order given: a group may take the segments of
        many replicas, and each row keeps its own replica's topic, partition and broker. A
        broker of thousands of partitions of one small segment each otherwise pays the
        per-file set-up for every partition (issue 23)."""
        segments = [seg for segs, *_ in replicas for seg in segs]
        reader = cls(segments, [size for _, sizes, *_ in replicas for size in sizes],
                     topic=None, partition=None, broker=None, **options)
        reader._owners = []
        for segs, _, topic, partition, broker in replicas:   # one identity per replica
            reader._owners.extend([_Segment("", _text(topic), partition, broker)] * len(segs))
        return reader

    def _find(self, segment: str) -> int | None:
        i = self._next
        if i < len(self._segments) and self._segments[i] == segment:
            return i
        if self._index is None:
            self._index = {seg: k for k, seg in enumerate(self._segments)}
        return self._index.get(segment)

    def holds(self, segment: str) -> bool:
        """Whether ``segment`` is one of this reader's files."""
        return self._find(segment) is not None

    def batches(self, segment: str) -> list[pa.RecordBatch] | None:
        """The segment's rows (no batch for a segment without rows), or None: read it alone."""
        i = self._find(segment)
        if i is None:
            return None
        self._next = i + 1
        if self._sizes[i] > SMALL_SEGMENT_BYTES:
            return None
        if i not in self._rows:
            self._rows = {}   # groups are read in order: the previous one is done
            self._decode_from(i)
        got = self._rows.get(i)
        if got is None:
            return None
        rb, start, n = got
        return [rb.slice(start, n)] if n else []

    def _decode_from(self, first: int) -> None:
        last = first
        total = 0
        while (last < len(self._segments) and last - first < _GROUP_FILES
               and self._sizes[last] <= SMALL_SEGMENT_BYTES
               and total + self._sizes[last] <= _GROUP_BYTES):
            total += self._sizes[last]
            last += 1
        paths = self._segments[first:last]
        sizes = self._sizes[first:last]
        decoded = self._decode(paths, sizes, self._owners[first:last]) if len(paths) > 1 else None
        for k in range(len(paths)):
            self._rows[first + k] = None if decoded is None else decoded[k]

    def _decode(self, paths: list[str], sizes: list[int],
                owners: list[_Segment]) -> list[tuple[pa.RecordBatch, int, int]] | None:
        data = _read_group(paths, sizes)
        if data is None:
            return None
        sf = _Concatenated(data, paths[0])
        seen: list[_Headers] = []
        parts: list[pa.RecordBatch] = []
        seg = owners[0]
        # several replicas' files: their identities are set per row below
        mixed = any(o != seg for o in owners)
        try:
            for rc, h in _iter_row_chunks(sf, self._kernel, self._decoder, self._filters, _SCAN_CHUNK,  # type: ignore[arg-type]
                                          self._limit, seen=seen):
                parts.append(_record_batch(rc, h, seg))
        except Exception:  # noqa: BLE001 - any error: the per-file reader reads and reports it
            return None
        starts = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=starts[1:])
        if not seen:
            return None if starts[-1] else [(_EMPTY_ROWS, 0, 0)] * len(paths)
        pos = np.concatenate([h.position for h in seen])
        end = pos + 12 + np.concatenate([h.batch_length for h in seen])
        valid = np.concatenate([_done(h.crc_valid) for h in seen])
        # every file a run of whole batches: each file's start is a batch's start (or the end)
        # and the last batch ends where the last file does
        begins = starts[:-1][np.asarray(sizes) > 0]
        if (int(end[-1]) != int(starts[-1]) or not valid.all()
                or not np.isin(begins, pos).all()):
            return None
        rb = (parts[0] if len(parts) == 1 else pa.concat_batches(parts)) if parts else _EMPTY_ROWS
        counts = np.zeros(len(paths), dtype=np.int64)
        if rb.num_rows:   # positions and names of the files, not of the concatenation
            position = numpy_values(rb.column("batch_position"))
            owner = np.searchsorted(starts, position, "right") - 1
            counts = np.bincount(owner, minlength=len(paths))
            rb = rb.set_column(rb.schema.get_field_index("batch_position"), "batch_position",
                               _np_arrow(position - starts[owner], _INT64))
            rb = rb.set_column(rb.schema.get_field_index("segment"), "segment",
                               _repeated_strings([os.path.basename(p) for p in paths], counts))
            if mixed:
                for name, values in (("topic", _repeated_strings([o.topic for o in owners], counts)),
                                     ("partition", _repeated_int32([o.partition for o in owners], counts)),
                                     ("broker", _repeated_int32([o.broker for o in owners], counts))):
                    rb = rb.set_column(rb.schema.get_field_index(name), name, values)
        first_row = np.zeros(len(paths) + 1, dtype=np.int64)
        np.cumsum(counts, out=first_row[1:])
        return [(rb, int(first_row[k]), int(counts[k])) for k in range(len(paths))]


# from empty arrays, not from_pylist: that asks whether its input is pandas (imports pandas)
_EMPTY_ROWS = pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in RECORD_SCHEMA],
                                         schema=RECORD_SCHEMA)


def _repeated_strings(texts: list[str | None], counts: np.ndarray) -> pa.Array:
    """A string column of each file's text repeated for its rows (the ``segment`` name, or a
    replica's topic; None, no topic known, is null as :func:`_const_string` makes it)."""
    names = [(_text(t) or "").encode("utf-8") if t is not None else b"" for t in texts]
    lengths = np.repeat(np.array([len(b) for b in names], dtype=np.int64), counts)
    offsets = np.zeros(lengths.shape[0] + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = b"".join(b * int(c) for b, c in zip(names, counts.tolist()))
    bitmap, nulls = validity(np.repeat(np.array([t is not None for t in texts], dtype=bool), counts))
    return pa.Array.from_buffers(pa.string(), int(lengths.shape[0]),
                                 [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)], null_count=nulls)


def _repeated_int32(values: list[int | None], counts: np.ndarray) -> pa.Array:
    """An int32 column of each file's value repeated for its rows (None: null)."""
    rows = np.repeat(np.array([0 if v is None else v for v in values], dtype=np.int32), counts)
    bitmap, nulls = validity(np.repeat(np.array([v is not None for v in values], dtype=bool), counts))
    return pa.Array.from_buffers(_INT32, int(rows.shape[0]), [bitmap, pa.py_buffer(rows)], null_count=nulls)
