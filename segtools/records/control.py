"""Control records: the key/value of records in control batches (FORMATS.md section 4).

Key (4 bytes): ``version int16`` (negative is invalid; others parse as v0) + ``type int16``.
COMMIT/ABORT values are ``EndTxnMarker``: ``version int16`` + ``coordinator_epoch int32``.
The KRaft types are flexible (compact, tagged-field) generated messages, always read with
schema version 0: their message specs in ``segtools.formats.control``, read by the one message
engine (``segtools.primitives.messages``: Kafka's generated readers' errors, the field's path);
the fixed-size key and end-transaction marker (one per transaction, on the hot path) through
the ``struct`` formats derived from their construct declarations.
Decoded values are dicts keyed by Kafka's JSON (camelCase) field names, in
schema order, so ``json.dumps(value, separators=(",", ":"))`` matches Kafka's JsonConverter;
uuids are rendered as base64url without padding, as ``Uuid.toString()`` does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, TypeAlias, TypedDict

from segtools.errors import CorruptBatchError, SchemaError
from segtools.formats.control import (
    CONTROL_KEY_STRUCT_FORMAT,
    END_TXN_MARKER_STRUCT_FORMAT,
    KRAFT_CONTROL_MESSAGES,
    ControlRecordType,
)
from segtools.formats.messages import UNKNOWN_TAGGED_FIELDS
from segtools.primitives.messages import read_message

__all__ = [
    "CONTROL_TYPE_NAMES",
    "ABORT", "COMMIT", "LEADER_CHANGE", "SNAPSHOT_HEADER", "SNAPSHOT_FOOTER",
    "KRAFT_VERSION", "KRAFT_VOTERS",
    "ControlKey",
    "ControlRecord",
    "ControlValue",
    "EndTxnMarker",
    "LeaderChangeMessage",
    "SnapshotHeaderRecord",
    "SnapshotFooterRecord",
    "KRaftVersionRecord",
    "VotersRecord",
    "Voter",
    "VoterWithEndpoints",
    "Endpoint",
    "KRaftVersionFeature",
    "decode_control_key",
    "decode_end_txn_marker",
    "decode_control_value",
    "control_type_name",
]

# the type ids and names are formats.control.ControlRecordType's (one table)
ABORT = int(ControlRecordType.ABORT)
COMMIT = int(ControlRecordType.COMMIT)
LEADER_CHANGE = int(ControlRecordType.LEADER_CHANGE)
SNAPSHOT_HEADER = int(ControlRecordType.SNAPSHOT_HEADER)
SNAPSHOT_FOOTER = int(ControlRecordType.SNAPSHOT_FOOTER)
KRAFT_VERSION = int(ControlRecordType.KRAFT_VERSION)
KRAFT_VOTERS = int(ControlRecordType.KRAFT_VOTERS)

CONTROL_TYPE_NAMES: dict[int, str] = {
    int(t): t.name for t in ControlRecordType if t is not ControlRecordType.UNKNOWN}


def control_type_name(type_id: int) -> str:
    """Kafka's ControlRecordType name; ``UNKNOWN`` for ids it does not know."""
    return CONTROL_TYPE_NAMES.get(type_id, "UNKNOWN")


@dataclass(frozen=True)
class ControlKey:
    version: int
    type_id: int

    @property
    def type_name(self) -> str:
        return control_type_name(self.type_id)


# The decoded values, keyed by Kafka's JSON field names (the schemas in
# clients/src/main/resources/common/message/*.json, read at version 0).

class EndTxnMarker(TypedDict):
    version: int
    coordinatorEpoch: int


class Voter(TypedDict):
    """LeaderChangeMessage's voter."""

    voterId: int


class LeaderChangeMessage(TypedDict):
    version: int
    leaderId: int
    voters: list[Voter] | None
    grantingVoters: list[Voter] | None


class SnapshotHeaderRecord(TypedDict):
    version: int
    lastContainedLogTimestamp: int


class SnapshotFooterRecord(TypedDict):
    version: int


class KRaftVersionRecord(TypedDict):
    version: int
    kRaftVersion: int


class Endpoint(TypedDict):
    name: str | None
    host: str | None
    port: int


class KRaftVersionFeature(TypedDict):
    minSupportedVersion: int
    maxSupportedVersion: int


class VoterWithEndpoints(TypedDict):
    """VotersRecord's voter."""

    voterId: int
    voterDirectoryId: str
    endpoints: list[Endpoint] | None
    kRaftVersionFeature: KRaftVersionFeature


class VotersRecord(TypedDict):
    version: int
    voters: list[VoterWithEndpoints] | None


#: a decoded control record value (which one: the record's control type)
ControlValue: TypeAlias = (EndTxnMarker | LeaderChangeMessage | SnapshotHeaderRecord | SnapshotFooterRecord
                | KRaftVersionRecord | VotersRecord)


@dataclass(frozen=True)
class ControlRecord:
    """One decoded control record: its offset/timestamp, key and decoded value.

    ``value`` is None for UNKNOWN types (clients ignore them), else a dict.
    """

    offset: int
    timestamp: int
    key_version: int
    type_id: int
    type_name: str
    value: ControlValue | None


def _error(message: str, field: str, **kw: Any) -> CorruptBatchError:
    return CorruptBatchError(message, field=field, **kw)


def decode_control_key(key: bytes | bytearray | memoryview | None) -> ControlKey:
    """``ControlRecordType.parse``: 4-byte key, version must be non-negative."""
    if key is None or len(key) < 4:
        size = -1 if key is None else len(key)
        raise _error(f"Invalid value size found for control record key: {size} "
                     f"(a control key needs 4 bytes)", "control.key")
    version, type_id = struct.unpack_from(CONTROL_KEY_STRUCT_FORMAT, key, 0)
    if version < 0:
        raise _error(f"Invalid version found for control record: {version}. "
                     f"May indicate data corruption", "control.key.version")
    return ControlKey(version, type_id)


def decode_end_txn_marker(value: bytes | bytearray | memoryview | None) -> EndTxnMarker:
    """``EndTransactionMarker.deserializeValue``: version int16 + coordinator_epoch int32."""
    if value is None or len(value) < 6:
        size = -1 if value is None else len(value)
        raise _error(f"Invalid value size found for end transaction marker: {size} "
                     f"(needs 6 bytes)", "control.value")
    version, coordinator_epoch = struct.unpack_from(END_TXN_MARKER_STRUCT_FORMAT, value, 0)
    if version < 0:
        raise _error(f"Invalid version found for end transaction marker: {version}. "
                     f"May indicate data corruption", "control.value.version")
    return {"version": version, "coordinatorEpoch": coordinator_epoch}


#: the message spec of each KRaft control value (formats.control), by type id
_KRAFT_MESSAGES = {int(t): m for t, m in KRAFT_CONTROL_MESSAGES.items()}


def _without_unknown_tags(obj: Any) -> Any:
    """Kafka's JSON of a decoded value: tagged fields it does not know are left out."""
    if isinstance(obj, dict):
        return {k: _without_unknown_tags(v) for k, v in obj.items() if k != UNKNOWN_TAGGED_FIELDS}
    if isinstance(obj, list):
        return [_without_unknown_tags(v) for v in obj]
    return obj


def decode_control_value(type_id: int,
                         value: bytes | bytearray | memoryview | None) -> ControlValue | None:
    """Decode the value of a control record of ``type_id``; None for UNKNOWN types. Bytes
    after the message are ignored, as Kafka's generated readers ignore them."""
    if type_id in (ABORT, COMMIT):
        return decode_end_txn_marker(value)
    spec = _KRAFT_MESSAGES.get(type_id)
    if spec is None:
        return None
    if value is None:
        raise _error(f"{spec.name}: null value", "control.value")
    try:
        parsed, _end = read_message(spec, value, 0)
    except SchemaError as exc:
        # the engine names the field by its path; the batch reader adds file, position and offset
        at = exc.field if exc.field and exc.field != spec.name else ""
        raise _error(f"{spec.name}: {exc.reason}", "control.value" + (f".{at}" if at else "")) from None
    decoded: ControlValue = _without_unknown_tags(parsed)
    return decoded
