"""kafka_segments planning: which segment files a path means (CONTRACT.md section 6 paths)."""

from __future__ import annotations

from pathlib import Path

from segtools.files.sources import resolve_sources
from segtools.spark.datasource import plan_segments

GENERATED = Path(__file__).resolve().parents[2] / "samples" / "generated"


def _expected(path: Path) -> list[tuple[str, int, int | None, str]]:
    return sorted((s.topic, s.partition, s.broker, seg) for s in resolve_sources([str(path)])
                  for seg in s.segments)


def test_folder_of_brokers_skips_snapshots_and_the_metadata_log():
    # S12 has DIR/snapshots/<name>/broker-*/ copies and DIR/controller/__cluster_metadata-0
    sample = GENERATED / "S12-empty-disk-leader"
    assert (sample / "snapshots").is_dir() and (sample / "controller").is_dir()
    parts = plan_segments(str(sample))
    got = sorted((p.topic, p.partition, p.broker, p.uri) for p in parts)
    assert got == _expected(sample)
    assert {p.topic for p in parts} == {"orders"}
    assert all("/snapshots/" not in p.uri for p in parts)


def test_log_dir_and_partition_dir_and_snapshot_folder():
    sample = GENERATED / "S12-empty-disk-leader"
    for path in (sample / "broker-2", sample / "broker-2" / "orders-0",
                 next((sample / "snapshots").iterdir())):
        got = sorted((p.topic, p.partition, p.broker, p.uri) for p in plan_segments(str(path)))
        assert got == _expected(path), path


def test_many_small_segments_share_a_few_tasks(tmp_path):
    """Issue 16: 10,000 empty segments were 10,000 Spark tasks (444 s). Groups are sized by
    bytes (each file counts at least its open cost); every segment is read once, in order."""
    from segtools.spark.datasource import GROUP_BYTES, OPEN_COST_BYTES, KafkaSegmentsReader, SegmentGroup

    src = GENERATED / "S0-healthy-baseline" / "broker-1" / "orders-0"
    pdir = tmp_path / "broker-1" / "orders-0"
    pdir.parent.mkdir()
    import shutil
    shutil.copytree(src, pdir)
    n = 3000
    for i in range(1, n + 1):
        (pdir / f"{1000 + i:020d}.log").touch()
    reader = KafkaSegmentsReader({"path": str(tmp_path / "broker-1"), "level": "batches"})
    groups = reader.partitions()
    assert all(isinstance(g, SegmentGroup) for g in groups)
    flat = [s.uri for g in groups for s in g.segments]
    assert flat == [p.uri for p in plan_segments(str(tmp_path / "broker-1"))]
    assert len(flat) == n + 1
    assert len(groups) <= (n + 1) * OPEN_COST_BYTES // GROUP_BYTES + 1
    # reading the groups yields exactly the batches of the one real segment
    from kafka.record import MemoryRecords

    records = MemoryRecords((src / "00000000000000000000.log").read_bytes())
    batches = 0
    while records.next_batch() is not None:
        batches += 1
    assert batches > 0
    assert sum(rb.num_rows for g in groups for rb in reader.read(g)) == batches


def test_a_big_segment_is_a_task_of_its_own():
    from segtools.spark.datasource import SegmentPartition, group_segments

    parts = [SegmentPartition(f"/x/{i:020d}.log", "t", 0, 1, i, None, size)
             for i, size in enumerate([10, 200 << 20, 10, 10])]
    groups = group_segments(parts, group_bytes=128 << 20, open_cost=1 << 20)
    assert [len(g.segments) for g in groups] == [1, 1, 2]


def _runs_and_parts(sizes_per_replica, renamed=()):
    """(SegmentRuns, the same segments as SegmentPartitions the per-segment way)."""
    from array import array

    from segtools.spark.datasource import SegmentPartition, SegmentRun, segment_bases

    runs, parts = [], []
    for r, sizes in enumerate(sizes_per_replica):
        folder = f"/logs/broker-{r}/t-{r}"
        bases = [1000 * r + 7 * i for i in range(len(sizes))]
        paths = [f"{folder}/{b:020d}.log" for b in bases]
        if r in renamed:
            paths = [p if i % 3 else f"{folder}/copy-{i}.log" for i, p in enumerate(paths)]
            runs.append(SegmentRun("t", r, r, "", array("q"), array("q", sizes), tuple(paths), None))
        else:
            runs.append(SegmentRun("t", r, r, folder, array("q", bases), array("q", sizes), None, None))
        for path, size, (base, nxt) in zip(paths, sizes, segment_bases(paths)):
            parts.append(SegmentPartition(path, "t", r, r, base, nxt, size))
    return runs, parts


def test_replica_runs_group_and_read_as_the_per_segment_plan():
    """The compact plan (arrays per replica, tasks over slices of them) makes the same tasks,
    with the same segments in each, as grouping one SegmentPartition per segment."""
    import random

    from segtools.spark.datasource import group_runs, group_segments, plan_from_json, plan_json

    rng = random.Random(23)
    for case in range(40):
        sizes = [[rng.choice([0, 100, 5 << 20, 300 << 20]) for _ in range(rng.randrange(0, 300))]
                 for _ in range(rng.randrange(1, 5))]
        runs, parts = _runs_and_parts(sizes, renamed={1} if case % 2 else ())
        for gb in (1, 3 << 20, 128 << 20, 1 << 40):
            want = [list(g.segments) for g in group_segments(parts, group_bytes=gb)]
            got = [list(g.parts()) for g in group_runs(runs, group_bytes=gb)]
            assert got == want, (case, gb)
            # through the option's text, as the planner gets it
            again = [list(g.parts()) for g in group_runs(plan_from_json(plan_json(runs)), group_bytes=gb)]
            assert again == want, (case, gb)


def test_the_plan_holds_no_object_per_segment():
    """Issue 23: the Spark driver's plan of 2 x 100,000 segments peaked at ~600 bytes a segment
    (a SegmentPartition each and their JSON); arrays hold 16 and the option ~21."""
    import tracemalloc

    from segtools.forensics.collect import ReplicaSpec, SegmentList
    from segtools.spark.compare_job import _segment_plan

    n = 20_000
    specs = []
    for r in (1, 2):
        d = f"/logs/broker-{r}/t-0"
        specs.append(ReplicaSpec(r, r, "t", 0, d, f"/logs/broker-{r}",
                                 segments=SegmentList((f"{d}/{o:020d}.log", 175) for o in range(n))))
    tracemalloc.start()
    try:
        plan = _segment_plan(specs)
        _cur, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(plan) < 25 * 2 * n
    assert peak < 80 * 2 * n, f"{peak / (2 * n):.0f} bytes a segment"


def test_the_plan_is_not_pickled_into_every_task():
    """Spark pickles the reader and the data source into the function every scan task runs:
    the plan (O(segments)) must stay on the planner, tasks get only their slices."""
    import pickle

    from pyspark import cloudpickle
    from pyspark.sql.datasource import CaseInsensitiveDict

    from segtools.forensics.collect import ReplicaSpec, SegmentList
    from segtools.spark.compare_job import _segment_plan
    from segtools.spark.datasource import KafkaSegmentsDataSource, RunGroup

    n = 20_000
    spec = ReplicaSpec(1, 1, "t", 0, "/logs/t-0", "/logs",
                       segments=SegmentList((f"/logs/t-0/{o:020d}.log", 175) for o in range(n)))
    plan = _segment_plan([spec])
    source = KafkaSegmentsDataSource(CaseInsensitiveDict({"plan": plan, "level": "batches",
                                                          "group_bytes": str(64 << 20)}))
    reader = source.reader(None)
    groups = reader.partitions()
    assert all(isinstance(g, RunGroup) for g in groups)
    assert sum(len(r) for g in groups for r in g.runs) == n and len(groups) == -(-n // 64)
    assert len(cloudpickle.dumps((reader, source))) < 20_000 < len(plan)
    assert max(len(pickle.dumps(g)) for g in groups) < 2_000
    # a task's reader reads its slice without the plan
    again = pickle.loads(pickle.dumps(reader))
    assert "plan" not in again.options and again.level == "batches"
