"""Corrupt, truncated and hostile inputs: Kafka's message (or a clear one), the right stream,
the right exit code, and never a traceback or a hang."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from dump_builders import (
    SEG,
    kafka_err,
    lines,
    oracle_batches,
    producer_snapshot,
    run,
    simple_records_log,
    v2_batch,
    write_indexes,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def _abs(path: Path) -> str:
    return os.path.abspath(path)


def test_truncated_tail(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    cut = len(batches[3]) // 2
    log.write_bytes(b"".join(batches)[:-cut])
    result = run(log)
    out = lines(result.stdout)
    assert out[-1] == f"Found {len(batches[3]) - cut} invalid bytes at the end of {SEG}.log"
    assert sum(line.startswith("baseOffset") for line in out) == 3
    assert result.exit_code == 1
    assert kafka_err(result.stderr) == ""


def test_flipped_crc_byte(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    bad = bytearray(batches[1])
    bad[-3] ^= 0xFF  # inside the record data: covered by the CRC
    log.write_bytes(batches[0] + bytes(bad) + batches[2] + batches[3])
    (oracle,) = oracle_batches(bytes(bad))
    assert not oracle.validate_crc()
    result = run(log)
    out = [line for line in lines(result.stdout) if line.startswith("baseOffset")]
    assert [line.endswith("isvalid: true") for line in out] == [True, False, True, True]
    assert f" crc: {oracle.crc} isvalid: false" in out[1]
    assert result.exit_code == 1


def test_zero_filled_tail_is_kafkas_corrupt_record_error(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    log.write_bytes(b"".join(batches) + b"\0" * 4096)  # preallocated segment after a crash
    result = run(log)
    assert sum(line.startswith("baseOffset") for line in lines(result.stdout)) == 4
    assert "Found record size 0 smaller than minimum record overhead (14)" in result.stderr
    assert f"@ position {sum(map(len, batches))}" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.exit_code == 1


def test_non_monotonic_offsets(tmp_path: Path) -> None:
    first = v2_batch([(None, b"x", 1), (None, b"y", 2)], base_offset=10)
    second = v2_batch([(None, b"z", 3)], base_offset=5)
    third = v2_batch([(None, b"w", 4)], base_offset=8)
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(first + second + third)
    deep = run("--kafka-version", "3.9", "--deep-iteration", log)
    assert deep.exit_code == 1
    # Kafka 3.x's summary: newest first (4.x: tests/realkafka, test_dump_kafka_versions.py)
    assert lines(deep.stderr) == [f"Non-consecutive offsets in {_abs(log)}",
                                  "  5 is followed by 8", "  11 is followed by 5"]
    shallow = run(log)
    assert shallow.exit_code == 1
    assert "has baseOffset 5 after lastOffset 11" in shallow.stderr


def test_gap_in_offsets_is_reported_but_not_a_failure(tmp_path: Path) -> None:
    """Compaction leaves gaps: Kafka's summary is printed, the exit status stays 0."""
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(v2_batch([(None, b"x", 1)], base_offset=0) +
                    v2_batch([(None, b"y", 2)], base_offset=7))
    result = run("--deep-iteration", log)
    assert lines(result.stderr) == [f"Non-consecutive offsets in {_abs(log)}",
                                    "  0 is followed by 7"]
    assert result.exit_code == 0


def test_garbage_log(tmp_path: Path) -> None:
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(b"this is not a kafka log segment at all, just text\n" * 20)
    result = run("--deep-iteration", log)
    assert result.exit_code == 1
    # bytes 8..11 (" a k") read as a huge batch length: nothing complete, all trailing
    assert lines(result.stdout) == [f"Dumping {log}", "Log starting offset: 0",
                                    f"Found 1000 invalid bytes at the end of {SEG}.log"]
    assert kafka_err(result.stderr) == ""
    small = tmp_path / "x" / f"{SEG}.log"
    small.parent.mkdir()
    small.write_bytes(b"\xff" * 8 + struct.pack(">i", 13) + b"\x02" * 40)
    result = run(small)
    assert result.exit_code == 1
    assert kafka_err(result.stderr).startswith(f"Error: {SEG}.log @ position 0")
    assert "Found record size 13 smaller than minimum record overhead (14)" in result.stderr


def test_index_entry_past_end_of_log(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    index = tmp_path / f"{SEG}.index"
    index.write_bytes(struct.pack(">ii", 9, 0) + struct.pack(">ii", 29, 10_000_000))
    result = run(index)
    assert result.exit_code == 1
    assert "index points past the end of the log" in result.stderr
    assert f"Error: {SEG}.index @ position 8 field position: entry 1 (offset 29, position " \
           "10000000)" in result.stderr
    assert lines(result.stdout)[1:] == ["offset: 9 position: 0", "offset: 29 position: 10000000"]


def test_index_mismatches_newest_first(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    p1 = len(batches[0])
    p2 = p1 + len(batches[1])
    index = tmp_path / f"{SEG}.index"
    index.write_bytes(struct.pack(">ii", 9, 0) + struct.pack(">ii", 25, p1) +
                      struct.pack(">ii", 40, p2))
    result = run("--verify-index-only", index)
    assert lines(result.stdout) == [f"Dumping {index}"]
    assert lines(result.stderr) == [f"Mismatches in :{_abs(index)}",
                                    "  Index offset: 40, log offset: 49",
                                    "  Index offset: 25, log offset: 29"]
    assert result.exit_code == 1


def test_index_without_log(tmp_path: Path) -> None:
    index = tmp_path / f"{SEG}.index"
    index.write_bytes(struct.pack(">ii", 9, 0))
    result = run(index)
    assert result.exit_code == 1
    assert "does not exist" in result.stderr


def test_time_index_errors(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    write_indexes(tmp_path, batches)
    ts0 = 1700000000000
    timeindex = tmp_path / f"{SEG}.timeindex"
    timeindex.write_bytes(
        struct.pack(">qi", ts0 + 9, 9)         # fine
        + struct.pack(">qi", ts0 + 1, 29)       # wrong timestamp (29 is max) and out of order
        + struct.pack(">qi", ts0 + 49, 45))     # not a batch end: batch 30-49 is found
    result = run("--kafka-version", "3.9", "--verify-index-only", timeindex)
    assert lines(result.stdout) == [f"Dumping {timeindex}"]
    assert lines(result.stderr) == [
        f"Found timestamp mismatch in :{_abs(timeindex)}",
        f"  Index timestamp: {ts0 + 1}, log timestamp: {ts0 + 29}",
        f"Found out of order timestamp in :{_abs(timeindex)}",
        f"  Index timestamp: {ts0 + 1}, Previously indexed timestamp: {ts0 + 9}",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 45, found log offset: 49",
    ]
    assert result.exit_code == 1


def test_time_index_offset_beyond_log(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    write_indexes(tmp_path, batches)
    timeindex = tmp_path / f"{SEG}.timeindex"
    timeindex.write_bytes(struct.pack(">qi", 1700000000009, 9) + struct.pack(">qi", 1800000000000, 500))
    result = run("--kafka-version", "3.9", timeindex)
    assert lines(result.stderr) == ["The following indexed offsets are not found in the log.",
                                    "Indexed offset: 500, found log offset: -1"]
    assert result.exit_code == 1


def test_sanity_checks(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    index, timeindex = write_indexes(tmp_path, batches)
    ok = run("--index-sanity-check", index, timeindex)
    assert lines(ok.stdout) == [f"Dumping {index}", f"{index} passed sanity check.",
                                f"Dumping {timeindex}", f"{timeindex} passed sanity check."]
    assert ok.exit_code == 0
    index.write_bytes(index.read_bytes() + b"\0\0\0")
    bad = run("--kafka-version", "3.9", "--index-sanity-check", index)  # 4.x maps whole entries only
    assert f"Index file {_abs(index)} is corrupt, found {8 * 4 + 3} bytes which is neither " \
           "positive nor a multiple of 8" in bad.stderr
    assert bad.exit_code == 1
    write_indexes(tmp_path, batches, zero_slots=10)  # unclosed: last slot is (ts 0, base)
    tbad = run("--index-sanity-check", timeindex)
    assert (f"Corrupt time index found, time index file ({_abs(timeindex)}) has non-zero size "
            f"but the last timestamp is 0 which is less than the first timestamp 1700000000009"
            ) in tbad.stderr
    assert tbad.exit_code == 1


def test_txn_index(tmp_path: Path) -> None:
    txn = tmp_path / f"{SEG}.txnindex"
    entries = [(0, 1000, 5, 9, 3), (0, 1001, 12, 20, 12)]
    txn.write_bytes(b"".join(struct.pack(">hqqqq", *e) for e in entries) + b"\x00" * 10)
    result = run(txn)
    assert lines(result.stdout) == [
        f"Dumping {txn}",
        "version: 0 producerId: 1000 firstOffset: 5 lastOffset: 9 lastStableOffset: 3",
        "version: 0 producerId: 1001 firstOffset: 12 lastOffset: 20 lastStableOffset: 12",
    ]
    assert result.exit_code == 0


def test_txn_index_version_is_a_signed_byte(tmp_path: Path) -> None:
    # AbortedTxn.version() is ByteBuffer.get(0): a signed byte widened to short, so 0xFF prints
    # as -1 and, not being > 0, is no "Unexpected aborted transaction version" error
    # up to Kafka 4.3; 4.4 reads the int16 and accepts 0 only (its tool dies on "Unexpected
    # aborted transaction version -21867 in transaction index ..., supported version range is 0
    # to 0" for bytes 0xAA 0x95, seen on a real 4.4.0 run)
    txn = tmp_path / f"{SEG}.txnindex"
    txn.write_bytes(b"\xff\x00" + struct.pack(">qqqq", 1000, 5, 9, 3))
    result = run(txn, "--kafka-version", "4.3")
    assert lines(result.stdout) == [
        f"Dumping {txn}",
        "version: -1 producerId: 1000 firstOffset: 5 lastOffset: 9 lastStableOffset: 3",
    ]
    assert kafka_err(result.stderr) == ""
    assert result.exit_code == 0
    new = run(txn, "--kafka-version", "4.4")
    assert lines(new.stdout) == [f"Dumping {txn}"]
    assert (f"Unexpected aborted transaction version -256 in transaction index {txn}, supported version "
            "range is 0 to 0") in new.stderr
    assert new.exit_code == 1


def test_producer_snapshot(tmp_path: Path) -> None:
    snap = tmp_path / "00000000000000000042.snapshot"
    snap.write_bytes(producer_snapshot([
        # producerId, epoch, lastSeq, lastOffset, offsetDelta, timestamp, coordEpoch, txnFirst
        (7, 2, 5, 41, 3, 1700000000000, 4, 38),
        (8, 0, 1, 2147483650, 3, 1700000000001, -1, -1),
        (9, 1, -1, -1, 0, 1700000000002, -1, -1),
    ]))
    result = run(snap)
    assert result.exit_code == 0
    assert result.stdout.split("\n") == [
        f"Dumping {snap}",
        "producerId: 7 producerEpoch: 2 coordinatorEpoch: 4 currentTxnFirstOffset: "
        "OptionalLong[38] lastTimestamp: 1700000000000 firstSequence: 2 lastSequence: 5 "
        "lastOffset: 41 offsetDelta: 3 timestamp: 1700000000000",
        # sequence wrap-around: decrementSequence(1, 3) = Integer.MAX_VALUE - 1
        "producerId: 8 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        "OptionalLong.empty lastTimestamp: 1700000000001 firstSequence: 2147483646 "
        "lastSequence: 1 lastOffset: 2147483650 offsetDelta: 3 timestamp: 1700000000001",
        # no batch metadata: the line ends after "lastTimestamp: N " with its trailing space
        "producerId: 9 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: "
        "OptionalLong.empty lastTimestamp: 1700000000002 ",
        "",
    ]


def test_corrupt_producer_snapshot(tmp_path: Path) -> None:
    snap = tmp_path / "00000000000000000042.snapshot"
    data = producer_snapshot([(7, 2, 5, 41, 3, 1700000000000, 4, 38)], corrupt=True)
    snap.write_bytes(data)
    stored = struct.unpack_from(">I", data, 2)[0]
    result = run(snap)
    assert result.stdout == f"Dumping {snap}\n"
    assert kafka_err(result.stderr) == (f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored}. "
                             f"Computed crc: {stored ^ 1}\n")
    assert result.exit_code == 1
    snap.write_bytes(struct.pack(">h", 3) + data[2:])
    version = run(snap)
    assert kafka_err(version.stderr) == ("Snapshot failed schema validation: Snapshot contained an unknown "
                              "file version 3\n")
    assert version.exit_code == 1


def test_unknown_and_missing_files(tmp_path: Path) -> None:
    other = tmp_path / f"{SEG}.log.deleted"
    other.write_bytes(b"x")
    result = run(other)
    assert result.stdout == f"Dumping {other}\n"
    assert kafka_err(result.stderr) == f"Ignoring unknown file {other}\n"
    assert result.exit_code == 0
    missing = run(tmp_path / "nope" / f"{SEG}.log")
    assert missing.exit_code == 2
    assert "Error: cannot read" in missing.stderr and "Traceback" not in missing.stderr


def test_bad_kraft_snapshot_name(tmp_path: Path) -> None:
    bad = tmp_path / "snapshot.checkpoint"
    bad.write_bytes(b"")
    result = run(bad)
    assert result.exit_code == 2
    assert "not a KRaft snapshot name" in result.stderr


def test_input_files_are_not_modified(tmp_path: Path) -> None:
    log, batches = simple_records_log(tmp_path)
    index, timeindex = write_indexes(tmp_path, batches, zero_slots=5)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir()}
    run("--deep-iteration", tmp_path)
    run("--index-sanity-check", index, timeindex)
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in tmp_path.iterdir()} == before


_SUFFIXES = [f"{SEG}.log", f"{SEG}.index", f"{SEG}.timeindex", f"{SEG}.txnindex",
             f"{SEG}.snapshot", "00000000000000000000-0000000000.checkpoint",
             "leader-epoch-checkpoint", "partition.metadata", "quorum-state"]


@settings(max_examples=int(os.environ.get("DUMP_FUZZ_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300), mutate=st.integers(0, 10_000), seed_batch=st.booleans(),
       name=st.sampled_from(_SUFFIXES))
def test_fuzz_never_crashes(tmp_path: Path, data: bytes, mutate: int, seed_batch: bool,
                            name: str) -> None:
    """Random and mutated bytes under every file name: an exit status, never an exception."""
    if seed_batch:
        batch = bytearray(v2_batch([(b"k", b"v" * 20, 5), (None, b"w", 6)]))
        batch[mutate % len(batch)] ^= 0xA5
        data = bytes(batch) + data
    d = tmp_path / "f"
    d.mkdir(exist_ok=True)
    (d / f"{SEG}.log").write_bytes(data)
    (d / f"{SEG}.index").write_bytes(data[:64])
    target = d / name
    target.write_bytes(data)
    result = run("--print-data-log", target)  # catch_exceptions=False: an escape fails here
    assert result.exit_code in (0, 1, 2)
    assert "Traceback" not in result.stderr
    assert "internal error" not in result.stderr  # the runner's safety net must stay unused


def test_unused_preallocated_index_slots_are_not_corruption(tmp_path: Path) -> None:
    """An active segment before its first index entry: .index/.timeindex are all zeros, so slot
    0 reads (base, 0) / (0, base). Kafka's check reports it; it is not corruption (exit 0)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / f"{SEG}.log").write_bytes(b"")
    (empty / f"{SEG}.index").write_bytes(b"\0" * 80)
    (empty / f"{SEG}.timeindex").write_bytes(b"\0" * 120)
    result = run("--kafka-version", "3.9", empty / f"{SEG}.index", empty / f"{SEG}.timeindex")
    assert lines(result.stdout) == [f"Dumping {empty / SEG}.index", "offset: 0 position: 0",
                                    f"Dumping {empty / SEG}.timeindex", "timestamp: 0 offset: 0"]
    assert lines(result.stderr) == ["The following indexed offsets are not found in the log.",
                                    "Indexed offset: 0, found log offset: -1"]
    assert result.exit_code == 0

    data = tmp_path / "data"
    data.mkdir()
    simple_records_log(data)
    (data / f"{SEG}.index").write_bytes(b"\0" * 80)
    (data / f"{SEG}.timeindex").write_bytes(b"\0" * 120)
    result = run("--kafka-version", "3.9", data / f"{SEG}.index", data / f"{SEG}.timeindex", "--verify-index-only")
    assert lines(result.stderr) == [
        f"Mismatches in :{_abs(data / SEG)}.index", "  Index offset: 0, log offset: 9",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 0, found log offset: 9"]
    assert result.exit_code == 0

    single = tmp_path / "single"
    single.mkdir()
    (single / f"{SEG}.log").write_bytes(v2_batch([(None, b"x", 1700000000000)]))
    (single / f"{SEG}.timeindex").write_bytes(b"\0" * 120)
    result = run(single / f"{SEG}.timeindex", "--verify-index-only")
    # no .index: kafka-dump-log dies ("Invalid max index size: -1"); we warn and go on
    assert lines(result.stderr)[0].startswith(f"Warning: {single / SEG}.timeindex: its offset "
                                              "index ")
    assert lines(result.stderr)[1:] == [f"Found timestamp mismatch in :{_abs(single / SEG)}.timeindex",
                                    "  Index timestamp: 0, log timestamp: 1700000000000"]
    assert result.exit_code == 0

    # a zero slot after real entries still ends the entries; a real mismatch is still exit 1
    (data / f"{SEG}.index").write_bytes(struct.pack(">ii", 5, 0) + b"\0" * 80)
    assert run(data / f"{SEG}.index", "--verify-index-only").exit_code == 1


def test_indexes_and_logs_of_normal_size_are_not_memory_mapped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mapped file that a live broker truncates meanwhile (an index trimmed at segment roll)
    kills the reader with SIGBUS: index-sized files are read, the log is read at positions."""
    import mmap

    def no_mmap(*args: object, **kwargs: object) -> None:
        raise AssertionError("mmap used")

    monkeypatch.setattr(mmap, "mmap", no_mmap)
    log, batches = simple_records_log(tmp_path)
    index, timeindex = write_indexes(tmp_path, batches, zero_slots=4)
    txn = tmp_path / f"{SEG}.txnindex"
    txn.write_bytes(struct.pack(">hqqqq", 0, 1000, 5, 9, 3))
    result = run(index, timeindex, txn)
    assert (result.exit_code, kafka_err(result.stderr)) == (0, "")
    assert "offset: 59 position: 1413" in result.stdout


def test_large_index_files_are_never_memory_mapped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Above 64 MiB the dump used to map .index/.timeindex files (issue 16: SIGBUS when a
    broker trims them at roll). Sparse files: a few KB on disk."""
    import mmap

    def no_mmap(*args: object, **kwargs: object) -> None:
        raise AssertionError("mmap used")

    monkeypatch.setattr(mmap, "mmap", no_mmap)
    log, batches = simple_records_log(tmp_path)
    index, timeindex = write_indexes(tmp_path, batches)
    size = 65 * 1024 * 1024
    for path, entry in ((index, 8), (timeindex, 12)):
        with open(path, "r+b") as f:
            f.truncate(size - size % entry)  # a preallocated tail, sparse
    result = run(index, timeindex, "--verify-index-only")
    assert (result.exit_code, kafka_err(result.stderr)) == (0, ""), result.stderr
    sanity = run(index, timeindex, "--index-sanity-check")
    # Kafka's checks read the last slot, here a zero slot of the preallocated tail
    assert sanity.stdout.count("passed sanity check.") == 1  # the offset index
    assert "has non-zero size but the last timestamp is 0" in sanity.stderr
    assert "mmap used" not in sanity.stderr and sanity.exit_code == 1
