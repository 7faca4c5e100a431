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


def test_the_listing_says_which_dirs_hold_the_marker_and_export_still_reports_them(
        realdata: Path, tmp_path: Path) -> None:
    """resolve records whether a listed dir held the marker (PartitionSource.salvage_marker);
    export looks no further in a dir listed without it, and still reports the holes of a
    salvaged dir reached through a broker dir, beside clean ones, in worker processes."""
    from segtools.files.salvage_marker import hole_findings
    from segtools.files.sources import PartitionSource, resolve

    data = bytearray((realdata / REL).read_bytes())
    start, end = batch_extents(bytes(data))[3]
    data[start + 40] ^= 0x01
    damaged = tmp_path / "damaged" / "orders-0"
    damaged.mkdir(parents=True)
    (damaged / "00000000000000000000.log").write_bytes(bytes(data))
    runner = CliRunner()
    assert runner.invoke(cli, ["salvage", str(damaged), "--out", str(tmp_path / "broker")]).exit_code == 1
    broker = tmp_path / "broker"
    for p in range(1, 5):    # clean replicas around the salvaged one
        clean = broker / f"orders-{p}"
        clean.mkdir()
        (clean / "00000000000000000000.log").write_bytes((realdata / REL).read_bytes())

    marked = {src.partition: src.salvage_marker for src in resolve(str(broker)).partitions}
    assert marked == {0: True, 1: False, 2: False, 3: False, 4: False}
    assert PartitionSource("orders", 0, ()).salvage_marker is None     # not listed: look

    exported = runner.invoke(cli, ["export", str(broker), "--out", str(tmp_path / "exp"), "--jobs", "2"])
    assert exported.exit_code == 1, exported.output
    assert f"bytes {start}-{end} of the original" in exported.stderr
    assert exported.stderr.count("hole left by segtools salvage") == 1

    salvaged_log = str(broker / "orders-0" / "00000000000000000000.log")
    assert len(hole_findings([salvaged_log])) == 1
    # a folder named as listed without the marker is not looked at; the others still are
    assert hole_findings([salvaged_log], unmarked=[str(broker / "orders-0")]) == []
    assert len(hole_findings([salvaged_log], unmarked=[str(broker / "orders-1")])) == 1
