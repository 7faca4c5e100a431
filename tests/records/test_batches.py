"""SegmentReader / SegmentBatch / Record behaviour: the spec's worked examples, the
FileLogInputStream walk rules, record-level validation with located errors, control records
and directory ordering. Inputs are the spec's bytes or bytes assembled here by hand
(test-side encoder below), never our writer."""

from __future__ import annotations

import base64
import os
import stat
import struct

import crc32c as crc32c_lib
import pytest

from segtools.errors import (
    CorruptBatchError,
    FormatError,
    InputError,
    TruncatedBatchError,
)
from segtools.records.batches import SegmentBatch, SegmentReader, iter_batches, segment_paths

# FORMATS.md 1.9 (v2) and 2.3 (v1, v0) worked examples
SPEC_V2 = bytes.fromhex(
    "0000000000000000" "00000039" "00000000" "02" "965a94b1" "0000" "00000000"
    "0000018bcfe56800" "0000018bcfe56800" "ffffffffffffffff" "ffff" "ffffffff"
    "00000001" "0e0000000102" "6100")
SPEC_V1 = bytes.fromhex("0000000000000000000000183926 8c33010000 00018bcfe5680000000001"
                        "6b0000000176".replace(" ", ""))
SPEC_V0 = bytes.fromhex("0000000000000007 0000000f d20cbff5 00 00 ffffffff 00000001 76"
                        .replace(" ", ""))


# ----------------------------------------------------------------------- test-side encoder

def zz(n: int) -> bytes:
    """zig-zag varint, written from the protobuf definition."""
    u = (n << 1) ^ (n >> 63)
    u &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        if u:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def record_body(offset_delta=0, ts_delta=0, key=None, value=b"v", headers=(), attrs=0) -> bytes:
    body = bytes([attrs]) + zz(ts_delta) + zz(offset_delta)
    body += zz(-1) if key is None else zz(len(key)) + key
    body += zz(-1) if value is None else zz(len(value)) + value
    body += zz(len(headers))
    for hk, hv in headers:
        hkb = hk.encode()
        body += zz(len(hkb)) + hkb + (zz(-1) if hv is None else zz(len(hv)) + hv)
    return body


def record(**kw) -> bytes:
    body = record_body(**kw)
    return zz(len(body)) + body


def v2_batch(records: bytes, *, count: int, base_offset=0, last_offset_delta=None, attributes=0,
             base_ts=1_700_000_000_000, max_ts=None, producer_id=-1, producer_epoch=-1,
             base_sequence=-1, ple=0, magic=2, fix_crc=True) -> bytes:
    if last_offset_delta is None:
        last_offset_delta = max(count - 1, 0)
    if max_ts is None:
        max_ts = base_ts
    after_crc = struct.pack(">hiqqqhii", attributes, last_offset_delta, base_ts, max_ts,
                            producer_id, producer_epoch, base_sequence, count) + records
    crc = crc32c_lib.crc32c(after_crc) if fix_crc else 0
    length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiibI", base_offset, length, ple, magic, crc) + after_crc


def write(tmp_path, data: bytes, name="00000000000000000000.log"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


# ----------------------------------------------------------------------- spec worked examples

def test_spec_v2_worked_example(tmp_path):
    path = write(tmp_path, SPEC_V2)
    with SegmentReader(path) as reader:
        [b] = list(reader)
    assert (b.base_offset, b.batch_length, b.size, b.partition_leader_epoch, b.magic) == \
        (0, 57, 69, 0, 2)
    assert b.crc == 2522518705 and b.crc_valid and b.computed_crc == 2522518705
    assert (b.compression, b.timestamp_type, b.is_transactional, b.is_control) == \
        ("none", "CreateTime", False, False)
    assert (b.base_timestamp, b.max_timestamp) == (1700000000000, 1700000000000)
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.last_sequence) == (-1,) * 4
    assert (b.records_count, b.last_offset, b.last_offset_delta) == (1, 0, 0)
    assert b.delete_horizon_ms is None and b.has_delete_horizon is False
    assert b.segment == "00000000000000000000.log" and b.path == str(path)
    assert b.raw() == SPEC_V2
    [r] = list(b.records())
    assert (r.offset, r.timestamp, r.key, r.value, r.headers, r.sequence, r.size) == \
        (0, 1700000000000, None, b"a", [], -1, 7)
    assert r.key_size == -1 and r.value_size == 1


def test_spec_v1_and_v0_worked_examples(tmp_path):
    assert len(SPEC_V1) == 36 and len(SPEC_V0) == 27
    path = write(tmp_path, SPEC_V1 + SPEC_V0)
    v1, v0 = list(SegmentReader(path))
    assert (v1.magic, v1.crc, v1.crc_valid, v1.size, v1.position) == (1, 958827571, True, 36, 0)
    assert (v1.timestamp_type, v1.max_timestamp, v1.last_offset) == \
        ("CreateTime", 1700000000000, 0)
    [r1] = list(v1.records())
    assert (r1.key, r1.value, r1.timestamp, r1.offset, r1.crc_valid) == \
        (b"k", b"v", 1700000000000, 0, True)
    assert (v0.magic, v0.crc, v0.crc_valid, v0.size, v0.position) == (0, 3524050933, True, 27, 36)
    assert (v0.timestamp_type, v0.max_timestamp, v0.last_offset, v0.base_offset) == \
        ("NoTimestampType", -1, 7, 7)
    [r0] = list(v0.records())
    assert (r0.key, r0.value, r0.timestamp, r0.offset) == (None, b"v", -1, 7)


# ----------------------------------------------------------------------- walking a file

def test_torn_tail_ends_silently_and_reports_invalid_bytes(tmp_path):
    second = v2_batch(record(value=b"x" * 50), count=1, base_offset=1)
    path = write(tmp_path, SPEC_V2 + second[:40])
    with SegmentReader(path) as reader:
        assert len(list(reader)) == 1
        assert reader.valid_bytes == 69
        assert reader.file_size - reader.valid_bytes == 40 == reader.invalid_bytes


def test_at_most_17_trailing_bytes_end_the_walk(tmp_path):
    # DUMP_LOG.md: appending 5 garbage bytes gives "Found 5 invalid bytes"
    path = write(tmp_path, SPEC_V2 + b"\x01\x02\x03\x04\x05")
    reader = SegmentReader(path)
    assert len(list(reader)) == 1 and reader.invalid_bytes == 5
    path = write(tmp_path, SPEC_V2 + b"\xff" * 17)
    reader = SegmentReader(path)
    assert len(list(reader)) == 1 and reader.invalid_bytes == 17


def test_zero_tail_raises_corrupt_with_location(tmp_path):
    # preallocated segment after an unclean stop: size 0 < 14 -> CorruptRecordException
    path = write(tmp_path, SPEC_V2 + bytes(100))
    reader = SegmentReader(path)
    got = []
    with pytest.raises(CorruptBatchError) as info:
        for b in reader:
            got.append(b)
    assert len(got) == 1
    err = info.value
    assert err.position == 69 and err.base_offset == 0 and err.field == "batch_length"
    assert err.path == str(path)
    assert "Found record size 0 smaller than minimum record overhead (14)" in str(err)
    assert "00000000000000000000.log @ position 69" in str(err)


def test_negative_size_field_is_corrupt(tmp_path):
    path = write(tmp_path, struct.pack(">qi", 5, -7) + bytes(30))
    with pytest.raises(CorruptBatchError, match="Found record size -7"):
        list(SegmentReader(path))


def test_huge_size_field_stops_without_reading(tmp_path):
    path = write(tmp_path, SPEC_V2 + struct.pack(">qi", 1, 2**31 - 1) + bytes(40))
    reader = SegmentReader(path)
    assert len(list(reader)) == 1 and reader.valid_bytes == 69


def test_v2_batch_shorter_than_header_is_corrupt(tmp_path):
    # FileLogInputStream loads a v2 header of 61 bytes whatever the length field says: here
    # the file ends first ("Failed to load record batch")
    path = write(tmp_path, struct.pack(">qiib", 3, 20, 0, 2) + bytes(19))
    with pytest.raises(TruncatedBatchError, match="Failed to load record batch") as info:
        list(SegmentReader(path))
    assert info.value.position == 0 and info.value.base_offset == 3
    # with bytes after it: the header comes from them, the batch is invalid, its records are
    # refused (Kafka: IndexOutOfBoundsException) and the walk resumes 12 + 20 bytes later
    short = struct.pack(">qiib", 3, 20, 0, 2) + bytes(15)  # 32 bytes = 12 + 20
    path = write(tmp_path, short + SPEC_V2)
    first, second = list(SegmentReader(path))
    assert (first.position, first.size, first.crc_valid) == (0, 32, False)
    assert second.position == 32 and second.crc_valid
    with pytest.raises(CorruptBatchError, match="shorter than its 61-byte header") as info:
        list(first.records())
    assert info.value.position == 0 and info.value.field == "batch_length"


def test_max_bytes_limits_like_dump_log(tmp_path):
    b2 = v2_batch(record(), count=1, base_offset=1)
    b3 = v2_batch(record(), count=1, base_offset=2)
    path = write(tmp_path, SPEC_V2 + b2 + b3)
    assert len(list(SegmentReader(path, max_bytes=69 + len(b2)))) == 2
    assert len(list(SegmentReader(path, max_bytes=69 + len(b2) - 1))) == 1
    assert len(list(SegmentReader(path, max_bytes=0))) == 0
    assert len(list(SegmentReader(path, max_bytes=10**12))) == 3


def test_empty_file(tmp_path):
    reader = SegmentReader(write(tmp_path, b""))
    assert list(reader) == [] and reader.valid_bytes == 0 and reader.file_size == 0


def test_bad_paths_are_input_errors(tmp_path):
    with pytest.raises(InputError):
        SegmentReader(tmp_path / "missing.log")
    with pytest.raises(InputError):
        SegmentReader(tmp_path)
    with pytest.raises(InputError):
        list(iter_batches(tmp_path / "nope"))


def test_files_are_opened_read_only(tmp_path):
    path = write(tmp_path, SPEC_V2 + SPEC_V1)
    os.chmod(path, stat.S_IRUSR)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    assert len(list(iter_batches(path))) == 2
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_garbage_magic_is_read_as_v2_records_too(tmp_path):
    # FileLogInputStream makes any magic >= 2 a DefaultFileChannelRecordBatch, whose iterator
    # never looks at the magic: kafka-dump-log 4.3.1 prints such a batch's records
    raw = bytearray(v2_batch(record(value=b"abc"), count=1))
    raw[16] = 7
    [b] = list(SegmentReader(write(tmp_path, bytes(raw))))
    assert b.magic == 7 and b.crc_valid  # magic is outside the CRC
    assert [r.value for r in b.records()] == [b"abc"]


def test_batches_spanning_read_chunks(tmp_path):
    """Batches larger than and straddling the 1 MiB read window come out intact."""
    big = v2_batch(record(value=b"x" * 1_500_000), count=1, base_offset=0)
    small = [v2_batch(record(value=b"%d" % i * 1000), count=1, base_offset=1 + i)
             for i in range(300)]
    path = write(tmp_path, b"".join(small[:150]) + big + b"".join(small[150:]))
    batches = list(SegmentReader(path))
    assert len(batches) == 301 and all(b.crc_valid for b in batches)
    assert next(b for b in batches if b.size == len(big)).raw() == big


# ----------------------------------------------------------------------- v2 semantics

def test_log_append_time_and_delete_horizon_and_sequences():
    recs = record(ts_delta=-5, offset_delta=0) + record(ts_delta=7, offset_delta=3)
    raw = v2_batch(recs, count=2, base_offset=100, last_offset_delta=9,
                   attributes=0x08 | 0x40, base_ts=5_000, max_ts=9_999,
                   producer_id=42, producer_epoch=3, base_sequence=2**31 - 2)
    b = SegmentBatch.from_bytes(raw)
    assert b.timestamp_type == "LogAppendTime"
    assert b.has_delete_horizon and b.delete_horizon_ms == 5_000
    assert b.last_offset == 109  # from lastOffsetDelta, not the count
    assert b.last_sequence == 7  # 2**31-2 + 9 wraps past Int.MAX to 0
    r = list(b.records())
    assert [x.timestamp for x in r] == [9_999, 9_999]
    assert [x.timestamp_delta for x in r] == [-5, 7]
    assert [x.offset for x in r] == [100, 103]
    assert [x.sequence for x in r] == [2**31 - 2, 1]


def test_create_time_uses_base_plus_delta_even_with_delete_horizon():
    raw = v2_batch(record(ts_delta=-100), count=1, attributes=0x40, base_ts=5_000)
    [r] = list(SegmentBatch.from_bytes(raw).records())
    assert r.timestamp == 4_900


def test_empty_batch_yields_nothing():
    b = SegmentBatch.from_bytes(v2_batch(b"", count=0, last_offset_delta=4, base_ts=-1))
    assert list(b.records()) == [] and b.last_offset == 4


def test_headers_nulls_and_utf8():
    recs = record(key=b"k", value=None, headers=[("\u00e9t\u00e9", b"1"), ("n", None),
                                                 ("", b"")])
    [r] = list(SegmentBatch.from_bytes(v2_batch(recs, count=1)).records())
    assert r.key == b"k" and r.value is None
    assert r.headers == [("\u00e9t\u00e9", b"1"), ("n", None), ("", b"")]


def test_crc_mismatch_is_reported_not_raised():
    raw = bytearray(v2_batch(record(value=b"hello"), count=1))
    raw[-3] ^= 0x20  # inside the value (the last byte is the header count)
    b = SegmentBatch.from_bytes(bytes(raw))
    assert b.crc_valid is False and b.crc != b.computed_crc
    assert [r.value for r in b.records()] == [b"helLo"]


def test_partition_leader_epoch_is_outside_the_crc():
    raw = bytearray(v2_batch(record(), count=1, ple=3))
    struct.pack_into(">i", raw, 12, 99)
    b = SegmentBatch.from_bytes(bytes(raw))
    assert b.partition_leader_epoch == 99 and b.crc_valid


# ----------------------------------------------------------------------- record errors

def _records_error(raw: bytes, tmp_path) -> FormatError:
    path = write(tmp_path, SPEC_V2 + raw)
    batches = list(SegmentReader(path))
    with pytest.raises(FormatError) as info:
        list(batches[1].records())
    err = info.value
    assert err.path == str(path) and err.base_offset == 50
    return err


def test_more_declared_records_than_present(tmp_path):
    err = _records_error(v2_batch(record() + record(offset_delta=1), count=3, base_offset=50),
                         tmp_path)
    assert isinstance(err, TruncatedBatchError)
    assert "premature EOF" in str(err) and err.field == "records[2].length"


def test_fewer_declared_records_than_present(tmp_path):
    err = _records_error(v2_batch(record() + record(offset_delta=1), count=1, base_offset=50),
                         tmp_path)
    assert isinstance(err, CorruptBatchError)
    assert "records still remaining" in str(err)


def test_record_length_mismatch_is_located(tmp_path):
    body = record_body(value=b"abc")
    bad = zz(len(body) - 1) + body  # length one byte short
    err = _records_error(v2_batch(bad, count=1, base_offset=50), tmp_path)
    assert isinstance(err, CorruptBatchError)
    assert err.position == 69 + 61  # first record of the second batch
    assert err.field.startswith("records[0].")


def test_record_length_past_batch_end(tmp_path):
    err = _records_error(v2_batch(zz(2**31 - 1) + b"\x00" * 5, count=1, base_offset=50),
                         tmp_path)
    assert isinstance(err, TruncatedBatchError) and "Invalid record size" in str(err)


@pytest.mark.parametrize("bad_field,body", [
    ("key_length", b"\x00\x00\x00" + zz(1000) + b"k"),
    ("value_length", b"\x00\x00\x00" + zz(-1) + zz(2**31 - 1)),
    ("headers_count", b"\x00\x00\x00" + zz(-1) + zz(-1) + zz(-3)),
    ("headers_count", b"\x00\x00\x00" + zz(-1) + zz(-1) + zz(2**31 - 1)),
    ("headers[0].key_length", b"\x00\x00\x00" + zz(-1) + zz(-1) + zz(1) + zz(-1) + b"\x00"),
    ("timestamp_delta", b"\x00" + b"\xff" * 11),
])
def test_impossible_record_fields(tmp_path, bad_field, body):
    err = _records_error(v2_batch(zz(len(body)) + body, count=1, base_offset=50), tmp_path)
    assert isinstance(err, CorruptBatchError)
    assert err.field == f"records[0].{bad_field}"
    assert err.position == 69 + 61


def test_negative_record_count(tmp_path):
    err = _records_error(v2_batch(record(), count=-1, base_offset=50), tmp_path)
    assert "Found invalid record count -1 in magic v2 batch" in str(err)


def test_errors_inside_compressed_payload_name_the_batch(tmp_path):
    import gzip
    payload = gzip.compress(record() + b"\x07")
    raw = v2_batch(payload, count=1, base_offset=50, attributes=1)
    err = _records_error(raw, tmp_path)
    assert err.position == 69 and "decompressed gzip payload" in str(err)


def test_corrupt_compressed_payload(tmp_path):
    raw = v2_batch(b"\x1f\x8b\x08\x00garbage", count=1, base_offset=50, attributes=1)
    err = _records_error(raw, tmp_path)
    assert type(err).__name__ == "CompressionError" and err.position == 69 + 61


def test_unknown_codec_id(tmp_path):
    raw = v2_batch(record(), count=1, base_offset=50, attributes=6)
    b = list(SegmentReader(write(tmp_path, raw)))[0]
    assert b.compression == "unknown(6)"
    with pytest.raises(CorruptBatchError, match="Unknown compression type id: 6"):
        list(b.records())


# ----------------------------------------------------------------------- control records

def _control_batch(key: bytes, value: bytes | None, *, transactional=True) -> SegmentBatch:
    attrs = 0x20 | (0x10 if transactional else 0)
    raw = v2_batch(record(key=key, value=value), count=1, base_offset=10, attributes=attrs,
                   producer_id=98323, producer_epoch=99)
    return SegmentBatch.from_bytes(raw)


@pytest.mark.parametrize("type_id,name", [(0, "ABORT"), (1, "COMMIT")])
def test_end_txn_markers(type_id, name):
    b = _control_batch(struct.pack(">hh", 0, type_id), struct.pack(">hi", 0, 100))
    assert b.is_control and b.is_transactional
    [c] = b.control_records()
    assert (c.offset, c.key_version, c.type_id, c.type_name) == (10, 0, type_id, name)
    assert c.value == {"version": 0, "coordinatorEpoch": 100}
    assert [r.is_control for r in b.records()] == [True]


def _flex_str(s: str) -> bytes:
    b = s.encode()
    return bytes([len(b) + 1]) + b


def test_kraft_control_values():
    header = _control_batch(struct.pack(">hh", 0, 3), struct.pack(">hq", 0, 10000) + b"\x00")
    assert header.control_records()[0].value == {"version": 0,
                                                 "lastContainedLogTimestamp": 10000}
    footer = _control_batch(struct.pack(">hh", 0, 4), struct.pack(">h", 0) + b"\x00")
    assert footer.control_records()[0].value == {"version": 0}
    kv = _control_batch(struct.pack(">hh", 0, 5), struct.pack(">hh", 0, 1) + b"\x00")
    assert kv.control_records()[0].value == {"version": 0, "kRaftVersion": 1}
    leader = _control_batch(struct.pack(">hh", 0, 2),
                            struct.pack(">hi", 0, 2) + b"\x03" + struct.pack(">i", 1) + b"\x00"
                            + struct.pack(">i", 2) + b"\x00" + b"\x02" +
                            struct.pack(">i", 2) + b"\x00" + b"\x00")
    assert leader.control_records()[0].value == {
        "version": 0, "leaderId": 2, "voters": [{"voterId": 1}, {"voterId": 2}],
        "grantingVoters": [{"voterId": 2}]}
    uuid = bytes(range(16))
    voters_value = (struct.pack(">h", 0) + b"\x02" + struct.pack(">i", 1) + uuid + b"\x02" +
                    _flex_str("CONTROLLER") + _flex_str("localhost") + struct.pack(">H", 9093) +
                    b"\x00" + struct.pack(">hh", 0, 1) + b"\x00" + b"\x00" + b"\x00")
    voters = _control_batch(struct.pack(">hh", 0, 6), voters_value)
    assert voters.control_records()[0].value == {"version": 0, "voters": [{
        "voterId": 1,
        "voterDirectoryId": base64.urlsafe_b64encode(uuid).decode().rstrip("="),
        "endpoints": [{"name": "CONTROLLER", "host": "localhost", "port": 9093}],
        "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1}}]}


def test_unknown_control_type_and_bad_keys():
    [c] = _control_batch(struct.pack(">hh", 0, 9), b"whatever").control_records()
    assert (c.type_name, c.type_id, c.value) == ("UNKNOWN", 9, None)
    with pytest.raises(CorruptBatchError) as info:
        _control_batch(b"\x00\x00\x01", b"").control_records()
    assert info.value.field == "records[0].control.key" and info.value.base_offset == 10
    with pytest.raises(CorruptBatchError, match="Invalid version"):
        _control_batch(struct.pack(">hh", -1, 1), struct.pack(">hi", 0, 1)).control_records()
    with pytest.raises(CorruptBatchError, match="end transaction marker"):
        _control_batch(struct.pack(">hh", 0, 1), b"\x00\x00\x00").control_records()
    with pytest.raises(CorruptBatchError):  # truncated flexible value
        _control_batch(struct.pack(">hh", 0, 3), b"\x00\x00\x00").control_records()


def test_control_records_of_data_batch_is_empty():
    assert SegmentBatch.from_bytes(SPEC_V2).control_records() == []


# ----------------------------------------------------------------------- directories

def test_partition_and_log_dir_ordering(tmp_path):
    logdir = tmp_path / "broker"
    names = ["t-10", "t-2", "my-topic-1", "my-topic-0", "a-3"]
    for name in names:
        part = logdir / name
        part.mkdir(parents=True)
        for base in (100, 5, 20):  # lexically 100 < 20 < 5; numerically 5 < 20 < 100
            raw = v2_batch(record(), count=1, base_offset=base)
            (part / f"{base:020d}.log").write_bytes(raw)
        (part / "00000000000000000005.index").write_bytes(b"")
    (logdir / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    order = [(os.path.basename(os.path.dirname(b.path)), b.base_offset)
             for b in iter_batches(logdir)]
    expected_dirs = ["a-3", "my-topic-0", "my-topic-1", "t-2", "t-10"]
    assert order == [(d, o) for d in expected_dirs for o in (5, 20, 100)]
    # a partition dir on its own
    assert [b.base_offset for b in iter_batches(logdir / "t-2")] == [5, 20, 100]
    assert [os.path.basename(p) for p in segment_paths(logdir / "t-2")] == [
        "00000000000000000005.log", "00000000000000000020.log", "00000000000000000100.log"]



def test_memory_does_not_grow_with_file_size(tmp_path):
    """A 24 MiB segment is walked (and its records decoded) in bounded memory."""
    import tracemalloc

    one = v2_batch(record(value=b"x" * 8000) + record(offset_delta=1, value=b"y" * 8000),
                   count=2)
    path = tmp_path / "00000000000000000000.log"
    with open(path, "wb") as f:
        for _ in range(24 * 1024 * 1024 // len(one)):
            f.write(one)
    tracemalloc.start()
    try:
        n = 0
        with SegmentReader(path) as reader:
            for b in reader:
                n += sum(1 for _ in b.records())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == 2 * (24 * 1024 * 1024 // len(one))
    assert peak < 3 * 1024 * 1024  # one 1 MiB read window plus a batch, not the file


def test_corrupt_legacy_key_length_does_not_stop_the_walk(tmp_path):
    bad = bytearray(SPEC_V0)
    struct.pack_into(">i", bad, 18, 1000)  # key length past the message end
    path = write(tmp_path, bytes(bad) + SPEC_V1)
    first, second = list(SegmentReader(path))
    assert first.crc_valid is False and first.last_offset == 7 and first.magic == 0
    with pytest.raises(CorruptBatchError) as info:
        list(first.records())
    assert (info.value.field, info.value.position, info.value.base_offset) == \
        ("key_length", 0, 7)
    assert [r.value for r in second.records()] == [b"v"]


def test_strict_crc_raises_crc_mismatch(tmp_path):
    from segtools.errors import CrcMismatchError

    bad = bytearray(SPEC_V2)
    bad[-2] ^= 1  # the value byte "a" -> "`"
    path = write(tmp_path, SPEC_V2 + bytes(bad))
    assert [b.crc_valid for b in SegmentReader(path)] == [True, False]
    with pytest.raises(CrcMismatchError) as info:
        list(SegmentReader(path, strict_crc=True))
    assert (info.value.position, info.value.field) == (69, "crc")
    assert "stored 0x965a94b1" in str(info.value)


def test_two_iterations_and_close(tmp_path):
    path = write(tmp_path, SPEC_V2 + SPEC_V1 + SPEC_V0)
    reader = SegmentReader(path)
    a, b = iter(reader), iter(reader)
    assert next(a).magic == 2 and next(b).magic == 2
    assert [x.magic for x in a] == [1, 0] and [x.magic for x in b] == [1, 0]
    c = iter(SegmentReader(path, max_bytes=69 + 36 + 1))
    with SegmentReader(path) as r:
        it = iter(r)
        next(it)
    with pytest.raises(InputError, match="closed"):
        next(it)  # a closed reader says so instead of an I/O ValueError
    assert [x.magic for x in c] == [2, 1]
