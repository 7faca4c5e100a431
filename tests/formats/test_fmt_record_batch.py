"""v2 batch header and records: FORMATS.md 1.9 vector, real broker files, kafka-python oracle."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from construct import ConstructError
from fmt_helpers import roundtrip
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.util import decode_varint, encode_varint

from segtools.errors import FormatError
from segtools.formats.primitives import Varint, Varlong, parse_located
from segtools.formats.record_batch import (
    CONTROL_FLAG_MASK,
    HEADER_STRUCT_FORMAT,
    RECORD_BATCH_OVERHEAD,
    CompressionType,
    Record,
    RecordBatch,
    RecordBatchHeader,
    Records,
    TimestampType,
)

# FORMATS.md section 1.9 (computed for the spec, not by segtools)
EXAMPLE_1_9 = bytes.fromhex(
    "0000000000000000 00000039 00000000 02 965a94b1 0000 00000000"
    "0000018bcfe56800 0000018bcfe56800 ffffffffffffffff ffff"
    "ffffffff 00000001 0e000000010261 00".replace(" ", "")
)

REAL_LOGS = [
    "kafka-2.0-zk-small/logdir/subhash-0/00000000000000000000.log",
    "kafka-2.5-zk-first-topic/final/first_topic-1/00000000000000000000.log",
    "kafka-2.5-zk-first-topic/final/__consumer_offsets-12/00000000000000000000.log",
    "kafka-3.6-kraft-flink-stack/logdir/__cluster_metadata-0/00000000000000000000.log",
    "kafka-3.6-kraft-flink-stack/logdir/_confluent-command-0/00000000000000000000.log",
    "kafka-3.6-kraft-flink-stack/logdir/_confluent-monitoring-0/00000000000000000000.log",
    "kafka-3.6-kraft-flink-stack/logdir/promotions-0/00000000000000000000.log",
]
HEADER_NAMES = ["base_offset", "batch_length", "partition_leader_epoch", "magic", "crc",
                "attributes", "last_offset_delta", "base_timestamp", "max_timestamp",
                "producer_id", "producer_epoch", "base_sequence", "records_count"]


def test_example_1_9_parses_to_spec_values_and_rebuilds() -> None:
    batch = roundtrip(RecordBatch, EXAMPLE_1_9)
    assert len(EXAMPLE_1_9) == 69
    assert batch.batch_length == 57
    assert batch.crc == 0x965A94B1 == 2522518705
    assert (batch.base_timestamp, batch.max_timestamp) == (1700000000000, 1700000000000)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    records = Records.parse(batch.records, records_count=batch.records_count)
    assert len(records) == 1
    body = records[0].body
    assert records[0].length == 7
    assert (body.key, body.value, body.headers) == (None, b"a", [])
    assert Record.build(records[0]) == batch.records


def test_header_is_61_bytes_and_matches_struct_format() -> None:
    assert RecordBatchHeader.sizeof() == RECORD_BATCH_OVERHEAD == struct.calcsize(HEADER_STRUCT_FORMAT)


@pytest.mark.parametrize("rel", REAL_LOGS)
def test_real_first_batches_match_struct_unpack_and_kafka_python(realdata: Path, rel: str) -> None:
    data = (realdata / rel).read_bytes()
    pos = 0
    for _ in range(3):    # the first few batches of each file
        if pos + RECORD_BATCH_OVERHEAD > len(data):
            break
        ours = roundtrip(RecordBatchHeader, data[pos:pos + RECORD_BATCH_OVERHEAD])
        plain = struct.unpack_from(">qiibIhiqqqhii", data, pos)
        assert [ours[n] for n in HEADER_NAMES] == list(plain)
        size = ours.batch_length + 12
        oracle = DefaultRecordBatch(bytearray(data[pos:pos + size]))
        assert oracle.base_offset == ours.base_offset
        assert oracle.leader_epoch == ours.partition_leader_epoch
        assert oracle.crc == ours.crc
        assert oracle.attributes == ours.attributes
        assert oracle.last_offset_delta == ours.last_offset_delta
        assert oracle.max_timestamp == ours.max_timestamp
        assert oracle.producer_id == ours.producer_id
        assert oracle.producer_epoch == ours.producer_epoch
        assert oracle.base_sequence == ours.base_sequence
        assert oracle.records_count == ours.records_count
        assert oracle.validate_crc()
        # whole batch declaration rebuilds the identical bytes
        roundtrip(RecordBatch, data[pos:pos + size])
        pos += size


@pytest.mark.parametrize("rel", [r for r in REAL_LOGS if "_confluent" not in r])
def test_real_uncompressed_records_match_kafka_python(realdata: Path, rel: str) -> None:
    data = (realdata / rel).read_bytes()
    pos, checked = 0, 0
    while pos + RECORD_BATCH_OVERHEAD <= len(data) and checked < 20:
        header = RecordBatchHeader.parse(data[pos:pos + RECORD_BATCH_OVERHEAD])
        size = header.batch_length + 12
        assert header.attributes & 0x07 == CompressionType.NONE
        raw = data[pos + RECORD_BATCH_OVERHEAD:pos + size]
        ours = roundtrip(Records, raw, records_count=header.records_count)
        oracle = list(DefaultRecordBatch(bytearray(data[pos:pos + size])))
        assert len(oracle) == len(ours)
        for mine, theirs in zip(ours, oracle):
            assert header.base_offset + mine.body.offset_delta == theirs.offset
            assert mine.body.key == (None if theirs.key is None else bytes(theirs.key))
            assert mine.body.value == (None if theirs.value is None else bytes(theirs.value))
            if not header.attributes & 0x08:       # CreateTime: base + delta
                assert header.base_timestamp + mine.body.timestamp_delta == theirs.timestamp
            assert [(h.key, h.value) for h in mine.body.headers] == \
                [(k, None if v is None else bytes(v)) for k, v in theirs.headers]
        pos += size
        checked += 1
    assert checked > 0


def test_records_built_by_kafka_python_parse_with_headers_and_nulls() -> None:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    specs = [(b"k0", b"v" * 300, [("h1", b"x"), ("h2", None)]), (None, None, []),
             (b"", b"", [("\u00e9t\u00e9", b"")])]
    for i, (k, v, h) in enumerate(specs):
        builder.append(i, timestamp=1700000000000 + i * 1000, key=k, value=v, headers=h)
    data = bytes(builder.build())
    header = RecordBatchHeader.parse(data)
    records = Records.parse(data[RECORD_BATCH_OVERHEAD:], records_count=header.records_count)
    assert [(r.body.key, r.body.value, [(x.key, x.value) for x in r.body.headers]) for r in records] == specs
    assert [r.body.timestamp_delta for r in records] == [0, 1000, 2000]
    assert Records.build(records, records_count=3) == data[RECORD_BATCH_OVERHEAD:]


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 300, -300, 2**31 - 1, -2**31])
def test_varint_matches_kafka_python(value: int) -> None:
    encoded = _kp_encode(value)
    assert Varint.build(value) == encoded
    assert Varint.parse(encoded) == value == decode_varint(encoded, 0)[0]


def _kp_encode(value: int) -> bytes:
    out = bytearray()
    encode_varint(value, out.append)
    return bytes(out)


def test_varint_rejects_sixth_byte_and_varlong_allows_ten() -> None:
    with pytest.raises(ConstructError):
        Varint.parse(b"\xff\xff\xff\xff\xff\x01")
    assert Varlong.parse(b"\xff" * 9 + b"\x01") == -(2**63)
    with pytest.raises(ConstructError):
        Varlong.parse(b"\xff" * 10 + b"\x01")
    with pytest.raises(ConstructError):
        Varint.build(2**31)


def test_record_with_wrong_length_is_rejected() -> None:
    good = bytes.fromhex("0e000000010261" + "00")
    bad_longer = bytes.fromhex("10000000010261" + "0000")   # length 8: one byte left over
    assert Record.parse(good).body.value == b"a"
    with pytest.raises(ConstructError):
        Record.parse(bad_longer)


def test_parse_located_reports_file_position_and_field() -> None:
    with pytest.raises(FormatError) as info:
        parse_located(RecordBatchHeader, EXAMPLE_1_9[:30], path="/x/00000000000000000042.log",
                      position=4096, base_offset=42)
    err = info.value
    assert err.field == "base_timestamp"
    assert err.path == "/x/00000000000000000042.log"
    assert err.base_offset == 42
    assert err.position == 4096 + 27     # where base_timestamp starts
    assert "00000000000000000042.log @ position" in str(err)


def test_enums_and_masks() -> None:
    assert [c.label for c in CompressionType] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert TimestampType(1).label == "LogAppendTime"
    assert TimestampType(-1).label == "NoTimestampType"
    assert CONTROL_FLAG_MASK == 0x20
