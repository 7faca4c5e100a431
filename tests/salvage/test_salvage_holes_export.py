"""Issue 23: a dir rebuilt by `segtools salvage` carries `segtools-salvage.json`; dump and
export read it through one helper (segtools.files.salvage_marker) and report each hole as a
finding, exit 1 from both on the same input (before, export said nothing and exited 0: a
false all-clear). The damage is made here in a real broker's segment."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner
from segment_extents import batch_extents

from segtools.cli.main import cli

REL = "kafka-3.6-kraft-flink-stack/logdir/connect-offsets-14/00000000000000000000.log"


def test_dump_and_export_report_the_holes_of_a_salvaged_dir(realdata: Path, tmp_path: Path) -> None:
    data = bytearray((realdata / REL).read_bytes())
    start, end = batch_extents(bytes(data))[3]
    data[start + 40] ^= 0x01     # a CRC-covered byte: salvage drops this batch
    part = tmp_path / "in" / "orders-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(bytes(data))
    runner = CliRunner()
    salvaged = runner.invoke(cli, ["salvage", str(part), "--out", str(tmp_path / "out")])
    assert salvaged.exit_code == 1, salvaged.output
    rebuilt = tmp_path / "out" / "orders-0"

    dumped = runner.invoke(cli, ["dump", str(rebuilt)])
    exported = runner.invoke(cli, ["export", str(rebuilt), "--out", str(tmp_path / "exp")])
    assert (dumped.exit_code, exported.exit_code) == (1, 1), exported.output
    hole = f"bytes {start}-{end} of the original"
    assert hole in dumped.stderr and hole in exported.stderr
    assert "records of the original may be missing" in exported.stderr

    # the original, undamaged: no marker, no finding
    clean = tmp_path / "clean" / "orders-0"
    clean.mkdir(parents=True)
    (clean / "00000000000000000000.log").write_bytes((realdata / REL).read_bytes())
    assert runner.invoke(cli, ["export", str(clean), "--out", str(tmp_path / "exp2")]).exit_code == 0
