"""Offset pairs kept for kafka-dump-log's end-of-run blocks, in bounded memory.

Kafka holds every "Non-consecutive offsets" pair until the end of the run and prints them
newest first. One batch of millions of records whose offset deltas repeat (a decompression
bomb, or a broken producer) gives millions of pairs: as Python tuples they cost gigabytes. A
PairStore keeps them as machine integers, and beyond ``in_memory`` pairs in an anonymous
temporary file (outside every input), read back newest first in bounded chunks.
"""

from __future__ import annotations

import tempfile
from array import array
from collections.abc import Iterator
from typing import IO

_PAIR_BYTES = 16
_IN_MEMORY = 1 << 16     # pairs held in memory (1 MiB) before spilling
_READ_PAIRS = 1 << 16    # pairs read back per step


class PairStore:
    """(a, b) int64 pairs appended oldest first, iterated newest first."""

    def __init__(self, in_memory: int | None = None) -> None:
        self._limit = 2 * max(1, _IN_MEMORY if in_memory is None else in_memory)
        self._mem = array("q")
        self._spill: IO[bytes] | None = None
        self._spilled = 0  # pairs in the spill file

    def append(self, a: int, b: int) -> None:
        mem = self._mem
        mem.append(a)
        mem.append(b)
        if len(mem) >= self._limit:
            if self._spill is None:
                self._spill = tempfile.TemporaryFile(prefix="segtools-dump-")
            self._spill.seek(0, 2)
            self._spill.write(mem.tobytes())
            self._spilled += len(mem) // 2
            self._mem = array("q")

    def __len__(self) -> int:
        return self._spilled + len(self._mem) // 2

    def newest_first(self) -> Iterator[tuple[int, int]]:
        for chunk in self.chunks_newest_first():
            for i in range(len(chunk) - 2, -1, -2):
                yield chunk[i], chunk[i + 1]

    def chunks_newest_first(self) -> Iterator[array[int]]:
        """The pairs in blocks of at most ``_READ_PAIRS`` (flat ``a, b, a, b``), the newest
        block first, each block oldest first inside: for callers that count millions of
        pairs without a Python step per pair."""
        if self._mem:
            yield self._mem
        if self._spill is None:
            return
        end = self._spilled
        while end > 0:
            start = max(0, end - _READ_PAIRS)
            self._spill.seek(start * _PAIR_BYTES)
            chunk = array("q")
            chunk.frombytes(self._spill.read((end - start) * _PAIR_BYTES))
            yield chunk
            end = start

    def close(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None
