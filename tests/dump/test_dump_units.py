"""Small pieces of the dump package checked against brute force or Java's documented rules."""

from __future__ import annotations

import os
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.dump.index_dump import Slots, lookup_position
from segtools.dump.paths import file_kind
from segtools.dump.text import java_absolute_path, java_file, optional_long
from segtools.dump.time_index_dump import _FirstAtLeast
from segtools.files.snapshots import ProducerSnapshotEntry


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.integers(-5, 50), max_size=60), start=st.integers(0, 70),
       x=st.integers(-6, 52), sort=st.booleans())
def test_first_at_least_matches_linear_scan(values: list[int], start: int, x: int,
                                            sort: bool) -> None:
    if sort:
        values = sorted(values)
    expected = next((j for j in range(start, len(values)) if values[j] >= x), None)
    assert _FirstAtLeast(values)(start, x) == expected


def _index_bytes(pairs: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">ii", rel, pos) for rel, pos in pairs)


@settings(max_examples=200, deadline=None)
@given(rels=st.lists(st.integers(0, 10_000), min_size=1, max_size=40, unique=True),
       target=st.integers(-5, 10_100), zero_slots=st.integers(0, 5))
def test_lookup_is_largest_lower_bound_on_sorted_index(rels: list[int], target: int,
                                                       zero_slots: int) -> None:
    """On a sorted index (plus a zero tail) lookup = position of the largest offset <= target,
    position 0 when none: OffsetIndex.lookup's contract."""
    rels = sorted(rels)
    base = 100
    data = _index_bytes([(r, r * 10) for r in rels])
    slots = Slots(data, base, "offset")
    lower = [r for r in rels if base + r <= target]
    expected = lower[-1] * 10 if lower else 0
    assert lookup_position(slots, base, target) == expected
    if zero_slots:
        # unique sorted offsets: only slot 0 may hold relative offset 0, so the tail is exact
        assert list(Slots(data + b"\0" * 8 * zero_slots, base, "offset").real()) == \
            [(base + r, r * 10) for r in rels]


def test_slots_real_stops_at_zero_tail() -> None:
    data = _index_bytes([(0, 0), (5, 100), (9, 200)]) + b"\0" * 80
    assert list(Slots(data, 7, "offset").real()) == [(7, 0), (12, 100), (16, 200)]
    tdata = struct.pack(">qi", 5, 3) + b"\0" * 36
    assert list(Slots(tdata, 7, "time").real()) == [(5, 10)]
    assert len(Slots(b"\0" * 13, 0, "time")) == 1


def test_java_renderings() -> None:
    assert optional_long(None) == "OptionalLong.empty"
    assert optional_long(-5) == "OptionalLong[-5]"
    assert java_file("a//b/") == "a/b"
    assert java_file("/x//y") == "/x/y"
    assert java_absolute_path("a/../b") == os.getcwd() + "/a/../b"
    # DefaultRecordBatch.decrementSequence wraps below 0 to Integer.MAX_VALUE (the snapshot
    # dump prints ProducerSnapshotEntry.first_sequence)
    def first_sequence(last_sequence: int, offset_delta: int) -> int:
        return ProducerSnapshotEntry(1, 0, last_sequence, 100, offset_delta, 0, -1, -1).first_sequence

    assert first_sequence(10, 3) == 7
    assert first_sequence(1, 3) == 2147483646
    assert first_sequence(0, 1) == 2147483647
    assert -2**31 <= first_sequence(5, -2**31) <= 2**31 - 1   # hostile delta stays a Java int


def test_file_kinds_follow_last_suffix() -> None:
    assert file_kind("00000000000000000000.log") == "log"
    assert file_kind("00000000000000000000.log.deleted") == "unknown"
    assert file_kind("x.checkpoint.deleted") == "unknown"
    assert file_kind("00000000000000000010-0000000001.checkpoint") == "kraft_snapshot"
    assert file_kind("bootstrap.checkpoint") == "kraft_snapshot"
    assert file_kind("replication-offset-checkpoint") == "offset_checkpoint"
    assert file_kind("leader-epoch-checkpoint") == "leader_epoch_checkpoint"
    assert file_kind("00000000000000000000.swap") == "unknown"
    assert file_kind(".lock") == "unknown"


@settings(max_examples=150, deadline=None)
@given(raw=st.binary(max_size=200), kind=st.sampled_from(["offset", "time"]),
       base=st.integers(0, 1 << 40))
def test_slots_read_from_a_file_equal_slots_read_from_bytes(raw: bytes, kind: str,
                                                            base: int) -> None:
    """Slots.open (stepped reads through segtools.files.indexes, tail slots one by one) sees exactly
    what the byte-level definition sees: count, the real slots, and every slot by index."""
    import tempfile

    expected = Slots(raw, base, kind)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{base:020d}.{'timeindex' if kind == 'time' else 'index'}")
        with open(path, "wb") as f:
            f.write(raw)
        with Slots.open(path, base, kind) as slots:
            assert len(slots) == len(expected)
            assert slots.length == len(raw)
            assert list(slots.real()) == list(expected.real())
            assert [slots[i] for i in range(len(slots))] == \
                [expected[i] for i in range(len(expected))]
            if len(slots):
                assert slots[-1] == expected[-1]
