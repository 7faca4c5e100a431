"""Readers and atomic writers for the text files of a log dir (FORMATS.md sections 9-10).

* offset checkpoints (``replication-offset-checkpoint``, ``recovery-point-offset-checkpoint``,
  ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``) and ``leader-epoch-checkpoint``:
  ``version``, ``count``, entry lines (grammar in :mod:`segtools.formats.checkpoints`);
* ``partition.metadata``, ``meta.properties``, ``quorum-state``, ``.kafka_cleanshutdown``.

Readers follow Kafka's ``CheckpointFile`` rules and raise :class:`CheckpointFormatError` naming
the file, the line number (``field="line N"``) and its byte position. Writers do what Kafka does:
write ``<name>.tmp``, fsync, rename over the target.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid as _uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from segtools.errors import CheckpointFormatError, InputError, display_path, input_path
from segtools.formats.checkpoints import (
    LEADER_EPOCH_CHECKPOINT_VERSION,
    OFFSET_CHECKPOINT_VERSION,
    TMP_SUFFIX,
)
from segtools.formats.primitives import base64url_to_uuid, uuid_to_base64url
from segtools.formats.root_files import PARTITION_METADATA_VERSION, ZERO_UUID
from segtools.formats.text_lines import java_split, parse_java_int

__all__ = [
    "OffsetCheckpoint", "EpochEntry", "PartitionMetadata", "CleanShutdown",
    "read_offset_checkpoint", "read_leader_epoch_checkpoint", "read_partition_metadata",
    "read_meta_properties", "parse_meta_properties", "read_quorum_state", "read_clean_shutdown",
    "write_offset_checkpoint", "write_leader_epoch_checkpoint", "write_partition_metadata",
    "write_meta_properties", "write_quorum_state", "uuid_to_base64url", "base64url_to_uuid",
    "atomic_write",
]

PathLike = str | os.PathLike[str]
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
#: larger "text files" are refused rather than read into memory (real ones are kilobytes)
MAX_TEXT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class OffsetCheckpoint:
    """A root offset checkpoint. ``version`` is None for an empty file (Kafka: no entries)."""

    version: int | None
    entries: dict[tuple[str, int], int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EpochEntry:
    """One ``leader-epoch-checkpoint`` line: the first offset written in ``epoch``."""

    epoch: int
    start_offset: int


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """``partition.metadata``: ``topic_id`` as Kafka prints it (base64url, 22 characters)."""

    version: int
    topic_id: str

    @property
    def topic_uuid(self) -> _uuid.UUID:
        """The topic id as a :class:`uuid.UUID`."""
        return base64url_to_uuid(self.topic_id)


@dataclass(frozen=True, slots=True)
class CleanShutdown:
    """``.kafka_cleanshutdown``: JSON ``{"version":0,"brokerEpoch":N}`` since 3.7, empty before."""

    version: int | None
    broker_epoch: int | None


# ---------------------------------------------------------------------------------------- reading

def _read_text(path: PathLike, what: str) -> tuple[str, str]:
    path = input_path(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_TEXT_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read {what} {display_path(path)}: {exc.strerror or exc}") from exc
    if len(data) > MAX_TEXT_BYTES:
        raise CheckpointFormatError(f"{what} is larger than {MAX_TEXT_BYTES} bytes", path=path,
                                    position=MAX_TEXT_BYTES)
    try:
        return path, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CheckpointFormatError(f"invalid UTF-8 in {what}", path=path, position=exc.start,
                                    field=f"line {line}") from None


def _lines(text: str) -> list[tuple[int, int, str]]:
    """(line number, byte position, text) per line, split like ``BufferedReader.readLine``."""
    out: list[tuple[int, int, str]] = []
    pos = 0
    number = 1
    for match in _LINE_BREAK.finditer(text):
        out.append((number, pos, text[pos:match.start()]))
        pos = match.end()
        number += 1
    if pos < len(text):
        out.append((number, pos, text[pos:]))
    # byte positions: convert character offsets (only differs for non-ASCII text), one pass
    if not text.isascii():
        converted = []
        char_pos = byte_pos = 0
        for n, p, s in out:
            byte_pos += len(text[char_pos:p].encode("utf-8"))
            char_pos = p
            converted.append((n, byte_pos, s))
        out = converted
    return out


def _malformed(path: str, line: tuple[int, int, str]) -> CheckpointFormatError:
    number, pos, content = line
    return CheckpointFormatError(f"Malformed line in checkpoint file [{display_path(path)}]: {content}",
                                 path=path, position=pos, field=f"line {number}")


def _read_checkpoint(path: PathLike, expected_version: int, entry_fields: int,
                     what: str) -> tuple[int | None, list[tuple[tuple[int, int, str], list[str]]]]:
    path, text = _read_text(path, what)
    lines = _lines(text)
    if not lines:
        return None, []
    try:
        version = parse_java_int(lines[0][2], 32)
    except ValueError:
        raise _malformed(path, lines[0]) from None
    if version != expected_version:
        raise CheckpointFormatError(
            f"Unrecognised version:{version}, expected version: {expected_version} in checkpoint "
            f"file at: {path}", path=path, position=0, field="line 1",
            expected=expected_version, actual=version)
    if len(lines) < 2:
        return version, []
    try:
        count = parse_java_int(lines[1][2], 32)
    except ValueError:
        raise _malformed(path, lines[1]) from None
    if count < 0:
        raise _malformed(path, lines[1])
    entries = []
    for line in lines[2:]:
        parts = java_split(line[2])
        if len(parts) != entry_fields:
            raise _malformed(path, line)
        entries.append((line, parts))
    if len(entries) != count:
        last = lines[-1]
        raise CheckpointFormatError(
            f"Expected [{count}] entries in checkpoint file [{display_path(path)}], but found only "
            f"[{len(entries)}]", path=path, position=last[1], field=f"line {last[0]}",
            expected=count, actual=len(entries))
    return version, entries


def read_offset_checkpoint(path: PathLike, *,
                           expected_version: int = OFFSET_CHECKPOINT_VERSION) -> OffsetCheckpoint:
    """A ``<topic> <partition> <offset>`` checkpoint; later duplicate lines win, as in Kafka's map."""
    path = input_path(path)
    version, lines = _read_checkpoint(path, expected_version, 3, "offset checkpoint")
    entries: dict[tuple[str, int], int] = {}
    for line, (topic, partition, offset) in lines:
        try:
            entries[(topic, parse_java_int(partition, 32))] = parse_java_int(offset, 64)
        except ValueError:
            raise _malformed(path, line) from None
    return OffsetCheckpoint(version, entries)


def read_leader_epoch_checkpoint(path: PathLike) -> list[EpochEntry]:
    """``leader-epoch-checkpoint`` entries in file order (empty file: no entries)."""
    path = input_path(path)
    _, lines = _read_checkpoint(path, LEADER_EPOCH_CHECKPOINT_VERSION, 2, "leader-epoch-checkpoint")
    out = []
    for line, (epoch, start_offset) in lines:
        try:
            out.append(EpochEntry(parse_java_int(epoch, 32), parse_java_int(start_offset, 64)))
        except ValueError:
            raise _malformed(path, line) from None
    return out


_COLON_SPACES = re.compile(r":\s+")


def read_partition_metadata(path: PathLike) -> PartitionMetadata:
    """``partition.metadata`` read like ``PartitionMetadataReadBuffer`` (lines split on ``:\\s+``)."""
    path, text = _read_text(path, "partition.metadata")
    lines = _lines(text)
    if not lines:
        raise CheckpointFormatError("empty partition metadata file", path=path, position=0,
                                    field="line 1")

    def malformed(line: tuple[int, int, str]) -> CheckpointFormatError:
        return CheckpointFormatError(f"Malformed line in checkpoint file [{display_path(path)}]: {line[2]}",
                                     path=path, position=line[1], field=f"line {line[0]}")

    parts = _COLON_SPACES.split(lines[0][2])
    if len(parts) != 2:
        raise malformed(lines[0])
    try:
        version = parse_java_int(parts[1], 32)
    except ValueError:
        raise malformed(lines[0]) from None
    if version < 0:
        raise CheckpointFormatError(
            f"Unrecognized version of partition metadata file ({display_path(path)}): {version}",
            path=path, position=lines[0][1], field="line 1", actual=version)
    if len(lines) < 2:
        raise CheckpointFormatError("partition metadata file has no topic_id line", path=path,
                                    position=len(text.encode("utf-8")), field="line 2")
    parts = _COLON_SPACES.split(lines[1][2])
    if len(parts) != 2:
        raise malformed(lines[1])
    try:
        topic_id = uuid_to_base64url(_parse_kafka_uuid(parts[1]))
    except ValueError as exc:
        raise CheckpointFormatError(f"invalid topic ID: {exc}", path=path, position=lines[1][1],
                                    field="line 2") from None
    if topic_id == ZERO_UUID:
        raise CheckpointFormatError(f"Invalid topic ID in partition metadata file ({display_path(path)})",
                                    path=path, position=lines[1][1], field="line 2")
    return PartitionMetadata(version, topic_id)


def _parse_kafka_uuid(text: str) -> _uuid.UUID:
    # Uuid.fromString uses Java's URL-safe decoder, which also accepts the padded form.
    if len(text) == 24 and text.endswith("=="):
        text = text[:-2]
    return base64url_to_uuid(text)


_PROP_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape_property(text: str, path: str, line: tuple[int, int, str]) -> str:
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u":
                digits = text[i + 2:i + 6]
                if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                    raise CheckpointFormatError("Malformed \\uxxxx encoding", path=path,
                                                position=line[1], field=f"line {line[0]}")
                out.append(chr(int(digits, 16)))
                i += 6
                continue
            out.append(_PROP_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _logical_property_lines(lines: list[tuple[int, int, str]]) -> Iterable[tuple[tuple[int, int, str], str]]:
    """Java ``Properties.load`` lines: comments/blanks dropped, backslash continuations joined."""
    pending: tuple[tuple[int, int, str], str] | None = None
    for line in lines:
        content = line[2].lstrip(" \t\f")
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
        yield start, acc
    if pending is not None:
        yield pending


def read_meta_properties(path: PathLike) -> dict[str, str]:
    """``meta.properties`` as a dict (Java properties syntax; ``#``/``!`` comments ignored)."""
    path, text = _read_text(path, "meta.properties")
    return parse_meta_properties(text, path)


def parse_meta_properties(text: str, path: str = "meta.properties") -> dict[str, str]:
    """The text of a ``meta.properties`` (read by the caller, e.g. from a remote filesystem)."""
    props: dict[str, str] = {}
    for line, logical in _logical_property_lines(_lines(text)):
        # key ends at the first unescaped '=', ':' or whitespace
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
        props[_unescape_property(key, path, line)] = _unescape_property(rest, path, line)
    return props


def read_quorum_state(path: PathLike) -> dict[str, Any]:
    """``quorum-state`` (KRaft ``__cluster_metadata-0``): the JSON object as a dict."""
    path, text = _read_text(path, "quorum-state")
    return _load_json_object(path, text, "quorum-state")


def _load_json_object(path: str, text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CheckpointFormatError(f"invalid JSON in {what}: {exc.msg}", path=path,
                                    position=len(text[:exc.pos].encode("utf-8")),
                                    field=f"line {exc.lineno}") from None
    except RecursionError:
        raise CheckpointFormatError(f"JSON in {what} is nested too deeply", path=path) from None
    if not isinstance(value, dict):
        raise CheckpointFormatError(f"{what} is not a JSON object", path=path, position=0,
                                    field="line 1", actual=type(value).__name__)
    return value


def read_clean_shutdown(path: PathLike) -> CleanShutdown:
    """``.kafka_cleanshutdown``: its presence marks a clean shutdown; newer brokers add JSON."""
    path, text = _read_text(path, ".kafka_cleanshutdown")
    if not text.strip():
        return CleanShutdown(None, None)
    obj = _load_json_object(path, text, ".kafka_cleanshutdown")
    version, epoch = obj.get("version"), obj.get("brokerEpoch")
    if not (version is None or type(version) is int) or not (epoch is None or type(epoch) is int):
        raise CheckpointFormatError("version/brokerEpoch must be integers", path=path,
                                    position=0, field="line 1")
    return CleanShutdown(version, epoch)


# ---------------------------------------------------------------------------------------- writing

def atomic_write(path: PathLike, data: bytes) -> None:
    """Write ``<path>.tmp``, fsync it, rename it over ``path`` and fsync the directory (as Kafka)."""
    path = input_path(path)
    tmp = path + TMP_SUFFIX
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    try:
        dir_fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass    # some filesystems cannot fsync a directory; Kafka ignores that too
    finally:
        os.close(dir_fd)


def _checkpoint_bytes(version: int, lines: list[str]) -> bytes:
    return "".join(f"{line}\n" for line in [str(version), str(len(lines)), *lines]).encode("utf-8")


def write_offset_checkpoint(
    path: PathLike,
    entries: Mapping[tuple[str, int], int] | Iterable[tuple[str, int, int]],
    version: int = OFFSET_CHECKPOINT_VERSION,
) -> None:
    """Write a root offset checkpoint (entries in the given order), atomically."""
    items = (((t, p), o) for (t, p), o in entries.items()) if isinstance(entries, Mapping) \
        else (((t, p), o) for t, p, o in entries)
    lines = []
    for (topic, partition), offset in items:
        if not topic or any(c.isspace() for c in topic):
            raise ValueError(f"topic name {topic!r} cannot be written to a checkpoint line")
        lines.append(f"{topic} {int(partition)} {int(offset)}")
    atomic_write(path, _checkpoint_bytes(version, lines))


def write_leader_epoch_checkpoint(path: PathLike,
                                  entries: Iterable[EpochEntry | tuple[int, int]]) -> None:
    """Write ``leader-epoch-checkpoint`` (version 0, ``<epoch> <start_offset>`` lines), atomically."""
    lines = []
    for entry in entries:
        epoch, start = (entry.epoch, entry.start_offset) if isinstance(entry, EpochEntry) else entry
        lines.append(f"{int(epoch)} {int(start)}")
    atomic_write(path, _checkpoint_bytes(LEADER_EPOCH_CHECKPOINT_VERSION, lines))


def write_partition_metadata(path: PathLike, topic_id: str | _uuid.UUID | bytes,
                             version: int = PARTITION_METADATA_VERSION) -> None:
    """Write ``partition.metadata`` exactly as Kafka does (no trailing newline), atomically."""
    text_id = uuid_to_base64url(topic_id if not isinstance(topic_id, str)
                                else base64url_to_uuid(topic_id))
    atomic_write(path, f"version: {version}\ntopic_id: {text_id}".encode())


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


def write_meta_properties(path: PathLike, props: Mapping[str, str], *,
                          comment: str = "", now: float | None = None) -> None:
    """Write ``meta.properties`` like ``Properties.store``: ``#comment``, ``#<date>``, key=value."""
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(time.time() if now is None else now))
    lines = [f"#{comment}", f"#{stamp}"]
    lines += [f"{_escape_property(str(k), True)}={_escape_property(str(v), False)}"
              for k, v in props.items()]
    atomic_write(path, "".join(line + "\n" for line in lines).encode("utf-8"))


def write_quorum_state(path: PathLike, state: Mapping[str, Any]) -> None:
    """Write ``quorum-state`` as compact JSON (key order kept), atomically."""
    atomic_write(path, json.dumps(dict(state), separators=(",", ":")).encode("utf-8"))
