"""``__consumer_offsets`` records: decode, encode and kafka-dump-log ``--offsets-decoder`` text.

Key = int16 record type + key body read with that number as its version; value = int16 version
+ body; a null value is a tombstone (``GroupCoordinatorRecordSerde``). kafka-dump-log prints
``{"type":"<n>","data":{...}}`` for the key and ``{"version":"<n>","data":{...}}`` for the
value (both numbers as JSON *strings*), ``<DELETE>`` for tombstones, and for consumer groups
replaces each member's ``subscription``/``assignment`` bytes with the decoded consumer
protocol JSON (keeping base64 when that fails).

Example::

    >>> from segtools.internal_topics import consumer_offsets as co
    >>> key = co.encode_key(3, {"groupId": "group"})
    >>> value = co.encode_value(3, 0, {"epoch": 10})
    >>> co.format_record(key, value)
    ('{"type":"3","data":{"groupId":"group"}}', '{"version":"0","data":{"epoch":10}}')
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from segtools.errors import SchemaError
from segtools.formats.messages import Field, Message
from segtools.internal_topics.group_schemas import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    GROUP_METADATA_VALUE,
    OFFSET_COMMIT_VALUE,
    RECORD_TYPES,
    RECORD_TYPES_KAFKA_4_3,
)
from segtools.internal_topics.json_render import Raw, dumps, message_json
from segtools.primitives.messages import fixed_bytes, read_fixed, read_message, write_message

DELETE = "<DELETE>"
__all__ = ["RECORD_TYPES", "RECORD_TYPES_KAFKA_4_3", "DELETE", "DecodedKey", "DecodedValue",
           "decode_key", "decode_value",
           "encode_key", "encode_value", "format_record", "key_json", "value_json"]
CONSUMER_PROTOCOL_TYPE = "consumer"


class UnknownRecordTypeError(SchemaError):
    """A key whose record type has no schema (kafka-dump-log prints "Unknown record type")."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"Unknown record type {record_type}", field="key.type")
        self.record_type = record_type


class DecodedKey(TypedDict):
    """A decoded coordinator record key: its record type, the key schema's name, its fields."""

    type: int
    name: str
    data: dict[str, Any]  # field name -> value; the value types follow the message schema


class DecodedValue(TypedDict):
    """A decoded coordinator record value: its version, the value schema's name, its fields."""

    version: int
    name: str
    data: dict[str, Any]  # field name -> value; the value types follow the message schema


def _read_version(buf: bytes, name: str) -> int:
    if len(buf) < 2:
        raise SchemaError(f"Could not read version from {name}'s buffer.", field=f"{name}.version")
    version: int = read_fixed("int16", buf)
    return version


def _read_body(msg: Message, buf: bytes, version: int, name: str) -> dict[str, Any]:
    try:
        data, _ = read_message(msg, buf, version, pos=2)
    except SchemaError as e:
        # CoordinatorRecordSerde.readMessage wording; trailing bytes are ignored like Kafka
        raise SchemaError(f"Could not read record with version {version} from {name}'s buffer "
                          f"due to: {e.reason}.", field=f"{name}.{e.field}") from None
    return data


def schemas_for(table: dict[int, tuple[Message, Message]], record_type: int) -> tuple[Message, Message]:
    """(key, value) schemas of a coordinator record type in ``table``."""
    schemas = table.get(record_type)
    if schemas is None:
        raise UnknownRecordTypeError(record_type)
    return schemas


def decode_key_with(table: dict[int, tuple[Message, Message]],
                    key: bytes | bytearray | memoryview) -> DecodedKey:
    """A coordinator record key (int16 record type, then the body read with that version),
    shared by __consumer_offsets and __share_group_state (CoordinatorRecordSerde)."""
    if key is None:
        raise SchemaError("message had a missing key", field="key")
    buf = bytes(key)
    record_type = _read_version(buf, "key")
    key_msg, _ = schemas_for(table, record_type)
    return {"type": record_type, "name": key_msg.name,
            "data": _read_body(key_msg, buf, record_type, "key")}


def _schemas(record_type: int, table: dict[int, tuple[Message, Message]] | None = None
             ) -> tuple[Message, Message]:
    return schemas_for(RECORD_TYPES if table is None else table, record_type)


def skipped_record_line(error: SchemaError, offset: int | None) -> tuple[str, None]:
    """kafka-dump-log's line for a coordinator record it cannot decode; without an offset the
    error is raised instead."""
    if offset is None:
        raise error
    if isinstance(error, UnknownRecordTypeError):
        return f"Unknown record type {error.record_type} at offset {offset}, skipping.", None
    return f"Error at offset {offset}, skipping. {error.reason}", None


@dataclass(frozen=True)
class CoordinatorRecord:
    """One decoded coordinator record (CoordinatorRecordSerde): key and value with their
    schemas; ``version`` and ``value`` are None for a tombstone."""

    record_type: int
    key_msg: Message
    key: dict[str, Any]
    value_msg: Message
    version: int | None
    value: dict[str, Any] | None

    def key_json(self) -> str:
        """``{"type":"<t>","data":{...}}``, as every coordinator decoder prints the key."""
        return dumps({"type": str(self.record_type),
                      "data": Raw(message_json(self.key_msg, self.key, self.record_type))})


def decode_record_with(table: dict[int, tuple[Message, Message]],
                       key: bytes | bytearray | memoryview,
                       value: bytes | bytearray | memoryview | None, *,
                       known_versions_only: bool = False) -> CoordinatorRecord:
    """Key then value of one coordinator record (``__consumer_offsets``,
    ``__share_group_state``, ``__transaction_state``) over ``table``; raises
    :class:`SchemaError` (:class:`UnknownRecordTypeError` for a type ``table`` lacks) with
    Kafka's message. ``known_versions_only``: a value version outside the schema is an error
    (Kafka 4.x's CoordinatorRecordSerde) instead of being read field by field (3.x)."""
    k = decode_key_with(table, key)
    record_type = k["type"]
    key_msg, value_msg = schemas_for(table, record_type)
    v = decode_value_with(table, value, record_type, known_versions_only=known_versions_only)
    if v is None:
        return CoordinatorRecord(record_type, key_msg, k["data"], value_msg, None, None)
    return CoordinatorRecord(record_type, key_msg, k["data"], value_msg, v["version"], v["data"])


def decode_value_with(table: dict[int, tuple[Message, Message]],
                      value: bytes | bytearray | memoryview | None, record_type: int, *,
                      known_versions_only: bool = False) -> DecodedValue | None:
    """``{"version": v, "name": ..., "data": {...}}`` of a value of ``record_type``; None for
    a tombstone (``known_versions_only`` as :func:`decode_record_with`)."""
    if value is None:
        return None
    buf = bytes(value)
    version = _read_version(buf, "value")
    _, value_msg = schemas_for(table, record_type)
    if known_versions_only and version not in value_msg.valid_versions:
        raise SchemaError(f"Found an unknown record version {version} for {record_type} type",
                          field="value.version")
    return {"version": version, "name": value_msg.name,
            "data": _read_body(value_msg, buf, version, "value")}


def missing_key_error(offset: int | None, decoder: str) -> SchemaError:
    """What kafka-dump-log aborts with on a record without a key."""
    where = offset if offset is not None else "?"
    return SchemaError(f"Failed to decode message at offset {where} using {decoder} "
                       "(message had a missing key)", field="key")


def format_record_with(table: dict[int, tuple[Message, Message]],
                       key: bytes | bytearray | memoryview | None,
                       value: bytes | bytearray | memoryview | None, *,
                       offset: int | None, decoder: str,
                       value_text: Callable[[CoordinatorRecord], str]
                       ) -> tuple[str | None, str | None]:
    """(key text, payload text) of a 3.x-style coordinator decoder: ``value_text`` renders a
    decoded value; errors as :func:`format_record` describes (``decoder`` names the decoder in
    the missing-key message)."""
    if key is None:
        raise missing_key_error(offset, decoder)
    try:
        rec = decode_record_with(table, key, value)
        if rec.value is None:
            return rec.key_json(), DELETE
        return rec.key_json(), value_text(rec)
    except SchemaError as e:
        return skipped_record_line(e, offset)


def decode_key(key: bytes | bytearray | memoryview,
               table: dict[int, tuple[Message, Message]] | None = None) -> DecodedKey:
    """``{"type": n, "name": "OffsetCommitKey", "data": {...}}`` for a record key; ``table``:
    the record types of one Kafka version (default: 3.x's ``RECORD_TYPES``;
    ``RECORD_TYPES_KAFKA_4_3`` for Kafka 4.3)."""
    return decode_key_with(RECORD_TYPES if table is None else table, key)


def _record_type_of(key: Any, table: dict[int, tuple[Message, Message]] | None = None
                    ) -> int | None:
    if key is None or isinstance(key, int):
        return key
    return decode_key(key, table)["type"]


def decode_value(value: bytes | bytearray | memoryview | None,
                 key: bytes | int | None = None,
                 table: dict[int, tuple[Message, Message]] | None = None) -> DecodedValue | None:
    """``{"version": v, "name": "OffsetCommitValue", "data": {...}}``; None for a tombstone.

    ``key`` (raw key bytes or the record type) selects the schema. Without it the value is
    tried as GroupMetadataValue, then OffsetCommitValue, and must be consumed exactly
    (a guess: pass the key whenever it is known).
    """
    if value is None:
        return None
    buf = bytes(value)
    version = _read_version(buf, "value")
    record_type = _record_type_of(key, table)
    if record_type is not None:
        return decode_value_with(RECORD_TYPES if table is None else table, buf, record_type)
    error: SchemaError | None = None
    for candidate in (GROUP_METADATA_VALUE, OFFSET_COMMIT_VALUE):
        try:
            data, end = read_message(candidate, buf, version, pos=2)
        except SchemaError as e:
            error = error or e
            continue
        if end == len(buf):
            return {"version": version, "name": candidate.name, "data": data}
    raise SchemaError("value is neither a GroupMetadataValue nor an OffsetCommitValue"
                      + (f" ({error.reason})" if error else ""), field="value")


def encode_key_with(table: dict[int, tuple[Message, Message]], record_type: int,
                    data: dict[str, Any]) -> bytes:
    """int16 record type + key body (the inverse of :func:`decode_key_with`)."""
    key_msg, _ = schemas_for(table, record_type)
    return fixed_bytes("int16", record_type) + write_message(key_msg, data, record_type,
                                                          path=key_msg.name)


def encode_value_with(table: dict[int, tuple[Message, Message]], record_type: int, version: int,
                      data: dict[str, Any] | None) -> bytes | None:
    """int16 version + value body; ``None`` data gives ``None`` (a tombstone)."""
    if data is None:
        return None
    _, value_msg = schemas_for(table, record_type)
    if not isinstance(version, int) or not -32768 <= version <= 32767:
        raise SchemaError(f"invalid version {version!r}", field="value.version")
    return fixed_bytes("int16", version) + write_message(value_msg, data, version,
                                                      path=value_msg.name)


def encode_key(record_type: int, data: dict[str, Any],
               table: dict[int, tuple[Message, Message]] | None = None) -> bytes:
    """int16 record type + key body (the inverse of :func:`decode_key`)."""
    return encode_key_with(RECORD_TYPES if table is None else table, record_type, data)


def encode_value(record_type: int, version: int, data: dict[str, Any] | None,
                 table: dict[int, tuple[Message, Message]] | None = None) -> bytes | None:
    """int16 version + value body; ``None`` data gives ``None`` (a tombstone)."""
    return encode_value_with(RECORD_TYPES if table is None else table, record_type, version,
                             data)


def _consumer_protocol_override(f: Field, value: Any, version: int) -> Any:
    """Replace member subscription/assignment bytes by their decoded JSON (DumpLogSegments)."""
    if f.key == "subscription":
        schema = CONSUMER_PROTOCOL_SUBSCRIPTION
    elif f.key == "assignment":
        schema = CONSUMER_PROTOCOL_ASSIGNMENT
    else:
        return None
    if value is None or len(value) < 2:
        return None
    inner_version = read_fixed("int16", value)
    try:
        data, _ = read_message(schema, value, inner_version, pos=2)
        return Raw(message_json(schema, data, inner_version))
    except SchemaError:
        return None  # Kafka swallows the error and keeps the base64 bytes


def key_json(record_type: int, data: dict[str, Any],
             table: dict[int, tuple[Message, Message]] | None = None) -> str:
    key_msg, _ = _schemas(record_type, table)
    return dumps({"type": str(record_type), "data": Raw(message_json(key_msg, data, record_type))})


def value_json(record_type: int, version: int, data: dict[str, Any],
               table: dict[int, tuple[Message, Message]] | None = None) -> str:
    _, value_msg = _schemas(record_type, table)
    override = None
    if value_msg is GROUP_METADATA_VALUE and data.get("protocolType") == CONSUMER_PROTOCOL_TYPE:
        override = _consumer_protocol_override
    return dumps({"version": str(version),
                  "data": Raw(message_json(value_msg, data, version, override))})


def format_record(key: bytes | bytearray | memoryview | None,
                  value: bytes | bytearray | memoryview | None, *,
                  offset: int | None = None,
                  table: dict[int, tuple[Message, Message]] | None = None
                  ) -> tuple[str | None, str | None]:
    """(key text, payload text) exactly as kafka-dump-log ``--offsets-decoder`` prints them
    (``table``: the record types of the Kafka version whose tool is mirrored).

    Bad records give Kafka's ``Unknown record type {t} at offset {o}, skipping.`` /
    ``Error at offset {o}, skipping. {message}`` as the key and no payload when ``offset`` is
    given; without ``offset`` a :class:`SchemaError` is raised instead. A missing key always
    raises (kafka-dump-log aborts on it).
    """
    return format_record_with(
        RECORD_TYPES if table is None else table, key, value, offset=offset,
        decoder="offset topic decoder",
        value_text=lambda rec: value_json(rec.record_type, rec.version, rec.value, table))  # type: ignore[arg-type]
