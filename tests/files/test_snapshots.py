"""segtools.files.snapshots: real producer snapshots agree with the idempotent batches of their .log
(read with kafka-python), writing reproduces the broker's bytes, damage is reported."""

from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from segtools.errors import InputError, SegtoolsError, SnapshotFormatError
from segtools.files.snapshots import (
    ProducerSnapshotEntry,
    producer_snapshot_bytes,
    read_producer_snapshot,
    write_producer_snapshot,
)

KRAFT = "kafka-3.6-kraft-flink-stack/logdir"


def _snapshot_files(realdata: Path) -> list[Path]:
    return sorted(realdata.rglob("*.snapshot"))


def _last_batch_per_producer(log: Path, end_offset: int) -> dict[int, DefaultRecordBatch]:
    data = log.read_bytes()
    out: dict[int, DefaultRecordBatch] = {}
    pos = 0
    while pos + 61 <= len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        batch = DefaultRecordBatch(bytearray(data[pos:pos + size]))
        if batch.producer_id >= 0 and batch.base_offset < end_offset:
            out[batch.producer_id] = batch
        pos += size
    return out


def test_all_real_snapshots_read_with_valid_crc(realdata: Path) -> None:
    files = _snapshot_files(realdata)
    assert len(files) >= 37
    for path in files:
        snap = read_producer_snapshot(path)
        data = path.read_bytes()
        assert snap.version == 1
        assert snap.crc_valid and snap.crc == snap.computed_crc == crc32c.crc32c(data[6:])
        assert len(snap.entries) == struct.unpack_from(">i", data, 6)[0]
        assert snap.trailing_bytes == 0


def test_snapshot_entries_match_the_log(realdata: Path) -> None:
    checked = 0
    for path in _snapshot_files(realdata):
        log = path.parent / "00000000000000000000.log"
        snap = read_producer_snapshot(path)
        if not snap.entries or not log.exists():
            continue
        last = _last_batch_per_producer(log, int(path.name.split(".")[0]))
        for entry in snap.entries:
            batch = last[entry.producer_id]
            assert entry.epoch == batch.producer_epoch
            assert entry.last_offset == batch.last_offset
            assert entry.offset_delta == batch.last_offset_delta
            assert entry.first_offset == batch.base_offset
            assert entry.last_sequence == batch.last_sequence
            assert entry.first_sequence == batch.base_sequence
            assert entry.timestamp == batch.max_timestamp
            assert entry.coordinator_epoch == -1 and entry.current_txn_first_offset == -1
            checked += 1
    assert checked >= 10


def test_writer_reproduces_broker_bytes(realdata: Path, tmp_path: Path) -> None:
    for path in _snapshot_files(realdata):
        snap = read_producer_snapshot(path)
        out = tmp_path / path.name
        write_producer_snapshot(out, snap.entries)
        assert out.read_bytes() == path.read_bytes(), path
    assert not list(tmp_path.glob("*.tmp"))


def test_written_snapshot_checked_by_independent_crc(tmp_path: Path) -> None:
    entry = ProducerSnapshotEntry(1000, 3, 9, 120, 4, 1700000000000, 7, 110)
    data = producer_snapshot_bytes([entry, (1001, 0, -1, -1, 0, -1, -1, -1)])
    assert len(data) == 10 + 2 * 46
    assert struct.unpack_from(">hIi", data, 0) == (1, crc32c.crc32c(data[6:]), 2)
    assert struct.unpack_from(">qhiqiqiq", data, 10) == (1000, 3, 9, 120, 4, 1700000000000, 7, 110)
    assert struct.unpack_from(">qhiqiqiq", data, 56) == (1001, 0, -1, -1, 0, -1, -1, -1)
    assert entry.first_sequence == 5
    wrapped = ProducerSnapshotEntry(1, 0, 2, 10, 4, 0, -1, -1)    # sequence wrapped past Int.MAX
    assert wrapped.first_sequence == 2**31 - 1 - 1


def test_first_sequence_of_hostile_entries_stays_a_java_int() -> None:
    # decrementSequence(MAX, -1): MAX - (-1) overflows to Integer.MIN_VALUE in Java
    assert ProducerSnapshotEntry(1, 0, 2**31 - 1, 10, -1, 0, -1, -1).first_sequence == -2**31
    # decrementSequence(MIN, MAX): MIN < MAX; in Java ints MAX - MIN overflows to -1, and
    # MAX - (-1) + 1 wraps to MIN + 1
    assert ProducerSnapshotEntry(1, 0, -2**31, 10, 2**31 - 1, 0, -1, -1).first_sequence == -2**31 + 1


def test_flipped_byte_is_reported_not_raised(realdata: Path, tmp_path: Path) -> None:
    src = realdata / KRAFT / "promotions-0/00000000000000000029.snapshot"
    data = bytearray(src.read_bytes())
    data[20] ^= 0x01
    bad = tmp_path / src.name
    bad.write_bytes(bytes(data))
    snap = read_producer_snapshot(bad)
    assert not snap.crc_valid and snap.crc != snap.computed_crc
    assert len(snap.entries) == 2


@pytest.mark.parametrize("data, field", [
    (b"\x00", "version"),
    (b"\x00\x02" + bytes(8), "version"),
    (b"\x00\x01\x00\x00", "crc"),
    (b"\x00\x01" + bytes(6) + b"\x00", "producer_entries"),
    (b"\x00\x01" + bytes(4) + struct.pack(">i", 3) + bytes(46 * 2), "producer_entries"),
    (b"\x00\x01" + bytes(4) + struct.pack(">i", -1), "producer_entries"),
])
def test_layout_errors_name_position_and_field(tmp_path: Path, data: bytes, field: str) -> None:
    path = tmp_path / "00000000000000000005.snapshot"
    path.write_bytes(data)
    with pytest.raises(SnapshotFormatError) as info:
        read_producer_snapshot(path)
    assert info.value.field == field and info.value.path == str(path)
    assert info.value.position is not None


def test_unknown_version_message(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000005.snapshot"
    path.write_bytes(b"\x00\x02" + bytes(8))
    with pytest.raises(SnapshotFormatError, match="Snapshot contained an unknown file version 2"):
        read_producer_snapshot(path)
    with pytest.raises(InputError):
        read_producer_snapshot(tmp_path / "missing.snapshot")


@settings(max_examples=80, deadline=None)
@given(data=st.binary(max_size=120))
def test_random_bytes_give_only_segtools_errors(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "00000000000000000000.snapshot"
    path.write_bytes(b"\x00\x01" + data)
    try:
        read_producer_snapshot(path)
    except SegtoolsError:
        pass
