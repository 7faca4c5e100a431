"""Issue 23: salvage's Python memory per batch (1,000 -> 50,000 batches took 1.4 -> 22 MB,
~420 bytes a batch: an object per intact batch, and the chain's per-batch lists even for an
undamaged segment). The intact batches are now columns (SalvagedBatches, 64 bytes a batch)
and an in-order segment skips the chain search. tracemalloc peaks of ``salvage`` at two batch
counts; the segments are built here (one template batch, its base offset rewritten: the CRC
does not cover it) with one damaged batch at the end, so the construction says what must be
kept and where the hole is."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import pytest

from segtools.salvage import salvage
from segtools.writer import NewRecord
from segtools.writer.batch_builder import build_batch

pytestmark = pytest.mark.fast

#: traced peak bytes per additional batch (measured ~71: the columns; the per-object code ~386)
SLOPE = 100


def _segment(path: Path, batches: int) -> int:
    """``batches`` one-record batches at offsets 0..batches-1, the last one's CRC broken;
    returns the last batch's byte position."""
    body = build_batch([NewRecord(b"k", b"v" * 100, (), 1_700_000_000_000)], base_offset=0)[8:]
    path.parent.mkdir(parents=True)
    with open(path, "wb") as fh:
        for off in range(batches):
            fh.write(off.to_bytes(8, "big") + body)
    size = 8 + len(body)
    last = (batches - 1) * size
    with open(path, "r+b") as fh:
        fh.seek(last + 40)
        b = fh.read(1)
        fh.seek(last + 40)
        fh.write(bytes([b[0] ^ 1]))
    return last


def _peak(src: Path, out: Path) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        salvage(src, out)
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_salvage_traced_peak_grows_by_a_few_bytes_per_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the read window (4 MiB, bounded) would enter the slope while the file is smaller than it
    import segtools.salvage as module
    from segtools.files.read_window import ReadWindow

    monkeypatch.setattr(module, "ReadWindow", lambda path: ReadWindow(path, window=1 << 16))
    small, large = 1000, 25000
    _segment(tmp_path / "warm" / "t-0" / f"{0:020d}.log", 10)
    salvage(tmp_path / "warm" / "t-0", tmp_path / "warm-out")     # imports, outside the measure
    peaks = {}
    for n in (small, large):
        seg = tmp_path / str(n) / "t-0" / f"{0:020d}.log"
        hole_at = _segment(seg, n)
        peaks[n] = _peak(seg.parent, tmp_path / f"out-{n}")
        marker = json.loads((tmp_path / f"out-{n}" / "t-0" / "segtools-salvage.json").read_text())
        holes = marker["segments"][f"{0:020d}.log"]["holes"]
        assert [(h["original_start"], h["after_offset"], h["before_offset"]) for h in holes] == \
            [(hole_at, n - 2, None)]
        assert (tmp_path / f"out-{n}" / "t-0" / f"{0:020d}.log").stat().st_size == hole_at
    slope = (peaks[large] - peaks[small]) / (large - small)
    assert slope < SLOPE, (peaks, slope)
