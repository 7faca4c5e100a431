"""`segtools compare` on Spark: three stages over the replicas' log dirs.

1. Batch index: the ``kafka_segments`` source at batch level, one row per batch per replica
   (the ``broker`` column carries a per-run replica id), plus the small per-replica facts
   (checkpoints, epoch checkpoint, clean-shutdown marker) read on the driver.
2. Per partition (``groupBy(topic, partition).applyInPandas``): reference lineage, fork
   points, classification (``segtools.forensics.classify``). Only per-partition verdicts
   reach the driver.
3. Drill-down: records are decoded only inside divergent ranges (and the reference's range
   from the earliest fork on), then matched per partition (``segtools.forensics.loss``).
   Only lost records reach the driver.

The detection logic is the same code the in-process pipeline runs; this module only moves
rows around.
"""

from __future__ import annotations

import json
import os
import pickle
from typing import Any, Callable, Iterator, Mapping, Sequence

from segtools.forensics.collect import ReplicaSpec
from segtools.forensics.consumer_groups import attach_group_findings
from segtools.forensics.elections import PartitionHistory
from segtools.forensics.loss import AckIndex, apply_lost_evidence
from segtools.forensics.report import CompareReport, PartitionReport

_VERDICT_SCHEMA = "topic string, partition int, verdict binary"
_RECORD_COLUMNS = ("topic string, partition int, replica_id int, offset long, leader_epoch int, "
                   "key binary, value binary, producer_id long, producer_epoch int, sequence int, "
                   "is_control boolean, headers array<struct<key:string,value:binary>>")
_LOST_SCHEMA = "topic string, partition int, lost binary"


def _pack(obj: Any) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def classify_rows(topic: str, partition: int, rids: Sequence[int], rows_by_rid: Mapping[int, list[dict[str, Any]]],
                  specs: Mapping[int, dict[str, Any]], history: PartitionHistory | None) -> Any:
    """Stage 2 for one partition from its batch rows (replicas without rows are empty logs)."""
    from segtools.forensics.classify import classify_partition
    from segtools.forensics.collect import ReplicaSpec, replica_facts, segment_errors, unread_segments

    facts = []
    for rid in sorted(rids):
        spec = ReplicaSpec.from_dict(specs[rid])
        rows = rows_by_rid.get(rid, [])
        # the data source stops a segment at unreadable bytes (errors=stop); recover the
        # reader's message for those segments only, so the report equals the in-process one
        error = segment_errors(spec, unread_segments(spec, rows))
        facts.append(replica_facts(spec, rows, error))
    return classify_partition(facts, history=history)


def _stage2_fn(specs: Mapping[int, dict[str, Any]], rids_by_tp: Mapping[tuple[str, int], list[int]],
               histories: Mapping[tuple[str, int], PartitionHistory]) -> Callable[[Any], Any]:
    """applyInPandas function: one partition's batch rows -> one verdict row."""

    def classify(pdf: Any) -> Any:  # pandas.DataFrame -> pandas.DataFrame
        import pandas as pd

        topic, partition = str(pdf["topic"].iloc[0]), int(pdf["partition"].iloc[0])
        rows = {int(rid): g.to_dict("records") for rid, g in pdf.groupby("broker", sort=True)}
        verdict = classify_rows(topic, partition, rids_by_tp[(topic, partition)], rows, specs,
                                histories.get((topic, partition)))
        return pd.DataFrame({"topic": [topic], "partition": [partition], "verdict": [_pack(verdict)]})

    return classify


def _read_ranges_fn(specs: Mapping[int, dict[str, Any]], filters: Mapping[tuple[str, int], Any] | None = None,
                    ) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """mapInPandas function: drill-down tasks -> decoded records of those offset ranges
    (reference ranges: only the records the partition's ReferenceFilter keeps)."""

    def read(frames: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        from segtools.forensics.collect import ReplicaSpec
        from segtools.forensics.pipeline import read_range

        for tasks in frames:
            for t in tasks.itertuples(index=False):
                spec = ReplicaSpec.from_dict(specs[int(t.replica_id)])
                recs = read_range(spec, int(t.first), int(t.last))
                if filters is not None:
                    keep = filters.get((t.topic, int(t.partition)))
                    recs = [r for r in recs if keep is not None and keep.keep(r)]
                if not recs:
                    continue
                yield pd.DataFrame({
                    "topic": [t.topic] * len(recs), "partition": [int(t.partition)] * len(recs),
                    "replica_id": [int(t.replica_id)] * len(recs),
                    "offset": [r.offset for r in recs], "leader_epoch": [r.leader_epoch for r in recs],
                    "key": [r.key for r in recs], "value": [r.value for r in recs],
                    "producer_id": [r.producer_id for r in recs],
                    "producer_epoch": [r.producer_epoch for r in recs],
                    "sequence": [r.sequence for r in recs], "is_control": [r.is_control for r in recs],
                    "headers": [[{"key": k, "value": v} for k, v in r.headers] or None for r in recs],
                })

    return read


def _stage3_fn(specs: Mapping[int, dict[str, Any]], verdicts: Mapping[tuple[str, int], bytes],
               acks: Mapping[tuple[str, int], tuple[dict[tuple[int, int], bool], set[tuple[int, int]]]] | None,
               ) -> Callable[[Any], Any]:
    """applyInPandas function: one partition's drill-down records -> its lost records."""

    def match(pdf: Any) -> Any:
        import pandas as pd

        from segtools.forensics.loss import lost_records
        from segtools.forensics.pipeline import record_facts_from_rows

        topic, partition = str(pdf["topic"].iloc[0]), int(pdf["partition"].iloc[0])
        verdict = pickle.loads(verdicts[(topic, partition)])
        ref_key = (verdict.reference_broker, verdict.reference_log_dir)
        by_replica: dict[tuple[int, str], list] = {}
        reference: list = []
        for rid, rows in pdf.groupby("replica_id"):
            spec = specs[int(rid)]
            recs = record_facts_from_rows(rows.to_dict("records"))
            key = (spec["broker"], spec["log_dir"])
            if key == ref_key:
                reference = recs
            else:
                by_replica[key] = recs
        acked = None if acks is None else acks[(topic, partition)][0]
        by_ack = set() if acks is None else acks[(topic, partition)][1]
        lost, findings = lost_records(verdict.divergent_ranges, by_replica, reference, acked, by_ack)
        return pd.DataFrame({"topic": [topic], "partition": [partition], "lost": [_pack((lost, findings))]})

    return match


def _write_small_table(folder: str, rows: list[dict[str, Any]]) -> None:
    """Driver-side summaries (one row per replica) as one Parquet file in ``folder``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(folder, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), os.path.join(folder, "part-00000.parquet"))


def _group_commits(spark: Any, verdicts: Any, specs: Sequence[ReplicaSpec], b_specs: Any) -> dict:
    """S21 input: offset commits of the surviving __consumer_offsets replicas, decoded on the
    workers; only (group, topic, partition) -> last commit reaches the driver."""
    from segtools.forensics.consumer_groups import merge_commits
    from segtools.forensics.pipeline import consumer_offsets_sources

    sources = consumer_offsets_sources(list(verdicts), specs)
    if not sources:
        return {}

    def decode(frames: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        from segtools.forensics.collect import ReplicaSpec
        from segtools.forensics.pipeline import read_commits

        for tasks in frames:
            for t in tasks.itertuples(index=False):
                commits = read_commits(ReplicaSpec.from_dict(b_specs.value[int(t.replica_id)]), int(t.end))
                yield pd.DataFrame({"commits": [_pack(commits)]})

    tasks = spark.createDataFrame([(s.replica_id, end) for s, end in sources], "replica_id int, end long")
    tasks = tasks.repartition(min(len(sources), max(1, spark.sparkContext.defaultParallelism)))
    rows = tasks.mapInPandas(decode, "commits binary").collect()
    return merge_commits(pickle.loads(bytes(r.commits)) for r in rows)


def run_compare(spark: Any, paths: Sequence[str | os.PathLike[str]], *, acks: AckIndex | None = None,
                histories: Mapping[tuple[str, int], PartitionHistory] | None = None,
                tables_dir: str | None = None, specs: Sequence[ReplicaSpec] | None = None) -> CompareReport:
    """Stages 1-3 on ``spark``; returns the same report as the in-process pipeline."""
    from segtools.forensics.collect import discover_replicas
    from segtools.spark import register

    register(spark)
    specs = list(specs) if specs is not None else discover_replicas(paths)
    spec_dicts = {s.replica_id: s.to_dict() for s in specs}
    histories = dict(histories or {})
    sc = spark.sparkContext

    # ---- stage 1: batch index + per-replica facts
    replica_map = {s.partition_dir: s.replica_id for s in specs if s.segments}
    batches = None
    if replica_map:
        batches = (spark.read.format("kafka_segments").option("level", "batches")
                   .option("replica_map", json.dumps(replica_map)).option("errors", "stop").load())
    rids_by_tp: dict[tuple[str, int], list[int]] = {}
    for s in specs:
        rids_by_tp.setdefault((s.topic, s.partition), []).append(s.replica_id)
    if tables_dir:
        if batches is not None:
            # the scan stamps a per-run replica id in `broker`; the table carries the real one
            from pyspark.sql import functions as F

            ids = spark.createDataFrame([(s.replica_id, s.broker, s.log_dir) for s in specs],
                                        "replica_id int, broker int, log_dir string")
            (batches.withColumnRenamed("broker", "replica_id").join(F.broadcast(ids), "replica_id")
             .write.mode("overwrite").parquet(os.path.join(tables_dir, "batches")))
        _write_small_table(os.path.join(tables_dir, "replicas"),
                           [{k: (json.dumps(v) if isinstance(v, (list, dict)) else v)
                             for k, v in s.to_dict().items()} for s in specs])

    # ---- stage 2: per-partition classification; only verdicts reach the driver
    b_specs = sc.broadcast(spec_dicts)
    b_rids = sc.broadcast(rids_by_tp)
    b_hist = sc.broadcast(histories)

    def stage2(pdf: Any) -> Any:
        return _stage2_fn(b_specs.value, b_rids.value, b_hist.value)(pdf)

    verdicts: dict[tuple[str, int], bytes] = {}
    if batches is not None:
        for r in batches.groupBy("topic", "partition").applyInPandas(stage2, _VERDICT_SCHEMA).collect():
            verdicts[(r.topic, r.partition)] = bytes(r.verdict)
    # partitions whose replicas hold no batch at all: nothing to scan, classify here
    for tp, rids in rids_by_tp.items():
        if tp not in verdicts:
            verdicts[tp] = _pack(classify_rows(tp[0], tp[1], rids, {}, spec_dicts, histories.get(tp)))
    loaded = {k: pickle.loads(v) for k, v in verdicts.items()}

    # ---- stage 3: drill-down inside divergent ranges only
    by_key = {(s.topic, s.partition, s.broker, s.log_dir): s.replica_id for s in specs}
    div_tasks, ref_tasks = [], []
    for (topic, partition), v in loaded.items():
        if not v.divergent_ranges:
            continue
        for rng in v.divergent_ranges:
            div_tasks.append((topic, partition, by_key[(topic, partition, rng.broker, rng.log_dir)],
                              rng.first_offset, rng.last_offset))
        ref = next(r for r in v.replicas if r.is_reference)
        lo = min(rng.first_offset for rng in v.divergent_ranges)
        if ref.log_end_offset > lo:
            ref_tasks.append((topic, partition, by_key[(topic, partition, ref.broker, ref.log_dir)],
                              lo, ref.log_end_offset - 1))
    lost_by_tp: dict[tuple[str, int], tuple[list, list]] = {}
    if div_tasks:
        task_schema = "topic string, partition int, replica_id int, first long, last long"
        slots = max(1, sc.defaultParallelism)
        b_verdicts = sc.broadcast({k: verdicts[k] for k in loaded if loaded[k].divergent_ranges})
        acked = None
        if acks is not None:
            acked = {k: (acks.for_partition(*k), acks.committed_for_partition(*k))
                     for k in loaded if loaded[k].divergent_ranges}
        b_acks = sc.broadcast(acked)
        read_div = _read_ranges_fn(spec_dicts)
        div_df = spark.createDataFrame(div_tasks, task_schema).repartition(min(len(div_tasks), slots))
        div_records = div_df.mapInPandas(lambda it: read_div(it), _RECORD_COLUMNS).cache()
        records = div_records
        if ref_tasks:
            # 3a: per partition, what of the reference range matters (digests, not records)
            def build_filter(pdf: Any) -> Any:
                import pandas as pd

                from segtools.forensics.loss import ReferenceFilter
                from segtools.forensics.pipeline import record_facts_from_rows

                keep = ReferenceFilter(record_facts_from_rows(pdf.to_dict("records")))
                return pd.DataFrame({"topic": [str(pdf["topic"].iloc[0])],
                                     "partition": [int(pdf["partition"].iloc[0])], "lost": [_pack(keep)]})

            filters = {(r.topic, r.partition): pickle.loads(bytes(r.lost)) for r in
                       div_records.groupBy("topic", "partition").applyInPandas(build_filter, _LOST_SCHEMA).collect()}
            b_filters = sc.broadcast(filters)
            def read_ref_filtered(it: Iterator[Any]) -> Iterator[Any]:
                return _read_ranges_fn(b_specs.value, b_filters.value)(it)

            ref_df = spark.createDataFrame(ref_tasks, task_schema).repartition(min(len(ref_tasks), slots))
            records = div_records.unionByName(ref_df.mapInPandas(read_ref_filtered, _RECORD_COLUMNS))
        if tables_dir:
            records.write.mode("overwrite").parquet(os.path.join(tables_dir, "divergent_records"))

        def stage3(pdf: Any) -> Any:
            return _stage3_fn(b_specs.value, b_verdicts.value, b_acks.value)(pdf)

        for r in records.groupBy("topic", "partition").applyInPandas(stage3, _LOST_SCHEMA).collect():
            lost_by_tp[(r.topic, r.partition)] = pickle.loads(bytes(r.lost))
        div_records.unpersist()
    reports = []
    for key in sorted(loaded):
        lost, findings = lost_by_tp.get(key, ([], []))
        apply_lost_evidence(loaded[key], lost)
        reports.append(PartitionReport(loaded[key], lost, findings))
    attach_group_findings(reports, _group_commits(spark, loaded.values(), specs, b_specs))
    report = CompareReport(reports)
    report.attach_lost_offsets(acks)
    if tables_dir:
        rows = [{"topic": p.verdict.topic, "partition": p.verdict.partition,
                 **{k: (json.dumps(v) if isinstance(v, (list, dict)) else v) for k, v in r.to_json().items()}}
                for p in reports for r in p.verdict.replicas]
        _write_small_table(os.path.join(tables_dir, "verdicts"), rows)
    return report


if __name__ == "__main__":  # pragma: no cover - entry point for spark-submit
    # spark-submit $(python -c 'import segtools.spark.compare_job as m; print(m.__file__)') DIR...
    from segtools.cli.compare import compare

    compare(prog_name="segtools compare")
