"""``partition.metadata``, ``meta.properties``, ``quorum-state``, ``.kafka_cleanshutdown``.

Spec (FORMATS.md section 10; ``PartitionMetadataFile.java``, ``PartitionMetadataReadBuffer.java``,
``MetaProperties.java``, ``PropertiesUtils.java``, ``FileQuorumStateStore.java``,
``CleanShutdownFileHandler.java``, ``Uuid.java``)::

    partition.metadata   "version: 0\\ntopic_id: <uuid>"   no trailing newline; lines split on
                         ":\\s+"; version >= 0; the all-zero UUID is invalid
    meta.properties      java.util.Properties.store: "#<comment>" and "#<date>" lines, then
                         key=value lines; keys version (missing = 0), cluster.id,
                         broker.id (v0, ZooKeeper), node.id (v1, KRaft, required), directory.id
    quorum-state         JSON of QuorumStateData plus "data_version" (in __cluster_metadata-0)
    .kafka_cleanshutdown JSON {"version":0,"brokerEpoch":N} (log-dir root)

UUIDs are 16 bytes shown as URL-safe base64 without padding (22 characters). The
declarations below parse by Kafka's reading rules and build the canonical form; production
reads the files through them (``segtools.files.checkpoints``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from construct import Construct, Container, GreedyRange
from construct.core import stream_read_entire

from segtools.errors import display_path
from segtools.formats.primitives import (
    LocatedError,
    base64url_to_uuid,
    context_value,
    uuid_to_base64url,
)
from segtools.formats.text_lines import KafkaLines, Line, TextLine, parse_java_int

__all__ = [
    "PartitionMetadataText", "PropertiesLines", "PropertiesFile", "JsonDocument",
    "JsonObjectDocument", "CleanShutdownDocument", "PARTITION_METADATA",
    "META_PROPERTIES", "QUORUM_STATE", "CLEAN_SHUTDOWN", "LOCK_FILE", "BOOTSTRAP_CHECKPOINT",
    "PARTITION_METADATA_VERSION", "ZERO_UUID", "METADATA_TOPIC_ID", "META_PROPERTIES_KEYS",
    "uuid_to_base64url", "base64url_to_uuid",
]

PARTITION_METADATA = "partition.metadata"
META_PROPERTIES = "meta.properties"
QUORUM_STATE = "quorum-state"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
LOCK_FILE = ".lock"
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
PARTITION_METADATA_VERSION = 0
#: reserved UUIDs (Uuid.ZERO_UUID, Uuid.ONE_UUID = the __cluster_metadata topic id)
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
#: meta.properties keys (MetaProperties.java)
META_PROPERTIES_KEYS = ("version", "cluster.id", "broker.id", "node.id", "directory.id")

_COLON_SPACES = re.compile(r":\s+")


def _kafka_uuid(text: str) -> str:
    """``Uuid.fromString`` (Java's URL-safe decoder also takes the padded form), as base64url."""
    if len(text) == 24 and text.endswith("=="):
        text = text[:-2]
    return uuid_to_base64url(base64url_to_uuid(text))


class _PartitionMetadata(Construct):  # type: ignore[misc]  # construct ships no annotations
    r"""``partition.metadata``: built exactly as ``PartitionMetadataFile`` writes it
    (``version: N\ntopic_id: <uuid>``, no trailing newline), parsed by
    ``PartitionMetadataReadBuffer``'s rules: lines as ``readLine`` splits them, each split on
    ``:\s+`` into two parts, version an int >= 0, topic id a non-zero UUID. Parse keyword
    ``filename`` (quoted in Kafka's messages); errors are :class:`LocatedError` with
    ``field="line N"``.
    """

    def _parse(self, stream: Any, context: Any, path: str) -> Container:
        start = stream.tell()
        lines: list[TextLine] = KafkaLines._parsereport(stream, context, path)
        end = stream.tell()
        shown = display_path(str(context_value(context, "filename", "")))

        def malformed(line: TextLine) -> LocatedError:
            return LocatedError(f"Malformed line in checkpoint file [{shown}]: {line.text}",
                                path=path, position=line.position, field=f"line {line.number}")

        if not lines:
            raise LocatedError("empty partition metadata file", path=path, position=start,
                               field="line 1")
        parts = _COLON_SPACES.split(lines[0].text)
        if len(parts) != 2:
            raise malformed(lines[0])
        try:
            version = parse_java_int(parts[1], 32)
        except ValueError:
            raise malformed(lines[0]) from None
        if version < 0:
            raise LocatedError(
                f"Unrecognized version of partition metadata file ({shown}): {version}",
                path=path, position=lines[0].position, field="line 1", actual=version)
        if len(lines) < 2:
            raise LocatedError("partition metadata file has no topic_id line", path=path,
                               position=end, field="line 2")
        parts = _COLON_SPACES.split(lines[1].text)
        if len(parts) != 2:
            raise malformed(lines[1])
        try:
            topic_id = _kafka_uuid(parts[1])
        except ValueError as exc:
            raise LocatedError(f"invalid topic ID: {exc}", path=path,
                               position=lines[1].position, field="line 2") from None
        if topic_id == ZERO_UUID:
            raise LocatedError(f"Invalid topic ID in partition metadata file ({shown})",
                               path=path, position=lines[1].position, field="line 2")
        return Container(version=version, topic_id=topic_id)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        topic_id = uuid_to_base64url(base64url_to_uuid(obj["topic_id"]))
        stream.write(f"version: {int(obj['version'])}\ntopic_id: {topic_id}".encode())
        return obj


#: ``partition.metadata``: canonical when built, Kafka's reading rules when parsed
PartitionMetadataText = _PartitionMetadata()

#: a properties file as its lines (comments included); key/value meaning: :data:`PropertiesFile`
PropertiesLines = GreedyRange(Line)

_PROP_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_HEX = frozenset("0123456789abcdefABCDEF")


class _Properties(Construct):  # type: ignore[misc]  # construct ships no annotations
    """``java.util.Properties.load`` over :data:`KafkaLines` -> ``dict`` (later keys win):
    ``#``/``!`` comment and blank lines skipped, leading whitespace dropped, an odd number of
    trailing backslashes continues the logical line, the key ends at the first unescaped
    ``=``, ``:`` or whitespace, one separator is skipped, escapes (``\\t``, ``\\uXXXX`` ...)
    resolved; a bad ``\\uXXXX`` is a :class:`LocatedError` naming the line. Building writes
    ``key=value`` lines (the reader's writer adds the comment lines)."""

    def _parse(self, stream: Any, context: Any, path: str) -> dict[str, str]:
        lines: list[TextLine] = KafkaLines._parsereport(stream, context, path)
        props: dict[str, str] = {}
        for line, logical in self._logical_lines(lines):
            i = 0
            while i < len(logical):
                ch = logical[i]
                if ch == "\\":
                    i += 2
                    continue
                if ch in "=: \t\f":
                    break
                i += 1
            key = logical[:i]
            rest = logical[i:].lstrip(" \t\f")
            if rest[:1] in ("=", ":"):      # one separator, possibly after whitespace
                rest = rest[1:].lstrip(" \t\f")
            props[self._unescape(key, line, path)] = self._unescape(rest, line, path)
        return props

    @staticmethod
    def _logical_lines(lines: list[TextLine]) -> list[tuple[TextLine, str]]:
        out: list[tuple[TextLine, str]] = []
        pending: tuple[TextLine, str] | None = None
        for line in lines:
            content = line.text.lstrip(" \t\f")
            if pending is None:
                if not content or content[0] in "#!":
                    continue
                start, acc = line, content
            else:
                start, acc = pending[0], pending[1] + content
                pending = None
            trailing = len(acc) - len(acc.rstrip("\\"))
            if trailing % 2 == 1:      # an odd number of backslashes continues the line
                pending = (start, acc[:-1])
                continue
            out.append((start, acc))
        if pending is not None:
            out.append(pending)
        return out

    @staticmethod
    def _unescape(text: str, line: TextLine, path: str) -> str:
        out = []
        i = 0
        while i < len(text):
            ch = text[i]
            if ch == "\\" and i + 1 < len(text):
                nxt = text[i + 1]
                if nxt == "u":
                    digits = text[i + 2:i + 6]
                    if len(digits) != 4 or not _HEX.issuperset(digits):
                        raise LocatedError("Malformed \\uxxxx encoding", path=path,
                                           position=line.position, field=f"line {line.number}")
                    out.append(chr(int(digits, 16)))
                    i += 6
                    continue
                out.append(_PROP_ESCAPES.get(nxt, nxt))
                i += 2
                continue
            out.append(ch)
            i += 1
        return "".join(out)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        lines = [f"{_escape_property(str(k), True)}={_escape_property(str(v), False)}"
                 for k, v in obj.items()]
        KafkaLines._build(lines, stream, context, path)
        return obj


def _escape_property(text: str, is_key: bool) -> str:
    """``Properties.saveConvert`` without unicode escaping (``store(Writer, ...)``)."""
    out = []
    for i, ch in enumerate(text):
        if ch == " ":
            out.append("\\ " if is_key or i == 0 else " ")
        elif ch in "\\=:#!":
            out.append("\\" + ch)
        elif ch in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[ch])
        else:
            out.append(ch)
    return "".join(out)


#: ``meta.properties`` (any Java properties file) as a ``dict``
PropertiesFile = _Properties()


class _Json(Construct):  # type: ignore[misc]  # construct ships no annotations
    """A JSON document in UTF-8 (Jackson's default output when built: no spaces, key order
    kept). ``object_only``: anything but an object is an error; ``blank_is_none``: a file of
    whitespace only parses as None (``.kafka_cleanshutdown`` before 3.7 is empty). Parse
    keyword ``what`` names the file in the messages."""

    def __init__(self, *, object_only: bool = False, blank_is_none: bool = False) -> None:
        super().__init__()
        self.object_only = object_only
        self.blank_is_none = blank_is_none

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        start = stream.tell()
        what = context_value(context, "filekind", "JSON document")
        data: bytes = stream_read_entire(stream, path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise LocatedError(f"invalid UTF-8 in {what}", path=path, position=start + exc.start,
                               field=f"line {line}") from None
        if self.blank_is_none and not text.strip():
            return None
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LocatedError(f"invalid JSON in {what}: {exc.msg}", path=path,
                               position=start + len(text[:exc.pos].encode("utf-8")),
                               field=f"line {exc.lineno}") from None
        except RecursionError:
            raise LocatedError(f"JSON in {what} is nested too deeply", path=path) from None
        if self.object_only and not isinstance(value, dict):
            raise LocatedError(f"{what} is not a JSON object", path=path, position=start,
                               field="line 1", actual=type(value).__name__)
        return value

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        stream.write(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
        return obj


#: any JSON document
JsonDocument = _Json()
#: ``quorum-state``: a JSON object
JsonObjectDocument = _Json(object_only=True)
#: ``.kafka_cleanshutdown``: a JSON object, or blank (brokers before 3.7)
CleanShutdownDocument = _Json(object_only=True, blank_is_none=True)
