"""export's Python memory per segment is bounded (issue 23, round 3): the traced peak
(tracemalloc: allocations, not timings) of exporting one partition of N one-batch segments at
two N. What grows with the segment count is what must: each segment's path (discovery, the
file group's source list) and its entry in the _SUCCESS manifest (~530 bytes per segment
measured); the rows themselves go to Parquet in row groups of bounded size."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from segtools.export import export
from segtools.writer import NewRecord
from segtools.writer.batch_builder import build_batch

#: traced peak bytes per additional segment
SLOPE_BOUND = 900


def _partition(root: Path, segments: int) -> str:
    raw = build_batch([NewRecord(b"k", b"v" * 100, (), 1_700_000_000_000)], base_offset=0,
                      partition_leader_epoch=0)
    bdir = root / "broker-1"
    pdir = bdir / "scale-0"
    pdir.mkdir(parents=True)
    (bdir / "meta.properties").write_text("version=0\nbroker.id=1\n")
    for off in range(segments):
        # the base offset is outside the CRC: one template serves every segment
        (pdir / f"{off:020d}.log").write_bytes(off.to_bytes(8, "big") + raw[8:])
    return str(bdir)


def test_export_traced_peak_grows_by_the_paths_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The reader allocates its 16 MiB read window (untouched pages, never resident for a small
    # file) per segment: tracemalloc counts it, and it would be the peak of the small run and
    # hide the growth. A 64 KiB window reads these 200-byte segments the same way.
    monkeypatch.setattr("segtools.records.columnar.window._SCAN_BYTES", 64 * 1024)
    export([_partition(tmp_path / "warm", 3)], str(tmp_path / "out-warm"))   # imports, JIT
    # both past the writer's bounded buffer (256 reader batches before a merge)
    small, large = 300, 1100
    peaks = {}
    for n in (small, large):
        src, out = _partition(tmp_path / str(n), n), str(tmp_path / f"out{n}")
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            export([src], out)
            peaks[n] = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
        # every record, read back by pyarrow's own dataset reader: offsets 0..n-1
        table = ds.dataset(out, format="parquet").to_table(columns=["offset"])
        assert sorted(table.column("offset").to_pylist()) == list(range(n))
    slope = (peaks[large] - peaks[small]) / (large - small)
    assert slope < SLOPE_BOUND, (peaks, slope)
