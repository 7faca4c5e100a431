"""Writable ``.index`` / ``.timeindex`` / ``.txnindex`` files, kept the way a broker keeps them.

FORMATS.md sections 5-7 (``AbstractIndex``, ``OffsetIndex``, ``TimeIndex``,
``TransactionIndex``): the active segment's offset and time indexes are preallocated to
``segment_index_bytes`` rounded down to the entry size (zero filled, sparse like
``RandomAccessFile.setLength``) and trimmed to ``entries x size`` when the segment rolls or
closes. Truncation only moves the entry count: bytes past it stay in the file, as in Kafka.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from segtools.formats.indexes import (
    ABORTED_TXN_STRUCT_FORMAT,
    OFFSET_INDEX_ENTRY_STRUCT_FORMAT,
    TIME_INDEX_ENTRY_STRUCT_FORMAT,
)

__all__ = ["OffsetIndexFile", "TimeIndexFile", "TxnIndexFile", "AbortedTxnEntry"]

_OFFSET_ENTRY = struct.Struct(OFFSET_INDEX_ENTRY_STRUCT_FORMAT)
_TIME_ENTRY = struct.Struct(TIME_INDEX_ENTRY_STRUCT_FORMAT)
_TXN_ENTRY = struct.Struct(ABORTED_TXN_STRUCT_FORMAT)


class _PreallocatedIndex:
    entry_size: int

    def __init__(self, path: str, base_offset: int, max_index_size: int, *, preallocate: bool,
                 entries: list[tuple[int, int]] | None = None) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_size = max_index_size - max_index_size % self.entry_size
        #: (key, value) pairs as absolute numbers: (offset, position) or (timestamp, offset)
        self.entries: list[tuple[int, int]] = list(entries or [])
        if not os.path.exists(path):
            with open(path, "wb"):
                pass
        if preallocate:
            self.resize(self.max_size)

    @property
    def max_entries(self) -> int:
        return self.max_size // self.entry_size

    def _pack(self, entry: tuple[int, int]) -> bytes:
        raise NotImplementedError

    def _write(self, slot: int, entry: tuple[int, int]) -> None:
        fd = os.open(self.path, os.O_WRONLY)
        try:
            os.pwrite(fd, self._pack(entry), slot * self.entry_size)
        finally:
            os.close(fd)

    def _append(self, entry: tuple[int, int]) -> None:
        self._write(len(self.entries), entry)
        self.entries.append(entry)

    def resize(self, size: int) -> None:
        """``AbstractIndex.resize``: set the file length (new bytes read as zeros)."""
        size -= size % self.entry_size
        if os.path.getsize(self.path) != size:
            os.truncate(self.path, size)

    def trim(self) -> None:
        """``trimToValidSize``: cut the file to the real entries."""
        self.resize(len(self.entries) * self.entry_size)

    def reset(self) -> None:
        """``AbstractIndex.reset``: drop every entry and preallocate again (zeros)."""
        self.entries.clear()
        os.truncate(self.path, 0)
        self.resize(self.max_size)


class OffsetIndexFile(_PreallocatedIndex):
    entry_size = 8

    def _pack(self, entry: tuple[int, int]) -> bytes:
        offset, position = entry
        return _OFFSET_ENTRY.pack(offset - self.base_offset, position)

    def is_full(self) -> bool:
        return len(self.entries) >= self.max_entries

    def append(self, offset: int, position: int) -> None:
        """``OffsetIndex.append``: only offsets beyond the last entry are accepted."""
        if self.entries and offset <= self.entries[-1][0]:
            raise ValueError(f"offset {offset} is not larger than the last index offset "
                             f"{self.entries[-1][0]} in {self.path}")
        self._append((offset, position))

    def truncate_to(self, offset: int) -> None:
        """Keep only entries whose offset is below ``offset``."""
        self.entries = [e for e in self.entries if e[0] < offset]

    def lookup(self, offset: int) -> tuple[int, int]:
        """Largest entry with offset <= ``offset``, else (base_offset, 0)."""
        best = (self.base_offset, 0)
        for entry in self.entries:
            if entry[0] > offset:
                break
            best = entry
        return best


class TimeIndexFile(_PreallocatedIndex):
    entry_size = 12

    def _pack(self, entry: tuple[int, int]) -> bytes:
        timestamp, offset = entry
        return _TIME_ENTRY.pack(timestamp, offset - self.base_offset)

    def is_full(self) -> bool:
        # one slot stays free for the entry appended when the segment rolls or closes
        return len(self.entries) >= self.max_entries - 1

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """``TimeIndex.maybeAppend``: only a strictly larger timestamp adds an entry (so data
        without timestamps, -1, never does)."""
        last_timestamp = self.entries[-1][0] if self.entries else -1
        if timestamp > last_timestamp:
            self._append((timestamp, offset))

    def truncate_to(self, offset: int) -> None:
        self.entries = [e for e in self.entries if e[1] < offset]


@dataclass(frozen=True, slots=True)
class AbortedTxnEntry:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TxnIndexFile:
    """``TransactionIndex``: 34-byte entries, appended, never preallocated; the file is
    created by the first entry."""

    entry_size = 34

    def __init__(self, path: str, entries: list[AbortedTxnEntry] | None = None) -> None:
        self.path = path
        self.entries: list[AbortedTxnEntry] = list(entries or [])

    def append(self, entry: AbortedTxnEntry) -> None:
        if self.entries and entry.last_offset <= self.entries[-1].last_offset:
            raise ValueError(f"aborted txn last offset {entry.last_offset} does not follow "
                             f"{self.entries[-1].last_offset} in {self.path}")
        with open(self.path, "ab") as f:
            f.write(_TXN_ENTRY.pack(0, entry.producer_id, entry.first_offset, entry.last_offset,
                                    entry.last_stable_offset))
        self.entries.append(entry)

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose abort marker is at or after ``offset``."""
        keep = [e for e in self.entries if e.last_offset < offset]
        if len(keep) != len(self.entries) and os.path.exists(self.path):
            os.truncate(self.path, len(keep) * self.entry_size)
        self.entries = keep

    def reset(self) -> None:
        self.entries = []
        if os.path.exists(self.path):
            os.truncate(self.path, 0)
