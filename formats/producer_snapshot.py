"""Producer state snapshot ``<offset>.snapshot`` (version 1).

Spec (FORMATS.md section 8; ``ProducerStateManager.java`` ``readSnapshot``/``writeSnapshot``,
``ProducerSnapshot.json``)::

    version int16                 = 1 (the only supported version)      byte 0
    crc uint32                    CRC-32C of bytes [6, EOF)              byte 2
    entries int32-counted array of 46-byte entries                      byte 6
      producer_id int64
      epoch int16
      last_sequence int32
      last_offset int64             -1 = no batch metadata
      offset_delta int32            last_offset - first_offset of the last batch
      timestamp int64               max timestamp of the last batch
      coordinator_epoch int32       -1 = none
      current_txn_first_offset int64  -1 = no ongoing transaction

The CRC is a plain field here; the reader reports ``crc_valid`` instead of failing. Production
(``segtools.files.snapshots``) parses :data:`ProducerSnapshotHeader` with construct and the
entries with the ``struct`` format derived from :data:`ProducerSnapshotEntry`.
"""

from __future__ import annotations

from typing import Any

from construct import Adapter, Int16sb, Int32sb, Int32ub, Int64sb, PrefixedArray, Struct

from segtools.formats.primitives import LocatedError, struct_format

__all__ = [
    "ProducerSnapshotEntry", "ProducerSnapshot", "ProducerSnapshotHeader",
    "PRODUCER_SNAPSHOT_VERSION", "PRODUCER_ENTRY_FIELDS",
    "VERSION_OFFSET", "CRC_OFFSET", "PRODUCER_ENTRIES_OFFSET", "PRODUCER_ENTRY_SIZE",
    "PRODUCER_SNAPSHOT_HEADER_SIZE", "PRODUCER_ENTRY_STRUCT_FORMAT",
    "PRODUCER_SNAPSHOT_HEADER_STRUCT_FORMAT",
    "PRODUCER_SNAPSHOT_VERSION_STRUCT_FORMAT", "PRODUCER_SNAPSHOT_VERSION_CRC_STRUCT_FORMAT",
    "PRODUCER_SNAPSHOT_COUNT_STRUCT_FORMAT",
]

PRODUCER_SNAPSHOT_VERSION = 1
VERSION_OFFSET = 0
CRC_OFFSET = 2
#: the CRC covers everything from here (the entry count) to the end of the file
PRODUCER_ENTRIES_OFFSET = 6

ProducerSnapshotEntry = Struct(
    "producer_id" / Int64sb,
    "epoch" / Int16sb,
    "last_sequence" / Int32sb,
    "last_offset" / Int64sb,
    "offset_delta" / Int32sb,
    "timestamp" / Int64sb,
    "coordinator_epoch" / Int32sb,
    "current_txn_first_offset" / Int64sb,
)


class _KnownVersion(Adapter):  # type: ignore[misc]  # construct ships no annotations
    """readSnapshot refuses any version but 1 before it reads further."""

    def _decode(self, obj: int, context: Any, path: str) -> int:
        if obj != PRODUCER_SNAPSHOT_VERSION:
            raise LocatedError(f"Snapshot contained an unknown file version {obj}", path=path,
                               position=VERSION_OFFSET, field="version",
                               expected=PRODUCER_SNAPSHOT_VERSION, actual=obj)
        return obj

    def _encode(self, obj: int, context: Any, path: str) -> int:
        return obj


#: version, crc, entry count: what the reader checks before it reads the entries
ProducerSnapshotHeader = Struct(
    "version" / _KnownVersion(Int16sb),
    "crc" / Int32ub,
    "producer_entries" / Int32sb,
)

ProducerSnapshot = Struct(
    "version" / _KnownVersion(Int16sb),
    "crc" / Int32ub,
    # Kafka's schema reader ignores bytes after the last entry (they still count in the CRC)
    "entries" / PrefixedArray(Int32sb, ProducerSnapshotEntry),
)

# Derived from the declarations above for the hot path (a snapshot can hold 100,000s of
# entries: construct parses them ~6x slower than struct.iter_unpack with the same layout).
#: one entry for ``struct.Struct``
PRODUCER_ENTRY_STRUCT_FORMAT = struct_format(ProducerSnapshotEntry)
PRODUCER_ENTRY_SIZE: int = ProducerSnapshotEntry.sizeof()
#: entry field names in file order
PRODUCER_ENTRY_FIELDS = tuple(sub.name for sub in ProducerSnapshotEntry.subcons)
#: version int16, crc uint32, entry count int32
PRODUCER_SNAPSHOT_HEADER_STRUCT_FORMAT = struct_format(ProducerSnapshotHeader)
PRODUCER_SNAPSHOT_HEADER_SIZE: int = ProducerSnapshotHeader.sizeof()
#: the version field alone, version + crc, and the entry count (the CRC covers count + entries)
PRODUCER_SNAPSHOT_VERSION_STRUCT_FORMAT = PRODUCER_SNAPSHOT_HEADER_STRUCT_FORMAT[:2]
PRODUCER_SNAPSHOT_VERSION_CRC_STRUCT_FORMAT = PRODUCER_SNAPSHOT_HEADER_STRUCT_FORMAT[:3]
PRODUCER_SNAPSHOT_COUNT_STRUCT_FORMAT = ">" + PRODUCER_SNAPSHOT_HEADER_STRUCT_FORMAT[3:]
