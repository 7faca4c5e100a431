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
