"""KRaft ``__cluster_metadata`` record values: decode, encode and kafka-dump-log JSON.

A metadata record value is ``uvarint frameVersion (1) | uvarint apiKey | uvarint version |
flexible message body`` (``AbstractApiMessageSerde``). kafka-dump-log
``--cluster-metadata-decoder`` prints ``{"type":"TOPIC_RECORD","version":0,"data":{...}}`` or,
on any error, ``Error at {offset}, skipping. {message}``; :func:`format_record` returns either
line (the error form needs ``offset``).

Example::

    >>> from segtools.internal_topics import metadata
    >>> raw = metadata.encode_record("NO_OP_RECORD", 0, {})
    >>> raw.hex()
    '01140000'
    >>> metadata.format_record(raw)
    '{"type":"NO_OP_RECORD","version":0,"data":{}}'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from segtools.errors import SchemaError
from segtools.formats.messages import Message
from segtools.internal_topics.json_render import Raw, dumps, message_json
from segtools.internal_topics.metadata_schemas import BY_API_KEY, BY_TYPE_NAME, type_name
from segtools.primitives.messages import Reader, _ReadError, read_message, uvarint, write_message

FRAME_VERSION = 1
SHORT_MAX = 32767


def _frame_field(r: Reader, entity: str) -> int:
    try:
        value = r.uvarint(entity)
    except _ReadError:
        raise SchemaError(f"Error while reading {entity}", field=entity) from None
    if value > SHORT_MAX:
        # Java reads the varint into an int; anything above Short.MAX_VALUE is rejected, a
        # negative int (a 5-byte varint) passes and is cast to short
        raise SchemaError(f"Value for {entity} was too large.", field=entity)
    value &= 0xFFFF
    return value - 0x10000 if value > SHORT_MAX else value


def read_frame_header(data: bytes) -> tuple[Reader, int, int]:
    """``AbstractApiMessageSerde.read``'s frame: (reader at the body, api key, version);
    shared by every serde built on it (metadata records, remote log metadata)."""
    r = Reader(data)
    frame = _frame_field(r, "frame version")
    if frame == 0:
        raise SchemaError("Could not deserialize metadata record with frame version 0. Note that "
                          "upgrades from the preview release of KRaft in 2.8 to newer versions "
                          "are not supported.", field="frame version")
    if frame != FRAME_VERSION:
        raise SchemaError("Could not deserialize metadata record due to unknown frame version "
                          f"{frame}(only frame version {FRAME_VERSION} is supported)",
                          field="frame version")
    api_key = _frame_field(r, "type")
    version = _frame_field(r, "version")
    return r, api_key, version


def decode_framed(value: bytes | bytearray | memoryview | None, table: Mapping[int, Message], *,
                  null_reason: str, null_field: str) -> tuple[int, int, Message, dict[str, Any]]:
    """(api key, version, schema, data) of one ``AbstractApiMessageSerde`` value whose api key
    ``table`` maps to a schema; shared by every serde built on it. The serdes differ only in
    what a null value throws (``null_reason``/``null_field``: Kafka's text for that serde).

    Raises :class:`SchemaError`; its ``reason`` is the message Kafka's serde would throw."""
    if value is None:
        raise SchemaError(null_reason, field=null_field)
    data = bytes(value)
    r, api_key, version = read_frame_header(data)
    msg = table.get(api_key)
    if msg is None:
        raise SchemaError("org.apache.kafka.common.errors.UnsupportedVersionException: "
                          f"Unknown metadata id {api_key}", field="type")
    try:
        out, pos = read_message(msg, data, version, pos=r.pos)
    except SchemaError as e:
        # Kafka's MetadataParseException keeps only this text; the cause goes to the path
        raise SchemaError(f"Failed to deserialize record with type {api_key}",
                          field=f"{msg.name}.{e.field}" if e.field else msg.name) from e
    if pos < len(data):
        raise SchemaError(f"Found {len(data) - pos} byte(s) of garbage after {api_key}",
                          field=msg.name)
    return api_key, version, msg, out


def decode_record(value: bytes | bytearray | memoryview | None) -> tuple[str, int, dict[str, Any]]:
    """Decode one metadata record value into (type name, version, data dict).

    Raises :class:`SchemaError`; its ``reason`` is the message Kafka's serde would throw.
    """
    # the serde reads the frame version from a null buffer: the NullPointerException is
    # reported as a failure to read the frame version
    _, version, msg, out = decode_framed(value, BY_API_KEY, null_reason="Error while reading "
                                         "frame version", null_field="frame version")
    return type_name(msg.name), version, out


def encode_record(type_name_: str, version: int, data: dict[str, Any]) -> bytes:
    """Frame version 1, unsigned varints for api key and version, then the message body.

    ``type_name_`` is the enum name (``"TOPIC_RECORD"``) or the record name (``"TopicRecord"``).
    Uuids may be given as Kafka text (base64url), :class:`uuid.UUID` or 16 bytes.
    """
    msg = BY_TYPE_NAME.get(type_name_) or BY_TYPE_NAME.get(type_name(type_name_))
    if msg is None:
        raise SchemaError(f"unknown metadata record type {type_name_!r}", field="type")
    if not isinstance(version, int) or not 0 <= version <= SHORT_MAX:
        raise SchemaError(f"invalid version {version!r}", field="version")
    if version not in msg.valid_versions:
        raise SchemaError(f"{msg.name} has no version {version} "
                          f"(valid {msg.valid_versions.low}-{msg.valid_versions.high})",
                          field="version")
    body = write_message(msg, data, version, path=msg.name)
    return uvarint(FRAME_VERSION) + uvarint(msg.api_key) + uvarint(version) + body  # type: ignore[arg-type]


def record_json(type_name_: str, version: int, data: dict[str, Any]) -> str:
    """The ``{"type":…,"version":…,"data":…}`` line for an already decoded record."""
    msg = BY_TYPE_NAME[type_name_]
    return dumps({"type": type_name_, "version": version,
                  "data": Raw(message_json(msg, data, version))})


def format_record(value: bytes | bytearray | memoryview | None, *, offset: int | None = None) -> str:
    """The payload kafka-dump-log ``--cluster-metadata-decoder`` prints for this value.

    On bad input: when ``offset`` is given, returns Kafka's ``Error at {offset}, skipping.
    {message}`` line; otherwise raises :class:`SchemaError` (``reason`` = Kafka's message).
    """
    try:
        name, version, data = decode_record(value)
    except SchemaError as e:
        if offset is None:
            raise
        return f"Error at {offset}, skipping. {e.reason}"
    return record_json(name, version, data)
