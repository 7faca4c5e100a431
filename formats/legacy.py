"""Legacy message format v0/v1 ("message sets"), Kafka < 0.11.

Spec (FORMATS.md section 2; ``LegacyRecord.java``, ``AbstractLegacyRecordBatch.java``)::

    LogEntry =>
      offset int64
      message_size int32          bytes of the message that follows (entry = 12 + size)
      message =>
        crc uint32                CRC-32 (IEEE) of message[4:], from magic to the end
        magic int8                0 or 1
        attributes int8           bits 0-2 codec (zstd not allowed), bit 3 timestamp type (v1)
        timestamp int64           when magic != 0 (LegacyRecord: only v0 lacks it)
        key_length int32, key     -1 = null
        value_length int32, value -1 = null

A compressed ("wrapper") message has a null key and the compressed inner message set as value.
The CRC is a plain field: verification (and reporting a mismatch) belongs to the reader.
"""

from __future__ import annotations

from construct import FixedSized, If, Int8sb, Int32sb, Int32ub, Int64sb, Rebuild, Struct, Terminated, this

from segtools.formats.primitives import NullableBytes

__all__ = [
    "LegacyMessage", "LegacyLogEntry", "LEGACY_COMPRESSION_CODEC_MASK",
    "LEGACY_TIMESTAMP_TYPE_MASK", "MESSAGE_HEADER_SIZE_V0", "MESSAGE_HEADER_SIZE_V1",
    "RECORD_OVERHEAD_V0", "RECORD_OVERHEAD_V1", "LEGACY_CRC_OFFSET", "LEGACY_MAGIC_OFFSET",
    "LEGACY_PREFIX_STRUCT_FORMAT", "LEGACY_CRC_MAGIC_ATTRIBUTES_STRUCT_FORMAT",
    "LEGACY_ENTRY_HEAD_STRUCT_FORMAT", "LEGACY_MAGIC_ATTRIBUTES_STRUCT_FORMAT",
    "LEGACY_CRC_STRUCT_FORMAT", "LEGACY_TIMESTAMP_STRUCT_FORMAT", "LEGACY_LENGTH_STRUCT_FORMAT",
]

LEGACY_COMPRESSION_CODEC_MASK = 0x07
LEGACY_TIMESTAMP_TYPE_MASK = 0x08
#: crc + magic + attributes (+ timestamp for v1)
MESSAGE_HEADER_SIZE_V0 = 6
MESSAGE_HEADER_SIZE_V1 = 14
#: header + the two int32 length fields (LegacyRecord.RECORD_OVERHEAD_V0/V1)
RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22
#: positions inside a message (after the 12-byte offset/size prefix)
LEGACY_CRC_OFFSET = 0
LEGACY_MAGIC_OFFSET = 4

# ``struct`` formats of the same layout for the hot path (the construct declarations below are
# the spec and are tested against them in tests/formats)
#: the 12-byte log entry prefix: offset int64, message size int32
LEGACY_PREFIX_STRUCT_FORMAT = ">qi"
#: crc uint32, magic int8, attributes int8 (the first 6 bytes of a message)
LEGACY_CRC_MAGIC_ATTRIBUTES_STRUCT_FORMAT = ">Ibb"
#: the prefix and the first 6 message bytes at once
LEGACY_ENTRY_HEAD_STRUCT_FORMAT = ">qiIbb"
#: magic int8, attributes int8 (what the CRC covers starts here)
LEGACY_MAGIC_ATTRIBUTES_STRUCT_FORMAT = ">bb"
#: the crc field
LEGACY_CRC_STRUCT_FORMAT = ">I"
#: the v1 timestamp
LEGACY_TIMESTAMP_STRUCT_FORMAT = ">q"
#: key and value length fields
LEGACY_LENGTH_STRUCT_FORMAT = ">i"

#: one v0/v1 message (the bytes counted by ``message_size``); must be used exactly
LegacyMessage = Struct(
    "crc" / Int32ub,
    "magic" / Int8sb,
    "attributes" / Int8sb,
    "timestamp" / If(this.magic != 0, Int64sb),   # LegacyRecord: only magic 0 lacks it
    "key" / NullableBytes(Int32sb),
    "value" / NullableBytes(Int32sb),
    Terminated,
)

#: a whole log entry: offset, size, message
LegacyLogEntry = Struct(
    "offset" / Int64sb,
    "message_size" / Rebuild(Int32sb, lambda ctx: len(LegacyMessage.build(ctx.message))),
    "message" / FixedSized(this.message_size, LegacyMessage),
)
