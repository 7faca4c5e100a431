"""Control records as kafka-dump-log prints them (DUMP_LOG.md 3.4). Decoding is
``segtools.records.control``'s; this module only chooses Kafka's words for each type."""

from __future__ import annotations

from typing import Any

# Jackson's escaping (e.g. \u001F upper-case), as Kafka's JsonConverter output is printed
from segtools.internal_topics.json_render import dumps as jackson_dumps
from segtools.records.control import (
    ABORT,
    COMMIT,
    KRAFT_VERSION,
    KRAFT_VOTERS,
    LEADER_CHANGE,
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
    control_type_name,
    decode_control_key,
    decode_control_value,
    decode_end_txn_marker,
)

#: the label DumpLogSegments prints before the JSON of each KRaft control value
_KRAFT_LABELS = {
    SNAPSHOT_HEADER: "SnapshotHeader",
    SNAPSHOT_FOOTER: "SnapshotFooter",
    KRAFT_VERSION: "KRaftVersion",
    KRAFT_VOTERS: "KRaftVoters",
}


def describe_control(key: bytes | None, value: bytes | None,
                     kafka4: bool = True) -> tuple[str, dict[str, Any]]:
    """The text Kafka appends to a control record's line (starting with a space) and the same
    facts as a dict for JSON output. Raises CorruptBatchError where Kafka would throw.

    Kafka 4.1+ decodes LEADER_CHANGE (`` LeaderChange: {json}``); 3.x and 4.0 printed
    `` controlType: LEADER_CHANGE(2)``."""
    type_id = decode_control_key(key).type_id
    name = control_type_name(type_id)
    if type_id in (ABORT, COMMIT):
        epoch = decode_end_txn_marker(value)["coordinatorEpoch"]
        return (f" endTxnMarker: {name} coordinatorEpoch: {epoch}",
                {"control_type": name, "coordinator_epoch": epoch})
    if type_id == LEADER_CHANGE and kafka4:
        data = decode_control_value(type_id, value)
        return f" LeaderChange: {jackson_dumps(data)}", {"control_type": name, "data": data}
    label = _KRAFT_LABELS.get(type_id)
    if label is not None:
        data = decode_control_value(type_id, value)
        shown = jackson_dumps(data)
        return f" {label} {shown}", {"control_type": name, "data": data}
    # Kafka 3.x's tool did not decode LEADER_CHANGE; unknown ids print as UNKNOWN
    return f" controlType: {name}({type_id})", {"control_type": name, "type_id": type_id}
