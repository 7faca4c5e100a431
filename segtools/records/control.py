"""Control records: the key/value of records in control batches (FORMATS.md section 4).

Key (4 bytes): ``version int16`` (negative is invalid; others parse as v0) + ``type int16``.
COMMIT/ABORT values are ``EndTxnMarker``: ``version int16`` + ``coordinator_epoch int32``.
The KRaft types are flexible (compact, tagged-field) generated messages, always read with
schema version 0. Decoded values are dicts keyed by Kafka's JSON (camelCase) field names, in
schema order, so ``json.dumps(value, separators=(",", ":"))`` matches Kafka's JsonConverter;
uuids are rendered as base64url without padding, as ``Uuid.toString()`` does.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias, TypedDict, TypeVar

from segtools.errors import CorruptBatchError, FormatError
from segtools.formats.control import CONTROL_KEY_STRUCT_FORMAT, END_TXN_MARKER_STRUCT_FORMAT
from segtools.primitives.varint import read_uvarint

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

ABORT, COMMIT, LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS = (
    range(7))

CONTROL_TYPE_NAMES: dict[int, str] = {
    ABORT: "ABORT",
    COMMIT: "COMMIT",
    LEADER_CHANGE: "LEADER_CHANGE",
    SNAPSHOT_HEADER: "SNAPSHOT_HEADER",
    SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER",
    KRAFT_VERSION: "KRAFT_VERSION",
    KRAFT_VOTERS: "KRAFT_VOTERS",
}


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


_T = TypeVar("_T")


class _FlexReader:
    """Reader for flexible-version generated messages (FORMATS.md section 12.1)."""

    def __init__(self, buf: bytes, what: str) -> None:
        self.buf = buf
        self.pos = 0
        self.what = what

    def _need(self, n: int, field: str) -> None:
        if n < 0 or self.pos + n > len(self.buf):
            raise _error(f"{self.what}: field {field} needs {n} bytes at value byte {self.pos}, "
                         f"only {len(self.buf) - self.pos} left", f"control.value.{field}")

    def fixed(self, fmt: str, field: str) -> Any:
        s = struct.calcsize(fmt)
        self._need(s, field)
        (v,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += s
        return v

    def uvarint(self, field: str) -> int:
        try:
            v, self.pos = read_uvarint(self.buf, self.pos)
        except FormatError:  # too long, or the value ends inside the varint
            raise _error(f"{self.what}: bad unsigned varint at value byte {self.pos}",
                         f"control.value.{field}") from None
        return v

    def uuid(self, field: str) -> str:
        self._need(16, field)
        raw = self.buf[self.pos:self.pos + 16]
        self.pos += 16
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    def compact_string(self, field: str) -> str | None:
        n = self.uvarint(field) - 1
        if n < 0:
            return None
        self._need(n, field)
        s = self.buf[self.pos:self.pos + n].decode("utf-8", "replace")
        self.pos += n
        return s

    def compact_array(self, field: str, item: Callable[[_FlexReader], _T]) -> list[_T] | None:
        n = self.uvarint(field) - 1
        if n < 0:
            return None
        if n > len(self.buf) - self.pos:  # every element takes at least one byte
            raise _error(f"{self.what}: array {field} claims {n} elements with only "
                         f"{len(self.buf) - self.pos} bytes left", f"control.value.{field}")
        return [item(self) for _ in range(n)]

    def tagged_fields(self) -> None:
        """Skip a tagged-field section (none of these v0 schemas defines tagged fields)."""
        count = self.uvarint("_tagged_fields")
        for _ in range(count):
            self.uvarint("_tagged_fields.tag")
            size = self.uvarint("_tagged_fields.size")
            self._need(size, "_tagged_fields")
            self.pos += size


def _voter_v0(r: _FlexReader) -> Voter:
    voter: Voter = {"voterId": r.fixed(">i", "voterId")}
    r.tagged_fields()
    return voter


def _leader_change(r: _FlexReader) -> LeaderChangeMessage:
    out: LeaderChangeMessage = {
        "version": r.fixed(">h", "version"),
        "leaderId": r.fixed(">i", "leaderId"),
        "voters": r.compact_array("voters", _voter_v0),
        "grantingVoters": r.compact_array("grantingVoters", _voter_v0),
    }
    r.tagged_fields()
    return out


def _snapshot_header(r: _FlexReader) -> SnapshotHeaderRecord:
    out: SnapshotHeaderRecord = {"version": r.fixed(">h", "version"),
           "lastContainedLogTimestamp": r.fixed(">q", "lastContainedLogTimestamp")}
    r.tagged_fields()
    return out


def _snapshot_footer(r: _FlexReader) -> SnapshotFooterRecord:
    out: SnapshotFooterRecord = {"version": r.fixed(">h", "version")}
    r.tagged_fields()
    return out


def _kraft_version(r: _FlexReader) -> KRaftVersionRecord:
    out: KRaftVersionRecord = {"version": r.fixed(">h", "version"), "kRaftVersion": r.fixed(">h", "kRaftVersion")}
    r.tagged_fields()
    return out


def _endpoint(r: _FlexReader) -> Endpoint:
    out: Endpoint = {"name": r.compact_string("name"), "host": r.compact_string("host"),
           "port": r.fixed(">H", "port")}
    r.tagged_fields()
    return out


def _voter_full(r: _FlexReader) -> VoterWithEndpoints:
    voter_id: int = r.fixed(">i", "voterId")
    directory_id = r.uuid("voterDirectoryId")
    endpoints = r.compact_array("endpoints", _endpoint)
    feature: KRaftVersionFeature = {"minSupportedVersion": r.fixed(">h", "minSupportedVersion"),
               "maxSupportedVersion": r.fixed(">h", "maxSupportedVersion")}
    r.tagged_fields()  # of the KRaftVersionFeature struct
    r.tagged_fields()  # of the Voter struct
    # keys in the schema's field order (the JSON output follows it)
    return {"voterId": voter_id, "voterDirectoryId": directory_id, "endpoints": endpoints,
            "kRaftVersionFeature": feature}


def _voters(r: _FlexReader) -> VotersRecord:
    out: VotersRecord = {"version": r.fixed(">h", "version"),
                         "voters": r.compact_array("voters", _voter_full)}
    r.tagged_fields()
    return out


_KRAFT_DECODERS: dict[int, tuple[str, Callable[[_FlexReader], ControlValue]]] = {
    LEADER_CHANGE: ("LeaderChangeMessage", _leader_change),
    SNAPSHOT_HEADER: ("SnapshotHeaderRecord", _snapshot_header),
    SNAPSHOT_FOOTER: ("SnapshotFooterRecord", _snapshot_footer),
    KRAFT_VERSION: ("KRaftVersionRecord", _kraft_version),
    KRAFT_VOTERS: ("VotersRecord", _voters),
}


def decode_control_value(type_id: int,
                         value: bytes | bytearray | memoryview | None) -> ControlValue | None:
    """Decode the value of a control record of ``type_id``; None for UNKNOWN types."""
    if type_id in (ABORT, COMMIT):
        return decode_end_txn_marker(value)
    entry = _KRAFT_DECODERS.get(type_id)
    if entry is None:
        return None
    name, decoder = entry
    if value is None:
        raise _error(f"{name}: null value", "control.value")
    return decoder(_FlexReader(bytes(value), name))
