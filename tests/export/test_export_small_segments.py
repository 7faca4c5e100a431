"""export reads neighbouring small segments as one group (columnar.SmallSegments, issue 23's
per-segment cost): the rows, files and findings must be those of reading every segment
alone, on healthy segments (checked against the records written) and on damaged ones (where
the group gives way to the per-file reader)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

import segtools.export as export_mod
from segtools.export import export
from segtools.records import columnar
from segtools.writer import NewRecord
from segtools.writer.batch_builder import build_batch, build_control_batch

TS = 1_700_000_000_000


def _records(seg: int, n: int) -> list[NewRecord]:
    return [NewRecord(None if (seg + i) % 5 == 0 else f"k{seg}-{i}".encode(),
                      f"value {seg}-{i} ".encode() * (1 + i % 3), (("h", b"x"),) if i % 2 else (),
                      TS + seg * 10 + i) for i in range(n)]


def _partition(root: Path, segments: int = 60) -> tuple[str, dict[int, tuple[Any, ...]]]:
    """One partition of small segments of 0-3 batches each: plain, gzip, lz4, zstd,
    transactional with its COMMIT marker, and an empty file. Returns the broker dir and, per
    offset, the written key and value, the segment's name and the last byte of its batch."""
    bdir = root / "broker-1"
    pdir = bdir / "small-0"
    pdir.mkdir(parents=True)
    (bdir / "meta.properties").write_text("version=0\nbroker.id=1\n")
    written: dict[int, tuple[Any, ...]] = {}
    offset = 0
    for seg in range(segments):
        data = bytearray()
        start = offset
        for b in range(seg % 4):      # seg % 4 == 0: an empty segment file
            recs = _records(seg, 1 + (seg + b) % 3)
            codec = ("none", "gzip", "lz4", "zstd")[(seg + b) % 4]
            txn = seg % 7 == 3
            batch_at = len(data)
            data += build_batch(recs, base_offset=offset, compression=codec,
                                producer_id=42 if txn else -1, producer_epoch=0 if txn else -1,
                                base_sequence=offset if txn else -1, is_transactional=txn)
            for i, r in enumerate(recs):
                written[offset + i] = (r.key, r.value, f"{start:020d}.log", batch_at)
            offset += len(recs)
            if txn:
                data += build_control_batch("COMMIT", base_offset=offset, producer_id=42,
                                            producer_epoch=0, timestamp=TS)
                offset += 1
        (pdir / f"{start:020d}.log").write_bytes(bytes(data))
    return str(bdir), written


def _export(src: str, out: Path, **options: Any) -> tuple[list[dict[str, Any]], list[str], int]:
    summary = export([src], str(out), export_mod.ExportOptions(**options))
    table = ds.dataset(str(out), format="parquet").to_table().sort_by("offset")
    return table.to_pylist(), list(summary.findings), len(summary.files)


def _both(src: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[Any, Any, int]:
    groups: list[bool] = []
    real = columnar.SmallSegments._decode

    def counted(self: columnar.SmallSegments, paths: list[str], *rest: Any) -> Any:
        got = real(self, paths, *rest)
        groups.append(got is not None)
        return got

    with monkeypatch.context() as m:
        m.setattr(columnar.SmallSegments, "_decode", counted)
        grouped = _export(src, tmp_path / "grouped", **options)
    with monkeypatch.context() as m:
        m.setattr(export_mod, "_small_segments", lambda sources, options: None)
        alone = _export(src, tmp_path / "alone", **options)
    return grouped, alone, sum(groups)


def test_grouped_rows_are_the_written_records_and_the_per_file_rows(tmp_path, monkeypatch):
    src, written = _partition(tmp_path / "in")
    grouped, alone, used = _both(src, tmp_path, monkeypatch)
    assert used >= 1, "the small segments were not read as a group"
    assert grouped == alone
    rows, findings, files = grouped
    assert findings == [] and files == 1
    data = [r for r in rows if not r["is_control"]]
    # positions and names are the files', not the group's
    assert {r["offset"]: (r["key"], r["value"], r["segment"], r["batch_position"])
            for r in data} == written
    assert sum(r["is_control"] for r in rows) == sum(s % 4 for s in range(60) if s % 7 == 3)


def test_grouped_control_filter_matches_per_file(tmp_path, monkeypatch):
    src, _ = _partition(tmp_path / "in", 30)
    grouped, alone, used = _both(src, tmp_path, monkeypatch, include_control=False)
    assert used >= 1 and grouped == alone
    assert not any(r["is_control"] for r in grouped[0])


def test_damaged_segments_fall_back_to_the_per_file_reader(tmp_path, monkeypatch):
    src, _ = _partition(tmp_path / "in")
    logs = sorted(Path(src, "small-0").glob("*.log"))
    torn = next(p for p in logs if p.stat().st_size > 100)
    torn.write_bytes(torn.read_bytes()[:-5])                     # a batch cut short at the end
    flipped = [p for p in logs if p.stat().st_size > 100][5]
    raw = bytearray(flipped.read_bytes())
    raw[20] ^= 0x20                                  # the first batch's stored CRC: no longer matches
    flipped.write_bytes(bytes(raw))
    grouped, alone, _ = _both(src, tmp_path, monkeypatch)
    assert grouped == alone
    rows, findings, _ = grouped
    assert any("invalid bytes at the end" in f and torn.name in f for f in findings), findings
    assert any(not r["crc_valid"] and r["segment"] == flipped.name for r in rows)


def _many_replicas(root: Path) -> tuple[list[str], dict[tuple[int, str, int, int], tuple[Any, ...]]]:
    """Two brokers, each with 40 partitions of two topics holding 0-2 small segments of 0-2
    batches (plain and compressed). Returns the broker dirs and, per (broker, topic, partition,
    offset), the written key, value and segment name."""
    written: dict[tuple[int, str, int, int], tuple[Any, ...]] = {}
    brokers = []
    for broker in (1, 2):
        bdir = root / f"broker-{broker}"
        bdir.mkdir(parents=True)
        (bdir / "meta.properties").write_text(f"version=0\nbroker.id={broker}\n")
        brokers.append(str(bdir))
        for p in range(40):
            topic = ("orders", "clicks")[p % 2]
            pdir = bdir / f"{topic}-{p}"
            pdir.mkdir()
            offset = 0
            for seg in range((p + broker) % 3):
                data = bytearray()
                start = offset
                for b in range((p + seg) % 3):
                    recs = _records(p * 10 + seg, 1 + b)
                    data += build_batch(recs, base_offset=offset,
                                        compression=("none", "lz4", "gzip")[(p + b) % 3])
                    for i, r in enumerate(recs):
                        written[(broker, topic, p, offset + i)] = (r.key, r.value, f"{start:020d}.log")
                    offset += len(recs)
                (pdir / f"{start:020d}.log").write_bytes(bytes(data))
    return brokers, written


def _export_all(brokers: list[str], out: Path, jobs: int | None = None) -> tuple[list[dict[str, Any]], list[str], int]:
    """Rows (by broker, topic, partition, offset), findings and file count of an export of
    ``brokers``, one replica=broker-<id>/ folder each."""
    summary = export(brokers, str(out), export_mod.ExportOptions(by_broker=True), jobs=jobs)
    table = ds.dataset(str(out), format="parquet").to_table()
    rows = sorted(table.to_pylist(), key=lambda r: (r["broker"], r["topic"], r["partition"], r["offset"]))
    return rows, list(summary.findings), len(summary.files)


def _alone(brokers: list[str], out: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as m:
        m.setattr(export_mod, "_small_segments", lambda sources, options: None)
        return _export_all(brokers, out, jobs=1)


@pytest.mark.parametrize("jobs", [1, 2])
def test_one_group_spans_many_replicas_and_each_row_keeps_its_own(tmp_path, monkeypatch, jobs):
    brokers, written = _many_replicas(tmp_path / "in")
    spans: list[int] = []
    real = columnar.SmallSegments._decode

    def counted(self: columnar.SmallSegments, paths: list[str], sizes: list[int], owners: Any) -> Any:
        got = real(self, paths, sizes, owners)
        if got is not None:
            spans.append(len({(o.topic, o.partition, o.broker) for o in owners}))
        return got

    with monkeypatch.context() as m:
        m.setattr(columnar.SmallSegments, "_decode", counted)
        grouped = _export_all(brokers, tmp_path / "grouped", jobs=jobs)
    if jobs == 1:   # (the workers count their groups in their own processes)
        assert spans and max(spans) > 10, spans
    assert grouped == _alone(brokers, tmp_path / "alone", monkeypatch)
    rows, findings, _ = grouped
    assert findings == []
    assert {(r["broker"], r["topic"], r["partition"], r["offset"]): (r["key"], r["value"], r["segment"])
            for r in rows} == written
    # every file holds its own replica's rows only
    for f in (tmp_path / "grouped").rglob("*.parquet"):
        t = ds.dataset(str(f), format="parquet").to_table()
        assert len(set(zip(t.column("topic").to_pylist(), t.column("partition").to_pylist(),
                           t.column("broker").to_pylist()))) == 1, f


def test_a_damaged_replica_among_many_is_read_alone_and_reported(tmp_path, monkeypatch):
    brokers, _ = _many_replicas(tmp_path / "in")
    logs = sorted(p for p in Path(brokers[0]).rglob("*.log") if p.stat().st_size > 100)
    torn, flipped = logs[3], logs[9]
    torn.write_bytes(torn.read_bytes()[:-5])                     # a batch cut short at the end
    raw = bytearray(flipped.read_bytes())
    raw[20] ^= 0x20                                  # the first batch's stored CRC: no longer matches
    flipped.write_bytes(bytes(raw))
    grouped = _export_all(brokers, tmp_path / "grouped", jobs=1)
    assert grouped == _alone(brokers, tmp_path / "alone", monkeypatch)
    rows, findings, _ = grouped
    assert any("invalid bytes at the end" in f and f"{torn.parent.name}/{torn.name}" in f
               for f in findings), findings
    topic, partition = flipped.parent.name.rsplit("-", 1)
    assert {(r["broker"], r["topic"], r["partition"], r["segment"]) for r in rows if not r["crc_valid"]} \
        == {(1, topic, int(partition), flipped.name)}


def test_lookups_out_of_file_order_give_the_same_rows(tmp_path):
    """SmallSegments tries the file after the last one found first; asked out of order (a
    segment again, backwards, one it does not hold) it gives each file's own rows or None (read
    it alone), never another file's."""
    from segtools.files.sources import resolve

    bdir, _written = _partition(tmp_path, segments=30)
    (src,) = resolve([bdir]).partitions
    sizes = list(src.segment_sizes)

    def reader() -> columnar.SmallSegments:
        return columnar.SmallSegments(list(src.segments), sizes, topic=src.topic,
                                      partition=src.partition, broker=src.broker)

    def rows(batches):
        return None if batches is None else [r for rb in batches for r in rb.to_pylist()]

    in_order = reader()
    expected = {seg: rows(in_order.batches(seg)) for seg in src.segments}
    assert sum(len(r or ()) for r in expected.values()) > 30
    shuffled = reader()
    order = [*reversed(src.segments), src.segments[5], src.segments[5], src.segments[0]]
    got = {seg: rows(shuffled.batches(seg)) for seg in order}
    # None means "read it alone" (a group starting at the last file is that file alone): the
    # rows given are always the file's own
    assert all(got[seg] is None or got[seg] == expected[seg] for seg in src.segments)
    assert sum(got[seg] is not None for seg in src.segments) >= 20
    assert shuffled.holds(src.segments[17]) and not shuffled.holds(str(tmp_path / "other.log"))
    assert shuffled.batches(str(tmp_path / "other.log")) is None
