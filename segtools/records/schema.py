"""Arrow schemas shared by the columnar reader, Parquet export and the Spark data source.

Record level starts with Spark's Kafka source schema exactly (CONTRACT.md section 5,
CONVENTIONS.md 2a) and then adds forensic columns. Binary columns are ``pa.binary()``, never
``large_binary``: Spark's Python data source rejects large types.
"""

from __future__ import annotations

import pyarrow as pa

HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))

#: Spark's Kafka source columns, in Spark's order and with Spark's (camelCase) names.
SPARK_KAFKA_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
    pa.field("headers", HEADER_TYPE),   # null (not []) when a record has no headers, as Spark
]

#: Forensic columns after the Spark ones (CONTRACT.md section 5 names, then our extras).
RECORD_FORENSIC_FIELDS = [
    pa.field("leader_epoch", pa.int32()),        # partition leader epoch of the batch (-1 legacy)
    pa.field("batch_base_offset", pa.int64()),
    pa.field("producer_id", pa.int64()),
    pa.field("producer_epoch", pa.int32()),
    pa.field("sequence", pa.int32()),            # -1 when the batch has no base sequence
    pa.field("is_transactional", pa.bool_()),
    pa.field("is_control", pa.bool_()),
    pa.field("broker", pa.int32()),              # null unless known (compare/export of broker dirs)
    pa.field("timestamp_ms", pa.int64()),        # Kafka's raw value: -1 and garbage stay visible
    pa.field("magic", pa.int8()),
    pa.field("compression", pa.string()),        # none|gzip|snappy|lz4|zstd
    pa.field("crc_valid", pa.bool_()),
    pa.field("batch_position", pa.int64()),      # byte position of the batch in its segment
    pa.field("segment", pa.string()),            # segment file name
]

RECORD_SCHEMA = pa.schema(SPARK_KAFKA_FIELDS + RECORD_FORENSIC_FIELDS)

#: One row per batch (legacy: one per outer message), every header field plus location/validity.
BATCH_SCHEMA = pa.schema([
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("broker", pa.int32()),
    pa.field("segment", pa.string()),
    pa.field("position", pa.int64()),
    pa.field("size", pa.int32()),                # batch_length + 12
    pa.field("base_offset", pa.int64()),
    pa.field("last_offset", pa.int64()),
    pa.field("batch_length", pa.int32()),
    pa.field("partition_leader_epoch", pa.int32()),
    pa.field("magic", pa.int8()),
    pa.field("crc", pa.int64()),                 # unsigned 32-bit value
    pa.field("crc_valid", pa.bool_()),
    pa.field("attributes", pa.int16()),
    pa.field("compression", pa.string()),
    pa.field("timestamp_type", pa.string()),     # CreateTime|LogAppendTime|NoTimestampType
    pa.field("is_transactional", pa.bool_()),
    pa.field("is_control", pa.bool_()),
    pa.field("has_delete_horizon", pa.bool_()),
    pa.field("last_offset_delta", pa.int32()),
    pa.field("base_timestamp", pa.int64()),
    pa.field("max_timestamp", pa.int64()),
    pa.field("producer_id", pa.int64()),
    pa.field("producer_epoch", pa.int16()),
    pa.field("base_sequence", pa.int32()),
    pa.field("records_count", pa.int32()),
])

SPARK_KAFKA_DDL = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
    "timestampType int, headers array<struct<key:string,value:binary>>"
)
