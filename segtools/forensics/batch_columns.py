"""One replica's batch headers as columns: the classifier's ``Sequence[BatchFacts]`` at ~70
bytes per batch instead of a Python object per batch (~300 bytes with its ints and segment
name), so compare's memory follows the batch count at the cost of arrays, not objects.

A ``BatchFacts`` is made when an item is read (and dropped by the reader): code that walks
the batches sees the same values in the same order as with a list of them."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import pyarrow as pa
import pyarrow.compute as pc

from segtools.forensics.model import BatchFacts

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


class BatchColumns(Sequence[BatchFacts]):
    """A read-only window ``[start, stop)`` over shared columns of batch headers."""

    __slots__ = ("_cols", "_names", "_start", "_stop")

    def __init__(self, cols: Sequence[array[int]], names: Sequence[str], start: int = 0,
                 stop: int | None = None) -> None:
        self._cols = tuple(cols)
        self._names = names
        self._start = start
        self._stop = len(self._cols[0]) if stop is None else stop

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
        cols: list[array[int]] = []
        seg_names: list[str] = []
        for name, code in _FIELDS:
            col = rows.column(name).combine_chunks()
            out = array(code)
            if name == "segment":
                # runs of one name (a segment's batches are adjacent): no hash table over the
                # rows (dictionary_encode's took ~330 bytes a row at the peak)
                seg_names, col = _name_runs(col, {} if names is None else names)
            if pa.types.is_boolean(col.type):
                col = col.cast(pa.int8())
            out.frombytes(memoryview(col.to_numpy(zero_copy_only=False)).cast("B"))
            cols.append(out)
            del col
        return cls(cols, seg_names)

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
        return self._make(self._start + i)

    def __iter__(self) -> Iterator[BatchFacts]:
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

    def sort(self, key: Callable[[BatchFacts], Any]) -> None:
        """Reorder in place (stable), as ``list.sort``."""
        order = sorted(range(len(self)), key=lambda i: key(self[i]))
        self._cols = tuple(array(c.typecode, (c[self._start + i] for i in order)) for c in self._cols)
        self._start, self._stop = 0, len(order)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, BatchColumns)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"BatchColumns({len(self)} batches)"
