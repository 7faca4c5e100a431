"""The tier audit: from the ``__remote_log_metadata`` partitions on the evidence, the local
replicas of tiered partitions and optionally a LocalTieredStorage root, the findings an SRE
needs (docs/TIER.md lists every kind and what it means).

Every answer is a finding or evidence-backed: a segment history with no later state is
reported (it may be an upload still running, never silently "fine"), and a partition whose
metadata partition is not on the evidence is a ``cannot_tell`` finding, not an all-clear.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from segtools.errors import InputError, SegtoolsError
from segtools.files import tiered_storage
from segtools.files.checkpoints import read_leader_epoch_checkpoint, read_partition_metadata
from segtools.files.indexes import read_offset_index, read_time_index
from segtools.files.outputs import check_output_location, partial_run, prepare_output_dir
from segtools.files.remote import is_remote
from segtools.files.sources import PartitionSource, resolve
from segtools.internal_topics.remote_log_metadata import decode_record
from segtools.records.batches import iter_batches
from segtools.tier import aiven, index_cache, remote_indexes, states
from segtools.tier.index_cache import CacheEntry
from segtools.tier.lineage import (
    EpochIndex,
    Seg,
    deletion_threshold,
    epoch_for_offset,
    serve_walk,
    within_leader_epochs,
)
from segtools.tier.partitioner import metadata_partition
from segtools.tier.remote_view import RemoteView, remote_view

METADATA_TOPIC = "__remote_log_metadata"
#: ``schema_version`` of ``tier --json`` (segtools/schemas/tier.schema.json)
JSON_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Finding:
    """One thing wrong, or one thing the evidence cannot decide (kind ``cannot_tell``)."""

    kind: str
    message: str
    topic: str = ""
    partition: int = -1
    segment_id: str = ""
    broker: int | None = None
    start_offset: int | None = None
    end_offset: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


@dataclass
class RemoteSegment:
    """What ``__remote_log_metadata`` says about one remote segment."""

    segment_id: str
    topic: str
    topic_id: str
    partition: int
    start_offset: int = -1
    end_offset: int = -1
    broker: int = -1
    size: int = 0
    leader_epochs: dict[int, int] = field(default_factory=dict)
    #: (state, broker, event time ms, metadata partition, offset) in metadata-log order
    history: list[tuple[int, int, int, int, int]] = field(default_factory=list)
    #: the state Kafka holds: an illegal transition is refused (its metadata cache throws),
    #: so it stays in ``history`` but does not change this
    state: int | None = None
    #: the plugin's custom metadata of the last record that carried one (Aiven's plugin
    #: records its object key and uploaded size there)
    custom_metadata: bytes | None = None

    def to_json(self) -> dict[str, Any]:
        return {"segment_id": self.segment_id, "topic": self.topic, "partition": self.partition,
                "start_offset": self.start_offset, "end_offset": self.end_offset,
                "broker": self.broker, "size": self.size,
                "leader_epochs": {str(k): v for k, v in sorted(self.leader_epochs.items())},
                "state": None if self.state is None else states.NAMES.get(self.state, str(self.state)),
                "history": [{"state": states.NAMES.get(s, str(s)), "broker": b, "time_ms": t,
                             "metadata_partition": p, "offset": o}
                            for s, b, t, p, o in self.history],
                **({} if self.custom_metadata is None else
                   {"custom_metadata": self.custom_metadata.hex()})}


@dataclass
class Replica:
    """One local replica of a tiered partition."""

    broker: int | None
    path: str
    topic: str
    partition: int
    topic_id: str | None
    local_start: int
    log_end: int
    leader_epochs: dict[int, int]
    segments: tuple[str, ...] = ()


@dataclass
class PartitionSummary:
    topic: str
    partition: int
    topic_id: str
    metadata_partition: int
    earliest_offset: int | None        # first offset of the log, remote or local
    earliest_local_offset: int | None
    latest_tiered_offset: int | None   # highest end offset of a FINISHED remote segment
    log_end_offset: int | None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class TierReport:
    segments: list[RemoteSegment]
    partitions: list[PartitionSummary]
    findings: list[Finding]
    metadata_partitions: list[int]
    #: the brokers' remote-log-index-cache entries
    index_cache: list[CacheEntry] = field(default_factory=list)
    #: with --remote: its root, the layout read and how many segments were read back or not
    remote: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": JSON_SCHEMA_VERSION, "metadata_partitions": self.metadata_partitions,
                "index_cache": [e.to_json() for e in self.index_cache],
                **({} if self.remote is None else {"remote": self.remote}),
                "partitions": [p.to_json() for p in self.partitions],
                "segments": [s.to_json() for s in self.segments],
                "findings": [f.to_json() for f in self.findings]}


def _metadata_records(parts: Iterable[PartitionSource], findings: list[Finding]
                      ) -> tuple[dict[int, dict[int, bytes | None]], list[int]]:
    """metadata partition -> offset -> value, merged over replicas (a committed offset holds
    the same record on every replica)."""
    by_part: dict[int, dict[int, bytes | None]] = {}
    for p in parts:
        got = by_part.setdefault(p.partition, {})
        try:
            for seg in p.segments:
                for batch in iter_batches(seg):
                    if batch.is_control:
                        continue
                    for rec in batch.records():
                        got.setdefault(rec.offset, rec.value)
        except SegtoolsError as e:
            findings.append(Finding("unreadable_metadata",
                                    f"{METADATA_TOPIC}-{p.partition} on broker {p.broker}: {e}",
                                    METADATA_TOPIC, p.partition, broker=p.broker))
    return by_part, sorted(by_part)


def _replica(p: PartitionSource) -> Replica | None:
    if not p.segments or p.partition_dir is None:
        return None
    topic_id = None
    meta = os.path.join(p.partition_dir, "partition.metadata")
    if os.path.isfile(meta):
        topic_id = read_partition_metadata(meta).topic_id
    chain: dict[int, int] = {}
    lec = os.path.join(p.partition_dir, "leader-epoch-checkpoint")
    if os.path.isfile(lec):
        chain = {e.epoch: e.start_offset for e in read_leader_epoch_checkpoint(lec)}
    local_start = int(os.path.basename(p.segments[0]).split(".")[0])
    log_end = int(os.path.basename(p.segments[-1]).split(".")[0])
    for batch in iter_batches(p.segments[-1]):
        log_end = batch.last_offset + 1
    return Replica(p.broker, p.partition_dir, p.topic, p.partition, topic_id, local_start,
                   log_end, chain, p.segments)


def audit(paths: Iterable[str] | str, *, remote_root: str | None = None,
          metadata_partitions: int = 50, remote_format: str = "auto",
          private_key: str | None = None, extract_to: str | None = None,
          histories: Any = None) -> TierReport:
    """Audit the tiered partitions under ``paths`` (broker log dirs). ``remote_root`` is the
    remote tier (a folder or an object-store URI) whose objects are checked against the
    metadata: LocalTieredStorage's layout or Aiven's (``remote_format`` ``auto`` tells them
    apart); ``private_key`` is the PEM of the RSA key Aiven's plugin wrapped data keys with.
    ``extract_to``: a new local folder that receives the remote segments read back, in
    LocalTieredStorage's layout (plain segment and index files). ``histories``: the KRaft
    metadata log already replayed by the caller (compare), which names each partition's
    leader; without it the longest copy of the log among the inputs is replayed here."""
    if extract_to is not None:
        if remote_root is None:
            raise InputError("--extract-remote writes the remote segments: give --remote too")
        if is_remote(extract_to):
            raise InputError(f"--extract-remote {extract_to}: a local folder")
        paths = [paths] if isinstance(paths, str) else list(paths)
        check_output_location(extract_to, [*paths, remote_root], flag="--extract-remote")
    res = resolve(paths)
    # a remote folder among the inputs holds objects, not replicas (``remote_root`` reads it)
    parts = [p for p in (q for r in res.inputs for q in r.all_partitions)
             if not p.remote_tier]
    meta_parts = [p for p in parts if p.topic == METADATA_TOPIC]
    if not meta_parts:
        raise InputError(f"no {METADATA_TOPIC} partition under the inputs: nothing tells what "
                         "was tiered (give the brokers' log dirs)")
    findings: list[Finding] = []
    records, present = _metadata_records(meta_parts, findings)
    segments: dict[str, RemoteSegment] = {}
    deleted: dict[tuple[str, int], tuple[int, int]] = {}  # (topic id, partition) -> state, ts
    names: dict[tuple[str, int], str] = {}
    #: (topic id, partition) -> the state changes Kafka accepted, in metadata-log order
    events: dict[tuple[str, int], list[tuple[int, str]]] = {}
    for mp in present:
        for offset in sorted(records[mp]):
            try:
                api_key, _, d = decode_record(records[mp][offset])
            except SegtoolsError as e:
                findings.append(Finding("unreadable_metadata",
                                        f"{METADATA_TOPIC}-{mp} offset {offset}: {e}",
                                        METADATA_TOPIC, mp))
                continue
            if api_key == 2:
                tip = d["topicIdPartition"]
                key = (tip["id"], tip["partition"])
                names[key] = tip["name"]
                deleted[key] = (d["remotePartitionDeleteState"], d["eventTimestampMs"])
                continue
            if api_key not in (0, 1):
                continue  # snapshots live in the brokers' files, not in the topic
            sid = d["remoteLogSegmentId"]
            tip = sid["topicIdPartition"]
            key = (tip["id"], tip["partition"])
            names[key] = tip["name"]
            seg = segments.setdefault(sid["id"], RemoteSegment(
                sid["id"], tip["name"], tip["id"], tip["partition"]))
            if api_key == 0:
                seg.start_offset, seg.end_offset = d["startOffset"], d["endOffset"]
                seg.broker, seg.size = d["brokerId"], d["segmentSizeInBytes"]
                seg.leader_epochs = {e["leaderEpoch"]: e["offset"]
                                     for e in d["segmentLeaderEpochs"]}
            if d.get("customMetadata") is not None:
                seg.custom_metadata = d["customMetadata"]
            state = d["remoteLogSegmentState"]
            where = (f"{tip['name']}-{tip['partition']} segment {sid['id']} "
                     f"({METADATA_TOPIC}-{mp} offset {offset})")
            if not states.is_valid_transition(seg.state, state):
                findings.append(Finding(
                    "illegal_transition",
                    f"{where}: {states.NAMES.get(seg.state, 'no state') if seg.state is not None else 'no state'}"
                    f" -> {states.NAMES.get(state, str(state))}, which Kafka refuses",
                    seg.topic, seg.partition, seg.segment_id, d["brokerId"]))
            else:
                seg.state = state
                events.setdefault(key, []).append((state, seg.segment_id))
            if key in deleted:
                findings.append(Finding(
                    "after_partition_delete",
                    f"{where}: segment event after the partition's remote delete was marked",
                    seg.topic, seg.partition, seg.segment_id, d["brokerId"]))
            seg.history.append((state, d["brokerId"], d["eventTimestampMs"], mp, offset))

    leaders = _leaders_of(histories) if histories is not None else _leaders(res.inputs)
    replicas: dict[tuple[str, int], list[Replica]] = {}
    for p in parts:
        if p.topic == METADATA_TOPIC or p.topic.startswith("__") or p.state:
            continue
        try:
            rep = _replica(p)
        except SegtoolsError as e:
            findings.append(Finding("unreadable_replica", f"{p.partition_dir}: {e}", p.topic,
                                    p.partition, broker=p.broker))
            continue
        if rep is not None:
            replicas.setdefault((p.topic, p.partition), []).append(rep)

    for seg in segments.values():
        where = f"{seg.topic}-{seg.partition} segment {seg.segment_id} [{seg.start_offset}, {seg.end_offset}]"
        if seg.state == states.STARTED:
            findings.append(Finding(
                "dangling_started",
                f"{where}: copy started by broker {seg.history[-1][1]} and never finished "
                "(an upload that died, or one still running when the evidence was taken)",
                seg.topic, seg.partition, seg.segment_id, seg.history[-1][1],
                seg.start_offset, seg.end_offset))
        elif seg.state == states.DELETE_STARTED:
            findings.append(Finding(
                "unfinished_delete",
                f"{where}: delete started by broker {seg.history[-1][1]} and never finished "
                "(remote objects may remain)", seg.topic, seg.partition, seg.segment_id,
                seg.history[-1][1], seg.start_offset, seg.end_offset))
        if seg.start_offset < 0:
            findings.append(Finding(
                "missing_start_record",
                f"{seg.topic}-{seg.partition} segment {seg.segment_id}: updates with no "
                "RemoteLogSegmentMetadata record (its offsets are unknown)",
                seg.topic, seg.partition, seg.segment_id))

    summaries: list[PartitionSummary] = []
    for (tid, part), name in sorted(names.items(), key=lambda kv: (kv[1], kv[0][1])):
        if (tid, part) in deleted:
            continue
        segs = [s for s in segments.values() if s.topic_id == tid and s.partition == part]
        finished = sorted((s for s in segs if s.state == states.FINISHED and s.start_offset >= 0),
                          key=lambda s: (s.start_offset, s.end_offset))
        reps = [r for r in replicas.get((name, part), []) if r.topic_id in (None, tid)]
        mp = metadata_partition(tid, part, metadata_partitions)
        if mp not in present:
            findings.append(Finding(
                "cannot_tell", f"{name}-{part}: its history lives in {METADATA_TOPIC}-{mp}, "
                "which is not on the evidence", name, part))
        index = _epoch_index(segments, events.get((tid, part), []))
        top = max((max(r.leader_epochs) for r in reps if r.leader_epochs), default=None)
        by_log = leaders.get((name, part))
        if by_log is not None and by_log not in {r.broker for r in reps}:
            by_log = None   # the leader's replica is not here: the latest epoch on the evidence
        for rep in reps:
            # the leader serves reads and runs Kafka's clean-up of the remote tier: the one
            # the metadata log names, else the replica holding the latest epoch here
            leads = rep.broker == by_log if by_log is not None else (
                top is not None and bool(rep.leader_epochs) and max(rep.leader_epochs) == top)
            for s in finished:
                why = within_leader_epochs(s.leader_epochs, s.end_offset, rep.log_end,
                                           rep.leader_epochs)
                if why is not None:
                    findings.append(Finding(
                        "out_of_lineage",
                        f"{name}-{part} segment {s.segment_id} [{s.start_offset}, "
                        f"{s.end_offset}] (uploaded by broker {s.broker}) against broker "
                        f"{rep.broker}'s leader-epoch chain: {why}"
                        + (_kafka_deletes(s, rep, index) if leads else ""),
                        name, part, s.segment_id, rep.broker, s.start_offset, s.end_offset))
            if rep.leader_epochs:
                findings.extend(_served(name, part, finished, rep, index, leads))
            else:
                findings.extend(_coverage(name, part, finished, rep))
        for s in finished:
            if not index.listed(s.segment_id):
                findings.append(Finding(
                    "unlisted_segment",
                    f"{name}-{part} segment {s.segment_id} [{s.start_offset}, {s.end_offset}] "
                    f"(uploaded by broker {s.broker}) is FINISHED, but a later segment "
                    "finished at its start offset in each of its epochs has taken its place in "
                    "Kafka's index: no read is served from it and no retention or clean-up "
                    "deletes it (its objects stay until the topic is deleted)",
                    name, part, s.segment_id, s.broker, s.start_offset, s.end_offset))
        if not reps:
            findings.append(Finding(
                "cannot_tell", f"{name}-{part}: no local replica on the evidence, so its "
                "log end and leader epochs are unknown", name, part))
        earliest_local = min((r.local_start for r in reps), default=None)
        leo = max((r.log_end for r in reps), default=None)
        starts = [s.start_offset for s in finished]
        if earliest_local is not None:
            starts.append(earliest_local)
        summaries.append(PartitionSummary(
            name, part, tid, mp, min(starts) if starts else None, earliest_local,
            max((s.end_offset for s in finished), default=None), leo))

    cache = [e for r in res.inputs for ld in r.log_dirs if not is_remote(ld.path)
             for e in index_cache.scan(ld.path, ld.broker)]
    findings.extend(_index_cache(cache, segments, set(range(metadata_partitions)) <= set(present)))
    remote_summary = None
    if remote_root is not None:
        rsa_key = aiven.PrivateKey(private_key) if private_key is not None else None
        if extract_to is not None:
            out = prepare_output_dir(extract_to, [*paths, remote_root], flag="--extract-remote")
        with remote_view(remote_root, remote_format, rsa_key) as view:
            roots = [(view.root, None), *_remote_roots(res.inputs)]
            findings.extend(replace(f, message=view.show(f.message))
                            for f in [*_objects(roots, segments, replicas, view),
                                      *_index_cache_vs_remote(cache, view.root)])
            remote_summary = {"root": remote_root, "format": view.format,
                              "segments_read": len(tiered_storage.scan(view.root)),
                              "segments_unreadable": len(view.undecodable)}
            if extract_to is not None:
                with partial_run(out, command="segtools tier --extract-remote") as run:
                    # every file the view holds (undecodable segments have none)
                    shutil.copytree(view.root, out, dirs_exist_ok=True)
                    run.summary["segments"] = sum(1 for _ in out.rglob("*.log"))
    else:
        roots = _remote_roots(res.inputs)
        if roots:
            findings.extend(_objects(roots, segments, replicas))
    ordered = sorted(segments.values(), key=lambda s: (s.topic, s.partition, s.start_offset))
    return TierReport(ordered, summaries, findings, present, cache, remote_summary)


def _cached_name(e: CacheEntry) -> str:
    return os.path.join(e.log_dir, index_cache.DIR_NAME, f"{e.start_offset}_{e.segment_id}")


def _index_cache(cache: list[CacheEntry], segments: dict[str, RemoteSegment],
                 all_metadata: bool) -> list[Finding]:
    """Each broker's cached remote indexes against the metadata: the segment is known, starts
    where the file name says, and its cached offset index points inside its offsets."""
    out: list[Finding] = []
    for e in cache:
        seg = segments.get(e.segment_id)
        where = f"{_cached_name(e)}.* (broker {e.broker})"
        if seg is None:
            if all_metadata:   # else its record may be in a metadata partition not given
                out.append(Finding(
                    "index_cache_unknown_segment",
                    f"{where}: cached indexes of remote segment {e.segment_id}, which no "
                    "__remote_log_metadata record on the evidence names (every metadata "
                    "partition is here): its records are gone (a retention set on the "
                    "metadata topic, or a cache of another cluster)", segment_id=e.segment_id,
                    broker=e.broker, start_offset=e.start_offset))
            continue
        if seg.start_offset < 0:
            continue
        tell = (seg.topic, seg.partition, seg.segment_id, e.broker, seg.start_offset,
                seg.end_offset)
        if e.start_offset != seg.start_offset:
            out.append(Finding(
                "index_cache_mismatch",
                f"{where}: named for start offset {e.start_offset}, the metadata says "
                f"{seg.topic}-{seg.partition} segment {seg.segment_id} starts at "
                f"{seg.start_offset}", *tell))
            continue
        path = e.files.get(".index")
        if path is None:
            continue
        try:
            rel = read_offset_index(path, strict=False)["relative_offset"]
        except SegtoolsError as err:
            out.append(Finding("unreadable_replica", f"{path}: {err}", seg.topic, seg.partition,
                               broker=e.broker))
            continue
        outside = [int(r) + e.start_offset for r in rel
                   if not seg.start_offset <= int(r) + e.start_offset <= seg.end_offset]
        if outside:
            out.append(Finding(
                "index_cache_mismatch",
                f"{path}: points at offset {outside[0]}"
                + (f" (and {len(outside) - 1} more)" if len(outside) > 1 else "")
                + f", outside {seg.topic}-{seg.partition} segment {seg.segment_id} "
                f"[{seg.start_offset}, {seg.end_offset}]: it indexes other data", *tell))
    return out


def _index_cache_vs_remote(cache: list[CacheEntry], root: str) -> list[Finding]:
    """A broker's cached offset and time indexes against the remote segment's own: Kafka
    copies them byte for byte from the remote storage."""
    out: list[Finding] = []
    objs = tiered_storage.scan(root) if cache else {}
    for e in cache:
        obj = objs.get(e.segment_id)
        if obj is None:
            continue
        for suffix, reader in ((".index", read_offset_index), (".timeindex", read_time_index)):
            mine, theirs = e.files.get(suffix), obj.files.get(suffix)
            if mine is None or theirs is None:
                continue
            try:
                same = reader(mine, strict=False).tobytes() == reader(theirs, strict=False).tobytes()
            except SegtoolsError as err:
                out.append(Finding("unreadable_replica", f"{mine} or {theirs}: {err}", obj.topic,
                                   obj.partition, broker=e.broker))
                continue
            if not same:
                out.append(Finding(
                    "index_cache_mismatch",
                    f"{mine} (broker {e.broker}): differs from the remote segment's {theirs}: "
                    "the broker served reads of that segment with another index",
                    obj.topic, obj.partition, e.segment_id, e.broker, obj.start_offset))
    return out


def _leaders(inputs: Iterable[Any]) -> dict[tuple[str, int], int]:
    """(topic, partition) -> its leader at the end of the KRaft metadata log on the evidence
    (the longest copy of ``__cluster_metadata-0`` among the inputs); empty without one, or
    when it cannot be read (the leader is then taken from the replicas' epochs)."""
    from segtools.forensics.elections import load_histories

    copies = [(sum(p.segment_sizes), r.path) for r in inputs for p in r.all_partitions
              if p.topic == "__cluster_metadata" and not p.state]
    if not copies:
        return {}
    try:
        hist = load_histories(max(copies)[1])
    except (SegtoolsError, OSError):
        return {}
    return _leaders_of(hist)


def _leaders_of(histories: Any) -> dict[tuple[str, int], int]:
    """(topic, partition) -> its leader at the end of a replayed metadata log."""
    return {key: h.leader for key, h in histories.items()
            if h.leader is not None and h.leader >= 0}


def _epoch_index(segments: dict[str, RemoteSegment], changes: list[tuple[int, str]]
                 ) -> EpochIndex:
    """Kafka's per-epoch index of one partition's remote segments, after the accepted state
    changes in metadata-log order."""
    index = EpochIndex()
    for state, sid in changes:
        s = segments[sid]
        if s.start_offset < 0:
            continue   # no metadata record: Kafka does not know its offsets either
        seg = Seg(sid, s.start_offset, s.end_offset, s.leader_epochs)
        {states.STARTED: index.started, states.FINISHED: index.finished,
         states.DELETE_STARTED: index.delete_started,
         states.DELETE_FINISHED: index.delete_finished}[state](seg)
    return index


def _kafka_deletes(s: RemoteSegment, rep: Replica, index: EpochIndex) -> str:
    """When Kafka's clean-up on the leader ``rep`` deletes the out-of-lineage segment ``s``."""
    if not index.listed(s.segment_id):
        return "; Kafka's index no longer lists it, so Kafka never deletes it"
    at = deletion_threshold(Seg(s.segment_id, s.start_offset, s.end_offset, s.leader_epochs),
                            rep.leader_epochs)
    if at is None:
        return (f"; while broker {rep.broker} leads with this chain Kafka does not delete it "
                "(retention counts segments in lineage only)")
    if at <= min(rep.leader_epochs.values()):
        return ("; its epochs are all below the leader's earliest epoch: Kafka's next "
                "clean-up deletes it")
    return (f"; Kafka deletes it once broker {rep.broker}'s log start offset reaches {at} "
            "(retention of later segments or DeleteRecords; retention alone never deletes "
            "it)")


def _served(name: str, part: int, finished: list[RemoteSegment], rep: Replica,
            index: EpochIndex, leads: bool) -> list[Finding]:
    """What Kafka's read path serves of the replica's offsets below its first local offset,
    with the replica as leader: offsets no read is served for (``coverage_gap``) and, for the
    leader, records a read is answered with from a segment of another lineage."""
    out: list[Finding] = []
    chain = rep.leader_epochs
    lowest = min([s.start_offset for s in finished] + [rep.local_start])
    start = max(min(chain.values()), lowest)
    walk = serve_walk(index, chain, start, min(rep.local_start, rep.log_end), rep.log_end)
    for lo, hi in walk.gaps:
        out.append(Finding(
            "coverage_gap",
            f"{name}-{part} on broker {rep.broker}: offsets [{lo}, {hi + 1}) are below its "
            "first local offset and no remote segment is served for them by its leader "
            f"epochs (epoch {epoch_for_offset(chain, lo)} at {lo}; Kafka answers "
            "OFFSET_OUT_OF_RANGE): lost in tiering",
            name, part, broker=rep.broker, start_offset=lo, end_offset=hi))
    for lo, hi, sid, theirs, mine in walk.foreign if leads else ():
        seg = next(s for s in finished if s.segment_id == sid)
        out.append(Finding(
            "served_out_of_lineage",
            f"{name}-{part}: a read below offset {lo} from broker {rep.broker} (the leader) "
            f"is answered from remote segment {sid} [{seg.start_offset}"
            f", {seg.end_offset}] (uploaded by broker {seg.broker}), which goes on into offsets "
            f"[{lo}, {hi}] of epoch {theirs} where broker {rep.broker}'s chain has "
            + (f"epoch {mine}" if lo < rep.log_end else f"its log end {rep.log_end}")
            + ": a consumer reading through is served another lineage's records there (as "
            f"many as its fetch size reaches) and skips broker {rep.broker}'s own",
            name, part, sid, rep.broker, lo, hi))
    return out


def _coverage(name: str, part: int, finished: list[RemoteSegment], rep: Replica
              ) -> list[Finding]:
    """Gaps in [first offset, log end) of one replica: FINISHED remote segments, then the
    local segments from the replica's first local offset."""
    out: list[Finding] = []
    ranges = [(s.start_offset, s.end_offset + 1) for s in finished]
    ranges.append((rep.local_start, rep.log_end))
    ranges.sort()
    reach = ranges[0][0]
    for lo, hi in ranges:
        if lo > reach:
            out.append(Finding(
                "coverage_gap",
                f"{name}-{part} on broker {rep.broker}: offsets [{reach}, {lo}) are neither in "
                "a FINISHED remote segment nor in a local segment (lost in tiering)",
                name, part, broker=rep.broker, start_offset=reach, end_offset=lo - 1))
        reach = max(reach, hi)
    return out


def _batches(paths: Iterable[str], lo: int, hi: int) -> dict[int, tuple[int, int]]:
    """base offset -> (last offset, CRC) of the batches overlapping [lo, hi]."""
    out: dict[int, tuple[int, int]] = {}
    for path in paths:
        for b in iter_batches(path):
            if b.last_offset >= lo and b.base_offset <= hi:
                out[b.base_offset] = (b.last_offset, b.crc)
    return out


def _compare_object(seg: RemoteSegment, log_path: str, reps: list[Replica]) -> list[Finding]:
    """The remote .log against the metadata's offsets and, where a replica still holds the
    same offsets locally, batch by batch (base offset, last offset, CRC)."""
    out: list[Finding] = []
    try:
        remote = _batches([log_path], seg.start_offset, seg.end_offset)
    except SegtoolsError as e:
        return [Finding("unreadable_object", f"{log_path}: {e}", seg.topic, seg.partition,
                        seg.segment_id)]
    first = min(remote, default=None)
    last = max((v[0] for v in remote.values()), default=None)
    if (first, last) != (seg.start_offset, seg.end_offset):
        out.append(Finding(
            "object_offsets_mismatch",
            f"{log_path}: holds "
            + ("no complete batch" if first is None else f"offsets {first}..{last}")
            + ", metadata says "
            f"{seg.start_offset}..{seg.end_offset}", seg.topic, seg.partition, seg.segment_id,
            seg.broker, seg.start_offset, seg.end_offset))
    for rep in reps:
        lo, hi = max(seg.start_offset, rep.local_start), min(seg.end_offset, rep.log_end - 1)
        if lo > hi:
            continue
        try:
            local = _batches(rep.segments, lo, hi)
        except SegtoolsError as e:
            out.append(Finding("unreadable_replica", f"{rep.path}: {e}", seg.topic,
                               seg.partition, broker=rep.broker))
            continue
        differ = sorted(b for b in set(local) | set(remote)
                        if b in local and b in remote and local[b] != remote[b]
                        or (b in local) != (b in remote) and lo <= b <= hi)
        if differ:
            out.append(Finding(
                "overlap_mismatch",
                f"{seg.topic}-{seg.partition} segment {seg.segment_id}: offsets [{lo}, {hi}] are "
                f"both remote and local on broker {rep.broker}, and the batches at "
                f"{', '.join(map(str, differ[:5]))} differ (base/last offset or CRC): a consumer "
                "is served different records depending on the tier", seg.topic, seg.partition,
                seg.segment_id, rep.broker, lo, hi))
    return out


def _remote_roots(inputs: Iterable[Any]) -> list[tuple[str, tuple[str, int] | None]]:
    """The LocalTieredStorage folders given among the inputs, each with the one partition it is
    limited to (a partition folder) or None (a whole storage folder: every FINISHED segment must
    have its objects there)."""
    roots: list[tuple[str, tuple[str, int] | None]] = []
    for r in inputs:
        rem = [p for p in r.all_partitions if p.remote_tier]
        if not rem:
            continue
        one = len(rem) == 1 and rem[0].partition_dir is not None and \
            os.path.realpath(rem[0].partition_dir) == os.path.realpath(r.path)
        roots.append((r.path, (rem[0].topic, rem[0].partition) if one else None))
    return roots


def _objects(roots: list[tuple[str, tuple[str, int] | None]], segments: dict[str, RemoteSegment],
             replicas: dict[tuple[str, int], list[Replica]],
             view: RemoteView | None = None) -> list[Finding]:
    """The objects of the remote folders ``roots`` against the metadata. ``view``: the
    ``--remote`` tier as read back (its root is the first of ``roots``), with the segments it
    could not decode."""
    out: list[Finding] = []
    undecodable = view.undecodable if view is not None else {}
    if view is not None and view.format == "aiven":
        out.extend(_aiven_custom_metadata(segments, view))
    objs: dict[str, tiered_storage.RemoteObjects] = {}
    for root, _ in roots:
        try:
            objs.update(tiered_storage.scan(root))
        except OSError as e:
            raise InputError(f"{root}: cannot list the remote storage folder: {e.strerror}") from e
    # partition folders given alone vouch for their partition only
    scope = None if any(part is None for _, part in roots) else {part for _, part in roots}
    root = ", ".join(r for r, _ in roots)
    for sid, seg in segments.items():
        if seg.state != states.FINISHED:
            continue
        if scope is not None and (seg.topic, seg.partition) not in scope:
            continue
        u = undecodable.get(sid)
        if u is not None:   # the objects are there, but not readable as a segment
            where = (f"{seg.topic}-{seg.partition} segment {sid} [{seg.start_offset}, "
                     f"{seg.end_offset}] is FINISHED: ")
            out.append(Finding("cannot_tell", where + u.reason, seg.topic, seg.partition, sid,
                               seg.broker, seg.start_offset, seg.end_offset)
                       if u.kind == "cannot_tell" else
                       Finding("unreadable_object", where + u.reason, seg.topic, seg.partition,
                               sid, seg.broker, seg.start_offset, seg.end_offset))
            continue
        obj = objs.get(sid)
        missing = [s for s in tiered_storage.REQUIRED if obj is None or s not in obj.files]
        if missing:
            out.append(Finding(
                "metadata_without_objects",
                f"{seg.topic}-{seg.partition} segment {sid} [{seg.start_offset}, "
                f"{seg.end_offset}] is FINISHED but {root} lacks its {', '.join(missing)}",
                seg.topic, seg.partition, sid, seg.broker, seg.start_offset, seg.end_offset))
        elif obj is not None and obj.log_path is not None \
                and os.path.getsize(obj.log_path) != seg.size:
            out.append(Finding(
                "object_size_mismatch",
                f"{obj.log_path}: {os.path.getsize(obj.log_path)} bytes, metadata says {seg.size}",
                seg.topic, seg.partition, sid, seg.broker, seg.start_offset, seg.end_offset))
        if obj is not None and obj.log_path is not None and not missing:
            reps = [r for r in replicas.get((seg.topic, seg.partition), [])
                    if r.topic_id in (None, seg.topic_id)]
            found = _compare_object(seg, obj.log_path, reps)
            out.extend(found)
            broken = {"object_offsets_mismatch", "unreadable_object"}
            if os.path.getsize(obj.log_path) == seg.size and not broken & {f.kind for f in found}:
                # (a cut .log is reported already; its indexes would only echo the cut)
                out.extend(Finding("remote_index_mismatch", m, seg.topic, seg.partition, sid,
                                   seg.broker, seg.start_offset, seg.end_offset)
                           for m in remote_indexes.check(obj.files, seg.start_offset,
                                                         seg.end_offset, seg.leader_epochs))
    # objects no live metadata names: read back (with what Aiven's manifest says of them) or not
    stray = [(sid, os.path.dirname(next(iter(obj.files.values()))), obj.topic, obj.partition,
              obj.start_offset, view.manifest_says(sid) if view is not None else "")
             for sid, obj in objs.items()]
    stray += [(sid, u.where, u.topic, u.partition, u.start_offset, "") for sid, u in undecodable.items()]
    for sid, where, topic, partition, start, says in stray:
        known = segments.get(sid)
        if known is None or known.state == states.DELETE_FINISHED:
            out.append(Finding(
                "object_without_metadata",
                f"{where}: objects of segment {sid} "
                + ("that the metadata says were deleted" if known else
                   "that no metadata record names (a leak)") + says,
                topic, partition, sid, start_offset=start))
    return out


def _aiven_custom_metadata(segments: dict[str, RemoteSegment],
                           view: RemoteView) -> list[Finding]:
    """What Aiven's plugin recorded in the custom metadata against the objects: the broker
    reads the objects at the recorded key, and the recorded size is what it uploaded."""
    out: list[Finding] = []
    for sid, seg in segments.items():
        if seg.state != states.FINISHED or seg.custom_metadata is None or sid not in view.objects:
            continue
        where = f"{seg.topic}-{seg.partition} segment {sid} [{seg.start_offset}, {seg.end_offset}]"
        try:
            custom = aiven.decode_custom_metadata(seg.custom_metadata)
        except SegtoolsError as e:
            out.append(Finding("unreadable_metadata", f"{where}: {e}", seg.topic, seg.partition,
                               sid, seg.broker, seg.start_offset, seg.end_offset))
            continue
        base, size = view.objects[sid]
        if "object_key" in custom:
            recorded = aiven.object_key(custom, "")
            if not ("/" + recorded).endswith("/" + base):
                out.append(Finding(
                    "metadata_without_objects",
                    f"{where}: the custom metadata puts its objects at {recorded}, they are at "
                    f"{base} (the broker reads {recorded})", seg.topic, seg.partition, sid,
                    seg.broker, seg.start_offset, seg.end_offset))
        if "remote_size" in custom and custom["remote_size"] != size:
            out.append(Finding(
                "object_size_mismatch",
                f"{where}: its objects hold {size} bytes, the custom metadata says the plugin "
                f"uploaded {custom['remote_size']}", seg.topic, seg.partition, sid, seg.broker,
                seg.start_offset, seg.end_offset))
    return out
