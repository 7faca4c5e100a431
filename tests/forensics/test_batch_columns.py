"""The classifier's batches as columns (segtools.forensics.batch_columns) read as the list of
BatchFacts built row by row (``BatchFacts.from_row``, the path stage 2 keeps for rows with
nulls): same values in the same order, slices, negative indexes, sort, and a verdict of the
same bytes. The rows are stage 1's scan of real brokers' segments (tests/data/realdata)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from segtools.forensics.batch_columns import BatchColumns
from segtools.forensics.classify import classify_partition
from segtools.forensics.collect import discover_replicas
from segtools.forensics.model import BatchFacts
from segtools.forensics.pipeline import FACTS_SCHEMA, replica_facts_of_rows, scan_segment

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
