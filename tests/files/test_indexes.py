"""segtools.files.indexes against real broker files: every index entry is checked against the batches
of its .log as read by kafka-python (an independent reader)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from segtools.errors import IndexCorruptionError, InputError, SegtoolsError
from segtools.files.indexes import (
    AbortedTxn,
    index_base_offset,
    offset_index_entry,
    read_offset_index,
    read_time_index,
    read_txn_index,
    sanity_check_offset_index,
    sanity_check_time_index,
    time_index_entry,
    txn_index_entry,
)

KRAFT = "kafka-3.6-kraft-flink-stack/logdir"
INDEXED = [
    KRAFT + "/__cluster_metadata-0/00000000000000000000",
    KRAFT + "/orders-0/00000000000000000000",
    KRAFT + "/_confluent-monitoring-0/00000000000000000000",
    KRAFT + "/customers_keyed-0/00000000000000000000",
    "kafka-2.5-zk-first-topic/final/__consumer_offsets-18/00000000000000000000",
]


def _batches(log: Path) -> list[tuple[int, int, int, int]]:
    """(position, base_offset, last_offset, max_timestamp) per batch, via kafka-python."""
    data = log.read_bytes()
    out, pos = [], 0
    while pos + 61 <= len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        b = DefaultRecordBatch(bytearray(data[pos:pos + size]))
        out.append((pos, b.base_offset, b.last_offset, b.max_timestamp))
        pos += size
    return out


@pytest.mark.parametrize("prefix", INDEXED)
def test_offset_index_entries_point_at_batches_ending_at_that_offset(realdata: Path, prefix: str) -> None:
    index = read_offset_index(realdata / (prefix + ".index"))
    base = index_base_offset(realdata / (prefix + ".index"))
    assert index.dtype.names == ("relative_offset", "position")
    assert len(index) == (realdata / (prefix + ".index")).stat().st_size // 8   # trimmed files
    last_by_position = {pos: last for pos, _, last, _ in _batches(realdata / (prefix + ".log"))}
    assert len(index) > 0
    for rel, position in index.tolist():
        assert last_by_position[position] == base + rel


@pytest.mark.parametrize("prefix", INDEXED)
def test_time_index_entries_hold_the_max_timestamp_of_their_batch(realdata: Path, prefix: str) -> None:
    index = read_time_index(realdata / (prefix + ".timeindex"))
    batches = _batches(realdata / (prefix + ".log"))
    assert len(index) > 0
    for ts, rel in index.tolist():
        holder = [b for b in batches if b[1] <= rel <= b[2]]
        assert len(holder) == 1 and holder[0][3] == ts
    assert np.all(np.diff(index["timestamp"].astype(np.int64)) > 0)


def test_index_without_log_is_readable(realdata: Path) -> None:
    index = read_offset_index(realdata / KRAFT / "customers-0/00000000000000000000.index")
    assert len(index) == 9752 // 8
    assert np.all(np.diff(index["relative_offset"].astype(np.int64)) > 0)
    assert np.all(np.diff(index["position"].astype(np.int64)) > 0)


def test_preallocated_zero_tail_is_trimmed(realdata: Path, tmp_path: Path) -> None:
    real = (realdata / KRAFT / "__cluster_metadata-0/00000000000000000000.index").read_bytes()
    active = tmp_path / "00000000000000000000.index"
    active.write_bytes(real + bytes(8 * 5000))
    expected = [struct.unpack_from(">ii", real, i) for i in range(0, len(real), 8)]
    assert read_offset_index(active).tolist() == expected
    assert len(read_offset_index(active, trim=False)) == len(real) // 8 + 5000

    treal = (realdata / KRAFT / "__cluster_metadata-0/00000000000000000000.timeindex").read_bytes()
    tactive = tmp_path / "00000000000000000000.timeindex"
    tactive.write_bytes(treal + bytes(12 * 100))
    assert len(read_time_index(tactive)) == len(treal) // 12


def test_all_zero_index_keeps_slot_zero_like_dump_log_segments(tmp_path: Path) -> None:
    empty_active = tmp_path / "00000000000000000100.index"
    empty_active.write_bytes(bytes(8 * 64))
    assert read_offset_index(empty_active).tolist() == [(0, 0)]
    empty = tmp_path / "00000000000000000200.index"
    empty.write_bytes(b"")
    assert len(read_offset_index(empty)) == 0


def test_index_trimmed_by_a_broker_while_being_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a broker trims the preallocated index at roll: the size seen first is no longer the size
    # when the bytes are read. The slots present are returned (no ValueError, no SIGBUS).
    import segtools.files.indexes as indexes

    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(struct.pack(">iiii", 0, 0, 5, 4120))
    real_fstat = indexes.os.fstat

    class Preallocated:
        def __init__(self, st) -> None:
            self.st_size = 8 * 1310720      # what the file held a moment ago

    monkeypatch.setattr(indexes.os, "fstat", lambda fd: Preallocated(real_fstat(fd)))
    assert read_offset_index(path).tolist() == [(0, 0), (5, 4120)]


@pytest.mark.parametrize("step", [8, 24, 12, 36])
def test_small_read_steps_trim_identically(realdata: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           step: int) -> None:
    import segtools.files.indexes as indexes

    real = (realdata / KRAFT / "__cluster_metadata-0/00000000000000000000.index").read_bytes()
    active = tmp_path / "00000000000000000000.index"
    active.write_bytes(real + bytes(8 * 50))
    treal = (realdata / KRAFT / "__cluster_metadata-0/00000000000000000000.timeindex").read_bytes()
    tactive = tmp_path / "00000000000000000000.timeindex"
    tactive.write_bytes(treal + bytes(12 * 50))
    want = (read_offset_index(active).tolist(), read_time_index(tactive).tolist(),
            len(read_offset_index(active, trim=False)))
    monkeypatch.setattr(indexes, "_READ_STEP", step)
    assert (read_offset_index(active).tolist(), read_time_index(tactive).tolist(),
            len(read_offset_index(active, trim=False))) == want
    assert want[0] == [struct.unpack_from(">ii", real, i) for i in range(0, len(real), 8)]
    assert want[2] == len(real) // 8 + 50


def test_odd_size_raises_with_location_or_is_floored(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(offset_index_entry(5, 4120) + offset_index_entry(30, 8250) + b"\x01\x02\x03")
    with pytest.raises(IndexCorruptionError) as info:
        read_offset_index(path)
    assert info.value.path == str(path) and info.value.position == 16
    assert "multiple of 8" in str(info.value)
    assert read_offset_index(path, strict=False).tolist() == [(5, 4120), (30, 8250)]
    tpath = tmp_path / "00000000000000000000.timeindex"
    tpath.write_bytes(time_index_entry(1700000000000, 5) + b"\x00" * 5)
    with pytest.raises(IndexCorruptionError):
        read_time_index(tpath)
    with pytest.raises(IndexCorruptionError, match="Time index file .* is corrupt, found 17 bytes"):
        sanity_check_time_index(tpath)


def test_entry_builders_match_spec_examples() -> None:
    # FORMATS.md section 5 and 6 examples (segment base 100)
    assert offset_index_entry(5, 4120) + offset_index_entry(30, 8250) == \
        bytes.fromhex("00000005000010180000001e0000203a")
    assert time_index_entry(1700000000000, 5) == bytes.fromhex("0000018bcfe5680000000005")
    assert txn_index_entry(77, 10, 20, 21) == struct.pack(">hqqqq", 0, 77, 10, 20, 21)
    with pytest.raises(ValueError):
        offset_index_entry(2**31, 0)


def test_txn_index(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.txnindex"
    entries = [struct.pack(">hqqqq", 0, 7, 0, 5, 6), struct.pack(">hqqqq", 1, 8, 10, 15, 16)]
    # second entry: int16 version 1 = bytes 00 01; Kafka up to 4.3 reads only byte 0 -> version 0,
    # accepted; Kafka 4.4 reads the int16 (1) and stops there
    path.write_bytes(b"".join(entries) + b"\x00" * 20)          # + partial trailing entry
    assert read_txn_index(path) == [AbortedTxn(0, 7, 0, 5, 6, 0), AbortedTxn(0, 8, 10, 15, 16, 1)]
    bad = tmp_path / "00000000000000000001.txnindex"
    bad.write_bytes(entries[0] + struct.pack(">hqqqq", 0x0100, 9, 20, 25, 26))
    with pytest.raises(IndexCorruptionError) as info:
        read_txn_index(bad)
    assert info.value.position == 34 and info.value.field == "version"
    assert read_txn_index(bad, strict=False)[1].version == 1


def test_txn_index_version_byte_is_signed_like_java(tmp_path: Path) -> None:
    # AbortedTxn.version() is buffer.get(0): a Java byte, so 0xFF is -1, which is not > 0 and
    # is accepted (kafka-dump-log prints "version: -1")
    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(struct.pack(">hqqqq", -1, 7, 0, 5, 6) + struct.pack(">hqqqq", -32768, 8, 10, 15, 16))
    assert read_txn_index(path) == [AbortedTxn(-1, 7, 0, 5, 6, -1), AbortedTxn(-128, 8, 10, 15, 16, -32768)]


def test_sanity_checks(realdata: Path, tmp_path: Path) -> None:
    sanity_check_offset_index(realdata / KRAFT / "__cluster_metadata-0/00000000000000000000.index")
    sanity_check_time_index(realdata / KRAFT / "__cluster_metadata-0/00000000000000000000.timeindex")
    path = tmp_path / "00000000000000000000.timeindex"
    path.write_bytes(time_index_entry(2000, 1) + time_index_entry(1000, 2))
    with pytest.raises(IndexCorruptionError,
                       match="last timestamp is 1000 which is less than the first timestamp 2000"):
        sanity_check_time_index(path)
    ipath = tmp_path / "00000000000000000000.index"
    ipath.write_bytes(offset_index_entry(5, 100) + offset_index_entry(-3, 200))
    with pytest.raises(IndexCorruptionError, match="last offset is -3 which is less than the base offset 0"):
        sanity_check_offset_index(ipath)


def test_missing_file_and_bad_name(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        read_offset_index(tmp_path / "00000000000000000000.index")
    with pytest.raises(InputError):
        index_base_offset("foo.index")


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=200))
def test_random_bytes_give_only_segtools_errors(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    d = tmp_path_factory.mktemp("fuzz")
    for suffix, reader in ((".index", read_offset_index), (".timeindex", read_time_index),
                           (".txnindex", read_txn_index)):
        path = d / ("00000000000000000000" + suffix)
        path.write_bytes(data)
        try:
            reader(path)
        except SegtoolsError:
            pass
