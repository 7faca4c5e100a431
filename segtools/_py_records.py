"""Pure-Python engine of the columnar reader (``engine="python"``).

Written independently of the numba kernel in :mod:`segtools._kernel` (``struct`` and byte
indexing instead of compiled loops) but returning the same columns, so the tests can hold the
two against each other and the package still works where numba is not installed.
"""

from __future__ import annotations

import struct
from typing import Any

from segtools._columnar_codes import (
    ERR_EOF,
    ERR_HEADER_COUNT,
    ERR_HEADER_KEY,
    ERR_RECORD_COUNT,
    ERR_RECORD_LENGTH,
    ERR_RECORD_SIZE,
    ERR_REMAINING,
    ERR_VARINT,
    SCAN_END,
    SCAN_MORE,
    SCAN_SIZE_TOO_SMALL,
    SCAN_TORN_TAIL,
    SCAN_V2_TOO_SHORT,
)
from segtools._reader_record import increment_sequence, java_long

# baseOffset, length, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
_V2_HEADER = struct.Struct(">qiibIhiqqqhii")
_OFFSET_SIZE = struct.Struct(">qi")

BATCH_FIELDS = ("position", "base_offset", "batch_length", "partition_leader_epoch", "magic",
                "crc", "attributes", "last_offset_delta", "base_timestamp", "max_timestamp",
                "producer_id", "producer_epoch", "base_sequence", "records_count")


def scan_headers(buf: Any, pos: int, end: int, max_batches: int,
                 stop_pos: int) -> tuple[dict[str, list[int]], int, int]:
    """Walk batches from ``pos`` like FileLogInputStream; returns (columns, next_pos, status).

    Same contract as :func:`segtools._kernel.scan_headers`; legacy entries get only position,
    offset, length and magic (the other columns hold 0).
    """
    cols: dict[str, list[int]] = {name: [] for name in BATCH_FIELDS}
    n = 0
    while True:
        if n >= max_batches or (n > 0 and pos >= stop_pos):
            return cols, pos, SCAN_MORE
        if pos >= end - 17:
            return cols, pos, SCAN_END
        offset, size = _OFFSET_SIZE.unpack_from(buf, pos)
        if size < 14:
            return cols, pos, SCAN_SIZE_TOO_SMALL
        if pos + 12 + size > end:
            return cols, pos, SCAN_TORN_TAIL
        magic = struct.unpack_from(">b", buf, pos + 16)[0]
        if magic >= 2:
            if size < 49:
                return cols, pos, SCAN_V2_TOO_SHORT
            values = _V2_HEADER.unpack_from(buf, pos)
            row = (pos, offset, size) + values[2:]
        else:
            row = (pos, offset, size, 0, magic, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        for name, value in zip(BATCH_FIELDS, row):
            cols[name].append(value)
        n += 1
        pos += 12 + size


class RecordFault(Exception):
    """Internal: where decoding of one batch's records failed (turned into a FormatError)."""

    def __init__(self, code: int, record_index: int, byte_offset: int) -> None:
        super().__init__(code, record_index, byte_offset)
        self.code = code
        self.record_index = record_index
        self.byte_offset = byte_offset


class _Overlong(Exception):
    pass


class _Eof(Exception):
    pass


def _read_varint(data: bytes, p: int, end: int, max_bytes: int) -> tuple[int, int]:
    """Unsigned base-128 value of at most ``max_bytes`` bytes starting at ``p``."""
    raw = 0
    shift = 0
    for _ in range(max_bytes):
        if p >= end:
            raise _Eof
        b = data[p]
        p += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            return raw, p
        shift += 7
    raise _Overlong


def _zigzag32(raw: int) -> int:
    raw &= 0xFFFFFFFF                   # bits past 32 are lost, as in Java's int
    value = (raw >> 1) ^ -(raw & 1)
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _zigzag64(raw: int) -> int:
    raw &= 0xFFFFFFFFFFFFFFFF
    value = ((raw >> 1) ^ -(raw & 1)) & 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >= 1 << 63 else value


Row = tuple[int, int, int, "bytes | None", "bytes | None", "list[tuple[str, bytes | None]] | None"]


def decode_batch_records(data: bytes, base_offset: int, base_timestamp: int, max_timestamp: int,
                         log_append_time: bool, base_sequence: int, count: int) -> list[Row]:
    """Records of one v2 batch: rows (offset, timestamp_ms, sequence, key, value, headers).

    ``data`` holds exactly the (decompressed) record bytes. ``headers`` is None when a record
    has none. Raises :class:`RecordFault` with the same codes as the numba kernel.
    """
    if count < 0:
        raise RecordFault(ERR_RECORD_COUNT, 0, 0)
    rows: list[Row] = []
    end = len(data)
    p = 0
    for index in range(count):
        rec_pos = p
        try:
            try:
                raw, q = _read_varint(data, p, end, 5)
            except _Eof:
                raise RecordFault(ERR_EOF, index, rec_pos) from None
            length = _zigzag32(raw)
            if length < 0 or q + length > end:
                raise RecordFault(ERR_RECORD_LENGTH, index, rec_pos)
            rec_end = q + length
            p = q + 1                    # attributes byte: unused
            if p > rec_end:
                raise _Eof
            raw, p = _read_varint(data, p, rec_end, 10)
            ts_delta = _zigzag64(raw)
            raw, p = _read_varint(data, p, rec_end, 5)
            offset_delta = _zigzag32(raw)
            key, p = _read_bytes(data, p, rec_end)
            value, p = _read_bytes(data, p, rec_end)
            raw, p = _read_varint(data, p, rec_end, 5)
            header_count = _zigzag32(raw)
            if header_count < 0 or header_count > rec_end - p:
                raise RecordFault(ERR_HEADER_COUNT, index, rec_pos)
            headers: list[tuple[str, bytes | None]] | None = None
            if header_count:
                headers = []
                for _ in range(header_count):
                    raw, p = _read_varint(data, p, rec_end, 5)
                    key_len = _zigzag32(raw)
                    if key_len < 0:
                        raise RecordFault(ERR_HEADER_KEY, index, rec_pos)
                    if p + key_len > rec_end:
                        raise _Eof
                    header_key = data[p:p + key_len].decode("utf-8", "replace")
                    p += key_len
                    header_value, p = _read_bytes(data, p, rec_end)
                    headers.append((header_key, header_value))
            if p != rec_end:
                raise RecordFault(ERR_RECORD_SIZE, index, rec_pos)
        except _Eof:
            raise RecordFault(ERR_EOF, index, rec_pos) from None
        except _Overlong:
            raise RecordFault(ERR_VARINT, index, rec_pos) from None
        timestamp = max_timestamp if log_append_time else java_long(base_timestamp + ts_delta)
        sequence = -1 if base_sequence < 0 else increment_sequence(base_sequence, offset_delta)
        rows.append((java_long(base_offset + offset_delta), timestamp, sequence, key, value, headers))
        p = rec_end
    if p != end:
        raise RecordFault(ERR_REMAINING, count, p)
    return rows


def _read_bytes(data: bytes, p: int, end: int) -> tuple[bytes | None, int]:
    raw, p = _read_varint(data, p, end, 5)
    size = _zigzag32(raw)
    if size < 0:  # DefaultRecord.readFrom: any negative length is null, not only -1
        return None, p
    if p + size > end:
        raise _Eof
    return bytes(data[p:p + size]), p + size
