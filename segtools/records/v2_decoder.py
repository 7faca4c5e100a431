"""The Python face of the one record reader: batch walk and v2 record decoder.

:func:`iter_v2_records` is the v2 record decoder of every Python entry point: the object
reader (``segtools.records.batches``, which builds ``Record`` objects from it) and the columnar
``engine="python"`` (rows). Its compiled twin is :mod:`segtools.records.jit_kernel` (``engine="numba"``);
both report faults with the codes of :mod:`segtools.records.faults`, so every entry point
raises the same error. :func:`scan_headers` is the Python twin of the kernel's batch walk.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from segtools.errors import BatchTooLargeError, CorruptBatchError
from segtools.formats.record_batch import (
    HEADER_STRUCT_FORMAT,
    LOG_OVERHEAD,
    LOG_PREFIX_STRUCT_FORMAT,
    MAGIC_STRUCT_FORMAT,
    RECORD_BATCH_OVERHEAD,
    RECORDS_COUNT_OFFSET,
)
from segtools.primitives.java_numbers import java_long
from segtools.primitives.varint import VarintError, VarintTruncatedError, read_varint, read_varlong
from segtools.records.batch_walk import FileBytes, next_batch
from segtools.records.faults import (
    ERR_EOF,
    ERR_HEADER_COUNT,
    ERR_HEADER_KEY,
    ERR_LENGTH_PAST_END,
    ERR_RECORD_NEGATIVE,
    ERR_RECORD_PAST_END,
    ERR_RECORD_SIZE,
    ERR_REMAINING,
    ERR_VARINT,
    F_ATTRIBUTES,
    F_HEADER_KEY_LENGTH,
    F_HEADER_VALUE_LENGTH,
    F_HEADERS_COUNT,
    F_KEY_LENGTH,
    F_LENGTH,
    F_OFFSET_DELTA,
    F_RECORDS_COUNT,
    F_TIMESTAMP_DELTA,
    F_VALUE_LENGTH,
    MIN_RECORD_SIZE,
    SCAN_BATCH,
    SCAN_MORE,
    RecordFault,
)
from segtools.records.record import NO_SEQUENCE, increment_sequence

# baseOffset, length, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
_V2_HEADER = struct.Struct(HEADER_STRUCT_FORMAT)
_OFFSET_SIZE = struct.Struct(LOG_PREFIX_STRUCT_FORMAT)
T = TypeVar("T")
_MAGIC = struct.Struct(MAGIC_STRUCT_FORMAT)

BATCH_FIELDS = ("position", "base_offset", "batch_length", "partition_leader_epoch", "magic",
                "crc", "attributes", "last_offset_delta", "base_timestamp", "max_timestamp",
                "producer_id", "producer_epoch", "base_sequence", "records_count")


def scan_headers(buf: FileBytes, pos: int, end: int, max_batches: int, stop_pos: int,
                 limit: int | None = None) -> tuple[dict[str, list[int]], int, int]:
    """Walk batches from ``pos`` with :func:`segtools.records.batch_walk.next_batch` (the window's
    end is also where a short v2 batch's borrowed header must end); returns (columns,
    next_pos, status).

    Same contract as :func:`segtools.records.jit_kernel.scan_headers`; legacy entries get only position,
    offset, length and magic (the other columns hold 0).
    """
    cols: dict[str, list[int]] = {name: [] for name in BATCH_FIELDS}
    n = 0
    while True:
        if n >= max_batches or (n > 0 and pos >= stop_pos):
            return cols, pos, SCAN_MORE
        status, _, offset, size, magic = next_batch(buf, pos, pos, end, end, limit)
        if status != SCAN_BATCH:
            return cols, pos, status
        if magic >= 2:
            values = _V2_HEADER.unpack_from(buf, pos)
            row = (pos, offset, size) + values[2:]
        else:
            row = (pos, offset, size, 0, magic, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        for name, value in zip(BATCH_FIELDS, row):
            cols[name].append(value)
        n += 1
        pos += 12 + size


_INT64_MIN = -2**63
_INT64_MAX = 2**63 - 1
#: base offsets to which any int offsetDelta can be added without leaving the int64 range
_NO_INT_OVERFLOW_LOW = _INT64_MIN + 2**31
_NO_INT_OVERFLOW_HIGH = _INT64_MAX - 2**31


def iter_v2_records(buf: bytes, start: int, count: int, base_offset: int,
                    base_timestamp: int, log_append_time: int | None, base_sequence: int,
                    is_control: bool, make: Callable[..., T]) -> Iterator[T]:
    """THE v2 record decoder (FORMATS.md 1.6): ``count`` records from ``buf[start:]``.

    Calls ``make(offset, timestamp, key, value, headers, sequence, attributes,
    timestamp_delta, offset_delta, length, is_control)`` per record (``headers`` a list, empty
    when none) and yields what it returns: the object reader passes ``Record``, the columnar
    python engine a tuple builder. ``log_append_time`` is the batch's maxTimestamp when its
    timestamp type is LogAppendTime, else None. Raises :class:`RecordFault` (turned into the
    located error by :func:`segtools.records.faults.record_error`); the numba twin
    :func:`segtools.records.jit_kernel.decode_records` applies the same rules with the same codes.

    Reads of a record's fields are bounded by the end of ``buf`` (the batch: Kafka reads an
    uncompressed batch's records from one ByteBuffer), the lengths inside a record by the
    record's end.
    """
    end = len(buf)
    wrap_offsets = not _NO_INT_OVERFLOW_LOW <= base_offset <= _NO_INT_OVERFLOW_HIGH
    pos = start
    for i in range(count):
        rec_start = pos
        field = F_LENGTH
        try:
            b = buf[pos]
            if b < 0x80:  # one-byte varints inlined: the common case for every field
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                length, pos = read_varint(buf, pos)
            if length < 0:
                raise RecordFault(ERR_RECORD_NEGATIVE, F_LENGTH, i, 0, rec_start - start, 0,
                                  length)
            body_start = pos
            body_end = pos + length
            if body_end > end:
                raise RecordFault(ERR_RECORD_PAST_END, F_LENGTH, i, 0, rec_start - start,
                                  length, end - body_start)
            field = F_ATTRIBUTES
            attributes = buf[pos]
            if attributes > 127:
                attributes -= 256
            pos += 1
            field = F_TIMESTAMP_DELTA
            b = buf[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                ts_delta, pos = read_varlong(buf, pos)
            field = F_OFFSET_DELTA
            b = buf[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = read_varint(buf, pos)
            field = F_KEY_LENGTH
            b = buf[pos]
            if b < 0x80:
                klen = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                klen, pos = read_varint(buf, pos)
            if klen >= 0:  # DefaultRecord.readFrom: any negative length is null, not only -1
                if klen > body_end - pos:
                    raise RecordFault(ERR_LENGTH_PAST_END, F_KEY_LENGTH, i, 0, rec_start - start,
                                      klen, body_end - pos)
                key: bytes | None = buf[pos:pos + klen]
                pos += klen
            else:
                key = None
            field = F_VALUE_LENGTH
            b = buf[pos]
            if b < 0x80:
                vlen = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                vlen, pos = read_varint(buf, pos)
            if vlen >= 0:
                if vlen > body_end - pos:
                    raise RecordFault(ERR_LENGTH_PAST_END, F_VALUE_LENGTH, i, 0,
                                      rec_start - start, vlen, body_end - pos)
                value: bytes | None = buf[pos:pos + vlen]
                pos += vlen
            else:
                value = None
            field = F_HEADERS_COUNT
            b = buf[pos]
            if b < 0x80:
                hcount = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                hcount, pos = read_varint(buf, pos)
            headers: list[tuple[str, bytes | None]] = []
            if hcount:
                if hcount < 0:
                    raise RecordFault(ERR_HEADER_COUNT, F_HEADERS_COUNT, i, 0, rec_start - start,
                                      -1, hcount)
                if hcount > body_end - pos:
                    raise RecordFault(ERR_HEADER_COUNT, F_HEADERS_COUNT, i, 0, rec_start - start,
                                      body_end - pos, hcount)
                for h in range(hcount):
                    field = F_HEADER_KEY_LENGTH
                    hklen, pos = read_varint(buf, pos)
                    if hklen < 0:
                        raise RecordFault(ERR_HEADER_KEY, field, i, h, rec_start - start, 0, hklen)
                    if hklen > body_end - pos:
                        raise RecordFault(ERR_LENGTH_PAST_END, field, i, h, rec_start - start,
                                          hklen, body_end - pos)
                    hkey = bytes(buf[pos:pos + hklen]).decode("utf-8", "replace")
                    pos += hklen
                    field = F_HEADER_VALUE_LENGTH
                    hvlen, pos = read_varint(buf, pos)
                    if hvlen >= 0:
                        if hvlen > body_end - pos:
                            raise RecordFault(ERR_LENGTH_PAST_END, field, i, h,
                                              rec_start - start, hvlen, body_end - pos)
                        hval: bytes | None = buf[pos:pos + hvlen]
                        pos += hvlen
                    else:
                        hval = None
                    headers.append((hkey, hval))
            if pos != body_end:
                raise RecordFault(ERR_RECORD_SIZE, F_LENGTH, i, 0, rec_start - start, length,
                                  pos - body_start)
        except (IndexError, VarintTruncatedError):  # the bytes end inside the record
            raise RecordFault(ERR_EOF, field, i, _header_index(field, locals()),
                              rec_start - start) from None
        except VarintError:
            raise RecordFault(ERR_VARINT, field, i, _header_index(field, locals()),
                              rec_start - start, 10 if field == F_TIMESTAMP_DELTA else 5) from None
        if log_append_time is not None:
            timestamp = log_append_time
        else:
            timestamp = base_timestamp + ts_delta
            if not _INT64_MIN <= timestamp <= _INT64_MAX:
                timestamp = java_long(timestamp)
        if base_sequence >= 0:
            sequence = increment_sequence(base_sequence, offset_delta)
        else:
            sequence = NO_SEQUENCE
        offset = base_offset + offset_delta
        if wrap_offsets:
            offset = java_long(offset)
        yield make(offset, timestamp, key, value, headers, sequence, attributes, ts_delta,
                   offset_delta, length, is_control)
    if count > 0 and pos != end:
        raise RecordFault(ERR_REMAINING, F_RECORDS_COUNT, count - 1, 0, rec_start - start,
                          0, end - pos)


def check_v2_batch(*, path: str | None, position: int, base_offset: int, size: int,
                   count: int, codec: int, limit: int) -> None:
    """The batch-level checks before a v2 batch's records are decoded, shared by every entry
    point. ``size`` is the batch's size on disk (length + 12).

    Any magic >= 2 is read as v2, as Kafka does (``FileLogInputStream.nextBatch`` makes a
    ``DefaultFileChannelRecordBatch`` and its iterator never looks at the magic). A batch
    shorter than the 61-byte header has no records Kafka can read (``DefaultRecordBatch.count``
    indexes past its buffer); recordsCount < 0 is "Found invalid record count"; a compressed
    batch whose count cannot fit the decompression limit at 7 bytes a record is refused."""
    if size < RECORD_BATCH_OVERHEAD:
        raise CorruptBatchError(
            f"v2 batch of {size} bytes is shorter than its {RECORD_BATCH_OVERHEAD}-byte header: "
            "its records cannot be read", path=path or None, position=position,
            base_offset=base_offset, field="batch_length", actual=size - LOG_OVERHEAD)
    if count < 0:
        raise CorruptBatchError(f"Found invalid record count {count} in magic v2 batch",
                                path=path or None, position=position + RECORDS_COUNT_OFFSET,
                                base_offset=base_offset, field="records_count", actual=count)
    if codec != 0 and count > limit // MIN_RECORD_SIZE:
        # a record takes at least 7 bytes: refused before anything is decompressed
        raise BatchTooLargeError(
            f"records_count {count} needs at least {count * MIN_RECORD_SIZE} bytes of "
            f"records, more than the limit", limit=limit, path=path or None,
            position=position + RECORDS_COUNT_OFFSET, base_offset=base_offset,
            field="records_count")


def _header_index(field: int, scope: dict[str, Any]) -> int:
    return scope.get("h", 0) if field in (F_HEADER_KEY_LENGTH, F_HEADER_VALUE_LENGTH) else 0


def _row(offset: int, timestamp: int, key: Any, value: Any, headers: list[Any], sequence: int,
         *_rest: Any) -> Row:
    return (offset, timestamp, sequence, None if key is None else bytes(key),
            None if value is None else bytes(value), headers or None)


Row = tuple[int, int, int, "bytes | None", "bytes | None", "list[tuple[str, bytes | None]] | None"]


def decode_batch_records(data: bytes, base_offset: int, base_timestamp: int,
                         max_timestamp: int, log_append_time: bool, base_sequence: int,
                         count: int) -> list[Row]:
    """Records of one v2 batch (``data`` = exactly its record bytes) as columnar rows
    (offset, timestamp_ms, sequence, key, value, headers or None), through
    :func:`iter_v2_records`."""
    return list(iter_v2_records(data, 0, count, base_offset, base_timestamp,
                                max_timestamp if log_append_time else None, base_sequence,
                                False, _row))
