"""The whole compare in one process, without Spark: the same stages the Spark job runs, on
the same functions. Used for small inputs, for tests over hundreds of scenarios, and as the
reference the Spark path is checked against."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from segtools.errors import BatchTooLargeError, SegtoolsError
from segtools.forensics.classify import PartitionVerdict, classify_partition
from segtools.forensics.collect import ReplicaSpec, batch_limit_error, discover_replicas, replica_facts
from segtools.forensics.consumer_groups import (
    CONSUMER_OFFSETS,
    Commits,
    attach_group_findings,
    commits_from_records,
    merge_commits,
)
from segtools.forensics.elections import PartitionHistory
from segtools.forensics.loss import AckIndex, ReferenceFilter, apply_lost_evidence, lost_records
from segtools.forensics.model import RecordFacts
from segtools.forensics.report import CompareReport, PartitionReport


def scan_replica(spec: ReplicaSpec) -> tuple[list[dict[str, Any]], str | None]:
    """Stage 1 for one replica: batch rows (BATCH_SCHEMA dicts) of all its segments."""
    from segtools import columnar

    rows: list[dict[str, Any]] = []
    error = None
    for path, _size in spec.segments:
        try:
            for rb in columnar.iter_batch_batches(path, topic=spec.topic, partition=spec.partition,
                                                  broker=spec.replica_id):
                rows.extend(rb.to_pylist())
        except BatchTooLargeError as exc:
            # not a fact about the replica but about our limit: comparing without the batch
            # would call an unread log empty, so stop and let the user raise --max-batch-bytes
            raise batch_limit_error(exc) from None
        except SegtoolsError as exc:
            error = f"{error}; {exc}" if error else str(exc)
    return rows, error


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


def read_range(spec: ReplicaSpec, first: int, last: int) -> list[RecordFacts]:
    """Stage 3 for one replica: records with offsets in [first, last], decoding only the
    segments that can hold them."""
    from segtools import columnar
    from segtools.remote import local_file

    bases = [int(os.path.basename(p)[:20]) for p, _ in spec.segments]
    rows: list[dict[str, Any]] = []
    for i, (path, _size) in enumerate(spec.segments):
        nxt = bases[i + 1] if i + 1 < len(bases) else None
        if bases[i] > last or (nxt is not None and nxt <= first):
            continue
        try:
            with local_file(path) as local:   # an s3:// segment: a local copy on this executor
                for rb in columnar.iter_record_batches(local, topic=spec.topic, partition=spec.partition,
                                                       start_offset=first, end_offset=last + 1):
                    rows.extend(rb.to_pylist())
        except SegtoolsError:
            continue      # reported by stage 1; keep what was readable
    return [r for r in record_facts_from_rows(rows) if first <= r.offset <= last]


def drill_down(verdict: PartitionVerdict, specs: Sequence[ReplicaSpec], acks: AckIndex | None,
               read: Any = read_range) -> PartitionReport:
    """Stage 3 for one partition (in process)."""
    if not verdict.divergent_ranges:
        return PartitionReport(verdict)
    by_key: dict[tuple[int | None, str], ReplicaSpec] = {(s.broker, s.log_dir): s for s in specs}
    divergent = {}
    for rng in verdict.divergent_ranges:
        key = (rng.broker, rng.log_dir)
        divergent[key] = read(by_key[key], rng.first_offset, rng.last_offset)
    ref_spec = by_key.get((verdict.reference_broker, verdict.reference_log_dir))
    ref_rv = next(r for r in verdict.replicas if r.is_reference)
    lo = min(r.first_offset for r in verdict.divergent_ranges)
    keep = ReferenceFilter(r for recs in divergent.values() for r in recs)
    reference = [r for r in read(ref_spec, lo, ref_rv.log_end_offset - 1) if keep.keep(r)] \
        if ref_spec is not None else []
    acked = acks.for_partition(verdict.topic, verdict.partition) if acks is not None else None
    by_ack = acks.committed_for_partition(verdict.topic, verdict.partition) if acks is not None else set()
    lost, findings = lost_records(verdict.divergent_ranges, divergent, reference, acked, by_ack)
    apply_lost_evidence(verdict, lost)
    return PartitionReport(verdict, lost, findings)


def group_specs(specs: Sequence[ReplicaSpec]) -> dict[tuple[str, int], list[ReplicaSpec]]:
    groups: dict[tuple[str, int], list[ReplicaSpec]] = defaultdict(list)
    for s in specs:
        groups[(s.topic, s.partition)].append(s)
    return groups


def compare_in_process(paths: Sequence[str | os.PathLike[str]], *, acks: AckIndex | None = None,
                       histories: Mapping[tuple[str, int], PartitionHistory] | None = None,
                       specs: Sequence[ReplicaSpec] | None = None) -> CompareReport:
    """Stages 1-3 without Spark."""
    specs = list(specs) if specs is not None else discover_replicas(paths)
    reports = []
    for (topic, partition), group in sorted(group_specs(specs).items()):
        facts = []
        for spec in group:
            rows, error = scan_replica(spec)
            facts.append(replica_facts(spec, rows, error))
        history = (histories or {}).get((topic, partition))
        verdict = classify_partition(facts, history=history)
        reports.append(drill_down(verdict, group, acks))
    attach_group_findings(reports, merge_commits(
        read_commits(spec, end) for spec, end in consumer_offsets_sources([r.verdict for r in reports], specs)))
    report = CompareReport(reports)
    report.attach_lost_offsets(acks)
    return report


def read_commits(spec: ReplicaSpec, end: int) -> Commits:
    """Offset commits held by one __consumer_offsets replica (S21)."""
    return commits_from_records((r.offset, r.key, r.value) for r in read_range(spec, 0, end - 1)
                                if not r.is_control)


def consumer_offsets_sources(verdicts: Sequence[PartitionVerdict],
                             specs: Sequence[ReplicaSpec]) -> list[tuple[ReplicaSpec, int]]:
    """The reference replica of each __consumer_offsets partition, with its log end offset."""
    by_key: dict[tuple[str, int, int | None, str], ReplicaSpec] = {
        (s.topic, s.partition, s.broker, s.log_dir): s for s in specs}
    out = []
    for v in verdicts:
        if v.topic != CONSUMER_OFFSETS:
            continue
        ref = next((r for r in v.replicas if r.is_reference), None)
        spec = by_key.get((v.topic, v.partition, v.reference_broker, v.reference_log_dir))
        if ref is not None and spec is not None and ref.log_end_offset > 0:
            out.append((spec, ref.log_end_offset))
    return out
