"""Issue 21 "derived outputs keep the bad news": export's exit code agrees with dump's on the
same input. Each input goes through both commands; where the input is damaged (a segment's
.log missing beside its indexes, a batch that claims more bytes than the file holds, a file
of zeros) both must exit 1 and export must name the damage, not report a clean 0."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "generated"
PARTITION = SAMPLES / "S7-simple-unclean-election" / "broker-1" / "orders-0"
SEGMENT = "00000000000000000000.log"


def _partition(tmp_path: Path) -> Path:
    pdir = tmp_path / "in" / "orders-0"
    shutil.copytree(PARTITION, pdir)
    return pdir


def _missing_log(tmp_path: Path) -> Path:
    pdir = _partition(tmp_path)
    (pdir / SEGMENT).unlink()
    return pdir


def _claims_two_gib(tmp_path: Path) -> Path:
    """Whole batches, then a batch header whose length field says 2 GiB."""
    pdir = _partition(tmp_path)
    with open(pdir / SEGMENT, "ab") as fh:
        fh.write(struct.pack(">qi", 100, 0x7FFFFFFF) + b"\x00" * 40)
    return pdir


def _zeros(tmp_path: Path) -> Path:
    pdir = tmp_path / "in" / "t-0"
    pdir.mkdir(parents=True)
    with open(pdir / SEGMENT, "wb") as fh:
        fh.truncate(8 * 1024 * 1024)      # sparse: no bytes written
    return pdir


def _torn_tail(tmp_path: Path) -> Path:
    pdir = _partition(tmp_path)
    data = (pdir / SEGMENT).read_bytes()
    (pdir / SEGMENT).write_bytes(data[:-30])          # the last batch cut short
    return pdir


def _clean(tmp_path: Path) -> Path:
    return _partition(tmp_path)


CASES = {"missing_log": (_missing_log, 1, "does not exist"),
         "claims_two_gib": (_claims_two_gib, 1, "invalid bytes at the end"),
         "zeros": (_zeros, 1, "batch_length"),
         "torn_tail": (_torn_tail, 1, "invalid bytes at the end"),
         "clean": (_clean, 0, None)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_export_exits_as_dump_does_on_the_same_input(tmp_path, case):
    make, expected, words = CASES[case]
    pdir = make(tmp_path)
    runner = CliRunner()
    dump = runner.invoke(cli, ["dump", str(pdir)])
    export = runner.invoke(cli, ["export", str(pdir), "--out", str(tmp_path / "out")])
    assert dump.exit_code == expected, dump.output
    assert export.exit_code == dump.exit_code, export.output
    if words:
        assert words in export.output
        assert "Traceback" not in export.output


def test_the_records_before_a_cut_short_batch_are_still_exported(tmp_path):
    """The bad news is added, nothing else changes: the whole batches are in the Parquet."""
    import pyarrow.parquet as pq
    from kafka.record import MemoryRecords

    pdir = _claims_two_gib(tmp_path)
    result = CliRunner().invoke(cli, ["export", str(pdir), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1
    records = MemoryRecords((PARTITION / SEGMENT).read_bytes())      # independent reader
    expected = []
    while (b := records.next_batch()) is not None:
        expected.extend(r.offset for r in b)
    got = pq.read_table(tmp_path / "out").column("offset").to_pylist()
    assert sorted(got) == expected and expected
