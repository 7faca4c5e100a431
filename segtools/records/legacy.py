"""Legacy message format v0/v1 ("message sets", FORMATS.md section 2).

One log entry: ``offset int64, size int32`` then the message ``crc uint32, magic int8,
attributes int8, [timestamp int64 if magic 1], key_length int32, key, value_length int32,
value``; CRC-32 (IEEE) over the message from the magic byte to its end.

A compressed entry is a wrapper whose value is the compressed bytes of an inner message set.
Deep iteration follows ``AbstractLegacyRecordBatch.DeepRecordsIterator``: inner entries are
read like ``DataLogInputStream`` (a torn inner entry ends the set silently, size < 14 or
above ``max_message_size`` is corrupt); magic 1 wrappers use relative inner offsets
(``abs = wrapper_offset - last_inner + inner``, a wrapper offset of 0 keeps them as-is);
magic 1 inner messages take the wrapper's timestamp type, and its timestamp for
LogAppendTime; an empty inner set and compressed inner messages are corrupt.
"""

from __future__ import annotations

import struct

from segtools.errors import CompressionError, CorruptBatchError, FormatError, UnsupportedMagicError
from segtools.formats.legacy import (
    LEGACY_COMPRESSION_CODEC_MASK,
    LEGACY_CRC_MAGIC_ATTRIBUTES_STRUCT_FORMAT,
    LEGACY_LENGTH_STRUCT_FORMAT,
    LEGACY_PREFIX_STRUCT_FORMAT,
    LEGACY_TIMESTAMP_STRUCT_FORMAT,
    LEGACY_TIMESTAMP_TYPE_MASK,
    RECORD_OVERHEAD_V0,
    RECORD_OVERHEAD_V1,
)
from segtools.formats.record_batch import LOG_OVERHEAD
from segtools.primitives import codecs
from segtools.primitives.crc import crc32
from segtools.primitives.java_numbers import java_long
from segtools.records.record import Record

__all__ = [
    "LegacyMessage",
    "parse_legacy_entry",
    "parse_legacy_header",
    "read_inner_messages",
    "RECORD_OVERHEAD_V0",
    "RECORD_OVERHEAD_V1",
    "LOG_OVERHEAD",
]

# layout constants from formats/ (the source); re-exported under their old names
TIMESTAMP_TYPE_MASK = LEGACY_TIMESTAMP_TYPE_MASK
COMPRESSION_MASK = LEGACY_COMPRESSION_CODEC_MASK

_OFFSET_SIZE = struct.Struct(LEGACY_PREFIX_STRUCT_FORMAT)
_CRC_MAGIC_ATTRS = struct.Struct(LEGACY_CRC_MAGIC_ATTRIBUTES_STRUCT_FORMAT)
_INT64 = struct.Struct(LEGACY_TIMESTAMP_STRUCT_FORMAT)
_INT32 = struct.Struct(LEGACY_LENGTH_STRUCT_FORMAT)


class LegacyMessage:
    """The fields of one legacy log entry (outer or inner)."""

    __slots__ = ("offset", "size", "crc", "computed_crc", "crc_valid", "magic", "attributes",
                 "timestamp", "key", "value")

    def __init__(self, offset: int, size: int, crc: int, computed_crc: int, crc_valid: bool,
                 magic: int, attributes: int, timestamp: int, key: bytes | None,
                 value: bytes | None) -> None:
        self.offset = offset
        self.size = size
        self.crc = crc
        self.computed_crc = computed_crc
        self.crc_valid = crc_valid
        self.magic = magic
        self.attributes = attributes
        self.timestamp = timestamp
        self.key = key
        self.value = value

    @property
    def compression_id(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> str:
        """``LegacyRecord.timestampType()``: magic 0 has none; else attribute bit 3."""
        if self.magic == 0:
            return "NoTimestampType"
        return "LogAppendTime" if self.attributes & TIMESTAMP_TYPE_MASK else "CreateTime"


def parse_legacy_header(buf: bytes, pos: int) -> LegacyMessage:
    """Only the fixed fields of the entry at ``buf[pos:]`` (key and value left None).

    What a shallow listing needs; used when the key/value lengths are corrupt so the walk can
    go on (Kafka's shallow iteration does not look at them either).
    """
    offset, size = _OFFSET_SIZE.unpack_from(buf, pos)
    crc, magic, attributes = _CRC_MAGIC_ATTRS.unpack_from(buf, pos + 12)
    computed = crc32(memoryview(buf)[pos + 16:pos + LOG_OVERHEAD + size])
    timestamp = -1
    if magic != 0 and size >= RECORD_OVERHEAD_V1:
        (timestamp,) = _INT64.unpack_from(buf, pos + 18)
    return LegacyMessage(offset, size, crc, computed, crc == computed, magic, attributes,
                         timestamp, None, None)


def parse_legacy_entry(buf: bytes, pos: int) -> LegacyMessage:
    """Parse the legacy entry at ``buf[pos:]``.

    The caller has checked that the 12-byte entry header is present, ``size >= 14`` and the
    entry lies within ``buf``. Raises ``CorruptBatchError`` (field set, no position: the caller
    adds its own location) when the key/value lengths run past the message.
    """
    offset, size = _OFFSET_SIZE.unpack_from(buf, pos)
    crc, magic, attributes = _CRC_MAGIC_ATTRS.unpack_from(buf, pos + 12)
    msg_end = pos + LOG_OVERHEAD + size
    computed = crc32(memoryview(buf)[pos + 16:msg_end])
    p = pos + 18
    if magic != 0:  # LegacyRecord treats every magic other than 0 with the v1 layout
        if size < RECORD_OVERHEAD_V1:
            raise CorruptBatchError(f"message size {size} is smaller than the magic "
                                    f"{magic} overhead ({RECORD_OVERHEAD_V1})",
                                    field="size", actual=size)
        (timestamp,) = _INT64.unpack_from(buf, p)
        p += 8
    else:
        timestamp = -1
    (key_len,) = _INT32.unpack_from(buf, p)
    p += 4
    key = None
    if key_len >= 0:
        if key_len > msg_end - p - 4:
            raise CorruptBatchError(f"key length {key_len} runs past the end of the message "
                                    f"({msg_end - p - 4} bytes left before the value length)",
                                    field="key_length", actual=key_len)
        key = buf[p:p + key_len]
        p += key_len
    (value_len,) = _INT32.unpack_from(buf, p)
    p += 4
    value = None
    if value_len >= 0:
        if value_len > msg_end - p:
            raise CorruptBatchError(f"value length {value_len} runs past the end of the message "
                                    f"({msg_end - p} bytes left)", field="value_length",
                                    actual=value_len)
        value = buf[p:p + value_len]
    return LegacyMessage(offset, size, crc, computed, size >= RECORD_OVERHEAD_V0 and
                         crc == computed, magic, attributes, timestamp, key, value)


def read_inner_messages(wrapper: LegacyMessage, *, max_decompressed_size: int,
                        max_message_size: int) -> list[tuple[int, LegacyMessage]]:
    """Decompress a wrapper and return its inner messages with absolute offsets.

    Errors are ``FormatError``s without a file position (the caller locates them).
    """
    magic = wrapper.magic
    if magic not in (0, 1):
        raise UnsupportedMagicError(
            f"Invalid wrapper magic found in legacy deep record iterator {magic}",
            field="magic", actual=magic)
    codec = wrapper.compression_id
    if codec == codecs.ZSTD:
        raise CompressionError(
            f"Invalid wrapper compressionType found in legacy deep record iterator {magic}",
            field="attributes", actual=codec)
    if wrapper.value is None:
        raise CorruptBatchError(
            f"Found invalid compressed record set with null value (magic = {magic})",
            field="value_length")
    data = codecs.decompress(codec, wrapper.value, magic=magic, max_size=max_decompressed_size)

    inner: list[LegacyMessage] = []
    pos = 0
    n = len(data)
    while n - pos >= LOG_OVERHEAD:
        (size,) = _INT32.unpack_from(data, pos + 8)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptBatchError(
                f"Record size {size} is less than the minimum record overhead "
                f"({RECORD_OVERHEAD_V0}) in inner message {len(inner)}",
                field=f"inner[{len(inner)}].size", actual=size)
        if size > max_message_size:
            raise CorruptBatchError(
                f"Record size {size} exceeds the largest allowable message size "
                f"({max_message_size}) in inner message {len(inner)}",
                field=f"inner[{len(inner)}].size", actual=size)
        if size > n - pos - LOG_OVERHEAD:
            break  # a torn inner entry ends the set silently, as DataLogInputStream does
        try:
            inner.append(parse_legacy_entry(data, pos))
        except FormatError as exc:
            exc.field = f"inner[{len(inner)}].{exc.field}"
            exc.located()   # re-renders the message in place
            raise
        pos += LOG_OVERHEAD + size
    if not inner:
        raise CorruptBatchError("Found invalid compressed record set with no inner records",
                                field="value")

    if magic == 1:
        if wrapper.offset == 0:  # librdkafka quirk: inner offsets are already absolute
            base = 0
        else:
            last_inner = inner[-1].offset
            if wrapper.offset < last_inner:
                raise CorruptBatchError(
                    f"Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                    f"'{wrapper.offset}' is less than the last inner message offset "
                    f"'{last_inner}' and it is not zero.", field="offset")
            base = java_long(wrapper.offset - last_inner)
        # Java long arithmetic, as AbstractLegacyRecordBatch computes absolute offsets
        return [(java_long(base + m.offset), m) for m in inner]
    return [(m.offset, m) for m in inner]


def inner_record(message: LegacyMessage, offset: int, base_offset: int,
                 wrapper: LegacyMessage | None) -> Record:
    """A ``Record`` for a legacy message; ``wrapper`` is set for inner messages."""
    timestamp = message.timestamp
    timestamp_type = message.timestamp_type
    if wrapper is not None and message.magic == 1:
        timestamp_type = wrapper.timestamp_type
        if timestamp_type == "LogAppendTime":
            timestamp = wrapper.timestamp
    return Record(offset, timestamp, message.key, message.value, [], -1, message.attributes,
                  0, offset - base_offset, message.size, False, message.magic, message.crc,
                  message.crc_valid, codecs.COMPRESSION_NAMES.get(message.compression_id,
                                                                  "unknown"),
                  timestamp_type)
