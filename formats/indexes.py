"""Entries of the per-segment index files.

Spec (FORMATS.md sections 5-7; ``OffsetIndex.java``, ``TimeIndex.java``, ``AbstractIndex.java``,
``TransactionIndex.java``, ``AbortedTxn.java``)::

    <base>.index      8-byte entries:  relative_offset int32, position int32
    <base>.timeindex  12-byte entries: timestamp int64, relative_offset int32
    <base>.txnindex   34-byte entries: version int16 (0), producer_id int64, first_offset int64,
                                       last_offset int64, last_stable_offset int64

No header, no checksum. ``.index``/``.timeindex`` of an active segment are preallocated with
zeros: entries = floor(length / entry size), and a slot with relative offset 0 after entry 0
starts the zero tail. ``.txnindex`` is appended to; a trailing partial entry is ignored.
Kafka reports the txnindex "version" as the first byte only (``AbortedTxn.version()``).
"""

from __future__ import annotations

from construct import GreedyRange, Int16sb, Int32sb, Int64sb, Struct

__all__ = [
    "OffsetIndexEntry", "TimeIndexEntry", "AbortedTxnEntry", "OffsetIndex", "TimeIndex",
    "TransactionIndex", "OFFSET_INDEX_ENTRY_SIZE", "TIME_INDEX_ENTRY_SIZE", "ABORTED_TXN_SIZE",
    "OFFSET_INDEX_DTYPE", "TIME_INDEX_DTYPE", "DEFAULT_MAX_INDEX_SIZE",
    "CURRENT_ABORTED_TXN_VERSION",
    "OFFSET_INDEX_ENTRY_STRUCT_FORMAT", "TIME_INDEX_ENTRY_STRUCT_FORMAT", "ABORTED_TXN_STRUCT_FORMAT",
]

OFFSET_INDEX_ENTRY_SIZE = 8
TIME_INDEX_ENTRY_SIZE = 12
ABORTED_TXN_SIZE = 34
#: ``struct`` formats of the entries below (hot path; tested against the declarations)
OFFSET_INDEX_ENTRY_STRUCT_FORMAT = ">ii"
TIME_INDEX_ENTRY_STRUCT_FORMAT = ">qi"
ABORTED_TXN_STRUCT_FORMAT = ">hqqqq"
CURRENT_ABORTED_TXN_VERSION = 0
#: segment.index.bytes default (10 MiB): preallocated length before rounding down to entry size
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024

#: numpy dtype descriptions (big-endian) of the fixed entries, for ``numpy.frombuffer``
OFFSET_INDEX_DTYPE = [("relative_offset", ">i4"), ("position", ">i4")]
TIME_INDEX_DTYPE = [("timestamp", ">i8"), ("relative_offset", ">i4")]

OffsetIndexEntry = Struct(
    "relative_offset" / Int32sb,
    "position" / Int32sb,
)

TimeIndexEntry = Struct(
    "timestamp" / Int64sb,
    "relative_offset" / Int32sb,
)

AbortedTxnEntry = Struct(
    "version" / Int16sb,
    "producer_id" / Int64sb,
    "first_offset" / Int64sb,
    "last_offset" / Int64sb,
    "last_stable_offset" / Int64sb,
)

#: whole files (untrimmed: zero tail included); for specs and tests, not for big files
OffsetIndex = GreedyRange(OffsetIndexEntry)
TimeIndex = GreedyRange(TimeIndexEntry)
TransactionIndex = GreedyRange(AbortedTxnEntry)
