"""Producer state snapshots ``<offset>.snapshot`` (FORMATS.md section 8).

Layout declared in :mod:`segtools.formats.producer_snapshot`: the header decodes through its
construct declaration, the fixed-size entries through the ``struct`` format derived from the
entry declaration (construct would be ~6x slower on 100,000 entries). The reader reports a CRC mismatch
(``crc_valid=False``) instead of failing, so a damaged snapshot can still be inspected; layout
problems raise :class:`SnapshotFormatError` with the byte position and field.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from construct import ConstructError, StreamError

from segtools.errors import SnapshotFormatError, input_path, os_input_error
from segtools.files.checkpoints import atomic_write
from segtools.formats.primitives import LocatedError, construct_field
from segtools.formats.producer_snapshot import (
    CRC_OFFSET,
    PRODUCER_ENTRIES_OFFSET,
    PRODUCER_ENTRY_FIELDS,
    PRODUCER_ENTRY_SIZE,
    PRODUCER_ENTRY_STRUCT_FORMAT,
    PRODUCER_SNAPSHOT_COUNT_STRUCT_FORMAT,
    PRODUCER_SNAPSHOT_HEADER_SIZE,
    PRODUCER_SNAPSHOT_VERSION,
    PRODUCER_SNAPSHOT_VERSION_CRC_STRUCT_FORMAT,
    ProducerSnapshotHeader,
)
from segtools.primitives.crc import crc32c
from segtools.primitives.java_numbers import java_int

__all__ = ["ProducerSnapshotEntry", "ProducerSnapshot", "read_producer_snapshot",
           "read_snapshot_head", "write_producer_snapshot", "producer_snapshot_bytes",
           "MAX_SNAPSHOT_BYTES"]

PathLike = str | os.PathLike[str]
_ENTRY = struct.Struct(PRODUCER_ENTRY_STRUCT_FORMAT)
#: refuse larger files: a real snapshot holds one 46-byte entry per live producer
MAX_SNAPSHOT_BYTES = 1 << 30


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    """One producer's state (names of ``ProducerSnapshot.json`` in snake_case)."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int             # -1: no batch metadata
    offset_delta: int            # last_offset - first_offset of the last batch
    timestamp: int
    coordinator_epoch: int       # -1: none
    current_txn_first_offset: int  # -1: no ongoing transaction

    @property
    def first_offset(self) -> int:
        """First offset of the producer's last batch (-1 without batch metadata)."""
        return -1 if self.last_offset < 0 else self.last_offset - self.offset_delta

    @property
    def first_sequence(self) -> int:
        """``decrementSequence(last_sequence, offset_delta)`` in Java int arithmetic: sequences
        wrap at Int.MAX to 0."""
        if self.last_sequence < self.offset_delta:
            return java_int(2**31 - 1 - (self.offset_delta - self.last_sequence) + 1)
        return java_int(self.last_sequence - self.offset_delta)


@dataclass(frozen=True)
class ProducerSnapshot:
    """A parsed ``.snapshot`` file; ``crc_valid`` compares ``crc`` with ``computed_crc``."""

    version: int
    crc: int
    crc_valid: bool
    computed_crc: int
    entries: list[ProducerSnapshotEntry] = field(default_factory=list)
    #: bytes after the last declared entry (Kafka ignores them; they still count in the CRC)
    trailing_bytes: int = 0


def read_producer_snapshot(path: PathLike) -> ProducerSnapshot:
    """Parse a producer snapshot; a CRC mismatch is reported in ``crc_valid``, not raised.

    Raises :class:`SnapshotFormatError` for an unknown version (Kafka: "Snapshot contained an
    unknown file version N"), a truncated header, or an entry count the file cannot hold.
    """
    path = input_path(path)
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > MAX_SNAPSHOT_BYTES:
                raise SnapshotFormatError("file too large for a producer snapshot", path=path,
                                          position=0, expected=f"<= {MAX_SNAPSHOT_BYTES}",
                                          actual=size)
            # read in steps: the header says how many entries to keep; the rest (a sparse
            # 1 GiB file is mostly a hole) only feeds the CRC, never held whole
            data = fh.read(PRODUCER_SNAPSHOT_HEADER_SIZE)
            computed = crc32c(memoryview(data)[PRODUCER_ENTRIES_OFFSET:])
            count = (_header(path, data).producer_entries
                     if len(data) >= PRODUCER_SNAPSHOT_HEADER_SIZE else 0)
            want = max(0, min(count, (size - len(data)) // PRODUCER_ENTRY_SIZE))
            entries_bytes = fh.read(want * PRODUCER_ENTRY_SIZE)
            computed = crc32c(entries_bytes, computed)
            total = len(data) + len(entries_bytes)
            while True:
                chunk = fh.read(_READ_STEP)
                if not chunk:
                    break
                computed = crc32c(chunk, computed)
                total += len(chunk)
            data += entries_bytes
    except OSError as exc:
        raise os_input_error(path, exc, "cannot read producer snapshot") from None
    return _parse(path, data, total, computed)


def read_snapshot_head(path: PathLike) -> tuple[bytes, int]:
    """The header bytes of a producer snapshot (up to its declared size, fewer when the file
    is shorter) and the file's size: what a caller needs to word a rejection the way a given
    Kafka release does (dump's 4.x messages), without reading the file a second way."""
    path = input_path(path)
    try:
        with open(path, "rb") as fh:
            return fh.read(PRODUCER_SNAPSHOT_HEADER_SIZE), os.fstat(fh.fileno()).st_size
    except OSError as exc:
        raise os_input_error(path, exc, "cannot read producer snapshot") from None


#: bytes read per step when the CRC covers bytes after the entries
_READ_STEP = 4 << 20


def _header(path: str, data: bytes) -> Any:
    """The header through :data:`ProducerSnapshotHeader`; construct's errors become
    :class:`SnapshotFormatError` with Kafka's wording, the byte position and the field."""
    try:
        return ProducerSnapshotHeader.parse(data[:PRODUCER_SNAPSHOT_HEADER_SIZE])
    except LocatedError as exc:
        raise SnapshotFormatError(f"Snapshot failed schema validation: {exc.reason}", path=path,
                                  position=exc.position, field=exc.field,
                                  expected=exc.expected, actual=exc.actual) from None
    except StreamError as exc:
        field_name = construct_field(exc.path) or "version"
        if field_name == "version":
            raise SnapshotFormatError("Snapshot failed schema validation: truncated version field",
                                      path=path, position=0, field="version") from None
        raise SnapshotFormatError(
            "Snapshot failed schema validation: file ends inside the header",
            path=path, position=len(data), field=field_name,
            expected=PRODUCER_SNAPSHOT_HEADER_SIZE, actual=len(data)) from None
    except ConstructError as exc:   # not reachable with fixed-size integers; never escapes
        raise SnapshotFormatError(f"Snapshot failed schema validation: {exc}", path=path,
                                  position=0, field=construct_field(exc.path)) from None


def _parse(path: str, data: bytes, total: int, computed: int) -> ProducerSnapshot:
    """Entries from ``data`` (header + declared entries); ``total`` is the file size read
    and ``computed`` the CRC-32C over all bytes after the CRC field."""
    header = _header(path, data)
    count = header.producer_entries
    available = (total - PRODUCER_SNAPSHOT_HEADER_SIZE) // PRODUCER_ENTRY_SIZE
    if count < 0 or count > available:
        raise SnapshotFormatError(
            f"Snapshot failed schema validation: entry count {count} does not fit the "
            f"{total - PRODUCER_SNAPSHOT_HEADER_SIZE} bytes after the header",
            path=path, position=PRODUCER_ENTRIES_OFFSET, field="producer_entries",
            expected=f"0..{available}", actual=count)
    # the entry array through the struct format derived from ProducerSnapshotEntry
    body = memoryview(data)[PRODUCER_SNAPSHOT_HEADER_SIZE:
                            PRODUCER_SNAPSHOT_HEADER_SIZE + count * PRODUCER_ENTRY_SIZE]
    entries = [ProducerSnapshotEntry(*values) for values in _ENTRY.iter_unpack(body)]
    trailing = total - PRODUCER_SNAPSHOT_HEADER_SIZE - count * PRODUCER_ENTRY_SIZE
    return ProducerSnapshot(header.version, header.crc, header.crc == computed, computed,
                            entries, trailing)


def producer_snapshot_bytes(entries: Iterable[ProducerSnapshotEntry | tuple[int, ...]]) -> bytes:
    """The bytes Kafka's ``writeSnapshot`` produces for ``entries`` (in the given order)."""
    body = bytearray()
    n = 0
    for entry in entries:
        values = tuple(getattr(entry, f) for f in PRODUCER_ENTRY_FIELDS) if isinstance(entry, ProducerSnapshotEntry) \
            else tuple(entry)
        try:
            body += _ENTRY.pack(*values)
        except struct.error as exc:
            raise ValueError(f"invalid producer snapshot entry {values!r}: {exc}") from None
        n += 1
    counted = struct.pack(PRODUCER_SNAPSHOT_COUNT_STRUCT_FORMAT, n) + bytes(body)
    return struct.pack(PRODUCER_SNAPSHOT_VERSION_CRC_STRUCT_FORMAT, PRODUCER_SNAPSHOT_VERSION,
                       crc32c(counted)) + counted


def write_producer_snapshot(path: PathLike,
                            entries: Iterable[ProducerSnapshotEntry | tuple[int, ...]]) -> None:
    """Write a version-1 producer snapshot byte-exact to Kafka's layout (tmp file + rename)."""
    atomic_write(path, producer_snapshot_bytes(entries))


assert CRC_OFFSET == 2
# the dataclass is built positionally from the declaration's entries: same names, same order
assert tuple(f.name for f in fields(ProducerSnapshotEntry)) == PRODUCER_ENTRY_FIELDS
