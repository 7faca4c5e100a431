"""LogWriter: segment files, index placement, roll, truncation, recovery, txn index, snapshots.

Expected index entries are computed here from batch sizes with the rule of FORMATS.md 5-6
(``LogSegment.append``), and the log is walked with kafka-python, not with segtools."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from segtools.errors import CrcMismatchError, InputError, SegtoolsError
from segtools.files.indexes import read_offset_index, read_time_index, read_txn_index
from segtools.files.snapshots import read_producer_snapshot
from segtools.writer import LogWriter, NewRecord, build_batch, build_control_batch

T0 = 1_700_000_000_000


def name(offset: int, suffix: str) -> str:
    return f"{offset:020d}{suffix}"


def make_batches(n: int, *, start: int = 0, records: int = 3, value_size: int = 40,
                 ts_step: int = 10) -> list[bytes]:
    out, offset = [], start
    for i in range(n):
        recs = [NewRecord(b"k%04d" % i, bytes([65 + i % 26]) * value_size, timestamp=T0 + i * ts_step + j)
                for j in range(records)]
        out.append(build_batch(recs, base_offset=offset))
        offset += records
    return out


def walk_log(path: Path) -> list[tuple[int, int, int, int, int]]:
    """(position, size, base_offset, last_offset, max_timestamp) per batch, read by kafka-python."""
    data = path.read_bytes()
    records = MemoryRecords(data)
    out, pos = [], 0
    while (batch := records.next_batch()) is not None:
        out.append((pos, batch.size_in_bytes, batch.base_offset,
                    batch.base_offset + batch.last_offset_delta, batch.max_timestamp))
        pos += batch.size_in_bytes
    return out


def expected_index(batches: list[tuple[int, int, int, int, int]], interval: int):
    """Offset and time index entries LogSegment.append produces for one batch per append."""
    offset_entries, time_entries = [], []
    since, max_ts, max_ts_offset = 0, -1, -1
    for position, size, _base, last, ts in batches:
        if ts > max_ts:
            max_ts, max_ts_offset = ts, last
        if since > interval:
            offset_entries.append((last, position))
            if not time_entries or max_ts > time_entries[-1][0]:
                time_entries.append((max_ts, max_ts_offset))
            since = 0
        since += size
    if max_ts >= 0 and (not time_entries or max_ts > time_entries[-1][0]):
        time_entries.append((max_ts, max_ts_offset))  # appended on roll/close
    return offset_entries, time_entries


def offset_index(path: Path, base: int) -> list[tuple[int, int]]:
    return [(base + int(r), int(p)) for r, p in read_offset_index(path)]


def time_index(path: Path, base: int) -> list[tuple[int, int]]:
    return [(int(t), base + int(r)) for t, r in read_time_index(path)]


def test_segment_files_and_index_entries(tmp_path: Path) -> None:
    part = tmp_path / "topic-0"
    writer = LogWriter(part, index_interval_bytes=500, segment_index_bytes=4096)
    batches = make_batches(30)
    infos = [writer.append(b) for b in batches]
    assert writer.log_end_offset == 90
    assert [i.base_offset for i in infos] == list(range(0, 90, 3))
    assert [i.position for i in infos] == [sum(map(len, batches[:k])) for k in range(30)]
    # active segment: indexes preallocated (zero tail), sizes rounded down to entry size
    assert (part / name(0, ".index")).stat().st_size == 4096
    assert (part / name(0, ".timeindex")).stat().st_size == 4092
    writer.close()
    log = walk_log(part / name(0, ".log"))
    assert [b[1] for b in log] == [len(b) for b in batches]
    want_offsets, want_times = expected_index(log, 500)
    assert len(want_offsets) >= 5
    assert offset_index(part / name(0, ".index"), 0) == want_offsets
    assert time_index(part / name(0, ".timeindex"), 0) == want_times
    # trimmed on close
    assert (part / name(0, ".index")).stat().st_size == 8 * len(want_offsets)
    assert (part / name(0, ".timeindex")).stat().st_size == 12 * len(want_times)
    # every entry points at the start of the batch whose last offset it names
    starts = {b[0]: b[3] for b in log}
    assert all(starts[pos] == off for off, pos in want_offsets)
    assert not (part / name(0, ".txnindex")).exists()
    assert sorted(os.listdir(part)) == [name(0, s) for s in (".index", ".log", ".timeindex")] + [
        name(90, ".snapshot")]


def test_first_append_and_small_appends_make_no_entry(tmp_path: Path) -> None:
    writer = LogWriter(tmp_path / "t-0", index_interval_bytes=4096)
    for b in make_batches(5):
        writer.append(b)
    writer.close()
    assert len(read_offset_index(tmp_path / "t-0" / name(0, ".index"))) == 0
    # one time index entry: the max timestamp appended on close
    assert time_index(tmp_path / "t-0" / name(0, ".timeindex"), 0) == [(T0 + 40 + 2, 14)]


def test_time_index_keeps_earliest_batch_of_a_max_timestamp(tmp_path: Path) -> None:
    stamps = [100, 300, 300, 200, 300, 400]
    batches = [build_batch([NewRecord(None, b"x" * 100, timestamp=t)], base_offset=i)
               for i, t in enumerate(stamps)]
    writer = LogWriter(tmp_path / "t-0", index_interval_bytes=1)
    for b in batches:
        writer.append(b)
    writer.close()
    # the first append makes no entry; later entries only when the max so far grows, with the
    # last offset of the batch that first reached it (batches 2 and 4 repeat 300: no entry)
    assert time_index(tmp_path / "t-0" / name(0, ".timeindex"), 0) == [(300, 1), (400, 5)]
    assert offset_index(tmp_path / "t-0" / name(0, ".index"), 0) == [
        (i, sum(map(len, batches[:i]))) for i in range(1, 6)]


def test_roll_at_segment_bytes_and_snapshots(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    batches = make_batches(20)
    size = len(batches[0])
    assert all(len(b) == size for b in batches)
    writer = LogWriter(part, segment_bytes=size * 6 + 10, index_interval_bytes=size)
    for b in batches:
        writer.append(b)
    # 6 batches fit (6*size <= segment_bytes), the 7th rolls
    assert writer.segments == [0, 18, 36, 54]
    for base in (0, 18, 36):
        assert (part / name(base, ".log")).stat().st_size == 6 * size
        # rolled segments are trimmed and got their final time-index entry
        assert (part / name(base, ".index")).stat().st_size % 8 == 0
        log = walk_log(part / name(base, ".log"))
        want_offsets, want_times = expected_index(log, size)
        assert offset_index(part / name(base, ".index"), base) == want_offsets
        assert time_index(part / name(base, ".timeindex"), base) == want_times
    # a producer snapshot named after each new segment's base offset
    assert sorted(p.name for p in part.glob("*.snapshot")) == [name(o, ".snapshot") for o in (18, 36, 54)]
    writer.close()
    assert (part / name(60, ".snapshot")).exists()
    assert read_producer_snapshot(part / name(60, ".snapshot")).entries == []


def test_roll_when_offset_index_is_full(tmp_path: Path) -> None:
    writer = LogWriter(tmp_path / "t-0", index_interval_bytes=0, segment_index_bytes=8 * 3 + 4)
    # 3 offset slots; the time index has 2 slots, one kept free for the final entry -> full at 1
    for b in make_batches(6):
        writer.append(b)
    assert writer.segments == [0, 6, 12]
    writer.close()
    assert offset_index(tmp_path / "t-0" / name(0, ".index"), 0) == [(5, len(make_batches(1)[0]))]


def test_truncate_to_mid_segment(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    batches = make_batches(30)
    size = len(batches[0])
    writer = LogWriter(part, segment_bytes=size * 10, index_interval_bytes=size)
    for b in batches:
        writer.append(b)
    assert writer.segments == [0, 30, 60]
    original = (part / name(30, ".log")).read_bytes()
    index_before = offset_index(part / name(30, ".index"), 30)
    assert writer.roll() == 90  # a forced roll (segment.ms): empty segment 90
    writer.truncate_to(44)  # offset 44 sits inside batch 42..44: the whole batch goes
    assert writer.log_end_offset == 44
    assert writer.segments == [0, 30]
    assert not (part / name(60, ".log")).exists() and not (part / name(60, ".index")).exists()
    assert not (part / name(90, ".log")).exists()
    assert (part / name(30, ".log")).read_bytes() == original[:4 * size]
    # the again-active segment's indexes are preallocated again
    assert (part / name(30, ".index")).stat().st_size == 10485760
    # appending continues at 44 (42..44 was dropped, so the log has a hole at 42, 43)
    writer.append(build_batch([NewRecord(None, b"new", timestamp=T0)], base_offset=44))
    writer.close()
    log = walk_log(part / name(30, ".log"))
    assert [b[2] for b in log] == [30, 33, 36, 39, 44]
    kept = [e for e in index_before if e[0] < 44]
    assert kept and len(kept) < len(index_before)
    # entries at/after 44 are gone, and the new batch made none: the byte counter restarts at 0
    assert offset_index(part / name(30, ".index"), 30) == kept
    assert (part / name(30, ".index")).stat().st_size == 8 * len(kept)
    assert all(t[1] < 44 or t[1] == 44 for t in time_index(part / name(30, ".timeindex"), 30))
    assert not (part / name(60, ".snapshot")).exists()


def test_truncated_active_index_keeps_stale_bytes_like_kafka(tmp_path: Path) -> None:
    # AbstractIndex.truncateToEntries only moves the position: while the segment stays active
    # the preallocated file still holds the old entries past the kept ones
    part = tmp_path / "t-0"
    writer = LogWriter(part, index_interval_bytes=1)
    for b in make_batches(6):
        writer.append(b)
    before = (part / name(0, ".index")).read_bytes()[:40]
    writer.truncate_to(9)
    assert (part / name(0, ".index")).read_bytes()[:40] == before
    writer.close()  # a clean close trims to the two entries still valid (offsets 5 and 8)
    assert [o for o, _ in offset_index(part / name(0, ".index"), 0)] == [5, 8]


def test_truncate_below_first_segment_and_start_at(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    writer = LogWriter(part)
    writer.truncate_fully_and_start_at(100)
    for b in make_batches(3, start=100):
        writer.append(b)
    assert writer.segments == [100] and writer.log_start_offset == 100
    writer.truncate_to(50)
    assert writer.segments == [50] and writer.log_end_offset == 50
    assert (part / name(50, ".log")).stat().st_size == 0
    assert not (part / name(100, ".log")).exists()


def test_recover_drops_torn_tail_and_rebuilds_indexes(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    batches = make_batches(12)
    writer = LogWriter(part, index_interval_bytes=300)
    for b in batches:
        writer.append(b)
    writer.flush()
    clean_index = read_offset_index(part / name(0, ".index")).tolist()
    good = (part / name(0, ".log")).read_bytes()
    extra = make_batches(1, start=36)[0]
    with open(part / name(0, ".log"), "ab") as f:  # a crash mid-write: half a batch
        f.write(extra[: len(extra) // 2])
    # and a broker would have lost the index entries that were never flushed
    os.truncate(part / name(0, ".index"), 0)
    truncated = writer.recover(0)
    assert truncated == len(extra) // 2
    assert (part / name(0, ".log")).read_bytes() == good
    assert read_offset_index(part / name(0, ".index")).tolist() == clean_index
    assert writer.log_end_offset == 36
    writer.close()
    want_offsets, want_times = expected_index(walk_log(part / name(0, ".log")), 300)
    assert offset_index(part / name(0, ".index"), 0) == want_offsets
    assert time_index(part / name(0, ".timeindex"), 0) == want_times


def test_recover_zero_tail_of_preallocated_log(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    writer = LogWriter(part)
    for b in make_batches(3):
        writer.append(b)
    good = (part / name(0, ".log")).read_bytes()
    with open(part / name(0, ".log"), "ab") as f:
        f.write(b"\0" * 1000)  # log.preallocate leaves zeros; size 0 < 14 ends recovery
    assert writer.recover(0) == 1000
    assert (part / name(0, ".log")).read_bytes() == good


def test_recover_stops_at_crc_mismatch_and_drops_later_segments(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    batches = make_batches(9)
    size = len(batches[0])
    writer = LogWriter(part, segment_bytes=size * 3)
    for b in batches:
        writer.append(b)
    assert writer.segments == [0, 9, 18]
    data = bytearray((part / name(9, ".log")).read_bytes())
    data[size + 70] ^= 0xFF  # a value byte of the second batch of segment 9
    (part / name(9, ".log")).write_bytes(bytes(data))
    assert writer.recover(9) == 2 * size
    assert writer.segments == [0, 9]
    assert writer.log_end_offset == 12
    assert (part / name(9, ".log")).stat().st_size == size
    assert not (part / name(18, ".log")).exists()
    assert (part / name(0, ".log")).stat().st_size == 3 * size  # before the recovery point


def test_transaction_index_for_aborted_transactions(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    writer = LogWriter(part)
    rec = [NewRecord(None, b"v", timestamp=T0)]

    def txn(offset: int, pid: int, seq: int) -> bytes:
        return build_batch(rec * 2, base_offset=offset, producer_id=pid, producer_epoch=0,
                           base_sequence=seq, is_transactional=True)

    writer.append(txn(0, 1, 0))        # producer 1 opens a txn at 0
    writer.append(txn(2, 2, 0))        # producer 2 opens a txn at 2
    writer.append(txn(4, 1, 2))
    writer.append(build_control_batch("ABORT", base_offset=6, producer_id=1, producer_epoch=0,
                                      coordinator_epoch=3, timestamp=T0 + 5))
    writer.append(build_control_batch("COMMIT", base_offset=7, producer_id=2, producer_epoch=0,
                                      timestamp=T0 + 6))
    writer.append(txn(8, 2, 2))        # producer 2 opens another txn at 8
    writer.append(build_control_batch("ABORT", base_offset=10, producer_id=2, producer_epoch=0,
                                      timestamp=T0 + 7))
    # an ABORT with no open transaction completes nothing
    writer.append(build_control_batch("ABORT", base_offset=11, producer_id=3, producer_epoch=0,
                                      timestamp=T0 + 8))
    writer.close()
    raw = (part / name(0, ".txnindex")).read_bytes()
    # (version, producer id, first offset, last offset = marker, last stable offset)
    assert [struct.unpack_from(">hqqqq", raw, i) for i in range(0, len(raw), 34)] == [
        (0, 1, 0, 6, 2),    # producer 2's open txn at 2 bounds the LSO
        (0, 2, 8, 10, 11),  # nothing else open: marker + 1
    ]
    assert [(t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
            for t in read_txn_index(part / name(0, ".txnindex"))] == [(1, 0, 6, 2), (2, 8, 10, 11)]
    snapshot = read_producer_snapshot(part / name(12, ".snapshot"))
    assert snapshot.crc_valid
    by_pid = {e.producer_id: e for e in snapshot.entries}
    assert (by_pid[1].last_sequence, by_pid[1].last_offset, by_pid[1].offset_delta,
            by_pid[1].coordinator_epoch, by_pid[1].current_txn_first_offset,
            by_pid[1].timestamp) == (3, 5, 1, 3, -1, T0 + 5)
    assert (by_pid[2].last_sequence, by_pid[2].last_offset, by_pid[2].current_txn_first_offset
            ) == (3, 9, -1)
    assert (by_pid[3].last_offset, by_pid[3].last_sequence, by_pid[3].timestamp) == (-1, -1, T0 + 8)


def test_open_transaction_is_in_snapshot_and_truncation_drops_txn_entries(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    writer = LogWriter(part)
    writer.append(build_batch([NewRecord(None, b"a", timestamp=T0)], base_offset=0,
                              producer_id=7, producer_epoch=1, base_sequence=0,
                              is_transactional=True))
    writer.append(build_control_batch("ABORT", base_offset=1, producer_id=7, producer_epoch=1,
                                      timestamp=T0))
    writer.append(build_batch([NewRecord(None, b"b", timestamp=T0)], base_offset=2,
                              producer_id=7, producer_epoch=1, base_sequence=1,
                              is_transactional=True))
    assert len(read_txn_index(part / name(0, ".txnindex"))) == 1
    writer.truncate_to(1)
    assert read_txn_index(part / name(0, ".txnindex")) == []
    assert [(s.producer_id, s.current_txn_first_offset) for s in writer.producer_states()] == [(7, 0)]
    writer.close()
    (entry,) = read_producer_snapshot(part / name(1, ".snapshot")).entries
    assert (entry.producer_id, entry.epoch, entry.current_txn_first_offset) == (7, 1, 0)


def test_delete_records_before(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    batches = make_batches(9)
    writer = LogWriter(part, segment_bytes=len(batches[0]) * 3)
    for b in batches:
        writer.append(b)
    assert writer.segments == [0, 9, 18]
    writer.append(make_batches(1, start=27)[0])
    assert writer.segments == [0, 9, 18, 27]
    snapshots = lambda: sorted(int(p.name[:20]) for p in part.glob("*.snapshot"))  # noqa: E731
    assert snapshots() == [9, 18, 27]
    assert writer.delete_records_before(10) == [0]
    assert writer.log_start_offset == 10 and writer.segments == [9, 18, 27]
    assert not (part / name(0, ".log")).exists()
    assert snapshots() == [9, 18, 27]  # only a deleted segment's own snapshot goes
    assert writer.delete_records_before(30) == [9, 18]
    assert writer.segments == [27]  # the active segment stays
    assert snapshots() == [27]


def test_keep_deleted_files(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    batches = make_batches(6)
    writer = LogWriter(part, segment_bytes=len(batches[0]) * 3, keep_deleted_files=True)
    for b in batches:
        writer.append(b)
    writer.truncate_to(3)
    assert (part / (name(9, ".log") + ".deleted")).exists()


def test_append_rejects_bad_batches_unless_told_not_to_validate(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    writer = LogWriter(part)
    (good,) = make_batches(1, start=10)
    corrupt = bytearray(good)
    corrupt[-1] ^= 1
    with pytest.raises(CrcMismatchError) as err:
        writer.append(bytes(corrupt))
    assert err.value.base_offset == 10 and err.value.field == "crc"
    writer.append(good)
    with pytest.raises(InputError):
        writer.append(good)  # offsets must increase
    with pytest.raises(SegtoolsError):
        writer.append(good[:30])  # cut short
    with pytest.raises(SegtoolsError):
        writer.append(b"\0" * 20)  # size 0 < 14
    info = writer.append(bytes(corrupt), validate=False)  # evidence of a corrupt batch
    assert info.position == len(good)
    assert (part / name(0, ".log")).stat().st_size == 2 * len(good)


def test_reopen_existing_directory_continues(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    batches = make_batches(8)
    size = len(batches[0])
    with LogWriter(part, segment_bytes=size * 3, index_interval_bytes=size) as writer:
        for b in batches[:5]:
            writer.append(b)
    reopened = LogWriter(part, segment_bytes=size * 3, index_interval_bytes=size, create=False)
    assert reopened.segments == [0, 9] and reopened.log_end_offset == 15
    for b in batches[5:]:
        reopened.append(b)
    reopened.close()
    assert [b[2] for b in walk_log(part / name(9, ".log"))] == [9, 12, 15]
    assert [b[2] for b in walk_log(part / name(18, ".log"))] == [18, 21]
    with pytest.raises(InputError):
        LogWriter(tmp_path / "missing-0", create=False)


def test_multi_batch_append_indexes_each_batch(tmp_path: Path) -> None:
    batches = make_batches(6)
    writer = LogWriter(tmp_path / "t-0", index_interval_bytes=1)
    info = writer.append(b"".join(batches))
    assert (info.base_offset, info.last_offset, info.position) == (0, 17, 0)
    writer.close()
    log = walk_log(tmp_path / "t-0" / name(0, ".log"))
    assert offset_index(tmp_path / "t-0" / name(0, ".index"), 0) == expected_index(log, 1)[0]


def test_flush_keeps_the_snapshots_of_the_last_two_segments(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    batches = make_batches(12)
    writer = LogWriter(part, segment_bytes=len(batches[0]) * 3)
    for b in batches:
        writer.append(b)
    assert writer.segments == [0, 9, 18, 27]
    assert sorted(p.name[:20] for p in part.glob("*.snapshot")) == [
        f"{o:020d}" for o in (9, 18, 27)]
    assert writer.flush() == 36 and writer.recovery_point == 36
    assert sorted(p.name[:20] for p in part.glob("*.snapshot")) == [f"{o:020d}" for o in (18, 27)]


def test_log_append_time_batches_index_the_append_time(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    writer = LogWriter(part, index_interval_bytes=1)
    for i in range(3):
        # record timestamps are old; the broker's append time is what the index holds
        writer.append(build_batch([NewRecord(None, b"x", timestamp=5)], base_offset=i,
                                  timestamp_type="LogAppendTime", log_append_time=T0 + i))
    writer.close()
    assert time_index(part / name(0, ".timeindex"), 0) == [(T0 + 1, 1), (T0 + 2, 2)]


def test_legacy_message_sets_are_indexed_by_their_wrapper_offset(tmp_path: Path) -> None:
    from segtools.writer import build_legacy_message_set

    part = tmp_path / "t-0"
    writer = LogWriter(part, index_interval_bytes=1)
    recs = [NewRecord(None, b"m%d" % i, timestamp=T0 + i) for i in range(4)]
    sets = [build_legacy_message_set(recs, magic=1, base_offset=0, compression="gzip"),
            build_legacy_message_set(recs, magic=1, base_offset=4),
            build_legacy_message_set(recs[:1], magic=0, base_offset=8)]
    infos = [writer.append(s) for s in sets]
    # a compressed wrapper's offset field is its last inner offset
    assert [(i.base_offset, i.last_offset) for i in infos] == [(3, 3), (4, 7), (8, 8)]
    assert writer.log_end_offset == 9
    writer.close()
    # the uncompressed v1 set is four log entries (shallow batches) of equal size
    entry = len(sets[1]) // 4
    assert offset_index(part / name(0, ".index"), 0) == [
        (4 + k, len(sets[0]) + k * entry) for k in range(5)]
    # the wrapper's timestamp (its max, T0 + 3) at its offset 3 is never exceeded afterwards;
    # magic 0 has no timestamp
    assert time_index(part / name(0, ".timeindex"), 0) == [(T0 + 3, 3)]


def test_segment_ms_rolls_on_batch_timestamps(tmp_path: Path) -> None:
    def batch(offset: int, ts: int) -> bytes:
        return build_batch([NewRecord(None, b"x", timestamp=ts)], base_offset=offset)

    writer = LogWriter(tmp_path / "t-0", segment_ms=1000)
    for offset, ts in enumerate([T0, T0 + 1000, T0 + 500, T0 + 1001, T0 + 1500, T0 + 2002]):
        writer.append(batch(offset, ts))
    # T0 + 1001 is more than 1000 ms after the segment's first batch (T0): roll at 3;
    # then T0 + 2002 is more than 1000 ms after T0 + 1001: roll at 5
    assert writer.segments == [0, 3, 5]
    writer.close()
    reopened = LogWriter(tmp_path / "t-0", segment_ms=1000)  # first batch timestamp from the log
    reopened.append(batch(6, T0 + 2002 + 1001))
    assert reopened.segments == [0, 3, 5, 6]
