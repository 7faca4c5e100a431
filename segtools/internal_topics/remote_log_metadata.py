"""``__remote_log_metadata`` (tiered storage, KIP-405) record values and the text of
kafka-dump-log ``--remote-log-metadata-decoder``.

A value is framed like a KRaft metadata record (``AbstractApiMessageSerde``: uvarint frame
version 1, uvarint api key, uvarint version, flexible body; see :mod:`.metadata`) with the
four record types of ``storage/src/main/resources/message/*.json`` (Kafka 4.3.1). The tool
prints no key and, as the payload, the Java ``toString()`` of the RemoteLogMetadata object
``RemoteLogMetadataSerde.deserialize`` builds (storage-api's RemoteLogSegmentMetadata,
RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata and storage's
RemoteLogSegmentMetadataSnapshot), or ``Error at offset {o}, skipping. {message}``.

Example::

    >>> from segtools.internal_topics import remote_log_metadata as rlm
    >>> raw = rlm.encode_record(2, 0, {"topicIdPartition": {"name": "t", "id": "AAAAAAAAAAAAAAAAAAAAAQ",
    ...     "partition": 0}, "brokerId": 1, "eventTimestampMs": 5, "remotePartitionDeleteState": 0})
    >>> rlm.format_record(raw, offset=0).split(", ")
    ['RemotePartitionDeleteMetadata{topicPartition=AAAAAAAAAAAAAAAAAAAAAQ:t-0', \
'state=DELETE_PARTITION_MARKED', 'eventTimestampMs=5', 'brokerId=1}']
"""

from __future__ import annotations

from typing import Any

from segtools.errors import SchemaError
from segtools.formats.messages import Message, message
from segtools.formats.messages import field as f
from segtools.internal_topics.metadata import FRAME_VERSION, decode_framed
from segtools.primitives.messages import uvarint, write_message

_TOPIC_ID_PARTITION = [f("Name", "string"), f("Id", "uuid"), f("Partition", "int32")]
_SEGMENT_ID = [f("TopicIdPartition", "TopicIdPartitionEntry", fields=_TOPIC_ID_PARTITION),
               f("Id", "uuid")]
_LEADER_EPOCHS = f("SegmentLeaderEpochs", "[]SegmentLeaderEpochEntry", fields=[
    f("LeaderEpoch", "int32"), f("Offset", "int64"),
])

#: api key -> schema (MetadataRecordType of the storage module)
RECORD_TYPES: dict[int, Message] = {
    0: message("RemoteLogSegmentMetadataRecord", 0, "0", "0+", [
        f("RemoteLogSegmentId", "RemoteLogSegmentIdEntry", fields=_SEGMENT_ID),
        f("StartOffset", "int64"), f("EndOffset", "int64"), f("BrokerId", "int32"),
        f("MaxTimestampMs", "int64"), f("EventTimestampMs", "int64"), _LEADER_EPOCHS,
        f("SegmentSizeInBytes", "int32"), f("CustomMetadata", "bytes", nullable="0+"),
        f("RemoteLogSegmentState", "int8"),
        f("TxnIndexEmpty", "bool", default=False, tag=0),
    ]),
    1: message("RemoteLogSegmentMetadataUpdateRecord", 1, "0", "0+", [
        f("RemoteLogSegmentId", "RemoteLogSegmentIdEntry", fields=_SEGMENT_ID),
        f("BrokerId", "int32"), f("EventTimestampMs", "int64"),
        f("CustomMetadata", "bytes", nullable="0+"), f("RemoteLogSegmentState", "int8"),
    ]),
    2: message("RemotePartitionDeleteMetadataRecord", 2, "0", "0+", [
        f("TopicIdPartition", "TopicIdPartitionEntry", fields=_TOPIC_ID_PARTITION),
        f("BrokerId", "int32"), f("EventTimestampMs", "int64"),
        f("RemotePartitionDeleteState", "int8"),
    ]),
    3: message("RemoteLogSegmentMetadataSnapshotRecord", 3, "0", "0+", [
        f("SegmentId", "uuid"), f("StartOffset", "int64"), f("EndOffset", "int64"),
        f("BrokerId", "int32"), f("MaxTimestampMs", "int64"), f("EventTimestampMs", "int64"),
        _LEADER_EPOCHS, f("SegmentSizeInBytes", "int32"),
        f("CustomMetadata", "bytes", nullable="0+"), f("RemoteLogSegmentState", "int8"),
        f("TxnIndexEmpty", "bool", default=False, tag=0),
    ]),
}

#: storage-api RemoteLogSegmentState / RemotePartitionDeleteState ids
SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED",
                  2: "DELETE_SEGMENT_STARTED", 3: "DELETE_SEGMENT_FINISHED"}
PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED",
                           2: "DELETE_PARTITION_FINISHED"}


def decode_record(value: bytes | bytearray | memoryview | None) -> tuple[int, int, dict[str, Any]]:
    """(api key, version, data) of one value; :class:`SchemaError` with Kafka's message."""
    # the tool copies record.value() into a byte[]: a null value is this NullPointerException
    api_key, version, _, out = decode_framed(
        value, RECORD_TYPES, null_field="value",
        null_reason='Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
                    '"org.apache.kafka.common.record.internal.Record.value()" is null')
    return api_key, version, out


def encode_record(api_key: int, version: int, data: dict[str, Any]) -> bytes:
    """The framed value of one record (the inverse of :func:`decode_record`)."""
    msg = RECORD_TYPES.get(api_key)
    if msg is None:
        raise SchemaError(f"unknown remote log metadata record type {api_key!r}", field="type")
    return (uvarint(FRAME_VERSION) + uvarint(api_key) + uvarint(version)
            + write_message(msg, data, version, path=msg.name))


# ------------------------------------------------------------------------------- toString


def _topic_id_partition(tip: dict[str, Any]) -> str:
    # clients' TopicIdPartition.toString: topicId + ":" + topic + "-" + partition
    return f"{tip['id']}:{tip['name']}-{tip['partition']}"


def _segment_id(sid: dict[str, Any]) -> str:
    return (f"RemoteLogSegmentId{{topicIdPartition={_topic_id_partition(sid['topicIdPartition'])}"
            f", id={sid['id']}}}")


def _custom_metadata(raw: bytes | None) -> str:
    # Optional<CustomMetadata>; CustomMetadata.toString is "CustomMetadata{N bytes}"
    return "Optional.empty" if raw is None else f"Optional[CustomMetadata{{{len(raw)} bytes}}]"


def _leader_epochs(entries: list[dict[str, Any]]) -> str:
    # a TreeMap<Integer, Long> built from the entries: sorted by epoch, the last entry wins
    if not entries:
        # the metadata classes' constructors reject an empty map (checked with the real tool)
        raise SchemaError("segmentLeaderEpochs can not be null or empty",
                          field="segmentLeaderEpochs")
    epochs: dict[int, int] = {}
    for e in entries:
        epochs[e["leaderEpoch"]] = e["offset"]
    return "{" + ", ".join(f"{k}={epochs[k]}" for k in sorted(epochs)) + "}"


def _state(states: dict[int, str], value: int, what: str) -> str:
    name = states.get(value)
    if name is None:
        # forId gives null for an unknown id; the constructors' null checks then fail with
        # these messages (requireNonNull(state, "state can not be null") for segment states,
        # a bare NullPointerException, message "null", for partition-delete states)
        reason = "null" if states is PARTITION_DELETE_STATES else "state can not be null"
        raise SchemaError(reason, field=what)
    return name


def to_string(api_key: int, data: dict[str, Any]) -> str:
    """The Java ``toString()`` of the RemoteLogMetadata object Kafka builds from a record."""
    d = data
    if api_key in (0, 3):
        # RemoteLogSegmentMetadata's constructor checks the leader epochs first, the
        # snapshot's the state first (both orders checked with the real tool)
        if api_key == 0:
            epochs = _leader_epochs(d["segmentLeaderEpochs"])
        state = _state(SEGMENT_STATES, d["remoteLogSegmentState"], "RemoteLogSegmentState")
        epochs = _leader_epochs(d["segmentLeaderEpochs"])
    if api_key == 0:
        return ("RemoteLogSegmentMetadata{"
                f"remoteLogSegmentId={_segment_id(d['remoteLogSegmentId'])}"
                f", startOffset={d['startOffset']}, endOffset={d['endOffset']}"
                f", brokerId={d['brokerId']}, maxTimestampMs={d['maxTimestampMs']}"
                f", eventTimestampMs={d['eventTimestampMs']}"
                f", segmentLeaderEpochs={epochs}"
                f", segmentSizeInBytes={d['segmentSizeInBytes']}"
                f", customMetadata={_custom_metadata(d['customMetadata'])}"
                f", state={state}"
                f", txnIdxEmpty={'true' if d['txnIndexEmpty'] else 'false'}}}")
    if api_key == 1:
        return ("RemoteLogSegmentMetadataUpdate{"
                f"remoteLogSegmentId={_segment_id(d['remoteLogSegmentId'])}"
                f", customMetadata={_custom_metadata(d['customMetadata'])}"
                f", state={_state(SEGMENT_STATES, d['remoteLogSegmentState'], 'RemoteLogSegmentState')}"
                f", eventTimestampMs={d['eventTimestampMs']}, brokerId={d['brokerId']}}}")
    if api_key == 2:
        state = _state(PARTITION_DELETE_STATES, d["remotePartitionDeleteState"],
                       "RemotePartitionDeleteState")
        return ("RemotePartitionDeleteMetadata{"
                f"topicPartition={_topic_id_partition(d['topicIdPartition'])}, state={state}"
                f", eventTimestampMs={d['eventTimestampMs']}, brokerId={d['brokerId']}}}")
    return ("RemoteLogSegmentMetadataSnapshot{"
            f"segmentId={d['segmentId']}, startOffset={d['startOffset']}"
            f", endOffset={d['endOffset']}, maxTimestampMs={d['maxTimestampMs']}"
            f", segmentLeaderEpochs={epochs}"
            f", segmentSizeInBytes={d['segmentSizeInBytes']}"
            f", customMetadata={_custom_metadata(d['customMetadata'])}"
            f", state={state}"
            f", txnIdxEmpty={'true' if d['txnIndexEmpty'] else 'false'}}}")


def format_record(value: bytes | bytearray | memoryview | None, *,
                  offset: int | None = None) -> str:
    """The payload kafka-dump-log ``--remote-log-metadata-decoder`` prints for this value;
    on bad input ``Error at offset {offset}, skipping. {message}`` (without ``offset`` the
    :class:`SchemaError` is raised)."""
    try:
        api_key, _, data = decode_record(value)
        return to_string(api_key, data)
    except SchemaError as e:
        if offset is None:
            raise
        return f"Error at offset {offset}, skipping. {e.reason}"
