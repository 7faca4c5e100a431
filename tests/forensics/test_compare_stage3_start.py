"""Stage 3 of compare starts decoding a divergent range at the first batch that can hold it
(its byte position from stage 1) instead of walking the segment from byte 0."""

from __future__ import annotations

import os

import pyarrow as pa

from segtools.forensics.pipeline import FACTS_SCHEMA, range_starts, scan_segment
from segtools.records import columnar
from segtools.writer import LogWriter, NewRecord, build_batch

PER_BATCH = 5


def _segment(tmp_path) -> tuple[str, list[int]]:
    """10 batches of 5 records (offsets 0..49); the byte position of each batch, summed from
    the raw batches we wrote."""
    d = tmp_path / "t-0"
    w = LogWriter(str(d), segment_bytes=1 << 20)
    positions, pos = [], 0
    for i in range(10):
        base = i * PER_BATCH
        raw = build_batch([NewRecord(f"k{base + j}".encode(), b"v" * (i + 1), (), 1_700_000_000_000 + base + j)
                           for j in range(PER_BATCH)], base_offset=base, partition_leader_epoch=0)
        w.append(raw)
        positions.append(pos)
        pos += len(raw)
    w.close()
    seg = os.path.join(str(d), "00000000000000000000.log")
    return seg, positions


def test_start_position_reads_from_that_batch_on(tmp_path):
    seg, positions = _segment(tmp_path)
    offsets = [o for rb in columnar.iter_record_batches(seg, start_position=positions[4])
               for o in rb.column("offset").to_pylist()]
    assert offsets == list(range(20, 50))
    offsets = [o for rb in columnar.iter_record_batches(seg, start_position=positions[4], start_offset=22,
                                                        end_offset=31)
               for o in rb.column("offset").to_pylist()]
    assert offsets == list(range(22, 31))


def test_range_starts_is_the_first_batch_reaching_the_range(tmp_path):
    seg, positions = _segment(tmp_path)
    rows = pa.Table.from_batches(list(scan_segment(seg, "t", 0, 7)), schema=FACTS_SCHEMA)
    name = os.path.basename(seg)
    assert range_starts(rows, 7, 23) == {name: positions[4]}     # batch [20..24] holds 23
    assert range_starts(rows, 7, 25) == {name: positions[5]}     # a range starting at a batch
    assert range_starts(rows, 7, 0) == {name: 0}
    assert range_starts(rows, 7, 50) == {}                        # no batch reaches it: from byte 0
    assert range_starts(rows, 8, 0) == {}                         # another replica's rows
