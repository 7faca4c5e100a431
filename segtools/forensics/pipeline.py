"""The compare pipeline, written once: the stages and the tables that pass between them.

    plan        discovery on the caller's side (``collect.discover_replicas``): ReplicaSpecs
    stage 1     :func:`scan_segment`: one segment -> ``FACTS_SCHEMA`` rows (batch headers and
                CRC checks; a segment that stopped at bad bytes ends with an error row)
    stage 2     :func:`classify_group`: one partition's rows -> ``PartitionVerdict``
    stage 3a    :func:`drill_tasks`: a verdict -> the offset ranges to decode (``TASK_SCHEMA``)
    stage 3b    :func:`read_task`: one task -> records (reference ranges keep only what
                :class:`ReferenceFilter` of the divergent records keeps)
    stage 3c    :func:`match_partition`: one partition's records -> lost records and findings
                (:func:`compare_partition` is stages 2-3 for one partition, as both runners
                call it: Spark in ``groupBy(topic, partition).applyInArrow``)
    finish      :func:`finish_report`: consumer-group findings, lost offsets

A runner only moves rows between these functions: :class:`LocalRunner` here, in this process;
``segtools.spark.compare_job`` on Spark, as Arrow with these declared schemas.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from segtools.errors import BatchTooLargeError, SegtoolsError
from segtools.forensics.batch_columns import BatchColumns, BatchColumnsBuilder
from segtools.forensics.classify import PartitionVerdict, classify_partition
from segtools.forensics.collect import (
    ReplicaSpec,
    batch_limit_error,
    replica_facts_from_batches,
)
from segtools.forensics.consumer_groups import (
    CONSUMER_OFFSETS,
    Commits,
    attach_group_findings,
    commits_from_records,
    merge_commits,
)
from segtools.forensics.elections import PartitionHistory
from segtools.forensics.findings import Finding
from segtools.forensics.loss import (
    AckIndex,
    LostRecord,
    ReferenceFilter,
    apply_lost_evidence,
    lost_records,
)
from segtools.forensics.model import BatchFacts, RecordFacts, ReplicaFacts
from segtools.forensics.report import CompareReport, PartitionReport
from segtools.formats.names import stem_offset

if TYPE_CHECKING:
    from segtools.forensics.progress import Progress

# ---------------------------------------------------------------------------------------------
# schemas of the tables between stages

#: Stage 1 rows: the BATCH_SCHEMA columns the classifier reads, ``broker`` = the run's replica
#: id, and ``read_error`` (null on batch rows; set on the one row that ends a segment which
#: stopped at unreadable bytes).
FACT_COLUMNS = ("topic", "partition", "broker", "segment", "position", "size", "base_offset", "last_offset",
                "partition_leader_epoch", "magic", "crc", "crc_valid", "is_transactional", "is_control",
                "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "records_count")


def _facts_schema() -> pa.Schema:
    from segtools.records.schema import BATCH_SCHEMA

    return pa.schema([BATCH_SCHEMA.field(c) for c in FACT_COLUMNS] + [pa.field("read_error", pa.string())])


FACTS_SCHEMA = _facts_schema()

#: Stage 3a rows: decode ``[first, last]`` of one replica; ``reference`` ranges are filtered.
TASK_SCHEMA = pa.schema([pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
                         pa.field("replica_id", pa.int32()), pa.field("first", pa.int64()),
                         pa.field("last", pa.int64()), pa.field("reference", pa.bool_())])

#: Stage 3b rows: what loss matching needs of a record.
RECORD_FACTS_SCHEMA = pa.schema([
    pa.field("topic", pa.string()), pa.field("partition", pa.int32()), pa.field("replica_id", pa.int32()),
    pa.field("offset", pa.int64()), pa.field("leader_epoch", pa.int32()),
    pa.field("key", pa.binary()), pa.field("value", pa.binary()),
    pa.field("producer_id", pa.int64()), pa.field("producer_epoch", pa.int32()), pa.field("sequence", pa.int32()),
    pa.field("is_control", pa.bool_()),
    pa.field("headers", pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))),
])

#: Offset commits of a __consumer_offsets replica (S21 input).
COMMITS_SCHEMA = pa.schema([pa.field("group", pa.string()), pa.field("topic", pa.string()),
                            pa.field("partition", pa.int32()), pa.field("position", pa.int64()),
                            pa.field("offset", pa.int64()), pa.field("epoch", pa.int32())])

# ---------------------------------------------------------------------------------------------
# stage 1


def error_batch(topic: str, partition: int, replica_id: int | None, segment: str, message: str,
                schema: pa.Schema = FACTS_SCHEMA) -> pa.RecordBatch:
    """The row that says "this segment stopped here": identity columns and ``read_error``."""
    known = {"topic": topic, "partition": partition, "broker": replica_id, "segment": segment,
             "read_error": message}
    return pa.RecordBatch.from_arrays([pa.array([known.get(f.name)], f.type) for f in schema], schema=schema)


def scan_segment(path: str, topic: str, partition: int, replica_id: int) -> Iterator[pa.RecordBatch]:
    """Stage 1 for one segment file (local path): FACTS_SCHEMA batches."""
    from segtools.records import columnar

    try:
        for rb in columnar.iter_batch_batches(path, topic=topic, partition=partition, broker=replica_id,
                                              located=True):
            if rb.num_rows:
                yield facts_batch(rb)
    except BatchTooLargeError as exc:
        # not a fact about the replica but about our limit: comparing without the batch would
        # call an unread log empty, so stop and let the user raise --max-batch-bytes
        raise batch_limit_error(exc) from None
    except SegtoolsError as exc:
        yield error_batch(topic, partition, replica_id, os.path.basename(path), str(exc))


def facts_batch(rb: pa.RecordBatch) -> pa.RecordBatch:
    """BATCH_SCHEMA (+ optional read_error) -> FACTS_SCHEMA."""
    cols = [rb.column(c) for c in FACT_COLUMNS]
    err = rb.column("read_error") if "read_error" in rb.schema.names else pa.nulls(rb.num_rows, pa.string())
    return pa.RecordBatch.from_arrays([*cols, err], schema=FACTS_SCHEMA)


# ---------------------------------------------------------------------------------------------
# stage 2


def classify_group(rows: pa.Table, specs: Sequence[ReplicaSpec],
                   history: PartitionHistory | None) -> PartitionVerdict:
    """Stage 2 for one partition: its FACTS_SCHEMA rows (any order) and its replicas' specs
    (replicas without rows are empty logs)."""
    return classify_partition(replica_facts_of_rows(rows, specs), history=history)


def replica_facts_of_rows(rows: pa.Table, specs: Sequence[ReplicaSpec]) -> list[ReplicaFacts]:
    """The first half of :func:`classify_group`: one partition's FACTS_SCHEMA rows -> the
    ReplicaFacts of its replicas (by replica id), which no longer need the rows."""
    errors: dict[int, list[tuple[int, str]]] = defaultdict(list)
    failed = rows.filter(pc.is_valid(rows.column("read_error")))
    if failed.num_rows:
        # segment name -> file order, built only when a segment stopped early (one entry per
        # segment: a partition of 100,000 segments would hold it through classification)
        order = {s.replica_id: {os.path.basename(p): i for i, (p, _) in enumerate(s.segments)} for s in specs}
        for r in failed.select(["broker", "segment", "read_error"]).to_pylist():
            rid = int(r["broker"])
            errors[rid].append((order.get(rid, {}).get(r["segment"], -1), r["read_error"]))
        del order
    batches = _batch_facts_by_replica(rows.filter(pc.is_null(rows.column("read_error"))) if failed.num_rows
                                      else rows)
    facts = []
    for spec in sorted(specs, key=lambda s: s.replica_id):
        msgs = [m for _, m in sorted(errors.get(spec.replica_id, []))]
        facts.append(replica_facts_from_batches(spec, batches.pop(spec.replica_id, []),
                                                "; ".join(msgs) if msgs else None))
    return facts


#: BatchFacts fields in constructor order, as FACTS_SCHEMA columns
_BATCH_FACT_COLUMNS = ("base_offset", "last_offset", "partition_leader_epoch", "crc", "crc_valid", "records_count",
                       "producer_id", "producer_epoch", "base_sequence", "is_transactional", "is_control", "magic",
                       "segment", "position", "size", "max_timestamp")


def _batch_facts_by_replica(rows: pa.Table) -> dict[int, list[BatchFacts] | BatchColumns]:
    """Batch rows -> the batches of each replica id, in row order: as columns (BatchColumns,
    ~70 bytes a batch; an object per batch was ~650 bytes of RSS at the peak, and a partition
    can hold millions of batches)."""
    if any(rows.column(c).null_count for c in ("broker", *_BATCH_FACT_COLUMNS)):
        # not from stage 1 as we write it: keep BatchFacts.from_row's conversions and errors
        lists: dict[int, list[BatchFacts]] = defaultdict(list)
        for r in rows.to_pylist():
            lists[int(r["broker"])].append(BatchFacts.from_row(r))
        return dict(lists)
    names: dict[str, str] = {}     # one str per segment name, shared by the replicas
    rows = rows.select(["broker", *_BATCH_FACT_COLUMNS])    # a filter copies only these
    brokers = rows.column("broker").combine_chunks()
    n = len(brokers)
    if n and not pc.any(pc.less(brokers.slice(1), brokers.slice(0, n - 1))).as_py():
        # the local runner's rows come replica after replica: slices, not filtered copies
        # (a filter of the whole table was ~280 bytes a row of peak RSS)
        ids = pc.unique(brokers).to_pylist()
        out: dict[int, list[BatchFacts] | BatchColumns] = {}
        for rid in ids:
            lo = pc.index(brokers, rid).as_py()
            hi = lo + pc.sum(pc.equal(brokers, rid)).as_py()
            out[rid] = BatchColumns.from_arrow(rows.slice(lo, hi - lo), names)
        return out
    return {rid: BatchColumns.from_arrow(rows.filter(pc.equal(brokers, rid)), names)
            for rid in pc.unique(brokers).to_pylist()}


# ---------------------------------------------------------------------------------------------
# stage 3


@dataclass(frozen=True, slots=True)
class ReadTask:
    topic: str
    partition: int
    replica_id: int
    first: int
    last: int
    reference: bool = False


def drill_tasks(verdict: PartitionVerdict, specs: Sequence[ReplicaSpec]) -> list[ReadTask]:
    """Stage 3a: the divergent ranges of a partition, then (when it holds anything from the
    earliest fork on) the reference replica's range from there to its log end."""
    if not verdict.divergent_ranges:
        return []
    by_key: dict[tuple[int | None, str], int] = {(s.broker, s.log_dir): s.replica_id for s in specs
                                                 if (s.topic, s.partition) == (verdict.topic, verdict.partition)}
    tasks = [ReadTask(verdict.topic, verdict.partition, by_key[(r.broker, r.log_dir)], r.first_offset, r.last_offset)
             for r in verdict.divergent_ranges]
    ref = next(r for r in verdict.replicas if r.is_reference)
    lo = min(r.first_offset for r in verdict.divergent_ranges)
    ref_id = by_key.get((verdict.reference_broker, verdict.reference_log_dir))
    if ref_id is not None and ref.log_end_offset > lo:
        tasks.append(ReadTask(verdict.topic, verdict.partition, ref_id, lo, ref.log_end_offset - 1, True))
    return tasks


def read_range(spec: ReplicaSpec, first: int, last: int,
               starts: Mapping[str, int] | None = None) -> list[RecordFacts]:
    """Records of one replica with offsets in [first, last], decoding only the segments that
    can hold them (segments that stop early keep what was readable: stage 1 reported them).
    ``starts``: segment name -> byte position of its first batch that can hold the range
    (:func:`range_starts`); the bytes before it are not read again."""
    return record_facts_from_rows(_range_rows(spec, first, last, starts or {}))


def range_starts(rows: pa.Table, replica_id: int, first: int) -> dict[str, int]:
    """Per segment of one replica, the position of its first batch (in file order) whose last
    offset is at least ``first``, from stage 1's rows: every batch before it ends below
    ``first``, so stage 3 can start reading there and return the same records."""
    mine = rows.filter(pc.and_(pc.and_(pc.equal(rows.column("broker"), replica_id),
                                       pc.is_null(rows.column("read_error"))),
                               pc.greater_equal(rows.column("last_offset"), first)))
    if not mine.num_rows:
        return {}
    agg = mine.group_by("segment").aggregate([("position", "min")])
    return dict(zip(agg.column("segment").to_pylist(), agg.column("position_min").to_pylist()))


class RangeStarts:
    """:func:`range_starts` over the only columns of stage 1's rows it reads (held as they are,
    without a copy), so the rest of the rows can be freed before classification."""

    _COLUMNS = ("broker", "read_error", "segment", "position", "last_offset")

    def __init__(self, rows: pa.Table) -> None:
        self._rows = rows.select(list(self._COLUMNS))

    def __call__(self, replica_id: int, first: int) -> dict[str, int]:
        return range_starts(self._rows, replica_id, first)


def _range_rows(spec: ReplicaSpec, first: int, last: int, starts: Mapping[str, int]) -> list[dict[str, Any]]:
    from segtools.records import columnar

    # base offsets from the file names, as Kafka reads them; a name without one is read
    bases = [stem_offset(p) for p, _ in spec.segments]
    rows: list[dict[str, Any]] = []
    for i, (path, _size) in enumerate(spec.segments):
        base = bases[i]
        nxt = bases[i + 1] if i + 1 < len(bases) else None
        if (base is not None and base > last) or (nxt is not None and nxt <= first):
            continue
        try:
            # an s3:// segment is read from a local copy on this executor
            for rb in columnar.iter_record_batches(path, topic=spec.topic, partition=spec.partition,
                                                   start_offset=first, end_offset=last + 1,
                                                   start_position=starts.get(os.path.basename(path), 0)):
                rows.extend(rb.select(["offset", "leader_epoch", "key", "value", "producer_id",
                                       "producer_epoch", "sequence", "is_control", "headers"]).to_pylist())
        except SegtoolsError:
            continue
    return [r for r in rows if first <= r["offset"] <= last]


def read_task(task: ReadTask, spec: ReplicaSpec, keep: ReferenceFilter | None = None,
              starts: Mapping[str, int] | None = None) -> list[RecordFacts]:
    """Stage 3b: the records of one task (reference tasks: only those ``keep`` keeps);
    ``starts`` as for :func:`read_range`."""
    recs = read_range(spec, task.first, task.last, starts)
    if task.reference:
        recs = [r for r in recs if keep is not None and keep.keep(r)]
    return recs


def record_facts_from_rows(rows: Iterable[Mapping[str, Any]]) -> list[RecordFacts]:
    out = []
    for r in rows:
        headers = r.get("headers") or ()
        out.append(RecordFacts(
            offset=int(r["offset"]), leader_epoch=int(r["leader_epoch"]),
            key=None if r["key"] is None else bytes(r["key"]),
            value=None if r["value"] is None else bytes(r["value"]),
            producer_id=int(r["producer_id"]), producer_epoch=int(r["producer_epoch"]),
            sequence=int(r["sequence"]), is_control=bool(r["is_control"]),
            headers=tuple((h["key"], None if h["value"] is None else bytes(h["value"])) for h in headers)))
    return out


def records_batch(task: ReadTask, recs: Sequence[RecordFacts]) -> pa.RecordBatch:
    """RECORD_FACTS_SCHEMA rows of one task's records."""
    n = len(recs)
    return pa.RecordBatch.from_pydict({
        "topic": [task.topic] * n, "partition": [task.partition] * n, "replica_id": [task.replica_id] * n,
        "offset": [r.offset for r in recs], "leader_epoch": [r.leader_epoch for r in recs],
        "key": [r.key for r in recs], "value": [r.value for r in recs],
        "producer_id": [r.producer_id for r in recs], "producer_epoch": [r.producer_epoch for r in recs],
        "sequence": [r.sequence for r in recs], "is_control": [r.is_control for r in recs],
        "headers": [[{"key": k, "value": v} for k, v in r.headers] or None for r in recs],
    }, schema=RECORD_FACTS_SCHEMA)


class AckLookup(Protocol):
    """What stage 3c asks of acks.jsonl (an AckIndex, or one partition's slice of it)."""

    def for_partition(self, topic: str, partition: int) -> dict[tuple[int, int], bool]: ...

    def committed_for_partition(self, topic: str, partition: int) -> set[tuple[int, int]]: ...


def match_partition(verdict: PartitionVerdict, specs: Mapping[int, ReplicaSpec],
                    records: Mapping[int, Sequence[RecordFacts]], acks: AckLookup | None
                    ) -> tuple[list[LostRecord], list[Finding]]:
    """Stage 3c for one partition: records per replica id (divergent ranges and the filtered
    reference range) -> lost records and RELOCATED / DUPLICATE findings."""
    ref_key = (verdict.reference_broker, verdict.reference_log_dir)
    divergent: dict[tuple[int, str], Sequence[RecordFacts]] = {}
    reference: Sequence[RecordFacts] = []
    for rid, recs in records.items():
        key = (specs[rid].broker, specs[rid].log_dir)
        if key == ref_key:
            reference = recs
        else:
            divergent[key] = recs
    for rng in verdict.divergent_ranges:
        divergent.setdefault((rng.broker, rng.log_dir), [])
    acked = acks.for_partition(verdict.topic, verdict.partition) if acks is not None else None
    by_ack = acks.committed_for_partition(verdict.topic, verdict.partition) if acks is not None else set()
    sole = (verdict.evidence or {}).get("sole_isr_epochs") or ()
    lost, findings = lost_records(verdict.divergent_ranges, divergent, reference, acked, by_ack, sole)
    # an aborted transaction lost together with its marker is no committed loss
    from segtools.forensics.transactions import clear_aborted_commitment

    clear_aborted_commitment(lost, divergent)
    return lost, findings


def compare_partition(rows: pa.Table, specs: Sequence[ReplicaSpec], history: PartitionHistory | None,
                      acks: AckLookup | None) -> tuple[PartitionVerdict, list[LostRecord], list[Finding]]:
    """Stages 2 and 3 for one partition, as both runners run them: classify its FACTS_SCHEMA
    rows, decode the divergent ranges, then the reference range (keeping only what the
    divergent records can match), and match."""
    # the rows are freed before classification when the caller holds no other reference (the
    # local runner does not): only the compact start positions stage 3 needs are kept
    starts = RangeStarts(rows)
    facts = replica_facts_of_rows(rows, specs)
    del rows
    # hand the freed rows' pages back to the OS now (the pool would keep them for reuse, and the
    # classifier's Python objects cannot use them)
    pa.default_memory_pool().release_unused()
    return compare_facts(facts, specs, history, acks, starts)


def compare_facts(facts: list[ReplicaFacts], specs: Sequence[ReplicaSpec], history: PartitionHistory | None,
                  acks: AckLookup | None, starts: Callable[[int, int], Mapping[str, int]]
                  ) -> tuple[PartitionVerdict, list[LostRecord], list[Finding]]:
    """:func:`compare_partition` from its replicas' facts (the list is emptied once they are
    classified); ``starts(replica_id, first)`` as :func:`range_starts`."""
    verdict = classify_partition(facts, history=history)
    facts.clear()
    tasks = drill_tasks(verdict, specs)
    if not tasks:
        return verdict, [], []
    by_id = {s.replica_id: s for s in specs}
    records: dict[int, list[RecordFacts]] = {}
    for t in tasks:
        if not t.reference:
            records.setdefault(t.replica_id, []).extend(
                read_task(t, by_id[t.replica_id], starts=starts(t.replica_id, t.first)))
    keep = ReferenceFilter(r for recs in records.values() for r in recs)
    for t in tasks:
        if t.reference:
            records.setdefault(t.replica_id, []).extend(
                read_task(t, by_id[t.replica_id], keep, starts(t.replica_id, t.first)))
    lost, findings = match_partition(verdict, by_id, records, acks)
    return verdict, lost, findings


def scan_replica(spec: ReplicaSpec, progress: Progress | None = None) -> ReplicaFacts:
    """Stage 1 and the first half of stage 2 for one replica, in this process: its segments'
    batch headers go into columns as they are scanned (no table of the replica's rows is
    held), then join its checkpoint facts as :func:`replica_facts_of_rows` does."""
    from segtools.records.columnar.batch_table import iter_batch_columns

    segments = spec.segments
    names = segments.names()
    # names made from the paths are the scan's only where the paths are Kafka's own names
    builder = BatchColumnsBuilder(names if segments.compact else None)
    errors: list[str] = []
    for i, (path, size) in enumerate(segments):
        try:
            # numpy columns, not Arrow tables: a table cost ~0.12 ms a segment, then as much
            # again to copy it into the columns (a broker of 2,000 one-batch partitions)
            for cols, name in iter_batch_columns(path, topic=spec.topic, partition=spec.partition,
                                                 broker=spec.replica_id, located=True):
                builder.add_columns(cols, i, name)
        except BatchTooLargeError as exc:
            raise batch_limit_error(exc) from None     # as scan_segment
        except SegtoolsError as exc:
            errors.append(str(exc))
        if progress is not None:
            progress.advance(1, size)
    return replica_facts_from_batches(spec, builder.build(), "; ".join(errors) if errors else None)


class ColumnStarts:
    """:func:`range_starts` over the replicas' batch columns (what :func:`scan_replica` built)."""

    def __init__(self, specs: Sequence[ReplicaSpec], facts: Sequence[ReplicaFacts]) -> None:
        self._cols = {s.replica_id: f.batches for s, f in zip(specs, facts, strict=True)}

    def __call__(self, replica_id: int, first: int) -> dict[str, int]:
        batches = self._cols.get(replica_id)
        if isinstance(batches, BatchColumns):
            return batches.range_starts(first)
        out: dict[str, int] = {}
        for b in batches or ():
            if b.last_offset >= first and (b.segment not in out or b.position < out[b.segment]):
                out[b.segment] = b.position
        return out


# ---------------------------------------------------------------------------------------------
# consumer groups (S21) and the report


def consumer_offsets_tasks(verdicts: Iterable[PartitionVerdict], specs: Sequence[ReplicaSpec]) -> list[ReadTask]:
    """The reference replica of each __consumer_offsets partition, up to its log end."""
    by_key: dict[tuple[str, int, int | None, str], ReplicaSpec] = {
        (s.topic, s.partition, s.broker, s.log_dir): s for s in specs}
    out = []
    for v in verdicts:
        if v.topic != CONSUMER_OFFSETS:
            continue
        ref = next((r for r in v.replicas if r.is_reference), None)
        spec = by_key.get((v.topic, v.partition, v.reference_broker, v.reference_log_dir))
        if ref is not None and spec is not None and ref.log_end_offset > 0:
            out.append(ReadTask(v.topic, v.partition, spec.replica_id, 0, ref.log_end_offset - 1))
    return out


def read_commits(spec: ReplicaSpec, end: int) -> Commits:
    """Offset commits held by one __consumer_offsets replica (S21)."""
    return commits_from_records((r.offset, r.key, r.value) for r in read_range(spec, 0, end - 1)
                                if not r.is_control)


def commits_batch(commits: Commits) -> pa.RecordBatch:
    items = sorted(commits.items())
    return pa.RecordBatch.from_pydict({
        "group": [k[0] for k, _ in items], "topic": [k[1] for k, _ in items], "partition": [k[2] for k, _ in items],
        "position": [v[0] for _, v in items], "offset": [v[1] for _, v in items], "epoch": [v[2] for _, v in items],
    }, schema=COMMITS_SCHEMA)


def commits_from_rows(rows: Iterable[Mapping[str, Any]]) -> Commits:
    return {(str(r["group"]), str(r["topic"]), int(r["partition"])):
            (int(r["position"]), int(r["offset"]), int(r["epoch"])) for r in rows}


def finish_report(verdicts: Iterable[PartitionVerdict],
                  lost: Mapping[tuple[str, int], tuple[list[LostRecord], list[Finding]]],
                  commits: Iterable[Commits], acks: AckIndex | None) -> CompareReport:
    """Verdicts + stage 3 results -> the report (both runners end here)."""
    reports = []
    for v in sorted(verdicts, key=lambda v: (v.topic, v.partition)):
        recs, findings = lost.get((v.topic, v.partition), ([], []))
        apply_lost_evidence(v, recs)
        reports.append(PartitionReport(v, recs, findings))
    attach_group_findings(reports, merge_commits(commits))
    report = CompareReport(reports)
    report.attach_lost_offsets(acks)
    return report


def group_specs(specs: Sequence[ReplicaSpec]) -> dict[tuple[str, int], list[ReplicaSpec]]:
    groups: dict[tuple[str, int], list[ReplicaSpec]] = defaultdict(list)
    for s in specs:
        groups[(s.topic, s.partition)].append(s)
    return groups


# ---------------------------------------------------------------------------------------------
# the local runner


class LocalRunner:
    """Runs the stages in this process, one partition at a time (memory: one partition's batch
    headers and its drill-down records)."""

    name = "in-process"

    def run(self, specs: Sequence[ReplicaSpec], *, acks: AckIndex | None = None,
            histories: Mapping[tuple[str, int], PartitionHistory] | None = None,
            progress: Progress | None = None) -> CompareReport:
        specs = list(specs)
        by_id = {s.replica_id: s for s in specs}
        total = sum(size for s in specs for _p, size in s.segments)
        if progress is not None:
            progress.stage("scanning batch headers", sum(len(s.segments) for s in specs), total)
        verdicts: list[PartitionVerdict] = []
        lost: dict[tuple[str, int], tuple[list[LostRecord], list[Finding]]] = {}
        for (topic, partition), group in sorted(group_specs(specs).items()):
            group = sorted(group, key=lambda s: s.replica_id)
            facts = [scan_replica(spec, progress) for spec in group]
            starts = ColumnStarts(group, facts)
            verdict, recs, findings = compare_facts(facts, group, (histories or {}).get((topic, partition)),
                                                    acks, starts)
            del starts
            verdicts.append(verdict)
            if verdict.divergent_ranges:
                lost[(topic, partition)] = (recs, findings)
        commits = [read_commits(by_id[t.replica_id], t.last + 1) for t in consumer_offsets_tasks(verdicts, specs)]
        if progress is not None:
            progress.done()
        report = finish_report(verdicts, lost, commits, acks)
        report.attach_replicas(specs)    # what the report's lost-record details are read from
        return report

