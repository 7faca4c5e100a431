"""`segtools dump --skip-corrupt` on real segments damaged at test time: every intact batch is
printed exactly as the default dump prints it for the undamaged file (which the parity tests
hold to the real kafka-dump-log), one "Skipped" line per damaged range, exit 1; without the
flag the dump still stops where Kafka's does."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from segment_extents import batch_extents

from segtools.cli.main import cli

SOURCES = [
    "kafka-3.6-kraft-flink-stack/logdir/connect-offsets-14/00000000000000000000.log",
    "kafka-3.6-kraft-flink-stack/logdir/_confluent-controlcenter-7-6-0-1-monitoring-trigger-event-rekey-0/00000000000000000000.log",
]


def _batch_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.startswith("baseOffset:")]


@pytest.mark.parametrize("rel", SOURCES, ids=lambda r: r.split("/")[-2][-20:])
@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
def test_skip_corrupt_prints_every_intact_batch(realdata, tmp_path, rel, deep):
    data = (realdata / rel).read_bytes()
    ext = batch_extents(data)
    buf = bytearray(data)
    buf[ext[5][0] + 8:ext[5][0] + 12] = b"\x00\x00\x00\x01"    # an impossible size field
    z0, z1 = ext[50][0] + 30, ext[60][0] + 40                  # zeros over eleven batches
    buf[z0:z1] = bytes(z1 - z0)
    mutant = bytes(buf[:ext[-2][0] + 30])                      # and a torn tail
    orig, bad = tmp_path / "orig" / "t-0", tmp_path / "bad" / "t-0"
    for d, content in ((orig, data), (bad, mutant)):
        d.mkdir(parents=True)
        (d / "00000000000000000000.log").write_bytes(content)
    flags = ["--deep-iteration"] if deep else []
    runner = CliRunner()
    full = runner.invoke(cli, ["dump", str(orig / "00000000000000000000.log"), *flags])
    assert full.exit_code == 0
    got = runner.invoke(cli, ["dump", str(bad / "00000000000000000000.log"), "--skip-corrupt", *flags])
    assert got.exit_code == 1
    intact_positions = {s for s, e in ext if e <= len(mutant) and mutant[s:e] == data[s:e]}
    expected = [ln for ln in _batch_lines(full.stdout)
                if int(ln.split("position: ")[1].split()[0]) in intact_positions]
    assert len(expected) == len(ext) - 1 - 11 - 2   # size field, zeros, torn tail (2 batches)
    assert _batch_lines(got.stdout) == expected
    skipped = [ln for ln in got.stdout.splitlines() if ln.startswith("Skipped ")]
    assert [ln.split(" at position ")[1].split()[0] for ln in skipped] == \
        [f"{ext[5][0]}-{ext[6][0]}", f"{ext[50][0]}-{ext[61][0]}", f"{ext[-2][0]}-{len(mutant)}"]
    if deep:   # the records of every intact batch too
        full_records = [ln for ln in full.stdout.splitlines() if ln.startswith("| offset:")]
        got_records = [ln for ln in got.stdout.splitlines() if ln.startswith("| offset:")]
        assert set(got_records) <= set(full_records) and len(got_records) >= len(expected)
    # default behaviour unchanged: stops at the first bad batch like Kafka's tool
    plain = runner.invoke(cli, ["dump", str(bad / "00000000000000000000.log"), *flags])
    assert plain.exit_code == 1
    assert _batch_lines(plain.stdout) == _batch_lines(full.stdout)[:5]
    assert "Skipped " not in plain.stdout


def test_offset_gaps_the_skip_made_are_not_called_compaction(realdata, tmp_path):
    """One batch cut out whole (what compaction leaves: a gap, intact framing) and three batches
    damaged: the first gap is a benign compaction note, the gap across the damaged bytes is
    reported as made by --skip-corrupt with the skipped byte range, never as compaction. The
    source has one record per batch at offsets 0, 1, 2, ... (its batch N holds offset N)."""
    data = (realdata / SOURCES[0]).read_bytes()
    ext = batch_extents(data)
    assert all(data[s:s + 8] == i.to_bytes(8, "big") for i, (s, _) in enumerate(ext[:40]))
    cut = data[:ext[10][0]] + data[ext[10][1]:]                # offset 10 gone
    ext2 = batch_extents(cut)                                  # ext2[k] is batch k + 1 for k >= 10
    buf = bytearray(cut)
    buf[ext2[29][0] + 30:ext2[31][0] + 40] = bytes(ext2[31][0] + 10 - ext2[29][0])  # offsets 30-32
    part = tmp_path / "t-0"
    part.mkdir()
    log = part / "00000000000000000000.log"
    log.write_bytes(bytes(buf))
    got = CliRunner().invoke(cli, ["dump", str(log), "--skip-corrupt", "--deep-iteration"])
    assert got.exit_code == 1
    skip = f"{ext2[29][0]}-{ext2[32][0]}"
    assert [ln.split(" at position ")[1].split()[0] for ln in got.stdout.splitlines()
            if ln.startswith("Skipped ")] == [skip]
    notes = [ln for ln in got.stderr.splitlines() if "offset gap" in ln]
    assert len(notes) == 2, got.stderr
    made, benign = notes
    assert f"1 offset gap made by --skip-corrupt (offsets 29 -> 33 across skipped bytes {skip})" in made
    assert "not compaction" in made and "benign" not in made
    assert "1 offset gap (offsets 9 -> 11)" in benign and "benign: compaction" in benign
    # Kafka's own summary still lists both gaps
    assert "  9 is followed by 11\n  29 is followed by 33\n" in got.stderr
    assert "1 error," in got.stderr and "1 benign note;" in got.stderr
