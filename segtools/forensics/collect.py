"""Stage 1 inputs: which replicas the user gave us and their small per-replica facts
(checkpoints, epoch checkpoint, topic id, clean-shutdown marker, segment sizes).

Batch rows come from ``segtools.records.columnar`` (in process) or the ``kafka_segments`` data source
(Spark); both are turned into ``ReplicaFacts`` by :func:`replica_facts`. Everything here is
read-only and reads only small text files, so it runs on the driver.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from segtools.errors import BatchTooLargeError, InputError, SegtoolsError, display_path
from segtools.forensics.model import BatchFacts, ReplicaFacts
from segtools.formats.names import stem_offset

if TYPE_CHECKING:
    from segtools.files.sources import Resolution
    from segtools.forensics.batch_columns import BatchColumns

CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


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
    segments: list[tuple[str, int]] = field(default_factory=list)   # (path, size) by base offset
    topic_id: str | None = None
    high_watermark: int | None = None
    recovery_point: int | None = None
    log_start_checkpoint: int | None = None
    cleaner_checkpoint: int | None = None
    epoch_checkpoint: list[tuple[int, int]] | None = None
    clean_shutdown: bool = False
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

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
            segments=list(zip(s.segments, s.segment_sizes)),
            high_watermark=ckpts["replication-offset-checkpoint"].get(tp),
            recovery_point=ckpts["recovery-point-offset-checkpoint"].get(tp),
            log_start_checkpoint=ckpts["log-start-offset-checkpoint"].get(tp),
            cleaner_checkpoint=ckpts["cleaner-offset-checkpoint"].get(tp),
            clean_shutdown=os.path.exists(os.path.join(ld, CLEAN_SHUTDOWN_FILE)),
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
    names = (os.path.basename(p) for p, _ in spec.segments)
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
        seg_order = {os.path.basename(p): i for i, (p, _) in enumerate(spec.segments)}
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
    ends: dict[str, int] = {}
    for b in batches:
        ends[b.segment] = max(ends.get(b.segment, 0), b.position + b.size)
    for i, (path, size) in enumerate(spec.segments):
        name = os.path.basename(path)
        end = ends.get(name, 0)
        if size > end:
            if i == len(spec.segments) - 1:
                facts.torn_tail_bytes = size - end
                facts.torn_tail_segment, facts.torn_tail_position = name, end
            else:
                facts.unreadable_before_tail = True
                msg = f"{name} @ position {end}: {size - end} bytes after the last readable batch"
                facts.read_error = f"{facts.read_error}; {msg}" if facts.read_error else msg
    return facts


def batch_limit_error(exc: BatchTooLargeError) -> InputError:
    """A batch above --max-batch-bytes stops compare (exit 2): leaving it out would make the
    replica look shorter than it is. The message names the whole path (replicas share
    segment names)."""
    where = os.path.dirname(exc.path) if exc.path else ""
    return InputError(f"{where}{os.sep if where else ''}{exc}")
