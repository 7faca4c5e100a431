"""Build legacy (magic 0 / 1) message sets, for test inputs and old-broker scenarios.

Layout and offset rules: FORMATS.md section 2 (``LegacyRecord.java``,
``MemoryRecordsBuilder.java``): CRC-32 (IEEE) over the message from the magic byte on;
a compressed set is one wrapper message whose value is the compressed inner message set.
Magic 1 inner offsets are relative (0..n-1) and the wrapper carries the absolute offset of
the last inner message; magic 0 inner offsets are absolute.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from segtools.formats.legacy import (
    LEGACY_CRC_STRUCT_FORMAT,
    LEGACY_LENGTH_STRUCT_FORMAT,
    LEGACY_MAGIC_ATTRIBUTES_STRUCT_FORMAT,
    LEGACY_PREFIX_STRUCT_FORMAT,
    LEGACY_TIMESTAMP_STRUCT_FORMAT,
)
from segtools.primitives.crc import crc32

from .batch_builder import NewRecord, codec_id_of

__all__ = ["build_legacy_message_set", "build_legacy_message"]

_TIMESTAMP_TYPE_MASK = 0x08


def _nullable(data: bytes | None) -> bytes:
    if data is None:
        return b"\xff\xff\xff\xff"
    return struct.pack(LEGACY_LENGTH_STRUCT_FORMAT, len(data)) + data


def build_legacy_message(*, offset: int, magic: int, key: bytes | None, value: bytes | None,
                         timestamp: int = -1, attributes: int = 0) -> bytes:
    """One log entry: ``offset int64, size int32, crc, magic, attributes, [timestamp], key, value``."""
    if magic not in (0, 1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    body = struct.pack(LEGACY_MAGIC_ATTRIBUTES_STRUCT_FORMAT, magic, attributes)
    if magic == 1:
        body += struct.pack(LEGACY_TIMESTAMP_STRUCT_FORMAT, timestamp)
    body += _nullable(key) + _nullable(value)
    message = struct.pack(LEGACY_CRC_STRUCT_FORMAT, crc32(body)) + body
    return struct.pack(LEGACY_PREFIX_STRUCT_FORMAT, offset, len(message)) + message


def build_legacy_message_set(
    records: Sequence[NewRecord],
    *,
    magic: int,
    base_offset: int,
    compression: str | int = "none",
    timestamp_type: str = "CreateTime",
    log_append_time: int | None = None,
) -> bytes:
    """Messages at ``base_offset, base_offset + 1, ...`` as a magic 0 or 1 message set.

    Uncompressed: one entry per record. Compressed: one wrapper entry at the last offset whose
    value is :func:`segtools.primitives.codecs.compress` of the inner set (zstd is not allowed below
    magic 2). Magic 0 has no timestamps; for magic 1 a record without timestamp gets -1.
    LogAppendTime (magic 1 only) stamps ``log_append_time`` as the broker does: on every
    message of an uncompressed set, on the wrapper of a compressed one.
    """
    if magic not in (0, 1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    codec = codec_id_of(compression)
    if codec == 4:
        raise ValueError("zstd is not allowed for magic 0/1 message sets")
    if timestamp_type not in ("CreateTime", "LogAppendTime"):
        raise ValueError(f"unsupported timestamp type {timestamp_type!r}")
    log_append = magic == 1 and timestamp_type == "LogAppendTime"
    if log_append and log_append_time is None:
        raise ValueError("LogAppendTime needs log_append_time")
    records = list(records)
    if codec != 0 and not records:
        raise ValueError("a compressed message set needs at least one record")
    ts_attr = _TIMESTAMP_TYPE_MASK if log_append else 0
    append_time = -1 if log_append_time is None else log_append_time   # set whenever log_append

    def timestamp_of(record: NewRecord) -> int:
        if magic == 0:
            return -1
        return record.timestamp if record.timestamp is not None else -1

    if codec == 0:
        out = bytearray()
        for i, record in enumerate(records):
            ts = append_time if log_append else timestamp_of(record)
            out += build_legacy_message(offset=base_offset + i, magic=magic, key=record.key,
                                        value=record.value, timestamp=ts, attributes=ts_attr)
        return bytes(out)

    inner = bytearray()
    for i, record in enumerate(records):
        inner_offset = i if magic == 1 else base_offset + i
        inner += build_legacy_message(offset=inner_offset, magic=magic, key=record.key,
                                      value=record.value, timestamp=timestamp_of(record),
                                      attributes=ts_attr)
    from segtools.primitives.codecs import compress  # imported late: only compressed sets need it

    payload = compress(codec, bytes(inner), magic=magic)
    if magic == 1:
        wrapper_ts = append_time if log_append else max(timestamp_of(r) for r in records)
    else:
        wrapper_ts = -1
    return build_legacy_message(offset=base_offset + len(records) - 1, magic=magic, key=None,
                                value=payload, timestamp=wrapper_ts, attributes=codec | ts_attr)
