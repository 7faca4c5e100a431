"""Stage 1 inputs: which replicas the user gave us and their small per-replica facts
(checkpoints, epoch checkpoint, topic id, clean-shutdown marker, segment sizes).

Batch rows come from ``segtools.records.columnar`` (in process) or the ``kafka_segments`` data source
(Spark); both are turned into ``ReplicaFacts`` by :func:`replica_facts`. Everything here is
read-only and reads only small text files, so it runs on the driver.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from segtools.errors import BatchTooLargeError, InputError, SegtoolsError, display_path
from segtools.forensics.model import BatchFacts, ReplicaFacts
from segtools.formats.names import LOG_SUFFIX, filename_prefix_from_offset, stem_offset

if TYPE_CHECKING:
    from segtools.files.sources import Resolution
    from segtools.forensics.batch_columns import BatchColumns

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


class SegmentList(Sequence[tuple[str, int]]):
    """A replica's segments as ``(path, size)`` in base-offset order, held compactly: when
    every path is ``<one dir>/<base offset, 20 digits>.log`` (as Kafka names its segments),
    one dir string and two arrays of 8 bytes per segment, the path made again when an item is
    read; anything else (a renamed file, segments of a remote tier in another dir) as given.
    A partition of 100,000 segments held a path string, a size and a tuple per segment
    (~200 bytes); this holds 16."""

    __slots__ = ("_dir", "_bases", "_sizes", "_paths")

    def __init__(self, items: Iterable[tuple[str, int]] = ()) -> None:
        self._dir: str | None = None
        self._bases = array("q")
        self._sizes = array("q")
        self._paths: list[str] | None = None     # set once a path does not fit the compact form
        for path, size in items:
            self._append(path, size)

    def _append(self, path: str, size: int) -> None:
        self._sizes.append(size)
        if self._paths is not None:
            self._paths.append(path)
            return
        if self._dir is None:
            self._dir = os.path.dirname(path)
        base = stem_offset(path)
        # the path must come back exactly as given (the same dir, Kafka's 20-digit name)
        if base is not None and self._path(self._dir, base) == path:
            self._bases.append(base)
            return
        self._paths = [self._path(self._dir, b) for b in self._bases]
        self._paths.append(path)
        self._bases = array("q")

    @staticmethod
    def _path(folder: str, base: int) -> str:
        return os.path.join(folder, filename_prefix_from_offset(base) + LOG_SUFFIX)

    def __len__(self) -> int:
        return len(self._sizes)

    @property
    def compact(self) -> bool:
        """Whether every path is ``<dir>/<20-digit base offset>.log`` (held as offsets)."""
        return self._paths is None

    def arrays(self) -> tuple[str, array[int], array[int]] | None:
        """(dir, base offsets, sizes) when :attr:`compact`, else None: the arrays themselves,
        to be read, not changed (the Spark runner's plan ships them as they are)."""
        if self._paths is not None:
            return None
        return self._dir or "", self._bases, self._sizes

    def path(self, i: int) -> str:
        if self._paths is not None:
            return self._paths[i]
        return self._path(self._dir or "", self._bases[i])

    def name(self, i: int) -> str:
        """The file name of segment ``i`` (what batch facts call its ``segment``)."""
        if self._paths is not None:
            return os.path.basename(self._paths[i])
        return filename_prefix_from_offset(self._bases[i]) + LOG_SUFFIX

    def names(self) -> Sequence[str]:
        """The file names, made when read (no str per segment is held)."""
        return _Names(self)

    @overload
    def __getitem__(self, i: int) -> tuple[str, int]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[str, int]]: ...

    def __getitem__(self, i: int | slice) -> tuple[str, int] | list[tuple[str, int]]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("segment index out of range")
        return self.path(i), self._sizes[i]

    def __iter__(self) -> Iterator[tuple[str, int]]:
        for i in range(len(self)):
            yield self.path(i), self._sizes[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, tuple, SegmentList)):
            return len(self) == len(other) and all(a == tuple(b) for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SegmentList({list(self)!r})"

    def __getstate__(self) -> tuple[Any, ...]:
        return self._dir, self._bases, self._sizes, self._paths

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self._dir, self._bases, self._sizes, self._paths = state


class _Names(Sequence[str]):
    __slots__ = ("_segments",)

    def __init__(self, segments: SegmentList) -> None:
        self._segments = segments

    def __len__(self) -> int:
        return len(self._segments)

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self._segments.name(k) for k in range(*i.indices(len(self)))]
        return self._segments.name(i)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Names) and other._segments is self._segments

    __hash__ = None  # type: ignore[assignment]


@dataclass(slots=True)
class ReplicaSpec:
    """One replica (partition dir) to compare; ``replica_id`` is unique within a run."""

    replica_id: int
    broker: int
    topic: str
    partition: int
    partition_dir: str
    log_dir: str
    state: str = ""
    segments: SegmentList = field(default_factory=SegmentList)   # (path, size) by base offset
    topic_id: str | None = None
    high_watermark: int | None = None
    recovery_point: int | None = None
    log_start_checkpoint: int | None = None
    cleaner_checkpoint: int | None = None
    epoch_checkpoint: list[tuple[int, int]] | None = None
    clean_shutdown: bool = False
    problems: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not isinstance(self.segments, SegmentList):   # a list given (tests, dataclasses.replace)
            self.segments = SegmentList(self.segments)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["segments"] = list(self.segments)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ReplicaSpec:
        d = dict(d)
        d["segments"] = [tuple(s) for s in d.get("segments", [])]
        if d.get("epoch_checkpoint") is not None:
            d["epoch_checkpoint"] = [tuple(e) for e in d["epoch_checkpoint"]]
        return cls(**d)


def _root_checkpoints(log_dir: str) -> tuple[dict[str, dict[tuple[str, int], int]], list[str]]:
    from segtools.files.checkpoints import read_offset_checkpoint

    out: dict[str, dict[tuple[str, int], int]] = {}
    problems: list[str] = []
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                 "log-start-offset-checkpoint", "cleaner-offset-checkpoint"):
        path = os.path.join(log_dir, name)
        if not os.path.isfile(path):
            out[name] = {}
            continue
        try:
            out[name] = dict(read_offset_checkpoint(path).entries)
        except SegtoolsError as exc:
            problems.append(str(exc))
            out[name] = {}
    return out, problems


def discover_replicas(paths: Iterable[str | os.PathLike[str]],
                      resolution: Resolution | None = None, *,
                      warnings: list[str] | None = None) -> list[ReplicaSpec]:
    """Every partition replica under ``paths`` (broker log dirs, a folder of ``broker-<id>``
    dirs, or partition dirs), with its checkpoints. Broker ids come from meta.properties or
    the folder name; copies that would collide (the same broker id holding the same partition
    in two given dirs, e.g. two snapshots of one broker) get fresh ids above the largest.
    A partition dir reached twice (the same dir given twice, or a broker dir and one of its
    partition dirs) is one replica; a note goes to ``warnings``.
    ``resolution``: :func:`segtools.files.sources.resolve` of ``paths`` when the caller has it."""
    from segtools.files.checkpoints import read_leader_epoch_checkpoint, read_partition_metadata
    from segtools.files.sources import resolve

    paths = list(paths)
    if resolution is None:
        resolution = resolve(paths)
        if warnings is not None:   # a caller passing its resolution has printed these
            warnings.extend(w.message for w in resolution.messages)
    # one source per partition dir: the resolver has dropped repeats (and warned)
    sources = [s for s in resolution.partitions if s.partition_dir is not None and s.partition >= 0]
    # a remote tier (LocalTieredStorage folder) is no replica: what Kafka serves of it (by the
    # metadata on the evidence) joins each local replica
    from segtools.tier.history import across_tiers, served_segments

    served = served_segments(paths, sources, warnings)
    sources = across_tiers(sources, every_replica=True, served=served)
    if not sources:
        raise InputError("no Kafka files found (no Kafka partition directories) in: "
                         + ", ".join(map(str, paths)))
    # broker ids per log dir, de-duplicated
    log_dirs: list[str] = []
    for s in sources:
        ld = s.log_dir or os.path.dirname(s.partition_dir or "")
        if ld not in log_dirs:
            log_dirs.append(ld)
    raw = {ld: next((s.broker for s in sources if (s.log_dir or os.path.dirname(s.partition_dir or "")) == ld), None)
           for ld in log_dirs}
    held: dict[int, set[tuple[str, int, str]]] = {}
    broker_of: dict[str, int] = {}
    next_id = max([b for b in raw.values() if b is not None] + [-1]) + 1
    for ld in log_dirs:
        parts = {(s.topic, s.partition, s.state) for s in sources
                 if (s.log_dir or os.path.dirname(s.partition_dir or "")) == ld}
        b = raw[ld]
        if b is None or (b in held and held[b] & parts):
            b = next_id
            next_id += 1
        held.setdefault(b, set()).update(parts)
        broker_of[ld] = b
    roots = {ld: _root_checkpoints(ld) for ld in log_dirs}
    clean = {ld: os.path.exists(os.path.join(ld, CLEAN_SHUTDOWN_FILE)) for ld in log_dirs}

    specs: list[ReplicaSpec] = []
    for s in sources:
        ld = s.log_dir or os.path.dirname(s.partition_dir or "")
        ckpts, problems = roots[ld]
        tp = (s.topic, s.partition)
        pdir = str(s.partition_dir)
        spec = ReplicaSpec(
            replica_id=len(specs), broker=broker_of[ld], topic=display_path(s.topic), partition=s.partition,
            partition_dir=pdir, log_dir=ld, state=s.state or "",
            # in the resolver's order (base offset) with the sizes it listed
            segments=SegmentList(zip(s.segments, s.segment_sizes)),
            high_watermark=ckpts["replication-offset-checkpoint"].get(tp),
            recovery_point=ckpts["recovery-point-offset-checkpoint"].get(tp),
            log_start_checkpoint=ckpts["log-start-offset-checkpoint"].get(tp),
            cleaner_checkpoint=ckpts["cleaner-offset-checkpoint"].get(tp),
            clean_shutdown=clean[ld],
            problems=list(problems))
        lec = os.path.join(pdir, "leader-epoch-checkpoint")
        if os.path.isfile(lec):
            try:
                spec.epoch_checkpoint = [(e.epoch, e.start_offset) for e in read_leader_epoch_checkpoint(lec)]
            except SegtoolsError as exc:
                spec.problems.append(str(exc))
        meta = os.path.join(pdir, "partition.metadata")
        if os.path.isfile(meta):
            try:
                spec.topic_id = read_partition_metadata(meta).topic_id
            except SegtoolsError as exc:
                spec.problems.append(str(exc))
        specs.append(spec)
    return specs


def replica_facts(spec: ReplicaSpec, batch_rows: Iterable[Mapping[str, Any]],
                  read_error: str | None = None) -> ReplicaFacts:
    """Join a replica's batch rows (BATCH_SCHEMA) with its checkpoint facts."""
    return replica_facts_from_batches(spec, [BatchFacts.from_row(r) for r in batch_rows], read_error)


def _in_file_order(spec: ReplicaSpec, batches: Sequence[BatchFacts]) -> bool:
    """Whether ``batches`` are already in file order (segment order, then position), as the
    in-process scan yields them: checked in one pass without a name -> index map, which for a
    partition of many small segments costs more than the batches' own objects."""
    names = iter(spec.segments.names())
    current: str | None = None
    last_position = -1
    for b in batches:
        if b.segment != current:
            for current in names:
                if current == b.segment:
                    break
            else:
                return False
            last_position = -1
        if b.position < last_position:
            return False
        last_position = b.position
    return True


def replica_facts_from_batches(spec: ReplicaSpec, batches: list[BatchFacts] | BatchColumns,
                               read_error: str | None = None) -> ReplicaFacts:
    """:func:`replica_facts` for batches already built, a list or columns (sorted here, in
    place, into file order)."""
    if not _in_file_order(spec, batches):
        seg_order = {name: i for i, name in enumerate(spec.segments.names())}
        batches.sort(key=lambda b: (seg_order.get(b.segment, -1), b.position))
        del seg_order
    facts = ReplicaFacts(
        broker=spec.broker, topic=spec.topic, partition=spec.partition, batches=batches,
        log_dir=spec.log_dir, partition_dir=spec.partition_dir or "", topic_id=spec.topic_id, state=spec.state,
        high_watermark=spec.high_watermark, recovery_point=spec.recovery_point,
        log_start_checkpoint=spec.log_start_checkpoint, cleaner_checkpoint=spec.cleaner_checkpoint,
        epoch_checkpoint=spec.epoch_checkpoint, clean_shutdown=spec.clean_shutdown,
        first_segment_base=stem_offset(spec.segments[0][0]) if spec.segments else None,
        active_segment_base=stem_offset(spec.segments[-1][0]) if spec.segments else None,
        read_error=read_error, checkpoint_error="; ".join(spec.problems) if spec.problems else None)
    # Bytes a segment holds past its last complete batch: a torn tail in the active segment,
    # unreadable bytes anywhere else.
    for i, name, size, end in _segment_ends(spec, batches):
        if size > end:
            if i == len(spec.segments) - 1:
                facts.torn_tail_bytes = size - end
                facts.torn_tail_segment, facts.torn_tail_position = name, end
            else:
                facts.unreadable_before_tail = True
                msg = f"{name} @ position {end}: {size - end} bytes after the last readable batch"
                facts.read_error = f"{facts.read_error}; {msg}" if facts.read_error else msg
    return facts


def _segment_ends(spec: ReplicaSpec, batches: Sequence[BatchFacts]) -> Iterator[tuple[int, str, int, int]]:
    """(index, name, size, end of its last batch or 0) of each of the replica's segments.
    Columns whose names are the spec's own (built during the scan) are read by index, without
    a dict of every segment's name."""
    from segtools.forensics.batch_columns import BatchColumns

    names = spec.segments.names()
    if isinstance(batches, BatchColumns):
        col_names, col_ends = batches.segment_ends()
        if col_names is names or col_names == names:
            for i, (_path, size) in enumerate(spec.segments):
                yield i, names[i], size, max(0, int(col_ends[i]))
            return
        ends: dict[str, int] = {}
        for k in np.flatnonzero(col_ends >= 0).tolist():
            ends[col_names[k]] = max(ends.get(col_names[k], 0), int(col_ends[k]))
    else:
        ends = {}
        for b in batches:
            ends[b.segment] = max(ends.get(b.segment, 0), b.position + b.size)
    for i, (_path, size) in enumerate(spec.segments):
        yield i, names[i], size, ends.get(names[i], 0)


def batch_limit_error(exc: BatchTooLargeError) -> InputError:
    """A batch above --max-batch-bytes stops compare (exit 2): leaving it out would make the
    replica look shorter than it is. The message names the whole path (replicas share
    segment names)."""
    where = os.path.dirname(exc.path) if exc.path else ""
    return InputError(f"{where}{os.sep if where else ''}{exc}")
