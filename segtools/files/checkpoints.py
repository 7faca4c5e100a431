"""Readers and atomic writers for the text files of a log dir (FORMATS.md sections 9-10).

* offset checkpoints (``replication-offset-checkpoint``, ``recovery-point-offset-checkpoint``,
  ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``) and ``leader-epoch-checkpoint``:
  ``version``, ``count``, entry lines (grammar in :mod:`segtools.formats.checkpoints`);
* ``partition.metadata``, ``meta.properties``, ``quorum-state``, ``.kafka_cleanshutdown``.

Readers decode through the construct declarations of :mod:`segtools.formats.checkpoints` and
:mod:`segtools.formats.root_files` (which implement Kafka's ``CheckpointFile`` and
``PartitionMetadataReadBuffer`` reading rules) and raise :class:`CheckpointFormatError` naming
the file, the line number (``field="line N"``) and its byte position. Writers do what Kafka does:
write ``<name>.tmp``, fsync, rename over the target.
"""

from __future__ import annotations

import os
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
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
)
from segtools.formats.primitives import base64url_to_uuid, parse_located, uuid_to_base64url
from segtools.formats.root_files import (
    PARTITION_METADATA_VERSION,
    CleanShutdownDocument,
    JsonObjectDocument,
    PartitionMetadataText,
    PropertiesFile,
)

__all__ = [
    "OffsetCheckpoint", "EpochEntry", "PartitionMetadata", "CleanShutdown",
    "read_offset_checkpoint", "read_leader_epoch_checkpoint", "read_partition_metadata",
    "read_meta_properties", "parse_meta_properties", "read_quorum_state", "read_clean_shutdown",
    "write_offset_checkpoint", "write_leader_epoch_checkpoint", "write_partition_metadata",
    "write_meta_properties", "write_quorum_state", "uuid_to_base64url", "base64url_to_uuid",
    "atomic_write",
]

PathLike = str | os.PathLike[str]
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
# Every reader decodes through the construct declaration of its file in segtools.formats, which
# implements Kafka's reading rules and raises Kafka's messages; parse_located turns them into
# CheckpointFormatError with the byte position and field.

def _read_bytes(path: str, what: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_TEXT_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read {what} {display_path(path)}: {exc.strerror or exc}") from exc
    if len(data) > MAX_TEXT_BYTES:
        raise CheckpointFormatError(f"{what} is larger than {MAX_TEXT_BYTES} bytes", path=path,
                                    position=MAX_TEXT_BYTES)
    return data


def _decode(con: Any, path: str, data: bytes, what: str, **context: Any) -> Any:
    # filename and filekind go to the declaration, which quotes them in Kafka's messages
    return parse_located(con, data, error=CheckpointFormatError, path=path, position=0,
                         what=what, filename=path, filekind=what, **context)


def _read(con: Any, path: PathLike, what: str, **context: Any) -> Any:
    path = input_path(path)
    return _decode(con, path, _read_bytes(path, what), what, **context)


def read_offset_checkpoint(path: PathLike, *,
                           expected_version: int = OFFSET_CHECKPOINT_VERSION) -> OffsetCheckpoint:
    """A ``<topic> <partition> <offset>`` checkpoint; later duplicate lines win, as in Kafka's map."""
    parsed = _read(OffsetCheckpointFile, path, "offset checkpoint",
                   expected_version=expected_version)
    entries = {(e["topic"], e["partition"]): e["offset"] for e in parsed.entries}
    return OffsetCheckpoint(parsed.version, entries)


def read_leader_epoch_checkpoint(path: PathLike) -> list[EpochEntry]:
    """``leader-epoch-checkpoint`` entries in file order (empty file: no entries)."""
    parsed = _read(LeaderEpochCheckpointFile, path, "leader-epoch-checkpoint")
    return [EpochEntry(e["leader_epoch"], e["start_offset"]) for e in parsed.entries]


def read_partition_metadata(path: PathLike) -> PartitionMetadata:
    """``partition.metadata`` read like ``PartitionMetadataReadBuffer`` (lines split on ``:\\s+``)."""
    parsed = _read(PartitionMetadataText, path, "partition.metadata")
    return PartitionMetadata(parsed.version, parsed.topic_id)


def read_meta_properties(path: PathLike) -> dict[str, str]:
    """``meta.properties`` as a dict (Java properties syntax; ``#``/``!`` comments ignored)."""
    props: dict[str, str] = _read(PropertiesFile, path, "meta.properties")
    return props


def parse_meta_properties(text: str, path: str = "meta.properties") -> dict[str, str]:
    """The text of a ``meta.properties`` (read by the caller, e.g. from a remote filesystem)."""
    props: dict[str, str] = _decode(PropertiesFile, path, text.encode("utf-8"), "meta.properties")
    return props


def read_quorum_state(path: PathLike) -> dict[str, Any]:
    """``quorum-state`` (KRaft ``__cluster_metadata-0``): the JSON object as a dict."""
    state: dict[str, Any] = _read(JsonObjectDocument, path, "quorum-state")
    return state


def read_clean_shutdown(path: PathLike) -> CleanShutdown:
    """``.kafka_cleanshutdown``: its presence marks a clean shutdown; newer brokers add JSON."""
    path = input_path(path)
    obj = _read(CleanShutdownDocument, path, ".kafka_cleanshutdown")
    if obj is None:
        return CleanShutdown(None, None)
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




def write_offset_checkpoint(
    path: PathLike,
    entries: Mapping[tuple[str, int], int] | Iterable[tuple[str, int, int]],
    version: int = OFFSET_CHECKPOINT_VERSION,
) -> None:
    """Write a root offset checkpoint (entries in the given order), atomically."""
    items = (((t, p), o) for (t, p), o in entries.items()) if isinstance(entries, Mapping) \
        else (((t, p), o) for t, p, o in entries)
    rows = []
    for (topic, partition), offset in items:
        if not topic or any(c.isspace() for c in topic):
            raise ValueError(f"topic name {topic!r} cannot be written to a checkpoint line")
        rows.append({"topic": topic, "partition": int(partition), "offset": int(offset)})
    atomic_write(path, OffsetCheckpointFile.build({"version": version, "entries": rows}))


def write_leader_epoch_checkpoint(path: PathLike,
                                  entries: Iterable[EpochEntry | tuple[int, int]]) -> None:
    """Write ``leader-epoch-checkpoint`` (version 0, ``<epoch> <start_offset>`` lines), atomically."""
    rows = []
    for entry in entries:
        epoch, start = (entry.epoch, entry.start_offset) if isinstance(entry, EpochEntry) else entry
        rows.append({"leader_epoch": int(epoch), "start_offset": int(start)})
    atomic_write(path, LeaderEpochCheckpointFile.build(
        {"version": LEADER_EPOCH_CHECKPOINT_VERSION, "entries": rows}))


def write_partition_metadata(path: PathLike, topic_id: str | _uuid.UUID | bytes,
                             version: int = PARTITION_METADATA_VERSION) -> None:
    """Write ``partition.metadata`` exactly as Kafka does (no trailing newline), atomically."""
    text_id = uuid_to_base64url(topic_id if not isinstance(topic_id, str)
                                else base64url_to_uuid(topic_id))
    atomic_write(path, PartitionMetadataText.build({"version": version, "topic_id": text_id}))


def write_meta_properties(path: PathLike, props: Mapping[str, str], *,
                          comment: str = "", now: float | None = None) -> None:
    """Write ``meta.properties`` like ``Properties.store``: ``#comment``, ``#<date>``, key=value."""
    stamp = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime(time.time() if now is None else now))
    header = f"#{comment}\n#{stamp}\n".encode()
    atomic_write(path, header + PropertiesFile.build({str(k): str(v) for k, v in props.items()}))


def write_quorum_state(path: PathLike, state: Mapping[str, Any]) -> None:
    """Write ``quorum-state`` as compact JSON (key order kept, non-ASCII as UTF-8 as Jackson
    writes it), atomically."""
    atomic_write(path, JsonObjectDocument.build(dict(state)))
