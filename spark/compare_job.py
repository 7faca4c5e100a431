"""`segtools compare` on Spark: the stages of ``segtools.forensics.pipeline``, with Spark moving
the rows between them as Arrow (declared schemas, no pickled columns).

1. The driver's plan (the ReplicaSpecs compare discovered once) goes to the ``kafka_segments``
   source as its ``plan`` option; it reads batch headers (``errors=column``: a segment that
   stopped at bad bytes ends with a row carrying the reader's message).
2. ``groupBy(topic, partition).applyInArrow``: ``classify_group`` per partition; only the
   verdicts (a JSON column, ``segtools.forensics.plain``) reach the driver.
3. ``drill_tasks`` on the driver; ``mapInArrow``: ``read_task`` decodes the divergent ranges
   and, filtered by the divergent records' ``FILTER_SCHEMA`` rows, the reference ranges;
   ``applyInArrow``: ``match_partition`` per partition; only lost records reach the driver.

This module only moves rows; every rule is in ``segtools.forensics``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from segtools.forensics.collect import ReplicaSpec
from segtools.forensics.elections import PartitionHistory
from segtools.forensics.loss import AckIndex
from segtools.forensics.report import CompareReport

if TYPE_CHECKING:
    from segtools.forensics.progress import Progress

_VERDICT_SCHEMA = "topic string, partition int, verdict string"
_LOST_SCHEMA = "topic string, partition int, lost string"


def _ddl(schema: Any) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _segment_plan(specs: Sequence[ReplicaSpec]) -> str:
    """The data source's ``plan`` option: every segment of ``specs``, replica id as broker."""
    from segtools.forensics.pipeline import segment_base
    from segtools.spark.datasource import SegmentPartition, plan_json

    parts = []
    for s in specs:
        bases = [segment_base(p) for p, _ in s.segments]
        for i, (path, size) in enumerate(s.segments):
            parts.append(SegmentPartition(path, s.topic, s.partition, s.replica_id, bases[i],
                                          bases[i + 1] if i + 1 < len(bases) else None, size))
    return plan_json(parts)


def _tasks_df(spark: Any, tasks: Sequence[Any]) -> Any:
    import pyarrow as pa

    from segtools.forensics.pipeline import TASK_SCHEMA

    table = pa.Table.from_pylist([{"topic": t.topic, "partition": t.partition, "replica_id": t.replica_id,
                                   "first": t.first, "last": t.last, "reference": t.reference} for t in tasks],
                                 schema=TASK_SCHEMA)
    slots = max(1, spark.sparkContext.defaultParallelism)
    # one task per slot at most; small tables stay one partition per task row
    return spark.createDataFrame(table).repartition(min(len(tasks), slots))


class _Watch:
    """Polls Spark's status tracker for the running job's task counts (progress line)."""

    def __init__(self, spark: Any, progress: Progress | None, name: str, total_bytes: int = 0) -> None:
        self.spark, self.progress, self.name, self.total_bytes = spark, progress, name, total_bytes
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _Watch:
        if self.progress is not None:
            self.progress.stage(self.name, 0, self.total_bytes, unit="tasks")
            self._thread = threading.Thread(target=self._poll, daemon=True)
            self._thread.start()
        return self

    def _poll(self) -> None:
        tracker = self.spark.sparkContext.statusTracker()
        while not self._stop.wait(0.5):
            try:
                done = total = 0
                for sid in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(sid)
                    if info is not None:
                        done += info.numCompletedTasks
                        total += info.numTasks
                if total and self.progress is not None:
                    self.progress.set(done, total, int(self.total_bytes * done / total) if self.total_bytes else None)
            except Exception:  # noqa: BLE001 - a progress line never fails a compare
                return

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def run_specs(spark: Any, specs: Sequence[ReplicaSpec], *, acks: AckIndex | None = None,
              histories: Mapping[tuple[str, int], PartitionHistory] | None = None,
              tables_dir: str | None = None, progress: Progress | None = None) -> CompareReport:
    """The pipeline on ``spark`` over the driver's plan ``specs``; the same report as the local
    runner."""
    import pyarrow as pa

    from segtools.forensics import plain
    from segtools.forensics.classify import PartitionVerdict
    from segtools.forensics.findings import Finding
    from segtools.forensics.loss import LostRecord
    from segtools.forensics.pipeline import (
        COMMITS_SCHEMA,
        FACT_COLUMNS,
        FACTS_SCHEMA,
        FILTER_SCHEMA,
        RECORD_FACTS_SCHEMA,
        ReadTask,
        classify_group,
        commits_batch,
        commits_from_rows,
        consumer_offsets_tasks,
        drill_tasks,
        filter_rows,
        filters_from_rows,
        finish_report,
        group_specs,
        match_partition,
        read_commits,
        read_task,
        record_facts_from_rows,
        records_batch,
    )
    from segtools.spark import register

    register(spark)
    specs = list(specs)
    sc = spark.sparkContext
    by_tp = {tp: list(g) for tp, g in group_specs(specs).items()}
    b_specs = sc.broadcast({s.replica_id: s for s in specs})
    b_groups = sc.broadcast(by_tp)
    b_hist = sc.broadcast(dict(histories or {}))
    total = sum(size for s in specs for _p, size in s.segments)

    # ---- stage 1 + 2: batch headers, classified per partition; only verdicts reach the driver
    batches = None
    if any(s.segments for s in specs):
        batches = (spark.read.format("kafka_segments").option("level", "batches").option("errors", "column")
                   .option("plan", _segment_plan(specs)).load())
        if tables_dir:
            # the scan stamps the run's replica id in `broker`; the table carries the real one
            from pyspark.sql import functions as F

            ids = spark.createDataFrame([(s.replica_id, s.broker, s.log_dir) for s in specs],
                                        "replica_id int, broker int, log_dir string")
            (batches.withColumnRenamed("broker", "replica_id").join(F.broadcast(ids), "replica_id")
             .write.mode("overwrite").parquet(os.path.join(tables_dir, "batches")))
        batches = batches.select(*FACT_COLUMNS, "read_error")

    def classify(key: tuple[Any, Any], table: pa.Table) -> pa.Table:
        tp = (key[0].as_py(), key[1].as_py())
        verdict = classify_group(table.cast(FACTS_SCHEMA), b_groups.value[tp], b_hist.value.get(tp))
        return _one_row(tp, plain.dumps(verdict), "verdict")

    verdicts: dict[tuple[str, int], PartitionVerdict] = {}
    if batches is not None:
        with _Watch(spark, progress, "scanning batch headers", total):
            rows = batches.groupBy("topic", "partition").applyInArrow(classify, _VERDICT_SCHEMA).collect()
        for r in rows:
            verdicts[(r.topic, r.partition)] = plain.loads(PartitionVerdict, r.verdict)
    for tp, group in by_tp.items():
        if tp not in verdicts:     # no replica holds a batch: nothing to scan, classify here
            verdicts[tp] = classify_group(FACTS_SCHEMA.empty_table(), group, (histories or {}).get(tp))

    # ---- stage 3: decode divergent ranges (and the filtered reference ranges), match per partition
    tasks = [t for tp in sorted(verdicts) for t in drill_tasks(verdicts[tp], by_tp[tp])]
    lost: dict[tuple[str, int], tuple[list[LostRecord], list[Finding]]] = {}
    if tasks:
        b_verdicts = sc.broadcast({tp: v for tp, v in verdicts.items() if v.divergent_ranges})
        acked = None if acks is None else {tp: (acks.for_partition(*tp), acks.committed_for_partition(*tp))
                                           for tp, v in verdicts.items() if v.divergent_ranges}
        b_acks = sc.broadcast(acked)

        def read_divergent(frames: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for rb in frames:
                for t in rb.to_pylist():
                    task = ReadTask(**t)
                    recs = read_task(task, b_specs.value[task.replica_id])
                    if recs:
                        yield records_batch(task, recs)

        div_df = _tasks_df(spark, [t for t in tasks if not t.reference])
        div_records = div_df.mapInArrow(read_divergent, _ddl(RECORD_FACTS_SCHEMA)).cache()
        records = div_records
        ref_tasks = [t for t in tasks if t.reference]
        if ref_tasks:
            def digests(frames: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
                for rb in frames:
                    for (topic, partition), group in _by_partition(rb.to_pylist()).items():
                        yield filter_rows(topic, partition, record_facts_from_rows(group))

            filters = filters_from_rows(r.asDict() for r in
                                        div_records.mapInArrow(digests, _ddl(FILTER_SCHEMA)).collect())
            b_filters = sc.broadcast(filters)

            def read_reference(frames: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
                for rb in frames:
                    for t in rb.to_pylist():
                        task = ReadTask(**t)
                        keep = b_filters.value.get((task.topic, task.partition))
                        recs = read_task(task, b_specs.value[task.replica_id], keep)
                        if recs:
                            yield records_batch(task, recs)

            ref_records = _tasks_df(spark, ref_tasks).mapInArrow(read_reference, _ddl(RECORD_FACTS_SCHEMA))
            records = div_records.unionByName(ref_records)
        if tables_dir:
            records.write.mode("overwrite").parquet(os.path.join(tables_dir, "divergent_records"))

        def match(key: tuple[Any, Any], table: pa.Table) -> pa.Table:
            tp = (key[0].as_py(), key[1].as_py())
            by_rid: dict[int, list[Any]] = {}
            for r in table.to_pylist():
                by_rid.setdefault(int(r["replica_id"]), []).append(r)
            recs = {rid: record_facts_from_rows(rows) for rid, rows in by_rid.items()}
            a = b_acks.value
            found = match_partition(b_verdicts.value[tp], b_specs.value, recs,
                                    None if a is None else _Acks(tp, *a[tp]))
            return _one_row(tp, plain.dumps({"lost": found[0], "findings": found[1]}), "lost")

        with _Watch(spark, progress, "decoding divergent ranges"):
            rows = records.groupBy("topic", "partition").applyInArrow(match, _LOST_SCHEMA).collect()
        for r in rows:
            doc = json.loads(r.lost)
            lost[(r.topic, r.partition)] = (plain.from_plain(list[LostRecord], doc["lost"]),
                                            plain.from_plain(list[Finding], doc["findings"]))
        # partitions with divergent ranges but no record in them still get their (empty) match
        for tp, v in verdicts.items():
            if v.divergent_ranges and tp not in lost:
                lost[tp] = match_partition(v, {s.replica_id: s for s in specs}, {}, acks)
        div_records.unpersist()

    # ---- S21: offset commits of the surviving __consumer_offsets replicas
    commit_tasks = consumer_offsets_tasks(verdicts.values(), specs)
    commits = []
    if commit_tasks:
        def decode(frames: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for rb in frames:
                for t in rb.to_pylist():
                    yield commits_batch(read_commits(b_specs.value[int(t["replica_id"])], int(t["last"]) + 1))

        rows = _tasks_df(spark, commit_tasks).mapInArrow(decode, _ddl(COMMITS_SCHEMA)).collect()
        # one row = one replica's latest commit of a key; merge_commits keeps the latest position
        commits = [commits_from_rows([r.asDict()]) for r in rows]
    if progress is not None:
        progress.done()
    report = finish_report(verdicts.values(), lost, commits, acks)
    if tables_dir:
        _write_small_table(os.path.join(tables_dir, "replicas"),
                           [{k: (json.dumps(v) if isinstance(v, (list, dict)) else v)
                             for k, v in s.to_dict().items()} for s in specs])
        rows = [{"topic": p.verdict.topic, "partition": p.verdict.partition,
                 **{k: (json.dumps(v) if isinstance(v, (list, dict)) else v) for k, v in r.to_json().items()}}
                for p in report.partitions for r in p.verdict.replicas]
        _write_small_table(os.path.join(tables_dir, "verdicts"), rows)
    return report


def _one_row(tp: tuple[str, int], text: str, column: str) -> Any:
    """A per-partition result row (topic string, partition int, <column> string)."""
    import pyarrow as pa

    schema = pa.schema([pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
                        pa.field(column, pa.string())])
    return pa.Table.from_pydict({"topic": [tp[0]], "partition": [tp[1]], column: [text]}, schema=schema)


def _by_partition(rows: list[dict[str, Any]]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault((r["topic"], int(r["partition"])), []).append(r)
    return out


class _Acks:
    """The one partition's slice of an AckIndex (what a worker needs of acks.jsonl)."""

    def __init__(self, tp: tuple[str, int], acked: Any, committed: Any) -> None:
        self.tp, self.acked, self.committed = tp, acked, committed

    def for_partition(self, topic: str, partition: int) -> Any:
        return self.acked

    def committed_for_partition(self, topic: str, partition: int) -> Any:
        return self.committed


def _write_small_table(folder: str, rows: list[dict[str, Any]]) -> None:
    """Driver-side summaries (one row per replica) as one Parquet file in ``folder``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(folder, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), os.path.join(folder, "part-00000.parquet"))


def run_compare(spark: Any, paths: Sequence[str | os.PathLike[str]], *, acks: AckIndex | None = None,
                histories: Mapping[tuple[str, int], PartitionHistory] | None = None,
                tables_dir: str | None = None, specs: Sequence[ReplicaSpec] | None = None,
                progress: Progress | None = None) -> CompareReport:
    """Discover ``paths`` (unless ``specs`` is the plan already) and run the pipeline on Spark."""
    from segtools.forensics.collect import discover_replicas

    specs = list(specs) if specs is not None else discover_replicas(paths)
    return run_specs(spark, specs, acks=acks, histories=histories, tables_dir=tables_dir, progress=progress)


if __name__ == "__main__":  # pragma: no cover - entry point for spark-submit
    # spark-submit $(python -c 'import segtools.spark.compare_job as m; print(m.__file__)') DIR...
    from segtools.cli.compare import compare

    compare(prog_name="segtools compare")
