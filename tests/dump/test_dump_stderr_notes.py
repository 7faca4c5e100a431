"""segtools' own stderr lines after Kafka's blocks: per-file finding lines that name the file
and say when a finding is benign, and the one-line run summary (all prefixed ``segtools: ``);
Kafka's own lines stay as they are."""

from __future__ import annotations

import os
import struct
from pathlib import Path

from dump_builders import SEG, kafka_err, run, simple_records_log, write_indexes


def _ours(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("segtools: ")]


def _abs(p: Path) -> str:
    return os.path.abspath(p)


def test_anonymous_not_found_block_is_attributed_per_file(tmp_path: Path) -> None:
    ts0 = 1700000000000
    a = tmp_path / "a-0"
    b = tmp_path / "b-0"
    for d in (a, b):
        d.mkdir()
        _, batches = simple_records_log(d)
        write_indexes(d, batches)
    # a: offset 45 is inside batch 30-49 (what brokers before 3.8 wrote): benign
    (a / f"{SEG}.timeindex").write_bytes(struct.pack(">qi", ts0 + 9, 9)
                                         + struct.pack(">qi", ts0 + 49, 45))
    # b: offset 500 is beyond the log: a problem
    (b / f"{SEG}.timeindex").write_bytes(struct.pack(">qi", ts0 + 9, 9)
                                         + struct.pack(">qi", ts0 + 80, 500))
    # Kafka 3.x's blocks, unchanged: one anonymous heading per file, no file name (4.x names
    # the file: test_dump_kafka_versions.py)
    result = run("--kafka-version", "3.9", "--verify-index-only", a / f"{SEG}.timeindex",
                 b / f"{SEG}.timeindex")
    heading = "The following indexed offsets are not found in the log."
    kafka = kafka_err(result.stderr).splitlines()
    assert sorted(kafka) == sorted([heading, "Indexed offset: 45, found log offset: 49",
                                    heading, "Indexed offset: 500, found log offset: -1"])
    ours = _ours(result.stderr)
    assert len(ours) == 3, ours
    line_a, line_b, summary = ours
    assert line_a.startswith(f"segtools: {_abs(a / SEG)}.timeindex: 1 time-index offset ")
    assert "indexed offset 45" in line_a and "benign" in line_a and "KAFKA-16310" in line_a
    assert line_b.startswith(f"segtools: {_abs(b / SEG)}.timeindex: 1 time-index offset ")
    assert "indexed offset 500" in line_b and "benign" not in line_b and "problem" in line_b
    assert summary == ("segtools: 2 files, 0 errors, 0 CRC-invalid batches, "
                       "1 index mismatch, 1 benign note; exit 1")
    assert result.stderr.endswith(summary + "\n")  # after Kafka's blocks
    assert result.exit_code == 1


def test_unused_slot_and_compaction_gap_are_called_benign(tmp_path: Path) -> None:
    from dump_builders import v2_batch

    part = tmp_path / "c-0"
    part.mkdir()
    (part / f"{SEG}.log").write_bytes(
        v2_batch([(None, b"x", 5), (None, b"z", 5)], base_offset=0)
        + v2_batch([(None, b"y", 6)], base_offset=7))
    (part / f"{SEG}.index").write_bytes(b"\0" * 80)  # preallocated, never written
    result = run("--deep-iteration", part)
    ours = _ours(result.stderr)
    assert any(line.startswith(f"segtools: {_abs(part / SEG)}.log: 1 offset gap (offsets 1 -> 7)")
               and "benign: compaction" in line for line in ours), ours
    assert any(line.startswith(f"segtools: {_abs(part / SEG)}.index: 1 index entry ")
               and "benign: the unused first slot of a preallocated index" in line
               for line in ours), ours
    assert ours[-1].endswith("2 benign notes; exit 0")
    assert result.exit_code == 0


def test_summary_counts_crc_invalid_batches_and_errors(tmp_path: Path) -> None:
    from dump_builders import v2_batch

    good = v2_batch([(None, b"x", 5)], base_offset=0)
    bad = bytearray(v2_batch([(None, b"y", 6)], base_offset=1))
    bad[-1] ^= 0xFF  # payload byte: the CRC no longer matches
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(good + bytes(bad) + b"\0" * 12)  # plus a header with size 0
    result = run(log, tmp_path / "missing.log")
    assert _ours(result.stderr)[-1] == ("segtools: 2 files, 2 errors, 1 CRC-invalid "
                                        "batch, 0 index mismatches, 0 benign notes; exit 2")
