"""``__share_group_state`` records (KIP-932 share groups, FORMATS.md section 12.3).

Same framing as ``__consumer_offsets`` (``ShareCoordinatorRecordSerde``): key = int16 record
type (0 ShareSnapshotKey, 1 ShareUpdateKey) + body read with that version; value = int16
version + flexible body. kafka-dump-log ``--share-group-state-decoder`` (trunk only) labels
*both* key and value numbers ``"type"``: ``{"type":"0","data":{...}}``.
"""

from __future__ import annotations

from typing import Any

from segtools.formats.messages import Message, message
from segtools.formats.messages import field as f
from segtools.internal_topics.consumer_offsets import (
    DecodedKey,
    DecodedValue,
    decode_key_with,
    decode_value_with,
    encode_key_with,
    encode_value_with,
    format_record_with,
)
from segtools.internal_topics.json_render import Raw, dumps, message_json

_KEY_FIELDS = [f("GroupId", "string"), f("TopicId", "uuid"), f("Partition", "int32")]
_STATE_BATCH = [
    f("FirstOffset", "int64"), f("LastOffset", "int64"), f("DeliveryState", "int8"),
    f("DeliveryCount", "int16"),
]

RECORD_TYPES: dict[int, tuple[Message, Message]] = {
    0: (message("ShareSnapshotKey", 0, "0", None, _KEY_FIELDS),
        message("ShareSnapshotValue", 0, "0", "0+", [
            f("SnapshotEpoch", "uint16"), f("StateEpoch", "int32"), f("LeaderEpoch", "int32"),
            f("StartOffset", "int64"), f("StateBatches", "[]StateBatch", fields=_STATE_BATCH),
        ])),
    1: (message("ShareUpdateKey", 1, "1", None, _KEY_FIELDS),
        message("ShareUpdateValue", 1, "0", "0+", [
            f("SnapshotEpoch", "uint16"), f("LeaderEpoch", "int32"), f("StartOffset", "int64"),
            f("StateBatches", "[]StateBatch", fields=_STATE_BATCH),
        ])),
}


# Kafka 4.3 (the pinned 4.3.1; share-coordinator/src/main/resources/common/message/*.json):
# SnapshotEpoch became int32, ShareSnapshotValue gained CreateTimestamp/WriteTimestamp, and both
# values a tagged DeliveryCompleteCount (tag 0, default -1) declared after StartOffset.
_DELIVERY_COMPLETE_COUNT = f("DeliveryCompleteCount", "int32", default=-1, tag=0)

RECORD_TYPES_KAFKA_4_3: dict[int, tuple[Message, Message]] = {
    0: (RECORD_TYPES[0][0],
        message("ShareSnapshotValue", 0, "0", "0+", [
            f("SnapshotEpoch", "int32"), f("StateEpoch", "int32"), f("LeaderEpoch", "int32"),
            f("StartOffset", "int64"), _DELIVERY_COMPLETE_COUNT,
            f("CreateTimestamp", "int64"), f("WriteTimestamp", "int64"),
            f("StateBatches", "[]StateBatch", fields=_STATE_BATCH),
        ])),
    1: (RECORD_TYPES[1][0],
        message("ShareUpdateValue", 1, "0", "0+", [
            f("SnapshotEpoch", "int32"), f("LeaderEpoch", "int32"), f("StartOffset", "int64"),
            _DELIVERY_COMPLETE_COUNT,
            f("StateBatches", "[]StateBatch", fields=_STATE_BATCH),
        ])),
}


def decode_key(key: bytes | bytearray | memoryview,
               table: dict[int, tuple[Message, Message]] | None = None) -> DecodedKey:
    """``{"type": n, "name": "ShareSnapshotKey", "data": {...}}``; ``table``: the record types
    of one Kafka version (default ``RECORD_TYPES``; ``RECORD_TYPES_KAFKA_4_3``)."""
    return decode_key_with(RECORD_TYPES if table is None else table, key)


def decode_value(value: bytes | bytearray | memoryview | None,
                 record_type: int,
                 table: dict[int, tuple[Message, Message]] | None = None) -> DecodedValue | None:
    """``{"version": v, "name": ..., "data": {...}}``; None for a tombstone."""
    return decode_value_with(RECORD_TYPES if table is None else table, value, record_type)


def encode_key(record_type: int, data: dict[str, Any]) -> bytes:
    return encode_key_with(RECORD_TYPES, record_type, data)


def encode_value(record_type: int, version: int, data: dict[str, Any] | None) -> bytes | None:
    return encode_value_with(RECORD_TYPES, record_type, version, data)


def format_record(key: bytes | bytearray | memoryview | None,
                  value: bytes | bytearray | memoryview | None, *,
                  offset: int | None = None,
                  table: dict[int, tuple[Message, Message]] | None = None
                  ) -> tuple[str | None, str | None]:
    """(key text, payload text) as the pre-release kafka-dump-log ``--share-group-state-decoder``
    printed them (``"type"`` for the value's version too; Kafka 4.x prints ``"version"``:
    segtools.dump.parsers.ShareGroupStateKafka4Parser); error handling as
    :func:`segtools.internal_topics.consumer_offsets.format_record`."""
    return format_record_with(
        RECORD_TYPES if table is None else table, key, value, offset=offset,
        decoder="share group state topic decoder",
        value_text=lambda rec: dumps({"type": str(rec.version), "data": Raw(
            message_json(rec.value_msg, rec.value, rec.version))}))  # type: ignore[arg-type]


#: Kafka 4.1 (share-coordinator's schemas): 4.3's without DeliveryCompleteCount (added in 4.2);
#: Kafka 4.0 reads the schemas of RECORD_TYPES (uint16 SnapshotEpoch, no timestamps)
RECORD_TYPES_KAFKA_4_1: dict[int, tuple[Message, Message]] = {
    0: (RECORD_TYPES[0][0],
        message("ShareSnapshotValue", 0, "0", "0+", [
            f("SnapshotEpoch", "int32"), f("StateEpoch", "int32"), f("LeaderEpoch", "int32"),
            f("StartOffset", "int64"), f("CreateTimestamp", "int64"), f("WriteTimestamp", "int64"),
            f("StateBatches", "[]StateBatch", fields=_STATE_BATCH),
        ])),
    1: (RECORD_TYPES[1][0],
        message("ShareUpdateValue", 1, "0", "0+", [
            f("SnapshotEpoch", "int32"), f("LeaderEpoch", "int32"), f("StartOffset", "int64"),
            f("StateBatches", "[]StateBatch", fields=_STATE_BATCH),
        ])),
}


def record_types_of(release: tuple[int, int]) -> dict[int, tuple[Message, Message]]:
    """The share coordinator's record types of Kafka ``release`` (4.2 to 4.4 read 4.3's)."""
    if release >= (4, 2):
        return RECORD_TYPES_KAFKA_4_3
    return RECORD_TYPES_KAFKA_4_1 if release == (4, 1) else RECORD_TYPES
