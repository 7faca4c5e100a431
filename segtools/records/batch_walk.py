"""The one batch walk: where the next batch of a ``.log`` segment lies, or why the walk stops.

Every reader that steps from batch to batch asks :func:`next_batch` (the object reader
``segtools.records.batches``, the columnar readers' Python walk ``segtools.records.v2_decoder.scan_headers``,
dump's index peek, the log writer's recovery walk and salvage's scan); the compiled twin is
``segtools.records.jit_kernel.scan_headers``, which follows the same rules in the same order and reports
the same status codes (``segtools.records.faults``: ``SCAN_*``). :func:`walk_error` is the
one error each stop that Kafka reports turns into.

The rules are Kafka's ``FileLogInputStream.nextBatch``
(clients/src/main/java/org/apache/kafka/common/record/FileLogInputStream.java), at position
``pos`` of a walk that ends at ``end`` (the file size, or a slice's end):

1. at most 17 bytes left (``HEADER_SIZE_UP_TO_MAGIC``): the walk ends (``SCAN_END``);
2. a size field below 14 (``LegacyRecord.RECORD_OVERHEAD_V0``): ``CorruptRecordException``
   (``SCAN_SIZE_TOO_SMALL``);
3. a batch running past ``end``: the walk ends silently, a torn tail (``SCAN_TORN_TAIL``);
4. ours, not Kafka's: a batch larger than the reader's ``max_batch_bytes`` on disk
   (``segtools.primitives.limits``) is refused before it is read (``SCAN_TOO_LARGE``);
5. byte 16 (magic) picks the format: below 2 (a signed byte, so 0x80.. too) a legacy entry,
   anything else a v2 batch. A v2 batch shorter than its 61-byte header is still a batch:
   Kafka loads its header from the file (``DefaultFileChannelRecordBatch.loadBatchHeader``),
   i.e. from the bytes after it, and the walk goes on ``12 + size`` bytes later. When the
   file ends before those 61 bytes, the load fails (``SCAN_V2_TOO_SHORT``).

What a batch is worth after that (CRC, ``ensureValid``, offsets in range) is each caller's
own business: ``LogSegment.recover`` (storage/.../internals/log/LogSegment.java) stops at
the first batch failing ``ensureValid`` or ``ensureOffsetInRange``, the readers report it.
"""

from __future__ import annotations

import struct
from typing import NamedTuple, TypeAlias

from segtools.errors import (
    BatchTooLargeError,
    CorruptBatchError,
    FormatError,
    TruncatedBatchError,
    display_path,
)
from segtools.formats.legacy import RECORD_OVERHEAD_V0
from segtools.formats.record_batch import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    LOG_PREFIX_STRUCT_FORMAT,
    MAGIC_OFFSET,
    RECORD_BATCH_OVERHEAD,
)
from segtools.records.faults import (
    SCAN_BATCH,
    SCAN_END,
    SCAN_SIZE_TOO_SMALL,
    SCAN_TOO_LARGE,
    SCAN_TORN_TAIL,
    SCAN_V2_TOO_SHORT,
)

__all__ = ["SCAN_BATCH", "SCAN_END", "SCAN_TORN_TAIL", "SCAN_SIZE_TOO_SMALL", "SCAN_TOO_LARGE",
           "SCAN_V2_TOO_SHORT", "Step", "FileBytes", "next_batch", "borrows_header", "walk_error",
           "stops_silently"]

_OFFSET_SIZE = struct.Struct(LOG_PREFIX_STRUCT_FORMAT)
#: builds a Step without NamedTuple's keyword-checking __new__ (next_batch runs once a batch)
_new = tuple.__new__


class Step(NamedTuple):
    """One step of the walk at ``position``: ``status`` is ``SCAN_BATCH`` (a batch of
    ``size_field + 12`` bytes) or the reason the walk stops there. ``base_offset`` and
    ``size_field`` are the first 12 bytes as written (0 at ``SCAN_END``); ``magic`` is byte 16
    as a signed byte (0 unless a batch or ``SCAN_V2_TOO_SHORT``)."""

    status: int
    position: int
    base_offset: int
    size_field: int
    magic: int

    @property
    def size(self) -> int:
        """The batch's bytes on disk: the size field + 12."""
        return self.size_field + LOG_OVERHEAD


def borrows_header(size: int, magic: int) -> bool:
    """True for a v2 batch (``magic`` >= 2) of ``size`` bytes on disk shorter than its 61-byte
    header: Kafka reads its header from the bytes that follow it."""
    return magic >= 2 and size < RECORD_BATCH_OVERHEAD


#: what the walk reads a file's bytes from: a read window or a view of the file's bytes (never
#: a mapped file: a truncation by another process would kill the reader with SIGBUS)
FileBytes: TypeAlias = bytes | bytearray | memoryview


def next_batch(buf: FileBytes, rel: int, pos: int, end: int, header_end: int,
               limit: int | None = None) -> Step:
    """The walk's decision at file position ``pos`` (``buf[rel:]`` holds the file's bytes
    from ``pos``, at least 17 of them when ``end - pos > 17``).

    ``end``: where the walk ends (file size, or a slice's end). ``header_end``: the file
    position up to which a short v2 batch may borrow its header bytes (the file size; a
    window's end for a reader that reloads its window there). ``limit``: the reader's
    ``max_batch_bytes`` (None: no limit, as in Kafka)."""
    if end - pos <= HEADER_SIZE_UP_TO_MAGIC:
        return _new(Step, (SCAN_END, pos, 0, 0, 0))
    offset, size = _OFFSET_SIZE.unpack_from(buf, rel)
    if size < RECORD_OVERHEAD_V0:
        return _new(Step, (SCAN_SIZE_TOO_SMALL, pos, offset, size, 0))
    total = LOG_OVERHEAD + size
    if total > end - pos:
        return _new(Step, (SCAN_TORN_TAIL, pos, offset, size, 0))
    if limit is not None and total > limit:
        return _new(Step, (SCAN_TOO_LARGE, pos, offset, size, 0))
    magic = buf[rel + MAGIC_OFFSET]
    if magic >= 128:   # a Java byte
        magic -= 256
    if magic >= 2 and total < RECORD_BATCH_OVERHEAD and pos + RECORD_BATCH_OVERHEAD > header_end:
        return _new(Step, (SCAN_V2_TOO_SHORT, pos, offset, size, magic))
    return _new(Step, (SCAN_BATCH, pos, offset, size, magic))


def stops_silently(status: int) -> bool:
    """True where Kafka's walk just ends (no batch left, or a torn tail)."""
    return status == SCAN_END or status == SCAN_TORN_TAIL


def walk_error(step: Step, *, path: str, file_size: int, limit: int | None = None
               ) -> FormatError | None:
    """The error every walker raises where the walk stops at ``step`` (None for a silent
    stop or a batch). ``file_size``: the file's size (named in a short v2 batch's error)."""
    status = step.status
    pos = step.position
    if status == SCAN_SIZE_TOO_SMALL:
        # FileLogInputStream.nextBatch's CorruptRecordException, word for word
        return CorruptBatchError(
            f"Found record size {step.size_field} smaller than minimum record overhead "
            f"({RECORD_OVERHEAD_V0}) in file {display_path(path)}.", path=path, position=pos,
            base_offset=step.base_offset, field="batch_length", actual=step.size_field)
    if status == SCAN_TOO_LARGE:
        return BatchTooLargeError(f"batch of {step.size} bytes on disk is larger than the limit",
                                  limit=int(limit or 0), path=path, position=pos,
                                  base_offset=step.base_offset, field="batch_length")
    if status == SCAN_V2_TOO_SHORT:
        return TruncatedBatchError(
            f"Failed to load record batch at position {pos}: its {step.size} bytes are shorter "
            f"than the {RECORD_BATCH_OVERHEAD}-byte v2 header and the file ends "
            f"{file_size - pos} bytes after it starts", path=path, position=pos,
            base_offset=step.base_offset, field="batch_length", actual=step.size_field)
    return None
