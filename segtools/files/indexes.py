"""Readers and entry builders for ``.index``, ``.timeindex`` and ``.txnindex`` files.

Layouts are declared in :mod:`segtools.formats.indexes` (FORMATS.md sections 5-7). Offset and
time indexes are read in bounded steps with ``numpy.frombuffer`` and trimmed the way Kafka's
DumpLogSegments walks them: ``entries = floor(length / entry size)``, and a slot whose relative
offset is 0 after entry 0 starts the zero-filled preallocated tail.
"""

from __future__ import annotations

import os
import stat
import struct
from dataclasses import dataclass

import numpy as np

from segtools.errors import IndexCorruptionError, InputError, display_path, input_path
from segtools.formats.indexes import (
    ABORTED_TXN_SIZE,
    ABORTED_TXN_STRUCT_FORMAT,
    CURRENT_ABORTED_TXN_VERSION,
    OFFSET_INDEX_ENTRY_SIZE,
    OFFSET_INDEX_ENTRY_STRUCT_FORMAT,
    TIME_INDEX_ENTRY_SIZE,
    TIME_INDEX_ENTRY_STRUCT_FORMAT,
)
from segtools.formats.indexes import OFFSET_INDEX_DTYPE as _OFFSET_INDEX_LAYOUT
from segtools.formats.indexes import TIME_INDEX_DTYPE as _TIME_INDEX_LAYOUT
from segtools.formats.names import SEGMENT_FILE_RE

__all__ = [
    "OFFSET_INDEX_DTYPE", "TIME_INDEX_DTYPE", "AbortedTxn", "read_offset_index",
    "read_time_index", "read_txn_index", "offset_index_entry", "time_index_entry",
    "txn_index_entry", "index_base_offset", "sanity_check_offset_index",
    "sanity_check_time_index", "IndexFile", "unpack_index_slot",
]

PathLike = str | os.PathLike[str]

# derived from the construct declarations in formats/indexes.py, not written twice
OFFSET_INDEX_DTYPE = np.dtype(_OFFSET_INDEX_LAYOUT)
TIME_INDEX_DTYPE = np.dtype(_TIME_INDEX_LAYOUT)

_OFFSET_ENTRY = struct.Struct(OFFSET_INDEX_ENTRY_STRUCT_FORMAT)
_TIME_ENTRY = struct.Struct(TIME_INDEX_ENTRY_STRUCT_FORMAT)
_TXN_ENTRY = struct.Struct(ABORTED_TXN_STRUCT_FORMAT)


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One ``.txnindex`` entry. ``version`` is the first byte only, read as a signed Java byte,
    as Kafka up to 4.3 reports it; ``version_int16`` is the whole int16 field, as Kafka 4.4
    reads it."""

    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version_int16: int


def index_base_offset(path: PathLike) -> int:
    """Segment base offset from a file name like ``00000000000000000123.index`` (or ``.swap``...).

    Kafka takes ``Long.parseLong`` of the name up to the first dot; a name that is not a
    20-digit segment file name raises :class:`InputError`.
    """
    name = os.path.basename(input_path(path))
    match = SEGMENT_FILE_RE.match(name)
    if match is None:
        raise InputError(f"{name}: not a segment file name (<20 digits>.index|.timeindex|...)")
    return int(match.group("offset"))


#: index bytes read per step: a preallocated 10 MiB index is read only up to its zero tail
_READ_STEP = 1 << 20


def _require_regular_file(path: str, kind: str) -> None:
    """A FIFO or device would block or never end: only regular files are index files."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # open() below reports it with the usual message
    if not stat.S_ISREG(mode):
        raise IndexCorruptionError(f"{kind} {display_path(path)} is not a regular file", path=path)


def _read_fixed_entries(path: PathLike, dtype: np.dtype, entry_size: int, kind: str,
                        strict: bool, trim: bool) -> np.ndarray:
    """Slots read in bounded steps, stopping at the zero tail. Read, not mapped: a broker
    trimming the index at roll must not kill the reader with SIGBUS or a short mapping."""
    path = input_path(path)
    _require_regular_file(path, kind)
    step = max(1, _READ_STEP // entry_size) * entry_size
    parts: list[np.ndarray] = []
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if strict and size % entry_size:
                raise IndexCorruptionError(
                    f"{kind} file is corrupt, found {size} bytes which is neither positive nor "
                    f"a multiple of {entry_size}",
                    path=path, position=size - size % entry_size, field="length",
                    expected=f"multiple of {entry_size}", actual=size)
            first = True
            while True:
                data = fh.read(step)
                n = len(data) // entry_size
                if n == 0:
                    break
                slots = np.frombuffer(data, dtype=dtype, count=n)
                if trim:
                    # slot 0 is always kept; the first later slot with relative offset 0 is tail
                    rel = slots["relative_offset"]
                    zeros = np.flatnonzero(rel[1:] == 0) + 1 if first else np.flatnonzero(rel == 0)
                    if len(zeros):
                        parts.append(slots[:int(zeros[0])])
                        break
                parts.append(slots)
                first = False
                if len(data) < step:
                    break
    except OSError as exc:
        raise InputError(f"cannot read {kind} file {display_path(path)}: {exc.strerror or exc}") from exc
    if not parts:
        return np.zeros(0, dtype=dtype)
    return np.concatenate(parts)   # a new, writable array (frombuffer views are read-only)


def read_offset_index(path: PathLike, *, strict: bool = True, trim: bool = True) -> np.ndarray:
    """Entries of an offset index: structured array ``(relative_offset >i4, position >i4)``.

    Trimmed like Kafka: ``floor(length / 8)`` slots, stopping before the first slot after entry 0
    whose relative offset is 0 (the preallocated zero tail). Absolute offset =
    ``index_base_offset(path) + relative_offset``. With ``strict`` (default) a length that is
    not a multiple of 8 raises :class:`IndexCorruptionError`; otherwise the partial slot is ignored.
    ``trim=False`` returns every slot, zero tail included (what Kafka's index object holds).
    """
    return _read_fixed_entries(path, OFFSET_INDEX_DTYPE, OFFSET_INDEX_ENTRY_SIZE, "Index",
                               strict, trim)


def read_time_index(path: PathLike, *, strict: bool = True, trim: bool = True) -> np.ndarray:
    """Entries of a time index: structured array ``(timestamp >i8, relative_offset >i4)``.

    Trimmed and checked like :func:`read_offset_index` with 12-byte slots.
    """
    return _read_fixed_entries(path, TIME_INDEX_DTYPE, TIME_INDEX_ENTRY_SIZE, "Time index",
                               strict, trim)


def read_txn_index(path: PathLike, *, strict: bool = True) -> list[AbortedTxn]:
    """Entries of a transaction index (34 bytes each; a trailing partial entry is ignored as Kafka does).

    With ``strict`` (default) an entry whose first byte (Kafka's "version") is not 0 raises
    :class:`IndexCorruptionError` ("Unexpected aborted transaction version"); otherwise such
    entries are returned as they are.
    """
    path = input_path(path)
    _require_regular_file(path, "transaction index")
    out: list[AbortedTxn] = []
    try:
        with open(path, "rb") as fh:
            position = 0
            while True:
                chunk = fh.read(ABORTED_TXN_SIZE)
                if len(chunk) < ABORTED_TXN_SIZE:
                    break
                version_int16, producer_id, first_offset, last_offset, lso = _TXN_ENTRY.unpack(chunk)
                version = chunk[0] - 256 if chunk[0] > 127 else chunk[0]  # Java byte: signed
                if strict and version > CURRENT_ABORTED_TXN_VERSION:
                    raise IndexCorruptionError(
                        f"Unexpected aborted transaction version {version}", path=path,
                        position=position, field="version",
                        expected=CURRENT_ABORTED_TXN_VERSION, actual=version)
                out.append(AbortedTxn(version, producer_id, first_offset, last_offset, lso,
                                      version_int16))
                position += ABORTED_TXN_SIZE
    except OSError as exc:
        raise InputError(f"cannot read transaction index {display_path(path)}: {exc.strerror or exc}") from exc
    return out


def unpack_index_slot(chunk: bytes, *, time: bool) -> tuple[int, int]:
    """One slot's two fields as written: ``(relative_offset, position)`` of an ``.index``,
    ``(timestamp, relative_offset)`` of a ``.timeindex``."""
    fields = _TIME_ENTRY.unpack(chunk) if time else _OFFSET_ENTRY.unpack(chunk)
    return int(fields[0]), int(fields[1])


class IndexFile:
    """An offset or time index opened read-only, for the slots past what
    :func:`read_offset_index` / :func:`read_time_index` return (the zero tail a lookup or
    Kafka's sanity check touches): its length now and single slots by number, read with
    ``pread``, never mapped (a broker trimming the index at roll must not kill the reader)."""

    def __init__(self, path: PathLike, *, time: bool) -> None:
        self.path = input_path(path)
        self.time = time
        self.slot_size = TIME_INDEX_ENTRY_SIZE if time else OFFSET_INDEX_ENTRY_SIZE
        try:
            self._fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise InputError(f"cannot read {display_path(self.path)}: {exc.strerror or exc}") from None

    def __enter__(self) -> IndexFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def length(self) -> int:
        """The file's size now (what Kafka's index object covers)."""
        return os.fstat(self._fd).st_size

    def slot(self, i: int) -> tuple[int, int]:
        """Slot ``i`` as :func:`unpack_index_slot` gives it; :class:`InputError` when the file
        no longer holds it."""
        chunk = os.pread(self._fd, self.slot_size, i * self.slot_size)
        if len(chunk) < self.slot_size:
            raise InputError(f"{self.path} changed while reading: it no longer holds slot {i}")
        return unpack_index_slot(chunk, time=self.time)


def _check_int(name: str, value: int, bits: int) -> None:
    if not isinstance(value, (int, np.integer)) or not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise ValueError(f"{name} {value!r} does not fit a signed {bits}-bit integer")


def offset_index_entry(relative_offset: int, position: int) -> bytes:
    """The 8 bytes of one ``.index`` entry (offset relative to the segment base, byte position)."""
    _check_int("relative_offset", relative_offset, 32)
    _check_int("position", position, 32)
    return _OFFSET_ENTRY.pack(relative_offset, position)


def time_index_entry(timestamp: int, relative_offset: int) -> bytes:
    """The 12 bytes of one ``.timeindex`` entry."""
    _check_int("timestamp", timestamp, 64)
    _check_int("relative_offset", relative_offset, 32)
    return _TIME_ENTRY.pack(timestamp, relative_offset)


def txn_index_entry(producer_id: int, first_offset: int, last_offset: int,
                    last_stable_offset: int, *, version: int = CURRENT_ABORTED_TXN_VERSION) -> bytes:
    """The 34 bytes of one ``.txnindex`` entry (``AbortedTxn``: last_offset = the ABORT marker)."""
    _check_int("version", version, 16)
    for name, value in (("producer_id", producer_id), ("first_offset", first_offset),
                        ("last_offset", last_offset), ("last_stable_offset", last_stable_offset)):
        _check_int(name, value, 64)
    return _TXN_ENTRY.pack(version, producer_id, first_offset, last_offset, last_stable_offset)


def _untrimmed_last(path: str, entry_size: int) -> tuple[int, bytes, bytes]:
    """File length, first and last slot bytes (what Kafka's sanity check looks at)."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        count = size // entry_size
        if count == 0:
            return size, b"", b""
        first = fh.read(entry_size)
        fh.seek((count - 1) * entry_size)
        last = fh.read(entry_size)
    return size, first, last


def sanity_check_offset_index(path: PathLike, base_offset: int | None = None) -> None:
    """Kafka's ``OffsetIndex.sanityCheck`` (broker startup; ``--index-sanity-check``).

    Like Kafka, the last *slot* (zero tail included) is checked. Raises
    :class:`IndexCorruptionError` with Kafka's message.
    """
    path = input_path(path)
    base = index_base_offset(path) if base_offset is None else base_offset
    try:
        size, _, last = _untrimmed_last(path, OFFSET_INDEX_ENTRY_SIZE)
    except OSError as exc:
        raise InputError(f"cannot read index file {display_path(path)}: {exc.strerror or exc}") from exc
    apath = os.path.abspath(path)
    if last:
        last_offset = base + _OFFSET_ENTRY.unpack(last)[0]
        if last_offset < base:
            raise IndexCorruptionError(
                f"Corrupt index found, index file ({apath}) has non-zero size but the last "
                f"offset is {last_offset} which is less than the base offset {base}",
                path=path, position=size - size % OFFSET_INDEX_ENTRY_SIZE - OFFSET_INDEX_ENTRY_SIZE,
                field="relative_offset")
    if size % OFFSET_INDEX_ENTRY_SIZE:
        raise IndexCorruptionError(
            f"Index file {apath} is corrupt, found {size} bytes which is neither positive nor "
            f"a multiple of {OFFSET_INDEX_ENTRY_SIZE}", path=path, field="length")


def sanity_check_time_index(path: PathLike, base_offset: int | None = None) -> None:
    """Kafka's ``TimeIndex.sanityCheck``; raises :class:`IndexCorruptionError` with Kafka's message."""
    path = input_path(path)
    base = index_base_offset(path) if base_offset is None else base_offset
    try:
        size, first, last = _untrimmed_last(path, TIME_INDEX_ENTRY_SIZE)
    except OSError as exc:
        raise InputError(f"cannot read time index file {display_path(path)}: {exc.strerror or exc}") from exc
    apath = os.path.abspath(path)
    last_pos = size - size % TIME_INDEX_ENTRY_SIZE - TIME_INDEX_ENTRY_SIZE
    if last:
        first_ts = _TIME_ENTRY.unpack(first)[0]
        last_ts, last_rel = _TIME_ENTRY.unpack(last)
        if last_ts < first_ts:
            raise IndexCorruptionError(
                f"Corrupt time index found, time index file ({apath}) has non-zero size but the "
                f"last timestamp is {last_ts} which is less than the first timestamp {first_ts}",
                path=path, position=last_pos, field="timestamp")
        if base + last_rel < base:
            raise IndexCorruptionError(
                f"Corrupt time index found, time index file ({apath}) has non-zero size but the "
                f"last offset is {base + last_rel} which is less than the first offset {base}",
                path=path, position=last_pos, field="relative_offset")
    if size % TIME_INDEX_ENTRY_SIZE:
        raise IndexCorruptionError(
            f"Time index file {apath} is corrupt, found {size} bytes which is neither positive "
            f"nor a multiple of {TIME_INDEX_ENTRY_SIZE}", path=path, field="length")
