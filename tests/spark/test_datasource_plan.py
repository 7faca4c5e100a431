"""kafka_segments planning: which segment files a path means (CONTRACT.md section 6 paths)."""

from __future__ import annotations

from pathlib import Path

from segtools.sources import resolve_sources
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
