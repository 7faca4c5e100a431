"""compare's Python memory per segment is bounded (issue 23, round 3): peaks traced by
tracemalloc (allocations, not timings) of the stages that hold something per segment, at two
segment counts, for two identical replicas of one-batch segments.

What a partition of many small segments must hold is its batches' header facts (one small
object per batch) and each segment's path and size: nothing else may grow with the segment
count. The slope bounds are the measured cost of that (after this round) with a margin, below
what the code before it took:

- discovery (``discover_replicas``): ~320 bytes per segment at the peak (was ~660: the whole
  ``os.scandir`` listing, with each entry's cached stat, was held until the end);
- stages 2-3 (``compare_partition`` over stage 1's rows): ~136 bytes per batch (was ~630,
  then ~425: a BatchFacts object with its ints per batch, ~260 bytes, and the classifier's
  index of every batch by key, ~100 bytes). What is left is the batch's columns
  (segtools.forensics.batch_columns, ~60 bytes) and its segment's name (one str per segment,
  shared by the replicas: ~37 bytes a batch of each of two replicas).

Once discovery returns, the specs keep 16 bytes a segment (SegmentList: base offsets and
sizes in arrays). Stage 1 in process (``scan_replica``) appends each segment's Arrow rows to
the batch columns every 256 segments, so no table of a replica's rows is held (Spark's stage 2
still gets rows: the test above). benchmarks/bench_scale.py measures the process RSS over
1,000 to 100,000 segments."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from segtools.forensics.collect import ReplicaSpec, SegmentList, discover_replicas
from segtools.forensics.pipeline import (
    FACTS_SCHEMA,
    RangeStarts,
    compare_partition,
    range_starts,
    scan_segment,
)
from segtools.writer import NewRecord
from segtools.writer.batch_builder import build_batch
from tests.forensics.test_scale_memory import _cluster

#: traced peak bytes per additional segment (per replica)
DISCOVERY_SLOPE = 450
STAGE2_SLOPE = 250   # the per-object code before measured 425


def _traced_peak(fn: Callable[[], Any]) -> tuple[int, Any]:
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = fn()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return peak, out


def _template() -> bytes:
    return build_batch([NewRecord(b"k", b"v" * 100, (), 1_700_000_000_000)], base_offset=0)


def _replicas(root: Path, segments: int) -> list[str]:
    """Two broker dirs of ``segments`` one-batch segments each (test_scale_memory's cluster)."""
    return _cluster(root, segments)


def test_discovery_traced_peak_grows_by_the_paths_only(tmp_path: Path) -> None:
    small, large = 500, 5000
    peaks = {}
    discover_replicas(_replicas(tmp_path / "warm", 3))   # imports happen once, outside the measure
    for n in (small, large):
        dirs = _replicas(tmp_path / str(n), n)
        peaks[n], specs = _traced_peak(lambda dirs=dirs: discover_replicas(dirs))
        # what the construction holds: two replicas of n segments, in offset order
        assert [len(s.segments) for s in specs] == [n, n]
        assert [Path(p).name for p, _ in specs[0].segments[:2]] == [f"{0:020d}.log", f"{1:020d}.log"]
        del specs
    slope = (peaks[large] - peaks[small]) / ((large - small) * 2)
    assert slope < DISCOVERY_SLOPE, (peaks, slope)


def _stage1_rows(tmp_path: Path, segments: int) -> tuple[pa.Table, list[ReplicaSpec]]:
    """Stage 1's rows of two identical replicas of ``segments`` one-batch segments, built from
    the scan of one real segment file (the rest differ only in base offset and file name)."""
    path = tmp_path / f"{0:020d}.log"
    path.write_bytes(_template())
    one = pa.Table.from_batches(list(scan_segment(str(path), "scale", 0, 0)), schema=FACTS_SCHEMA)
    assert one.num_rows == 1
    size = one.column("size")[0].as_py()
    cols = {c: pa.repeat(one.column(c)[0], 2 * segments).cast(FACTS_SCHEMA.field(c).type)
            for c in FACTS_SCHEMA.names}
    offsets = pa.array([o for _ in (0, 1) for o in range(segments)], pa.int64())
    cols["base_offset"] = cols["last_offset"] = offsets
    cols["broker"] = pa.array([r for r in (0, 1) for _ in range(segments)], pa.int32())
    cols["segment"] = pa.array([f"{o:020d}.log" for _ in (0, 1) for o in range(segments)], pa.string())
    rows = pa.table([cols[c] for c in FACTS_SCHEMA.names], schema=FACTS_SCHEMA)
    specs = [ReplicaSpec(replica_id=r, broker=r + 1, topic="scale", partition=0,
                         partition_dir=str(tmp_path / f"broker-{r + 1}" / "scale-0"),
                         log_dir=str(tmp_path / f"broker-{r + 1}"),
                         segments=[(str(tmp_path / f"broker-{r + 1}" / "scale-0" / f"{o:020d}.log"), size)
                                   for o in range(segments)])
             for r in (0, 1)]
    return rows, specs


def test_stage2_traced_peak_grows_by_the_batches_only(tmp_path: Path) -> None:
    small, large = 2000, 20000
    peaks = {}
    for n in (small, large):
        rows, specs = _stage1_rows(tmp_path, n)
        peaks[n], (verdict, lost, _findings) = _traced_peak(
            lambda rows=rows, specs=specs: compare_partition(rows, specs, None, None))
        del rows
        # the construction's ground truth: identical replicas of offsets 0..n-1
        assert [r.status for r in verdict.replicas] == ["CONSISTENT", "CONSISTENT"]
        assert [r.log_end_offset for r in verdict.replicas] == [n, n]
        assert not lost and not verdict.divergent_ranges
    slope = (peaks[large] - peaks[small]) / ((large - small) * 2)
    assert slope < STAGE2_SLOPE, (peaks, slope)
    # and 10x the segments is under 10x the peak plus that slope (no superlinear part)
    assert peaks[large] < 10 * peaks[small] + 2 * large * STAGE2_SLOPE, peaks


def test_range_starts_index_is_range_starts(tmp_path: Path) -> None:
    """The columns stage 3 keeps after the rows are freed give what the rows gave."""
    specs = discover_replicas(_replicas(tmp_path, 30))
    rows = pa.Table.from_batches([rb for s in specs for p, _ in s.segments
                                  for rb in scan_segment(p, s.topic, s.partition, s.replica_id)],
                                 schema=FACTS_SCHEMA)
    starts = RangeStarts(rows)
    for rid in (0, 1, 5):
        for first in (0, 7, 29, 30):
            expected = range_starts(rows, rid, first)
            assert starts(rid, first) == expected
            if rid < 2 and first < 30:
                # one-batch segments: every segment from the one holding ``first`` on, at byte 0
                assert expected == {f"{o:020d}.log": 0 for o in range(first, 30)}


#: traced bytes per segment the specs keep once discovery returns (a dir string and two arrays;
#: the list of (path, size) tuples before kept ~200)
SPEC_BYTES_PER_SEGMENT = 48


def test_specs_hold_16_bytes_a_segment(tmp_path: Path) -> None:
    n = 2000
    dirs = _replicas(tmp_path, n)
    discover_replicas(_replicas(tmp_path / "warm", 3))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        specs = discover_replicas(dirs)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert [len(s.segments) for s in specs] == [n, n]
    assert kept / (2 * n) < SPEC_BYTES_PER_SEGMENT, kept / (2 * n)


def test_segment_list_gives_back_what_it_was_given(tmp_path: Path) -> None:
    """Kafka's names are held as offsets, anything else as given; either reads back the same
    items, pickles (Spark ships the specs) and leaves to_dict / from_dict unchanged."""
    import pickle

    folder = str(tmp_path / "t-0")
    kafka = [(f"{folder}/{o:020d}.log", 100 + o) for o in (0, 7, 10**12)]
    odd = [*kafka[:2], (f"{folder}/renamed.log", 5), (f"{tmp_path}/remote/{20:020d}.log", 9), kafka[2]]
    for items, compact in ((kafka, True), (odd, False), ([], True)):
        segs = SegmentList(items)
        assert segs.compact is compact
        assert list(segs) == items and len(segs) == len(items) and segs == items
        assert [segs[i] for i in range(-len(items), len(items))] == items + items
        assert segs[1:] == items[1:]
        assert list(segs.names()) == [Path(p).name for p, _ in items]
        assert pickle.loads(pickle.dumps(segs)) == items
        spec = ReplicaSpec(0, 1, "t", 0, folder, str(tmp_path), segments=items)
        assert isinstance(spec.segments, SegmentList)
        assert spec.to_dict()["segments"] == items
        assert ReplicaSpec.from_dict(spec.to_dict()) == spec
    # a 21-digit or unpadded name is not Kafka's 20-digit spelling: kept as given
    for name in ("5.log", f"{1:021d}.log"):
        assert not SegmentList([(f"{folder}/{name}", 1)]).compact
