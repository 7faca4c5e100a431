"""Record batch, magic v2 (Kafka >= 0.11): header, attributes, records, record headers.

Spec (FORMATS.md sections 1.1-1.6; ``DefaultRecordBatch.java``, ``DefaultRecord.java``,
``RecordBatch.java``, ``Records.java``)::

    RecordBatch =>                       (61-byte header = RECORD_BATCH_OVERHEAD)
      base_offset int64                  byte 0
      batch_length int32                 byte 8   bytes after this field (size = length + 12)
      partition_leader_epoch int32       byte 12  not covered by the CRC
      magic int8                         byte 16  = 2
      crc uint32                         byte 17  CRC-32C of bytes [21, end of batch)
      attributes int16                   byte 21  see the *_MASK constants
      last_offset_delta int32            byte 23
      base_timestamp int64               byte 27  (delete horizon when bit 6 is set)
      max_timestamp int64                byte 35
      producer_id int64                  byte 43
      producer_epoch int16               byte 51
      base_sequence int32                byte 53
      records_count int32                byte 57
      records                            byte 61  raw or one compressed stream

    Record =>
      length varint (zig-zag)            size of everything after it
      attributes int8                    unused, 0
      timestamp_delta varlong
      offset_delta varint
      key_length varint, key             -1 = null
      value_length varint, value         -1 = null
      headers_count varint, headers      Header => key_length varint (>= 0), key utf8,
                                                   value_length varint (-1 = null), value

The CRC is declared as a plain field: a forensic reader reports a mismatch instead of failing.
"""

from __future__ import annotations

from enum import IntEnum

from construct import (
    Array,
    Bytes,
    Const,
    FixedSized,
    Int8sb,
    Int16sb,
    Int32sb,
    Int32ub,
    Int64sb,
    Rebuild,
    Struct,
    Terminated,
    len_,
    this,
)

from segtools.formats.primitives import NullableBytes, Varint, VarintString, Varlong, numpy_dtype

__all__ = [
    "CompressionType", "TimestampType", "RecordBatchHeader", "RecordBatch", "Record", "RecordBody",
    "RecordHeader", "RECORD_BATCH_OVERHEAD", "LOG_OVERHEAD", "MAGIC_OFFSET",
    "HEADER_SIZE_UP_TO_MAGIC", "CRC_OFFSET", "ATTRIBUTES_OFFSET", "RECORDS_COUNT_OFFSET",
    "COMPRESSION_CODEC_MASK", "TIMESTAMP_TYPE_MASK", "TRANSACTIONAL_FLAG_MASK",
    "CONTROL_FLAG_MASK", "DELETE_HORIZON_FLAG_MASK", "NO_TIMESTAMP", "NO_PRODUCER_ID",
    "NO_PRODUCER_EPOCH", "NO_SEQUENCE", "NO_PARTITION_LEADER_EPOCH", "MAX_RECORD_OVERHEAD",
    "HEADER_STRUCT_FORMAT", "LOG_PREFIX_STRUCT_FORMAT", "MAGIC_STRUCT_FORMAT",
    "V2_MIN_BATCH_LENGTH", "LENGTH_OFFSET", "PARTITION_LEADER_EPOCH_OFFSET",
    "LAST_OFFSET_DELTA_OFFSET", "BASE_TIMESTAMP_OFFSET", "MAX_TIMESTAMP_OFFSET",
    "PRODUCER_ID_OFFSET", "PRODUCER_EPOCH_OFFSET", "BASE_SEQUENCE_OFFSET",
    "CRC_STRUCT_FORMAT", "HEADER_NUMPY_DTYPE",
]


class CompressionType(IntEnum):
    """Attribute bits 0-2 (``CompressionType.java``); 5-7 are "Unknown compression type id"."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        """The lower-case name Kafka prints (``compresscodec: lz4``)."""
        return self.name.lower()


class TimestampType(IntEnum):
    """``TimestampType.java`` ids; v2 batches are only CreateTime or LogAppendTime."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def label(self) -> str:
        """The name Kafka prints: ``CreateTime``, ``LogAppendTime``, ``NoTimestampType``."""
        return {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}[self.value]


# Attribute masks (low byte of the int16; the high byte is unused).
COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

# Sentinels (RecordBatch.java).
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

# Framing shared by every magic (Records.java) and v2 header offsets (DefaultRecordBatch.java).
LOG_OVERHEAD = 12
MAGIC_OFFSET = 16
HEADER_SIZE_UP_TO_MAGIC = 17
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
RECORDS_COUNT_OFFSET = 57
# the other fields' byte offsets (for code that cannot take a struct, e.g. the numba kernel)
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORD_BATCH_OVERHEAD = 61
#: bytes of a record without key, value and headers at most (DefaultRecord.MAX_RECORD_OVERHEAD)
MAX_RECORD_OVERHEAD = 21
#: the same 61-byte header for ``struct.Struct`` (the fast path cross-checks against this module)
HEADER_STRUCT_FORMAT = ">qiibIhiqqqhii"
#: the 12-byte prefix every magic shares: baseOffset (or offset) int64, length int32
LOG_PREFIX_STRUCT_FORMAT = ">qi"
#: the magic byte (a Java byte: any value >= 2 is read as v2, below 2 as legacy)
MAGIC_STRUCT_FORMAT = ">b"
#: header bytes of a v2 batch counted by its length field (61 - 12)
V2_MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD
#: the CRC field (uint32)
CRC_STRUCT_FORMAT = ">I"

#: the 61-byte v2 batch header
RecordBatchHeader = Struct(
    "base_offset" / Int64sb,
    "batch_length" / Int32sb,
    "partition_leader_epoch" / Int32sb,
    "magic" / Int8sb,
    "crc" / Int32ub,
    "attributes" / Int16sb,
    "last_offset_delta" / Int32sb,
    "base_timestamp" / Int64sb,
    "max_timestamp" / Int64sb,
    "producer_id" / Int64sb,
    "producer_epoch" / Int16sb,
    "base_sequence" / Int32sb,
    "records_count" / Int32sb,
)

#: the same header as a numpy record dtype (big-endian, the declaration's field names), for
#: vectorised readers that view many headers at once (dump's column-wise text)
HEADER_NUMPY_DTYPE = numpy_dtype(RecordBatchHeader)

#: header plus the (raw or compressed) record bytes: 49 = 61 - 12 header bytes counted by length
RecordBatch = Struct(
    *RecordBatchHeader.subcons,
    "records" / Bytes(this.batch_length - (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD)),
)

#: one record header: key is a non-null UTF-8 string, value nullable bytes
RecordHeader = Struct(
    "key" / VarintString(),
    "value" / NullableBytes(Varint),
)

#: a record after its length prefix; must use exactly ``length`` bytes ("Invalid record size")
RecordBody = Struct(
    "attributes" / Int8sb,
    "timestamp_delta" / Varlong,
    "offset_delta" / Varint,
    "key" / NullableBytes(Varint),
    "value" / NullableBytes(Varint),
    "headers_count" / Rebuild(Varint, len_(this.headers)),
    "headers" / Array(this.headers_count, RecordHeader),
    Terminated,
)

#: one v2 record with its zig-zag length prefix
Record = Struct(
    "length" / Rebuild(Varint, lambda ctx: len(RecordBody.build(ctx.body))),
    "body" / FixedSized(this.length, RecordBody),
)

#: the records of an uncompressed batch (or a decompressed stream): ``records_count`` records
Records = Array(this.records_count, Record)

#: magic byte check for users who want a strict v2 header
StrictMagic = Const(2, Int8sb)
