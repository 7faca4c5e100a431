"""Payload parsers: what kafka-dump-log prints as ``key:`` and ``payload:`` (DUMP_LOG.md 3.5).

A parser maps a record to ``(key_text | None, payload_text | None)``. The internal-topic
decoders are imported only when their flag is given, so plain dumps stay light.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any, Protocol

from segtools.errors import InputError, SchemaError, SegtoolsError
from segtools.primitives.java_utf8 import java_utf8_replace
from segtools.primitives.messages import read_fixed

Decoder = Callable[[bytes], Any]


class PayloadParser(Protocol):
    def parse(self, record: Any) -> tuple[str | None, str | None]: ...


def string_decoder(data: bytes) -> str:
    """org.apache.kafka.tools.api.StringDecoder: ``new String(bytes, UTF_8)``."""
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return java_utf8_replace(bytes(data))


def integer_decoder(data: bytes) -> str:
    """IntegerDecoder: big-endian int32 of the first 4 bytes (Java throws when shorter)."""
    if len(data) < 4:
        return f"<IntegerDecoder: {len(data)} byte(s), need 4>"
    return str(read_fixed("int32", data))


def long_decoder(data: bytes) -> str:
    """LongDecoder: big-endian int64 of the first 8 bytes."""
    if len(data) < 8:
        return f"<LongDecoder: {len(data)} byte(s), need 8>"
    return str(read_fixed("int64", data))


def default_decoder(data: bytes) -> str:
    """DefaultDecoder returns the byte[] which Java prints as ``[B@<identity hash>``; there is no
    identity hash to reproduce, so we print the hash of the bytes in the same shape."""
    return f"[B@{hash(bytes(data)) & 0x7FFFFFFF:x}"


#: Kafka's decoder class names (and the pre-3.8 kafka.serializer aliases) -> our functions
BUILTIN_DECODERS: dict[str, Decoder] = {}
for _pkg in ("org.apache.kafka.tools.api.", "kafka.serializer."):
    BUILTIN_DECODERS[_pkg + "StringDecoder"] = string_decoder
    BUILTIN_DECODERS[_pkg + "IntegerDecoder"] = integer_decoder
    BUILTIN_DECODERS[_pkg + "LongDecoder"] = long_decoder
    BUILTIN_DECODERS[_pkg + "DefaultDecoder"] = default_decoder
for _name in ("StringDecoder", "IntegerDecoder", "LongDecoder", "DefaultDecoder"):
    BUILTIN_DECODERS[_name] = BUILTIN_DECODERS["org.apache.kafka.tools.api." + _name]


def load_decoder(spec: str | None) -> Decoder:
    """Resolve ``--key-decoder-class``/``--value-decoder-class``: a Kafka decoder class name or
    ``module:callable`` (bytes -> str). Raises InputError when it cannot be loaded."""
    if spec is None or spec == "":
        return string_decoder
    builtin = BUILTIN_DECODERS.get(spec)
    if builtin is not None:
        return builtin
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"decoder {spec!r}: expected module:callable or a Kafka decoder class "
                         f"name ({', '.join(sorted(n for n in BUILTIN_DECODERS if '.' not in n))})")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            target = getattr(target, part)
    except Exception as exc:  # any import-time failure of user code is unusable input
        raise InputError(f"decoder {spec!r} cannot be loaded: {exc}") from None
    if not callable(target):
        raise InputError(f"decoder {spec!r} is not callable")
    return target


class DecoderMessageParser:
    """The default parser: key and value through their decoders, absent parts stay None."""

    def __init__(self, key_decoder: Decoder = string_decoder,
                 value_decoder: Decoder = string_decoder) -> None:
        self.key_decoder = key_decoder
        self.value_decoder = value_decoder
        self._fast = key_decoder is string_decoder and value_decoder is string_decoder

    def parse(self, record: Any) -> tuple[str | None, str | None]:
        key, value = record.key, record.value
        if self._fast:
            # str(buffer, "utf-8") decodes bytes and memoryviews without a copy; only bytes
            # that are not valid UTF-8 take Java's replacement path
            try:
                return (None if key is None else str(key, "utf-8"),
                        None if value is None else str(value, "utf-8"))
            except UnicodeDecodeError:
                return (None if key is None else string_decoder(key),
                        None if value is None else string_decoder(value))
        return (None if key is None else _call_decoder(self.key_decoder, key, record, "key"),
                None if value is None else _call_decoder(self.value_decoder, value, record, "value"))


def _call_decoder(decoder: Decoder, data: bytes, record: Any, what: str) -> str:
    try:
        return str(decoder(bytes(data)))
    except Exception as exc:  # a user decoder failing must not kill the dump
        return f"<{what} decoder failed at offset {record.offset}: {type(exc).__name__}: {exc}>"


class InternalTopicParser:
    """Adapter over ``segtools.internal_topics.<module>.format_record(key, value, offset=)``, which
    returns ``(key_text | None, payload_text | None)`` exactly as Kafka prints them and raises
    SchemaError where Kafka's tool would abort (the dump reports it and goes on)."""

    def __init__(self, module: str, kafka_aborts: bool = False) -> None:
        self.module = module
        #: where Kafka's tool dies on the record, raise (the dump reports a located error and
        #: goes on) instead of printing an ``Error at offset`` line Kafka never prints
        self.kafka_aborts = kafka_aborts
        try:
            mod = importlib.import_module(f"segtools.internal_topics.{module}")
            self._format: Callable[..., tuple[str | None, str | None]] = mod.format_record
        except (ImportError, AttributeError) as exc:
            raise InputError(f"decoder segtools.internal_topics.{module} is not available: {exc}") from None

    def parse(self, record: Any) -> tuple[str | None, str | None]:
        try:
            if self.kafka_aborts:
                return self._format(record.key, record.value)
            return self._format(record.key, record.value, offset=record.offset)
        except SegtoolsError:
            raise
        except Exception as exc:  # a decoder bug must still come out as a located error
            raise SchemaError(f"cannot decode record at offset {record.offset}: "
                              f"{type(exc).__name__}: {exc}", field="value") from None


class ClusterMetadataParser:
    """--cluster-metadata-decoder: never a key; the payload is the metadata record's JSON or
    ``Error at {offset}, skipping. {message}`` (no word "offset", as Kafka)."""

    def __init__(self, tag_count_checks: bool = False) -> None:
        try:
            from segtools.internal_topics.metadata import format_record
        except ImportError as exc:
            raise InputError(f"the cluster metadata decoder is not available: {exc}") from None
        self._format = format_record
        self.tag_count_checks = tag_count_checks  # Kafka 4.4's generated readers

    def parse(self, record: Any) -> tuple[str | None, str | None]:
        from segtools.primitives.messages import tag_count_checks

        try:
            with tag_count_checks(self.tag_count_checks):
                return None, self._format(record.value, offset=record.offset)
        except Exception as exc:  # format_record reports errors itself; this is a last resort
            return None, f"Error at {record.offset}, skipping. {exc}"


_JAVA_STRING_BOUNDS = re.compile(r"offset (\d+), count (\d+), length (\d+)")


#: a note about what a decoder could not show: (kind, fields, line, is_problem)
NoteSink = Callable[[str, dict[str, Any], str, bool], None]

#: bytes of a record part shown in a note; longer parts are cut (the note says how long)
NOTE_HEX_BYTES = 256


def _hex(data: Any) -> str:
    raw = bytes(data)
    if len(raw) <= NOTE_HEX_BYTES:
        return raw.hex()
    return f"{raw[:NOTE_HEX_BYTES].hex()}... ({len(raw)} bytes)"


class CoordinatorKafka4Parser:
    """Kafka 4.x's ``CoordinatorRecordMessageParser`` (``--offsets-decoder``,
    ``--share-group-state-decoder``, ``--transaction-log-decoder``;
    tools/src/main/java/org/apache/kafka/tools/DumpLogSegments.java over coordinator-common's
    CoordinatorRecordSerde): key
    ``{"type":"<t>","data":{...}}``, value ``{"version":"<v>","data":{...}}`` or ``<DELETE>``.

    Kafka's wording: a missing key aborts the tool (``Failed to decode message at offset {o}
    using the specified decoder (message had a missing key)``); an unknown key type gives
    ``Unknown record type {t} at offset {o}, skipping.``; a value version outside the schema
    ``Error at offset {o}, skipping. Found an unknown record version {v} for {t} type``; any
    other decoding failure ``Error at offset {o}, skipping. {message}``. Unknown tagged fields
    are dropped silently by Kafka's JSON converters.

    What Kafka hides, we also report when ``note`` is set (the runner sets it): the hex of a
    record whose type has no schema and of tagged fields no schema names, as notes that do not
    change the exit status (data of a newer Kafka is not corruption); stdout stays Kafka's
    text."""

    def __init__(self, table: dict[int, tuple[Any, Any]], topic: str,
                 value_json: Callable[[int, int, dict[str, Any]], str] | None = None) -> None:
        from segtools.internal_topics import consumer_offsets as co
        from segtools.internal_topics.json_render import Raw, dumps, message_json

        self._co = co
        self.table = table
        self.topic = topic
        self._value_json = value_json
        self._raw, self._dumps, self._message_json = Raw, dumps, message_json
        self.note: NoteSink | None = None
        #: Kafka 4.4's generated readers check tagged-field counts (build_parser sets it)
        self.tag_count_checks = False

    def parse(self, record: Any) -> tuple[str | None, str | None]:
        from segtools.primitives.messages import tag_count_checks

        try:
            with tag_count_checks(self.tag_count_checks):
                return self._parse(record)
        except SegtoolsError:
            raise
        except Exception as exc:  # a decoder bug must still come out as a located error
            raise SchemaError(f"cannot decode record at offset {record.offset}: "
                              f"{type(exc).__name__}: {exc}", field="value") from None

    def _parse(self, record: Any) -> tuple[str | None, str | None]:
        co = self._co
        offset = record.offset
        if record.key is None:
            raise co.missing_key_error(offset, "the specified decoder")
        try:
            rec = co.decode_record_with(self.table, record.key, record.value,
                                        known_versions_only=True)
            self._note_tags(record, rec)
            if rec.value is None:
                return rec.key_json(), co.DELETE
            if self._value_json is not None:
                return rec.key_json(), self._value_json(rec.record_type, rec.version, rec.value)
            return rec.key_json(), self._dumps({"version": str(rec.version), "data": self._raw(
                self._message_json(rec.value_msg, rec.value, rec.version))})
        except co.UnknownRecordTypeError as e:
            if self.note is not None:
                value = "null" if record.value is None else _hex(record.value)
                self.note("unknown_record_type", {
                    "offset": offset, "record_type": e.record_type, "topic": self.topic,
                    "key_hex": bytes(record.key).hex(),
                    "value_hex": None if record.value is None else bytes(record.value).hex()},
                    f"record type {e.record_type} at offset {offset} has no {self.topic} "
                    f"schema in Kafka 4.3 (kafka-dump-log prints only \"Unknown record type\"): "
                    f"key hex {_hex(record.key)}, value hex {value}", False)
            return co.skipped_record_line(e, offset)
        except SchemaError as e:
            line, payload = co.skipped_record_line(e, offset)
            if line is not None:
                line = _JAVA_STRING_BOUNDS.sub(
                    lambda m: f"Error reading byte array of {m.group(2)} byte(s): only "
                              f"{int(m.group(3)) - int(m.group(1))} byte(s) available.", line)
                line = line.replace("available..", "available.")
            return line, payload

    def _note_tags(self, record: Any, rec: Any) -> None:
        if self.note is None:
            return
        parts = [(rec.key_msg.name, rec.key)]
        if rec.value is not None:
            parts.append((rec.value_msg.name, rec.value))
        _note_unknown_tags(self.note, record.offset, rec.record_type, self.topic, parts,
                           "kafka-dump-log leaves it out of the JSON")


def _note_unknown_tags(note: NoteSink, offset: int, record_type: int, topic: str,
                       parts: list[tuple[str, dict[str, Any]]], hidden: str) -> None:
    """One note per tagged field that no Kafka 4.3 schema names in the decoded ``parts``
    ((message name, data)); ``hidden`` says how Kafka's tool hides it."""
    from segtools.primitives.messages import unknown_tagged_fields

    for name, data in parts:
        for path, tag, raw in unknown_tagged_fields(data):
            where = f"{name}.{path}" if path else name
            note("unknown_tagged_field", {
                "offset": offset, "record_type": record_type, "topic": topic,
                "where": where, "tag": tag, "hex": raw.hex()},
                f"offset {offset}: {where} has tagged field {tag} that Kafka 4.3's "
                f"schema does not name ({hidden}): hex {_hex(raw)} ({len(raw)} bytes)", False)


class OffsetsKafka4Parser(CoordinatorKafka4Parser):
    """--offsets-decoder of Kafka 4.x over the group coordinator record types of ``release``
    (``group_schemas.record_types_of``; 4.3's by default); consumer-protocol members of a
    GroupMetadataValue are decoded as in 3.x (``consumer_offsets.value_json``)."""

    def __init__(self, release: tuple[int, int] = (4, 3)) -> None:
        from segtools.internal_topics import consumer_offsets as co
        from segtools.internal_topics.group_schemas import record_types_of

        table = record_types_of(release)
        super().__init__(table, "__consumer_offsets",
                         lambda t, v, d: co.value_json(t, v, d, table))


class ShareGroupStateKafka4Parser(CoordinatorKafka4Parser):
    """--share-group-state-decoder of Kafka 4.x (ShareCoordinatorRecordSerde) over the share
    coordinator record types of ``release`` (``share_group_state.record_types_of``)."""

    def __init__(self, release: tuple[int, int] = (4, 3)) -> None:
        from segtools.internal_topics.share_group_state import record_types_of

        super().__init__(record_types_of(release), "__share_group_state")


class RemoteLogMetadataParser:
    """--remote-log-metadata-decoder: never a key; the payload is the Java ``toString()`` of the
    RemoteLogMetadata Kafka's RemoteLogMetadataSerde reads from the value, or
    ``Error at offset {offset}, skipping. {message}`` (``segtools.internal_topics.remote_log_metadata``)."""

    def __init__(self) -> None:
        from segtools.internal_topics import remote_log_metadata

        self._rlm = remote_log_metadata
        #: set by the runner: hex notes for an unknown api key / tagged field (as
        #: CoordinatorKafka4Parser; Kafka prints only its error line / drops the field)
        self.note: NoteSink | None = None

    def parse(self, record: Any) -> tuple[str | None, str | None]:
        try:
            return self._parse(record)
        except Exception as exc:  # a decoder bug: Kafka's error-line shape, never a traceback
            return None, f"Error at offset {record.offset}, skipping. {type(exc).__name__}: {exc}"

    def _parse(self, record: Any) -> tuple[str | None, str | None]:
        rlm, offset = self._rlm, record.offset
        try:
            api_key, _, data = rlm.decode_record(record.value)
            text = rlm.to_string(api_key, data)
        except SchemaError as e:
            if self.note is not None and e.field == "type" and record.value is not None:
                self.note("unknown_record_type", {
                    "offset": offset, "topic": "__remote_log_metadata",
                    "key_hex": None, "value_hex": bytes(record.value).hex()},
                    f"offset {offset} has no __remote_log_metadata schema in Kafka 4.3 "
                    f"(kafka-dump-log prints only its error line): value hex {_hex(record.value)}",
                    False)
            return None, f"Error at offset {offset}, skipping. {e.reason}"
        if self.note is not None:
            _note_unknown_tags(self.note, offset, api_key, "__remote_log_metadata",
                               [(rlm.RECORD_TYPES[api_key].name, data)],
                               "kafka-dump-log does not print it")
        return None, text


class TransactionLogJsonParser(CoordinatorKafka4Parser):
    """--transaction-log-decoder of Kafka 4.1+: the coordinator-record parser over
    TransactionCoordinatorRecordSerde (record type 0 only), printing ``{"type":"0","data":{...}}``
    keys and ``{"version":"v","data":{...}}`` values (3.x and 4.0 printed
    ``transaction_metadata::...``). DumpLogSegments.TransactionLogMessageParser is a
    CoordinatorRecordMessageParser, so the wording (and our stderr notes) are those of
    CoordinatorKafka4Parser. ``status_names``: Kafka 4.4 prints ``transactionStatus`` as the
    state's name (``"Ongoing"``) where 4.1-4.3 print its id."""

    def __init__(self, status_names: bool = True) -> None:
        from segtools.internal_topics import transaction_state as ts
        from segtools.internal_topics.json_render import Raw, dumps, to_node

        msg = ts.TRANSACTION_LOG_VALUE

        def value_json(record_type: int, version: int, data: dict[str, Any]) -> str:
            node = to_node(msg, data, version)
            node["transactionStatus"] = ts.status_json(data["transactionStatus"])
            return dumps({"version": str(version), "data": Raw(dumps(node))})

        super().__init__({0: (ts.TRANSACTION_LOG_KEY, msg)}, "__transaction_state",
                         value_json if status_names else None)


def build_parser(*, offsets_decoder: bool = False, transaction_log_decoder: bool = False,
                 cluster_metadata_decoder: bool = False, key_decoder_class: str | None = None,
                 value_decoder_class: str | None = None, kafka4: bool = True,
                 remote_log_metadata_decoder: bool = False,
                 share_group_state_decoder: bool = False,
                 kafka_version: str = "4.4") -> PayloadParser:
    """Kafka's precedence: offsets -> transaction log -> cluster metadata -> remote log
    metadata -> share group state -> decoder classes (DumpLogSegments' parser choice).
    ``kafka_version`` (one of options.KAFKA_VERSIONS) is the Kafka whose record types and
    decoder text are printed; ``kafka4=False`` asks for 3.x's transaction text whatever the
    version (the JSON outputs keep that shape)."""
    from segtools.dump.options import release_tuple

    release = release_tuple(kafka_version)
    checks = release >= (4, 4)
    coordinator: CoordinatorKafka4Parser | None = None
    if offsets_decoder and release >= (4, 0):
        coordinator = OffsetsKafka4Parser(release)
    elif offsets_decoder:
        return InternalTopicParser("consumer_offsets")
    elif transaction_log_decoder and kafka4 and release >= (4, 1):
        # the coordinator JSON since 4.1 (the Scala tool of 4.1/4.2 prints it too)
        coordinator = TransactionLogJsonParser(status_names=release >= (4, 4))
    elif share_group_state_decoder and not (transaction_log_decoder or cluster_metadata_decoder
                                            or remote_log_metadata_decoder):
        # no 3.x release has this decoder: with --kafka-version 3.9, 4.0's types
        coordinator = ShareGroupStateKafka4Parser(max(release, (4, 0)))
    if coordinator is not None:
        coordinator.tag_count_checks = checks
        return coordinator
    if transaction_log_decoder:
        # the Scala TransactionLog of 3.x/4.0 dies on what it cannot read (kafka4=False: the
        # JSON outputs, which report it per record instead)
        return InternalTopicParser("transaction_state", kafka_aborts=kafka4)
    if cluster_metadata_decoder:
        return ClusterMetadataParser(tag_count_checks=checks)
    if remote_log_metadata_decoder:
        return RemoteLogMetadataParser()
    return DecoderMessageParser(load_decoder(key_decoder_class), load_decoder(value_decoder_class))
