"""`segtools compare` on Spark: the stages of ``segtools.forensics.pipeline``, with Spark moving
the rows between them as Arrow (declared schemas, no pickled columns).

1. The driver's plan (the ReplicaSpecs compare discovered once) goes to the ``kafka_segments``
   source as its ``plan`` option; it reads batch headers (``errors=column``: a segment that
   stopped at bad bytes ends with a row carrying the reader's message), about one task per
   core.
2. ``groupBy(topic, partition).applyInArrow``: ``compare_partition`` per partition, the same
   function the local runner calls (classify, decode the divergent ranges and the filtered
   reference range, match). Only verdicts and lost records reach the driver, as JSON columns
   (``segtools.forensics.plain``). One Spark job for the whole compare (plus one for the
   __consumer_offsets commits when there are any, and the ``--tables`` writes).

This module only moves rows; every rule is in ``segtools.forensics``. It is not a script:
under ``spark-submit`` the entry point is ``segtools/cli/main.py`` (README), so this module
never imports the CLI.
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

_RESULT_SCHEMA = "topic string, partition int, verdict string, lost string"


def _result_arrow() -> Any:
    import pyarrow as pa

    return pa.schema([pa.field("topic", pa.string()), pa.field("partition", pa.int32()),
                      pa.field("verdict", pa.string()), pa.field("lost", pa.string())])


def _ddl(schema: Any) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _segment_plan(specs: Sequence[ReplicaSpec]) -> str:
    """The data source's ``plan`` option: every segment of ``specs``, replica id as broker, as
    each replica's arrays of base offsets and sizes (no object per segment on the driver)."""
    from array import array

    from segtools.spark.datasource import SegmentRun, plan_json

    runs = []
    for s in specs:
        arrays = s.segments.arrays()
        if arrays is not None:
            folder, bases, sizes = arrays
            runs.append(SegmentRun(s.topic, s.partition, s.replica_id, folder, bases, sizes, None, None))
        else:     # renamed files: the paths as given
            runs.append(SegmentRun(s.topic, s.partition, s.replica_id, "", array("q"),
                                   array("q", (size for _p, size in s.segments)),
                                   tuple(p for p, _ in s.segments), None))
    return plan_json(runs)


def _sizes(spec: ReplicaSpec) -> Any:
    """The replica's segment sizes as an int64 array (without making each path)."""
    import numpy as np

    arrays = spec.segments.arrays()
    if arrays is not None:
        return np.frombuffer(arrays[2], dtype=np.int64)
    return np.fromiter((size for _p, size in spec.segments), dtype=np.int64, count=len(spec.segments))


def _group_bytes(total: int, sc: Any) -> int:
    """Segment bytes per scan task: about one task per core (each task costs Spark's
    scheduling and a Python round trip: 12 tasks of 128 MiB took 2.3x as long as 2 tasks for
    the same 1 GB on 2 cores), within [128 MiB, 1 GiB] so a big input still gets tasks small
    enough to balance and to retry."""
    from segtools.spark.datasource import GROUP_BYTES

    slots = max(1, int(sc.defaultParallelism))
    return min(max(GROUP_BYTES, -(-total // slots)), 1 << 30)


def _weighted_bytes(specs: Sequence[ReplicaSpec]) -> int:
    """Segment bytes as the scan groups count them (a file weighs at least its open cost), so
    many small segments make about one task per core too, not one per 128 of them."""
    import numpy as np

    from segtools.spark.datasource import OPEN_COST_BYTES

    return sum(int(np.maximum(_sizes(s), OPEN_COST_BYTES).sum()) for s in specs)


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
        commits_batch,
        commits_from_rows,
        compare_partition,
        consumer_offsets_tasks,
        finish_report,
        group_specs,
        read_commits,
    )
    from segtools.spark import register

    register(spark)
    specs = list(specs)
    sc = spark.sparkContext
    by_tp = {tp: list(g) for tp, g in group_specs(specs).items()}
    b_specs = sc.broadcast({s.replica_id: s for s in specs})
    b_groups = sc.broadcast(by_tp)
    b_hist = sc.broadcast(dict(histories or {}))
    total = sum(int(_sizes(s).sum()) for s in specs)

    # ---- stage 1 + 2: batch headers, classified per partition; only verdicts reach the driver
    batches = None
    if any(s.segments for s in specs):
        batches = (spark.read.format("kafka_segments").option("level", "batches").option("errors", "column")
                   .option("plan", _segment_plan(specs))
                   .option("group_bytes", str(_group_bytes(_weighted_bytes(specs), sc)))
                   .load())
        if tables_dir:
            # the scan stamps the run's replica id in `broker`; the table carries the real one
            from pyspark.sql import functions as F

            ids = spark.createDataFrame([(s.replica_id, s.broker, s.log_dir) for s in specs],
                                        "replica_id int, broker int, log_dir string")
            (batches.withColumnRenamed("broker", "replica_id").join(F.broadcast(ids), "replica_id")
             .write.mode("overwrite").parquet(os.path.join(tables_dir, "batches")))
        batches = batches.select(*FACT_COLUMNS, "read_error")

    result_arrow = _result_arrow()

    def per_partition(key: tuple[Any, Any], table: pa.Table) -> pa.Table:
        tp = (key[0].as_py(), key[1].as_py())
        a = b_acks.value
        verdict, recs, findings = compare_partition(table.cast(FACTS_SCHEMA), b_groups.value[tp],
                                                    b_hist.value.get(tp), None if a is None else a.get(tp))
        return pa.Table.from_pydict({"topic": [tp[0]], "partition": [tp[1]], "verdict": [plain.dumps(verdict)],
                                     "lost": [plain.dumps({"lost": recs, "findings": findings})]},
                                    schema=result_arrow)

    verdicts: dict[tuple[str, int], PartitionVerdict] = {}
    lost: dict[tuple[str, int], tuple[list[LostRecord], list[Finding]]] = {}
    if batches is not None:
        # acks: each partition's slice (what a worker needs of acks.jsonl)
        b_acks = sc.broadcast(None if acks is None else {tp: _Acks(acks.for_partition(*tp),
                                                                   acks.committed_for_partition(*tp))
                                                         for tp in by_tp})
        with _Watch(spark, progress, "comparing", total):
            # an explicit repartition by the group keys: adaptive execution would otherwise
            # coalesce the small header rows of all partitions into one task, and classify
            # them one after the other on one core
            slots = max(1, int(sc.defaultParallelism))
            grouped = batches.repartition(max(1, min(len(by_tp), 4 * slots)), "topic", "partition")
            rows = grouped.groupBy("topic", "partition").applyInArrow(per_partition, _RESULT_SCHEMA).collect()
        for r in rows:
            tp = (r.topic, r.partition)
            verdicts[tp] = plain.loads(PartitionVerdict, r.verdict)
            if verdicts[tp].divergent_ranges:
                doc = json.loads(r.lost)
                lost[tp] = (plain.from_plain(list[LostRecord], doc["lost"]),
                            plain.from_plain(list[Finding], doc["findings"]))
    for tp, group in by_tp.items():
        if tp not in verdicts:     # no replica holds a batch: nothing to scan, compare here
            verdict, recs, findings = compare_partition(FACTS_SCHEMA.empty_table(), group,
                                                        (histories or {}).get(tp), acks)
            verdicts[tp] = verdict
            if verdict.divergent_ranges:
                lost[tp] = (recs, findings)
    if tables_dir:
        _write_divergent_records(spark, verdicts, by_tp, b_specs, os.path.join(tables_dir, "divergent_records"))

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
    report.attach_replicas(specs)    # the lost records' details and transaction states (as LocalRunner)
    if tables_dir:
        _write_small_table(os.path.join(tables_dir, "replicas"),
                           [{k: (json.dumps(v) if isinstance(v, (list, dict)) else v)
                             for k, v in s.to_dict().items()} for s in specs])
        rows = [{"topic": p.verdict.topic, "partition": p.verdict.partition,
                 **{k: (json.dumps(v) if isinstance(v, (list, dict)) else v) for k, v in r.to_json().items()}}
                for p in report.partitions for r in p.verdict.replicas]
        _write_small_table(os.path.join(tables_dir, "verdicts"), rows)
    return report


def _write_divergent_records(spark: Any, verdicts: Mapping[tuple[str, int], Any],
                             by_tp: Mapping[tuple[str, int], list[ReplicaSpec]], b_specs: Any, folder: str) -> None:
    """--tables: the records of every drill-down range as Parquet (decoded again: only asked
    for with --tables; the compare itself decodes them inside its per-partition step)."""
    import pyarrow as pa

    from segtools.forensics.pipeline import RECORD_FACTS_SCHEMA, ReadTask, drill_tasks, read_task, records_batch

    tasks = [t for tp in sorted(verdicts) for t in drill_tasks(verdicts[tp], by_tp[tp]) if not t.reference]
    if not tasks:
        return

    def read(frames: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for rb in frames:
            for t in rb.to_pylist():
                task = ReadTask(**t)
                recs = read_task(task, b_specs.value[task.replica_id])
                if recs:
                    yield records_batch(task, recs)

    _tasks_df(spark, tasks).mapInArrow(read, _ddl(RECORD_FACTS_SCHEMA)).write.mode("overwrite").parquet(folder)


class _Acks:
    """One partition's slice of an AckIndex (what a worker needs of acks.jsonl)."""

    def __init__(self, acked: dict[tuple[int, int], bool], committed: set[tuple[int, int]]) -> None:
        self.acked, self.committed = acked, committed

    def for_partition(self, topic: str, partition: int) -> dict[tuple[int, int], bool]:
        return self.acked

    def committed_for_partition(self, topic: str, partition: int) -> set[tuple[int, int]]:
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
