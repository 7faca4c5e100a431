"""One replica's batch headers as columns: the classifier's ``Sequence[BatchFacts]`` at ~70
bytes per batch instead of a Python object per batch (~300 bytes with its ints and segment
name), so compare's memory follows the batch count at the cost of arrays, not objects.

A ``BatchFacts`` is made when an item is read (and dropped by the reader): code that walks
the batches sees the same values in the same order as with a list of them."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from segtools.forensics.model import BatchFacts
from segtools.records.columnar.arrow_columns import numpy_values

#: BatchFacts fields in constructor order with their array type codes; "segment" is an index
#: into the names, bools are 0/1 bytes
_FIELDS: tuple[tuple[str, str], ...] = (
    ("base_offset", "q"), ("last_offset", "q"), ("partition_leader_epoch", "i"), ("crc", "q"),
    ("crc_valid", "b"), ("records_count", "i"), ("producer_id", "q"), ("producer_epoch", "h"),
    ("base_sequence", "i"), ("is_transactional", "b"), ("is_control", "b"), ("magic", "b"),
    ("segment", "i"), ("position", "q"), ("size", "i"), ("max_timestamp", "q"))
# (the widths of the Kafka fields and of FACTS_SCHEMA: int32 epochs, counts, sequences and
# sizes, int16 producer epochs, int8 magic; the uint32 CRC in an int64)
_BOOLS = frozenset(i for i, (n, _c) in enumerate(_FIELDS) if n in ("crc_valid", "is_transactional", "is_control"))
_SEGMENT = next(i for i, (n, _c) in enumerate(_FIELDS) if n == "segment")
_CHUNK = 4096   # batches made per step of an iteration
_FEW = 8        # up to this many batches an iteration makes them one by one
#: array type code -> numpy type of the same width
_NP_CODES = {"q": np.int64, "i": np.int32, "h": np.int16, "b": np.int8}


def _name_runs(col: pa.Array, pool: dict[str, str]) -> tuple[list[str], pa.Array]:
    """(one name per run of equal neighbours, the run index of each row)."""
    n = len(col)
    if n == 0:
        return [], pa.array([], pa.int32())
    starts = pc.not_equal(col.slice(1), col.slice(0, n - 1))
    first = pa.concat_arrays([pa.array([True]), starts.combine_chunks() if isinstance(starts, pa.ChunkedArray)
                              else starts])
    run_names = [pool.setdefault(s, s) for s in col.filter(first).to_pylist()]
    index = pc.subtract(pc.cumulative_sum(first.cast(pa.int32())), 1)
    return run_names, index.cast(pa.int32())


def _append_arrow(cols: list[array[int]], rows: pa.Table | pa.RecordBatch,
                  pool: dict[str, str] | None, names_before: int = 0) -> list[str]:
    """Append ``rows``' fields to ``cols`` (one array per _FIELDS entry), one column at a time;
    the segment column only when ``pool`` is given: its run names are returned, and indexed
    from ``names_before`` (the names of earlier calls)."""
    seg_names: list[str] = []
    for (name, _code), out in zip(_FIELDS, cols):
        if name == "segment" and pool is None:
            continue
        col = rows.column(name)
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        if name == "segment":
            # runs of one name (a segment's batches are adjacent): no hash table over the
            # rows (dictionary_encode's took ~330 bytes a row at the peak)
            seg_names, col = _name_runs(col, pool or {})
            if names_before:
                col = pc.add(col, pa.scalar(names_before, pa.int32()))
        values = numpy_values(col)
        if values.dtype == np.bool_:
            values = values.view(np.int8)   # 0/1 bytes (a cast to int8 took pyarrow.compute)
        out.frombytes(values.data.cast("B"))
        del col
    return seg_names


class BatchColumnsBuilder:
    """One replica's BatchColumns built while its segments are scanned: each segment's Arrow
    rows (BATCH_SCHEMA) are appended to the arrays every ``_FLUSH`` segments, so no table of
    the whole replica's rows is held (it took ~130 bytes a batch beside the columns' ~70).

    ``names``: the replica's segment file names by index (``add``'s ``segment``), as the scan
    names them in its ``segment`` column; None takes the names from that column instead."""

    _FLUSH = 256

    def __init__(self, names: Sequence[str] | None = None) -> None:
        self._cols = [array(code) for _n, code in _FIELDS]
        self._names = names
        self._run_names: list[str] = []
        self._pool: dict[str, str] = {}
        self._pending: list[pa.RecordBatch] = []
        self._segments = array("i")
        self._facts: list[BatchFacts] | None = None   # rows with nulls: not stage 1's as we write it

    def add(self, rb: pa.RecordBatch, segment: int) -> None:
        """The rows ``rb`` of the replica's segment number ``segment``."""
        if rb.num_rows:
            self._pending.append(rb)
            self._segments.extend(array("i", [segment]) * rb.num_rows)
            if len(self._pending) >= self._FLUSH:
                self._flush()

    def add_columns(self, cols: Mapping[str, np.ndarray], segment: int, name: str) -> None:
        """The batches of the replica's segment number ``segment`` as
        :func:`segtools.records.columnar.batch_table.iter_batch_columns` gives them (``name``:
        the segment's name as that scan gives it), appended without an Arrow table. A builder
        takes either these or Arrow rows (:meth:`add`)."""
        n = len(cols["base_offset"])
        if not n:
            return
        if self._pending or self._facts is not None:
            raise ValueError("a BatchColumnsBuilder takes Arrow rows or columns, not both")
        for k, ((field, code), out) in enumerate(zip(_FIELDS, self._cols)):
            if k == _SEGMENT:
                continue
            # the typecode's width, as _np_arrow casts for the table (bools: 0/1 bytes)
            out.frombytes(np.ascontiguousarray(cols[field], dtype=_NP_CODES[code]).data.cast("B"))
        if self._names is None:
            if not self._run_names or self._run_names[-1] != name:
                self._run_names.append(self._pool.setdefault(name, name))
            segment = len(self._run_names) - 1
        self._cols[_SEGMENT].extend(array("i", [segment]) * n)

    def _flush(self) -> None:
        if not self._pending:
            return
        rows = pa.Table.from_batches(self._pending)
        self._pending = []
        if self._facts is None and any(rows.column(n).null_count for n, _c in _FIELDS):
            # keep BatchFacts.from_row's conversions and errors, as for rows with nulls elsewhere
            self._facts = list(self.build())
        if self._facts is not None:
            self._facts.extend(BatchFacts.from_row(r) for r in rows.to_pylist())
        elif self._names is None:
            self._run_names.extend(_append_arrow(self._cols, rows, self._pool, len(self._run_names)))
        else:
            _append_arrow(self._cols, rows, None)
            self._cols[_SEGMENT].extend(self._segments)
        self._segments = array("i")

    def build(self) -> BatchColumns:
        """The columns so far (the builder keeps adding to the same arrays)."""
        if self._pending:
            self._flush()
        if self._facts is not None:
            return BatchColumns.from_facts(self._facts)
        return BatchColumns(self._cols, self._run_names if self._names is None else self._names)


class BatchColumns(Sequence[BatchFacts]):
    """A read-only window ``[start, stop)`` over shared columns of batch headers."""

    __slots__ = ("_cols", "_few", "_names", "_start", "_stop")

    def __init__(self, cols: Sequence[array[int]], names: Sequence[str], start: int = 0,
                 stop: int | None = None) -> None:
        self._cols = tuple(cols)
        self._names = names
        self._start = start
        self._stop = len(self._cols[0]) if stop is None else stop
        #: a window of up to _FEW batches, made once: the classifier walks one ~20 times
        self._few: tuple[BatchFacts, ...] | None = None

    @classmethod
    def from_facts(cls, batches: Sequence[BatchFacts]) -> BatchColumns:
        names: dict[str, int] = {}
        cols = [array(code) for _n, code in _FIELDS]
        for b in batches:
            for i, (name, _code) in enumerate(_FIELDS):
                v = getattr(b, name)
                cols[i].append(names.setdefault(v, len(names)) if i == _SEGMENT else int(v))
        return cls(cols, list(names))

    @classmethod
    def from_arrow(cls, rows: pa.Table, names: dict[str, str] | None = None) -> BatchColumns:
        """From BATCH_SCHEMA columns without nulls (stage 1's rows of one replica); ``names``
        shares one str per segment name across the replicas of a partition. One column at a
        time, each copied once from Arrow's buffer (the peak RSS follows the largest column,
        not the table)."""
        cols = [array(code) for _n, code in _FIELDS]
        return cls(cols, _append_arrow(cols, rows, {} if names is None else names))

    def __len__(self) -> int:
        return self._stop - self._start

    def _make(self, i: int) -> BatchFacts:
        vals: list[Any] = [c[i] for c in self._cols]
        for k in _BOOLS:
            vals[k] = bool(vals[k])
        vals[_SEGMENT] = self._names[vals[_SEGMENT]]
        return BatchFacts(*vals)

    @overload
    def __getitem__(self, i: int) -> BatchFacts: ...

    @overload
    def __getitem__(self, i: slice) -> BatchColumns: ...

    def __getitem__(self, i: int | slice) -> BatchFacts | BatchColumns:
        n = len(self)
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step != 1:
                raise ValueError("BatchColumns slices take no step")
            return BatchColumns(self._cols, self._names, self._start + start, self._start + max(start, stop))
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("batch index out of range")
        if n <= _FEW:
            return self._small()[i]
        return self._make(self._start + i)

    def __iter__(self) -> Iterator[BatchFacts]:
        if self._stop - self._start <= _FEW:
            return iter(self._small())
        return self._iter_chunks()

    def _small(self) -> tuple[BatchFacts, ...]:
        # made one by one (slicing every column costs more for a few batches) and kept: the
        # classifier walks a one-batch replica ~20 times, and a broker of thousands of
        # one-segment partitions spent ~8% of compare making the same objects again. The
        # facts are shared by the walks: nothing changes a BatchFacts after it is made.
        if self._few is None:
            self._few = tuple(self._make(i) for i in range(self._start, self._stop))
        return self._few

    def _iter_chunks(self) -> Iterator[BatchFacts]:
        names = self._names
        for lo in range(self._start, self._stop, _CHUNK):
            hi = min(lo + _CHUNK, self._stop)
            cols: list[Any] = [c[lo:hi] for c in self._cols]
            for k in _BOOLS:
                cols[k] = [bool(x) for x in cols[k]]
            cols[_SEGMENT] = [names[x] for x in cols[_SEGMENT]]
            for vals in zip(*cols):
                yield BatchFacts(*vals)

    def column(self, name: str) -> array[int]:
        """One field's values over the window (a copy), e.g. for a search by base offset."""
        k = next(i for i, (n, _c) in enumerate(_FIELDS) if n == name)
        return self._cols[k][self._start:self._stop]

    def _np(self, name: str) -> np.ndarray:
        k = next(i for i, (n, _c) in enumerate(_FIELDS) if n == name)
        return np.frombuffer(self._cols[k], dtype=np.dtype(self._cols[k].typecode))[self._start:self._stop]

    def range_starts(self, first: int) -> dict[str, int]:
        """Per segment name, the least position of a batch whose last offset is at least
        ``first`` (what ``segtools.forensics.pipeline.range_starts`` gives from rows)."""
        keep = self._np("last_offset") >= first
        segs, positions = self._np("segment")[keep], self._np("position")[keep]
        out: dict[str, int] = {}
        for k, pos in zip(segs.tolist(), positions.tolist()):
            name = self._names[k]
            if name not in out or pos < out[name]:
                out[name] = pos
        return out

    def segment_ends(self) -> tuple[Sequence[str], np.ndarray]:
        """(the names, per name index the end of its last batch: the most position + size,
        -1 where no batch names it)."""
        ends = np.full(len(self._names), -1, dtype=np.int64)
        segs = self._np("segment")
        if segs.size:
            np.maximum.at(ends, segs, self._np("position") + self._np("size").astype(np.int64))
        return self._names, ends

    def sort(self, key: Callable[[BatchFacts], Any]) -> None:
        """Reorder in place (stable), as ``list.sort``."""
        order = sorted(range(len(self)), key=lambda i: key(self[i]))
        self._cols = tuple(array(c.typecode, (c[self._start + i] for i in order)) for c in self._cols)
        self._start, self._stop = 0, len(order)
        self._few = None      # made in the old order

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, BatchColumns)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"BatchColumns({len(self)} batches)"
