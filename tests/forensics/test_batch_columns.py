"""The classifier's batches as columns (segtools.forensics.batch_columns) read as the list of
BatchFacts built row by row (``BatchFacts.from_row``, the path stage 2 keeps for rows with
nulls): same values in the same order, slices, negative indexes, sort, and a verdict of the
same bytes. The rows are stage 1's scan of real brokers' segments (tests/data/realdata)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from segtools.forensics.batch_columns import BatchColumns, BatchColumnsBuilder
from segtools.forensics.classify import classify_partition
from segtools.forensics.collect import ReplicaSpec, discover_replicas
from segtools.forensics.model import BatchFacts, ReplicaFacts
from segtools.forensics.pipeline import (
    FACTS_SCHEMA,
    ColumnStarts,
    range_starts,
    replica_facts_of_rows,
    scan_replica,
    scan_segment,
)
from segtools.writer import NewRecord
from segtools.writer.batch_builder import build_batch

pytestmark = pytest.mark.fast

REAL = "kafka-3.6-kraft-flink-stack/logdir"


@pytest.fixture(scope="module")
def scanned(realdata: Path) -> tuple[pa.Table, list]:
    """Stage 1's rows of the six largest replicas of a real broker's log dir, and their specs."""
    specs = sorted(discover_replicas([str(realdata / REAL)]), key=lambda s: -sum(n for _p, n in s.segments))[:6]
    rows = pa.Table.from_batches([rb for s in specs for p, _ in s.segments
                                  for rb in scan_segment(p, s.topic, s.partition, s.replica_id)],
                                 schema=FACTS_SCHEMA)
    assert rows.num_rows > 10
    return rows, specs


def test_columns_read_as_the_rows(scanned: tuple[pa.Table, list]) -> None:
    rows, _specs = scanned
    expected = [BatchFacts.from_row(r) for r in rows.to_pylist()]
    cols = BatchColumns.from_arrow(rows)
    assert len(cols) == len(expected)
    assert list(cols) == expected
    assert [cols[i] for i in range(len(cols))] == expected
    assert cols[-1] == expected[-1] and cols[-len(expected)] == expected[0]
    assert list(cols[3:7]) == expected[3:7] and list(cols[:-2]) == expected[:-2]
    assert list(cols[5:][1:3]) == expected[6:8] and len(cols[9:2]) == 0
    with pytest.raises(IndexError):
        cols[len(expected)]
    assert list(cols.column("base_offset")) == [b.base_offset for b in expected]

    def key(b: BatchFacts) -> tuple[int, int]:
        return (-b.base_offset, b.position)

    cols.sort(key=key)
    assert list(cols) == sorted(expected, key=key)
    assert cols == sorted(expected, key=key)


def test_a_window_of_few_batches_reads_the_same_on_every_walk_and_after_a_sort(
        scanned: tuple[pa.Table, list]) -> None:
    """Up to 8 batches are made once and kept for the next walks (the classifier walks a small
    replica ~20 times): every walk, index and sort still reads as the rows."""
    rows, _specs = scanned
    expected = [BatchFacts.from_row(r) for r in rows.to_pylist()][:6]
    window = BatchColumns.from_arrow(rows)[:6]
    first, again = list(window), list(window)
    assert first == expected and again == expected
    assert [window[i] for i in range(6)] == expected and window[-1] == expected[-1]
    assert all(a is b for a, b in zip(first, again))   # made once
    assert list(window[2:4]) == expected[2:4]

    def key(b: BatchFacts) -> tuple[int, int]:
        return (-b.base_offset, b.position)

    window.sort(key=key)     # after a walk: the next reads the new order, not the kept one
    assert list(window) == sorted(expected, key=key)
    assert window[0] == sorted(expected, key=key)[0]


def test_a_verdict_from_columns_is_the_verdict_from_objects(scanned: tuple[pa.Table, list]) -> None:
    rows, specs = scanned
    from_columns = replica_facts_of_rows(rows, specs)
    assert any(isinstance(f.batches, BatchColumns) for f in from_columns)
    from_objects = replica_facts_of_rows(rows, specs)
    for f in from_objects:
        f.batches = list(f.batches)
    for topic_partition in {(s.topic, s.partition) for s in specs}:
        a = classify_partition([f for f in from_columns if (f.topic, f.partition) == topic_partition])
        b = classify_partition([f for f in from_objects if (f.topic, f.partition) == topic_partition])
        assert [r.to_json() for r in a.replicas] == [r.to_json() for r in b.replicas]
        assert [x.to_json() for x in a.findings] == [x.to_json() for x in b.findings]


def test_rows_of_replicas_in_any_order_give_the_same_facts(scanned: tuple[pa.Table, list]) -> None:
    """Spark hands stage 2 a partition's rows in any replica order (filtered, not sliced)."""
    rows, specs = scanned
    in_order = replica_facts_of_rows(rows, specs)
    shuffled = rows.take(pa.array(sorted(range(rows.num_rows), key=lambda i: -rows.column("broker")[i].as_py())))
    assert shuffled.column("broker")[0].as_py() != rows.column("broker")[0].as_py()
    other = replica_facts_of_rows(shuffled, specs)
    assert [list(f.batches) for f in other] == [list(f.batches) for f in in_order]


def _facts_fields(f: ReplicaFacts) -> dict[str, object]:
    return {k: (list(getattr(f, k)) if k == "batches" else getattr(f, k)) for k in ReplicaFacts.__slots__}


def test_columns_built_during_the_scan_are_the_rows_facts(scanned: tuple[pa.Table, list],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process runner's scan (columns appended segment by segment, every few segments:
    here every 2, to cross many flushes) gives the facts stage 2 makes of stage 1's rows (the
    Spark path), and stage 3 the same start positions."""
    rows, specs = scanned
    monkeypatch.setattr(BatchColumnsBuilder, "_FLUSH", 2)
    from_rows = replica_facts_of_rows(rows, specs)
    scanned_facts = [scan_replica(s) for s in sorted(specs, key=lambda s: s.replica_id)]
    assert all(isinstance(f.batches, BatchColumns) for f in scanned_facts)
    assert [_facts_fields(f) for f in scanned_facts] == [_facts_fields(f) for f in from_rows]
    starts = ColumnStarts(sorted(specs, key=lambda s: s.replica_id), scanned_facts)
    for spec in specs:
        offsets = rows.filter(pc.equal(rows.column("broker"), spec.replica_id)).column("last_offset").to_pylist()
        for first in (0, offsets[len(offsets) // 2], offsets[-1], offsets[-1] + 1):
            assert starts(spec.replica_id, first) == range_starts(rows, spec.replica_id, first)


def _three_segments(part: Path, cut: bool) -> None:
    """Three segments of five one-record batches each (our writer's batches); ``cut``: the
    second and third end inside a batch."""
    part.mkdir(parents=True)
    for seg in range(3):
        data = b"".join(build_batch([NewRecord(b"k", b"v" * (10 + i), (), 1_700_000_000_000 + i)],
                                    base_offset=seg * 5 + i, partition_leader_epoch=seg) for i in range(5))
        (part / f"{seg * 5:020d}.log").write_bytes(data[:-7] if cut and seg else data)


def _rows_of(spec: ReplicaSpec) -> pa.Table:
    return pa.Table.from_batches([rb for p, _ in spec.segments
                                  for rb in scan_segment(p, spec.topic, spec.partition, spec.replica_id)],
                                 schema=FACTS_SCHEMA)


def test_builder_without_names_takes_them_from_the_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Segments not named as Kafka names them: the names come from the scan's own column
    (flushed every 2 rows, so that runs of one name cross flushes)."""
    _three_segments(tmp_path / "t-0", cut=False)
    (spec,) = discover_replicas([str(tmp_path / "t-0")])
    rows = _rows_of(spec)
    monkeypatch.setattr(BatchColumnsBuilder, "_FLUSH", 2)
    builder = BatchColumnsBuilder(None)
    for rb in rows.to_batches(max_chunksize=1):
        builder.add(rb, -1)   # the index is not read without names
    assert list(builder.build()) == [BatchFacts.from_row(r) for r in rows.to_pylist()]
    assert len({b.segment for b in builder.build()}) == 3


def test_a_torn_and_a_broken_segment_read_as_from_the_rows(tmp_path: Path) -> None:
    """A segment cut inside a batch (not the last: unreadable bytes) and a torn active segment:
    the scan's facts name them as the rows' facts do."""
    _three_segments(tmp_path / "t-0", cut=True)
    (spec,) = discover_replicas([str(tmp_path / "t-0")])
    (expected,) = replica_facts_of_rows(_rows_of(spec), [spec])
    got = scan_replica(spec)
    assert _facts_fields(got) == _facts_fields(expected)
    assert expected.torn_tail_bytes and expected.unreadable_before_tail and len(expected.batches) == 13


SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dump"


@pytest.mark.parametrize("source", ["kafka-2.0-zk-small", "kafka-2.5-zk-first-topic", REAL,
                                    *(f"samples/{d.name}" for d in sorted(SAMPLES.iterdir()) if d.is_dir())])
def test_the_scan_of_every_replica_is_the_rows_facts(realdata: Path, source: str) -> None:
    """scan_replica (numpy header columns, no Arrow table) gives, replica by replica, the facts
    stage 2 makes of stage 1's Arrow rows: real brokers' logs, and the samples' legacy (magic
    0/1), transactional and damaged segments (a flipped CRC, garbage, a torn or zeroed tail)."""
    path = SAMPLES / source.split("/", 1)[1] if source.startswith("samples/") else realdata / source
    specs = sorted(discover_replicas([str(path)]), key=lambda s: (s.topic, s.partition, s.replica_id))
    assert specs
    for spec in specs:
        (expected,) = replica_facts_of_rows(_rows_of(spec), [spec])
        assert _facts_fields(scan_replica(spec)) == _facts_fields(expected), spec.partition_dir


def test_columns_without_names_take_the_scans_names(tmp_path: Path) -> None:
    """A builder without names, given columns: each segment's batches under the name the scan
    gives it (as the rows' segment column names it)."""
    from segtools.records.columnar.batch_table import iter_batch_columns

    _three_segments(tmp_path / "t-0", cut=False)
    (spec,) = discover_replicas([str(tmp_path / "t-0")])
    builder = BatchColumnsBuilder(None)
    for path, _size in spec.segments:
        for cols, name in iter_batch_columns(path, topic=spec.topic, partition=spec.partition,
                                             broker=spec.replica_id, located=True):
            builder.add_columns(cols, -1, name)   # the index is not read without names
    expected = [BatchFacts.from_row(r) for r in _rows_of(spec).to_pylist()]
    assert list(builder.build()) == expected
    assert [b.segment for b in expected] == [f"{n // 5 * 5:020d}.log" for n in range(15)]


def test_a_builder_takes_rows_or_columns_not_both(tmp_path: Path) -> None:
    from segtools.records.columnar.batch_table import iter_batch_columns

    _three_segments(tmp_path / "t-0", cut=False)
    (spec,) = discover_replicas([str(tmp_path / "t-0")])
    path = spec.segments[0][0]
    builder = BatchColumnsBuilder(spec.segments.names())
    builder.add(_rows_of(spec).to_batches()[0], 0)
    ((cols, name),) = iter_batch_columns(path, topic=spec.topic, partition=spec.partition,
                                         broker=spec.replica_id, located=True)
    with pytest.raises(ValueError, match="not both"):
        builder.add_columns(cols, 0, name)
