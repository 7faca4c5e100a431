"""dump's summary names every file with a real problem (issue 26): CRC-invalid batches,
unreadable tails and unusable files each get a ``segtools: FILE: ...`` line, not only the
benign notes; the JSON document of the file marks those findings ``problem: true``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from dump_builders import SEG, run, v2_batch


def test_each_file_with_a_problem_has_a_summary_line(tmp_path: Path) -> None:
    good = v2_batch([(None, b"x", 5)], base_offset=0)
    bad = bytearray(v2_batch([(None, b"y", 6)], base_offset=1))
    bad[-1] ^= 0xFF  # a payload byte: the batch at byte len(good) fails its CRC
    damaged = tmp_path / "d-0"
    damaged.mkdir()
    log = damaged / f"{SEG}.log"
    log.write_bytes(good + bytes(bad))
    clean = tmp_path / "c-0"
    clean.mkdir()
    (clean / f"{SEG}.log").write_bytes(good)
    missing = tmp_path / "missing.log"
    result = run(log, clean / f"{SEG}.log", missing)
    ours = [ln for ln in result.stderr.splitlines() if ln.startswith("segtools: ")]
    per_file = ours[:-1]
    # one line per file with a problem, none for the clean file
    assert len(per_file) == 2, ours
    crc = next(ln for ln in per_file if ln.startswith(f"segtools: {os.path.abspath(log)}: "))
    assert "1 CRC-invalid batch (" in crc and f"position {len(good)}" in crc and "exit 1" in crc
    gone = next(ln for ln in per_file if ln.startswith(f"segtools: {os.path.abspath(missing)}: "))
    assert "unreadable or unusable file" in gone and "exit 2" in gone
    assert not any(str(clean) in ln for ln in per_file)
    assert result.exit_code == 2


def test_json_marks_the_files_problems(tmp_path: Path) -> None:
    good = v2_batch([(None, b"x", 5)], base_offset=0)
    bad = bytearray(v2_batch([(None, b"y", 6)], base_offset=1))
    bad[-1] ^= 0xFF
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(good + bytes(bad))
    result = run("--output", "json", log)
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    problems = [f for f in doc["findings"] if f.get("problem")]
    assert [f["kind"] for f in problems] == ["crc_invalid"], doc["findings"]
