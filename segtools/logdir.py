"""The model of a broker log directory: partitions, segments, snapshots and root files.

Naming rules are in :mod:`segtools.formats.names` (FORMATS.md section 11). Nothing is modified;
files are only listed and the small text files parsed. Problems with individual files (a
malformed checkpoint, a stray file name) do not stop the listing: they are collected in
``problems`` unless ``strict=True``, because a damaged directory is exactly what a forensic
user brings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from segtools.checkpoints import (
    CleanShutdown,
    EpochEntry,
    OffsetCheckpoint,
    PartitionMetadata,
    read_clean_shutdown,
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
    read_quorum_state,
)
from segtools.errors import InputError, SegtoolsError
from segtools.formats.checkpoints import (
    CLEANER_OFFSET_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    ROOT_OFFSET_CHECKPOINTS,
)
from segtools.formats.names import (
    KRAFT_SNAPSHOT_RE,
    SEGMENT_FILE_RE,
    SPECIAL_PARTITION_DIR_RE,
)
from segtools.formats.root_files import (
    BOOTSTRAP_CHECKPOINT,
    CLEAN_SHUTDOWN,
    META_PROPERTIES,
    PARTITION_METADATA,
    QUORUM_STATE,
)
from segtools.formats.text_lines import parse_java_int

__all__ = [
    "Segment", "SnapshotFile", "KRaftSnapshotFile", "PartitionDir", "LogDir",
    "parse_partition_dir_name", "open_log_dir", "open_partition_dir", "is_partition_dir_name",
]

PathLike = str | os.PathLike[str]
_STATE_ORDER = {"": 0, "future": 1, "delete": 2, "stray": 3}
_KIND_ATTR = {".log": "log_path", ".index": "index_path", ".timeindex": "timeindex_path",
              ".txnindex": "txnindex_path"}


@dataclass
class Segment:
    """The files of one segment (any may be missing). ``suffix`` is "" for a live segment, or
    ``.deleted``/``.cleaned``/``.swap`` for files in those transient states."""

    base_offset: int
    log_path: str | None = None
    index_path: str | None = None
    timeindex_path: str | None = None
    txnindex_path: str | None = None
    suffix: str = ""

    @property
    def name(self) -> str:
        """The 20-digit file name prefix."""
        return f"{self.base_offset:020d}"

    @property
    def has_log(self) -> bool:
        """Whether the ``.log`` file is present (a segment can be left with indexes only)."""
        return self.log_path is not None

    @property
    def paths(self) -> list[str]:
        """The files present, in .log, .index, .timeindex, .txnindex order."""
        return [p for p in (self.log_path, self.index_path, self.timeindex_path,
                            self.txnindex_path) if p is not None]


@dataclass(frozen=True)
class SnapshotFile:
    """A producer-state ``<offset>.snapshot`` (``suffix`` ".deleted" when pending delete)."""

    offset: int
    path: str
    suffix: str = ""


@dataclass(frozen=True)
class KRaftSnapshotFile:
    """A KRaft ``<end offset>-<epoch>.checkpoint`` snapshot (``suffix`` ".part"/".deleted")."""

    end_offset: int
    epoch: int
    path: str
    suffix: str = ""


@dataclass
class PartitionDir:
    """One ``<topic>-<partition>[.<id>-delete|-future|-stray]`` directory."""

    path: str
    topic: str
    partition: int
    state: str = ""                       # "" | "delete" | "future" | "stray"
    segments: list[Segment] = field(default_factory=list)
    leader_epoch_checkpoint: list[EpochEntry] | None = None
    partition_metadata: PartitionMetadata | None = None
    snapshots: list[SnapshotFile] = field(default_factory=list)
    unique_id: str | None = None          # the 32-hex id of -delete/-future/-stray dirs
    kraft_snapshots: list[KRaftSnapshotFile] = field(default_factory=list)
    quorum_state: dict[str, Any] | None = None
    #: .deleted/.cleaned/.swap segment files, kept apart from the live segments
    suffixed_segments: list[Segment] = field(default_factory=list)
    #: snapshot files with an extra suffix (pending delete)
    suffixed_snapshots: list[SnapshotFile] = field(default_factory=list)
    other_files: list[str] = field(default_factory=list)
    problems: list[SegtoolsError] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The directory name."""
        return os.path.basename(self.path)

    @property
    def log_paths(self) -> list[str]:
        """``.log`` files of the live segments, in base-offset order."""
        return [s.log_path for s in self.segments if s.log_path is not None]

    @property
    def segments_without_log(self) -> list[Segment]:
        """Live segments whose ``.log`` is missing (indexes or txnindex only)."""
        return [s for s in self.segments if s.log_path is None]


@dataclass
class LogDir:
    """A broker log directory (``log.dirs`` entry)."""

    path: str
    partitions: list[PartitionDir] = field(default_factory=list)
    #: root offset checkpoints by file name; None when the file is absent or unreadable
    checkpoints: dict[str, OffsetCheckpoint | None] = field(default_factory=dict)
    meta_properties: dict[str, str] | None = None
    clean_shutdown: bool = False
    clean_shutdown_info: CleanShutdown | None = None
    bootstrap_checkpoint: str | None = None
    other_files: list[str] = field(default_factory=list)
    other_dirs: list[str] = field(default_factory=list)
    problems: list[SegtoolsError] = field(default_factory=list)

    def _offsets(self, name: str) -> dict[tuple[str, int], int]:
        cp = self.checkpoints.get(name)
        return dict(cp.entries) if cp is not None else {}

    @property
    def replication_offsets(self) -> dict[tuple[str, int], int]:
        """High watermarks from ``replication-offset-checkpoint``."""
        return self._offsets(REPLICATION_OFFSET_CHECKPOINT)

    @property
    def recovery_points(self) -> dict[tuple[str, int], int]:
        """From ``recovery-point-offset-checkpoint``."""
        return self._offsets(RECOVERY_POINT_OFFSET_CHECKPOINT)

    @property
    def log_start_offsets(self) -> dict[tuple[str, int], int]:
        """From ``log-start-offset-checkpoint``."""
        return self._offsets(LOG_START_OFFSET_CHECKPOINT)

    @property
    def cleaner_offsets(self) -> dict[tuple[str, int], int]:
        """From ``cleaner-offset-checkpoint``."""
        return self._offsets(CLEANER_OFFSET_CHECKPOINT)

    @property
    def broker_id(self) -> int | None:
        """``node.id`` (KRaft) or ``broker.id`` (ZooKeeper) from ``meta.properties``."""
        props = self.meta_properties or {}
        for key in ("node.id", "broker.id"):
            try:
                return parse_java_int(props[key].strip(), 32)
            except (KeyError, ValueError):
                continue
        return None

    def partition(self, topic: str, partition: int, state: str = "") -> PartitionDir | None:
        """The partition dir for ``topic``/``partition`` (live one unless ``state`` is given)."""
        for p in self.partitions:
            if p.topic == topic and p.partition == partition and p.state == state:
                return p
        return None

    @property
    def topics(self) -> list[str]:
        """Distinct topic names, sorted."""
        return sorted({p.topic for p in self.partitions})


def _parse_dir_name(name: str) -> tuple[str, int, str, str | None]:
    """``LocalLog.parseTopicPartitionName``: (topic, partition, state, unique id)."""
    def bad() -> InputError:
        return InputError(
            f"'{name}' is not in the form of topic-partition or "
            f"topic-partition.uniqueId-delete|-future|-stray")

    if not name or "-" not in name:
        raise bad()
    state, unique_id = "", None
    base = name
    for suffix in ("delete", "future", "stray"):
        if name.endswith("-" + suffix):
            match = SPECIAL_PARTITION_DIR_RE.match(name)
            if match is None:
                raise bad()
            state = suffix
            base = name[:name.rindex(".")]
            unique_id = name[name.rindex(".") + 1:-(len(suffix) + 1)]
            break
    index = base.rfind("-")
    topic, partition_text = base[:index], base[index + 1:]
    if not topic or not partition_text:
        raise bad()
    try:
        partition = parse_java_int(partition_text, 32)
    except ValueError:
        raise bad() from None
    return topic, partition, state, unique_id


def parse_partition_dir_name(name: str) -> tuple[str, int, str]:
    """``(topic, partition, state)`` of a partition directory name, state ""|delete|future|stray.

    Parsed like Kafka: the partition follows the **last** '-' (of the part before
    ``.<uniqueId>`` for the special forms). Raises :class:`InputError` for other names.
    """
    topic, partition, state, _ = _parse_dir_name(name)
    return topic, partition, state


def is_partition_dir_name(name: str) -> bool:
    """Whether ``name`` parses as a partition directory name."""
    try:
        _parse_dir_name(name)
    except InputError:
        return False
    return True


def _collect(problems: list[SegtoolsError], strict: bool, fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except SegtoolsError as exc:
        if strict:
            raise
        problems.append(exc)
        return None


def _scandir(path: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return sorted(it, key=lambda e: e.name)
    except NotADirectoryError:
        raise InputError(f"{path} is not a directory") from None
    except OSError as exc:
        raise InputError(f"cannot list {path}: {exc.strerror or exc}") from exc


def open_partition_dir(path: PathLike, *, strict: bool = False) -> PartitionDir:
    """Model one partition directory: segments in base-offset order plus its metadata files.

    With ``strict`` a malformed ``leader-epoch-checkpoint``/``partition.metadata``/``quorum-state``
    raises; otherwise the error is kept in ``problems`` and the field left None.
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise InputError(f"{path} is not a directory")
    topic, partition, state, unique_id = _parse_dir_name(os.path.basename(os.path.normpath(path)))
    pd = PartitionDir(path=path, topic=topic, partition=partition, state=state,
                      unique_id=unique_id)
    live: dict[int, Segment] = {}
    suffixed: dict[tuple[int, str], Segment] = {}
    for entry in _scandir(path):
        name, full = entry.name, entry.path
        if entry.is_dir(follow_symlinks=False):
            pd.other_files.append(full)
            continue
        match = SEGMENT_FILE_RE.match(name)
        if match is not None:
            offset, kind, extra = int(match.group("offset")), match.group("kind"), match.group("extra") or ""
            if kind == ".snapshot":
                (pd.suffixed_snapshots if extra else pd.snapshots).append(SnapshotFile(offset, full, extra))
                continue
            seg = live.setdefault(offset, Segment(offset)) if not extra else \
                suffixed.setdefault((offset, extra), Segment(offset, suffix=extra))
            setattr(seg, _KIND_ATTR[kind], full)
            continue
        match = KRAFT_SNAPSHOT_RE.match(name)
        if match is not None:
            pd.kraft_snapshots.append(KRaftSnapshotFile(
                int(match.group("end_offset")), int(match.group("epoch")), full,
                match.group("extra") or ""))
            continue
        if name == LEADER_EPOCH_CHECKPOINT:
            pd.leader_epoch_checkpoint = _collect(pd.problems, strict, read_leader_epoch_checkpoint, full)
        elif name == PARTITION_METADATA:
            pd.partition_metadata = _collect(pd.problems, strict, read_partition_metadata, full)
        elif name == QUORUM_STATE:
            pd.quorum_state = _collect(pd.problems, strict, read_quorum_state, full)
        else:
            pd.other_files.append(full)
    pd.segments = [live[k] for k in sorted(live)]
    pd.suffixed_segments = [suffixed[k] for k in sorted(suffixed)]
    pd.snapshots.sort(key=lambda s: s.offset)
    pd.suffixed_snapshots.sort(key=lambda s: (s.offset, s.suffix))
    pd.kraft_snapshots.sort(key=lambda s: (s.end_offset, s.epoch, s.suffix, s.path))
    return pd


_ROOT_MARKERS = (*ROOT_OFFSET_CHECKPOINTS, META_PROPERTIES, CLEAN_SHUTDOWN, BOOTSTRAP_CHECKPOINT)


def _looks_like_partition_dir(path: str, entries: list[os.DirEntry[str]]) -> bool:
    if not is_partition_dir_name(os.path.basename(os.path.normpath(path))):
        return False
    for e in entries:
        if e.name in _ROOT_MARKERS:
            return False
        if e.is_dir(follow_symlinks=True) and is_partition_dir_name(e.name):
            return False
    return True


def open_log_dir(path: PathLike, *, strict: bool = False) -> LogDir:
    """Model a broker log directory (or a single partition directory given directly).

    Partitions are sorted by topic, then partition number, then state. Root files
    (offset checkpoints, ``meta.properties``, ``.kafka_cleanshutdown``) are parsed; a malformed
    one raises with ``strict`` and is otherwise recorded in ``problems``.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file or directory")
    entries = _scandir(path)
    if _looks_like_partition_dir(path, entries):
        pd = open_partition_dir(path, strict=strict)
        return LogDir(path=path, partitions=[pd], checkpoints={}, problems=list(pd.problems))
    log = LogDir(path=path)
    for entry in entries:
        name, full = entry.name, entry.path
        if entry.is_dir(follow_symlinks=True):
            if is_partition_dir_name(name):
                pd = open_partition_dir(full, strict=strict)
                log.partitions.append(pd)
                log.problems.extend(pd.problems)
            else:
                log.other_dirs.append(full)
        elif name in ROOT_OFFSET_CHECKPOINTS:
            log.checkpoints[name] = _collect(log.problems, strict, read_offset_checkpoint, full)
        elif name == META_PROPERTIES:
            log.meta_properties = _collect(log.problems, strict, read_meta_properties, full)
        elif name == CLEAN_SHUTDOWN:
            log.clean_shutdown = True
            log.clean_shutdown_info = _collect(log.problems, strict, read_clean_shutdown, full)
        elif name == BOOTSTRAP_CHECKPOINT:
            log.bootstrap_checkpoint = full
        else:
            log.other_files.append(full)
    for name in ROOT_OFFSET_CHECKPOINTS:
        log.checkpoints.setdefault(name, None)
    log.partitions.sort(key=lambda p: (p.topic, p.partition, _STATE_ORDER[p.state], p.name))
    return log
