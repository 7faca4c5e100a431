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

from segtools.formats.primitives import numpy_dtype, struct_format

__all__ = [
    "OffsetIndexEntry", "TimeIndexEntry", "AbortedTxnEntry", "OffsetIndex", "TimeIndex",
    "TransactionIndex", "OFFSET_INDEX_ENTRY_SIZE", "TIME_INDEX_ENTRY_SIZE", "ABORTED_TXN_SIZE",
    "OFFSET_INDEX_DTYPE", "TIME_INDEX_DTYPE", "DEFAULT_MAX_INDEX_SIZE",
    "CURRENT_ABORTED_TXN_VERSION",
    "OFFSET_INDEX_ENTRY_STRUCT_FORMAT", "TIME_INDEX_ENTRY_STRUCT_FORMAT", "ABORTED_TXN_STRUCT_FORMAT",
]

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

# Everything the hot paths need is derived from the declarations above, never written twice.
OFFSET_INDEX_ENTRY_SIZE: int = OffsetIndexEntry.sizeof()
TIME_INDEX_ENTRY_SIZE: int = TimeIndexEntry.sizeof()
ABORTED_TXN_SIZE: int = AbortedTxnEntry.sizeof()
#: ``struct`` formats of the entries (hot path)
OFFSET_INDEX_ENTRY_STRUCT_FORMAT = struct_format(OffsetIndexEntry)
TIME_INDEX_ENTRY_STRUCT_FORMAT = struct_format(TimeIndexEntry)
ABORTED_TXN_STRUCT_FORMAT = struct_format(AbortedTxnEntry)
#: numpy dtype descriptions (big-endian) of the fixed entries, for ``numpy.frombuffer``
OFFSET_INDEX_DTYPE = numpy_dtype(OffsetIndexEntry)
TIME_INDEX_DTYPE = numpy_dtype(TimeIndexEntry)
CURRENT_ABORTED_TXN_VERSION = 0
#: segment.index.bytes default (10 MiB): preallocated length before rounding down to entry size
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024

#: whole files (untrimmed: zero tail included); for specs and tests, not for big files
OffsetIndex = GreedyRange(OffsetIndexEntry)
TimeIndex = GreedyRange(TimeIndexEntry)
TransactionIndex = GreedyRange(AbortedTxnEntry)
