"""A folder rebuilt by `segtools salvage` is not healthy data: the holes it left are findings
when dumped (issue 21: they dumped as benign compaction gaps with exit 0).

A real broker segment (tests/data/realdata) is damaged at test time; the offsets around the
hole come from the ORIGINAL file read by kafka-python (an independent reader), not from
salvage's own manifest."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from segment_extents import batch_extents

from segtools.salvage import salvage

SOURCE = "kafka-2.5-zk-first-topic/final/first_topic-2/00000000000000000000.log"


def _offsets(data: bytes) -> list[tuple[int, int]]:
    """(base offset, last offset) of every batch, by kafka-python."""
    from kafka.record.memory_records import MemoryRecords

    out = []
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        offs = [r.offset for r in batch]
        out.append((batch.base_offset, offs[-1]))
    return out


def _dump(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "segtools", "dump", *args], capture_output=True,
                          text=True, timeout=120)


def _salvaged(realdata: Path, tmp_path: Path, damage: bool = True) -> tuple[Path, tuple[int, int]]:
    data = (realdata / SOURCE).read_bytes()
    extents = batch_extents(data)
    offsets = _offsets(data)
    bad = bytearray(data)
    start, _end = extents[2]
    if damage:
        bad[start + 30:start + 40] = bytes(10)   # inside the CRC-covered bytes of batch 2
    part = tmp_path / "in" / "orders-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(bytes(bad))
    salvage(part, tmp_path / "out")
    return tmp_path / "out" / "orders-0", (offsets[1][1], offsets[3][0])


def test_dump_of_a_salvaged_dir_reports_the_hole_and_exits_1(realdata: Path, tmp_path: Path) -> None:
    rebuilt, (after, before) = _salvaged(realdata, tmp_path)
    proc = _dump(str(rebuilt))
    assert proc.returncode == 1, proc.stderr
    hole = [x for x in proc.stderr.splitlines() if "hole left by segtools salvage" in x]
    assert len(hole) == 1, proc.stderr
    assert f"after {after}, before {before}" in hole[0]
    assert "segtools-salvage.json" not in proc.stdout   # the marker is not dumped as a file

    deep = _dump("--deep-iteration", str(rebuilt / "00000000000000000000.log"))
    assert deep.returncode == 1
    assert f"  {after} is followed by {before}" in deep.stderr.splitlines()   # Kafka's own line
    gap = [x for x in deep.stderr.splitlines() if "offset gap" in x]
    assert len(gap) == 1 and "not compaction" in gap[0] and "benign" not in gap[0], deep.stderr
    assert deep.stderr.splitlines()[-1].endswith("0 benign notes; exit 1")


def test_ndjson_has_the_hole_as_a_problem_finding(realdata: Path, tmp_path: Path) -> None:
    rebuilt, (after, before) = _salvaged(realdata, tmp_path)
    proc = _dump("--output", "ndjson", str(rebuilt / "00000000000000000000.log"))
    found = [json.loads(x) for x in proc.stdout.splitlines() if '"salvaged_hole"' in x]
    assert len(found) == 1
    assert found[0]["problem"] is True
    assert (found[0]["after_offset"], found[0]["before_offset"]) == (after, before)


def test_an_undamaged_salvage_dumps_clean(realdata: Path, tmp_path: Path) -> None:
    rebuilt, _ = _salvaged(realdata, tmp_path, damage=False)
    assert (rebuilt / "segtools-salvage.json").is_file()
    proc = _dump("--deep-iteration", str(rebuilt))
    assert proc.returncode == 0, proc.stderr
    assert "salvage" not in proc.stderr


def test_a_damaged_marker_is_a_hole_of_unknown_extent(realdata: Path, tmp_path: Path) -> None:
    rebuilt, _ = _salvaged(realdata, tmp_path, damage=False)
    (rebuilt / "segtools-salvage.json").write_text("{not json")
    proc = _dump(str(rebuilt))
    assert proc.returncode == 1
    assert "unreadable_marker" in proc.stderr
