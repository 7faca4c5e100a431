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

from segtools.errors import InputError, SegtoolsError
from segtools.files.checkpoints import (
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
from segtools.files.sources import (
    DirEntry,
    _parse_dir_name,
    is_partition_dir_name,
    list_dir,
    parse_partition_dir_name,
)
from segtools.formats.checkpoints import (
    CLEANER_OFFSET_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    ROOT_OFFSET_CHECKPOINTS,
)
from segtools.formats.names import KRAFT_SNAPSHOT_RE, SEGMENT_FILE_RE, filename_prefix_from_offset
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
        return filename_prefix_from_offset(self.base_offset)

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


def _collect(problems: list[SegtoolsError], strict: bool, fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except SegtoolsError as exc:
        if strict:
            raise
        problems.append(exc)
        return None


def open_partition_dir(path: PathLike, *, strict: bool = False) -> PartitionDir:
    """Model one partition directory: segments in base-offset order plus its metadata files.

    With ``strict`` a malformed ``leader-epoch-checkpoint``/``partition.metadata``/``quorum-state``
    raises; otherwise the error is kept in ``problems`` and the field left None.
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise InputError(f"{path} is not a directory")
    return _partition_model(path, list_dir(path), strict)


def _partition_model(path: str, entries: list[DirEntry], strict: bool) -> PartitionDir:
    topic, partition, state, unique_id = _parse_dir_name(os.path.basename(os.path.normpath(path)))
    pd = PartitionDir(path=path, topic=topic, partition=partition, state=state,
                      unique_id=unique_id)
    live: dict[int, Segment] = {}
    suffixed: dict[tuple[int, str], Segment] = {}
    for entry in entries:
        name, full = entry.name, entry.path
        if entry.is_dir:
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


def open_log_dir(path: PathLike, *, strict: bool = False) -> LogDir:
    """Model a broker log directory (or a single partition directory given directly).

    Partitions are sorted by topic, then partition number, then state. Root files
    (offset checkpoints, ``meta.properties``, ``.kafka_cleanshutdown``) are parsed; a malformed
    one raises with ``strict`` and is otherwise recorded in ``problems``.
    """
    from segtools.files.sources import resolve

    path = os.fspath(path)
    found = resolve([path], check_copies=False).inputs[0]
    if found.kind == "segment":
        raise InputError(f"{path} is not a directory")
    if found.kind == "partition_dir":
        pd = open_partition_dir(found.partitions[0].partition_dir or path, strict=strict)
        return LogDir(path=path, partitions=[pd], checkpoints={}, problems=list(pd.problems))
    log = LogDir(path=path)
    if found.kind in ("log_dir", "metadata_log"):
        ld = found.log_dirs[0]
        files, dirs = list(ld.root_files), list(ld.other_dirs)
        for p in ld.partitions:
            # the files the resolver kept (links out of the input are not among them)
            pd = _partition_model(p.partition_dir or "", [
                DirEntry(os.path.basename(f), f, False, True) for f in p.files], strict)
            log.partitions.append(pd)
            log.problems.extend(pd.problems)
    else:   # not a log dir (a folder of brokers, loose segments, nothing): list it only
        entries = list_dir(path)
        files = [e.path for e in entries if not e.is_dir]
        dirs = [e.path for e in entries if e.is_dir]
    log.other_dirs.extend(dirs)
    for full in files:
        name = os.path.basename(full)
        if name in ROOT_OFFSET_CHECKPOINTS:
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
