"""kafka_segments hands the batches of many small segments to Spark gathered (issue 23: one
Arrow batch per one-batch segment made every file a round trip), with the same rows."""

from __future__ import annotations

from pathlib import Path

from segtools.spark.datasource import GATHER_ROWS, KafkaSegmentsReader, group_segments, plan_segments
from segtools.writer import NewRecord
from segtools.writer.batch_builder import build_batch


def _partition(pdir: Path, segments: int) -> None:
    pdir.mkdir(parents=True)
    raw = build_batch([NewRecord(b"k", b"v", (), 1_700_000_000_000)], base_offset=0)
    for off in range(segments):
        (pdir / f"{off:020d}.log").write_bytes(off.to_bytes(8, "big") + raw[8:])


def test_small_segments_come_out_gathered_in_order(tmp_path: Path) -> None:
    _partition(tmp_path / "t-0", 300)
    for level, column in (("batches", "base_offset"), ("records", "offset")):
        reader = KafkaSegmentsReader({"path": str(tmp_path / "t-0"), "level": level, "errors": "column"})
        groups = group_segments(plan_segments(str(tmp_path / "t-0")), group_bytes=1 << 40)
        assert len(groups) == 1 and len(groups[0].segments) == 300
        out = list(reader.read(groups[0]))
        assert len(out) == 1
        assert out[0].column(column).to_pylist() == list(range(300))   # the offsets written
        assert out[0].column("read_error").null_count == 300
        assert out[0].column("topic").to_pylist() == ["t"] * 300


def test_gathered_batches_stay_bounded(tmp_path: Path, monkeypatch) -> None:
    import segtools.spark.datasource as ds

    monkeypatch.setattr(ds, "GATHER_ROWS", 64)
    _partition(tmp_path / "t-0", 200)
    reader = KafkaSegmentsReader({"path": str(tmp_path / "t-0"), "level": "batches"})
    out = list(reader.read(group_segments(plan_segments(str(tmp_path / "t-0")), group_bytes=1 << 40)[0]))
    assert [rb.num_rows for rb in out] == [64, 64, 64, 8]
    assert [o for rb in out for o in rb.column("base_offset").to_pylist()] == list(range(200))
    assert GATHER_ROWS >= 4096
