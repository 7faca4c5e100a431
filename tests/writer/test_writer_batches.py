"""Magic-2 batches from segtools.writer, checked against kafka-python (an independent reader and
builder) and the worked example of FORMATS.md 1.9."""

from __future__ import annotations

import struct

import pytest
from kafka.record import MemoryRecords
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from segtools.writer import NewRecord, build_batch, build_control_batch

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

RECORDS = [
    NewRecord(b"key-0", b"value-0" * 20, headers=[("h1", b"x"), ("h2", None)], timestamp=1_700_000_000_000),
    NewRecord(None, b"no key", timestamp=1_700_000_000_500),
    NewRecord(b"tombstone", None, timestamp=1_699_999_999_000),  # older than the first record
    NewRecord(None, None, headers=[("\u00e9t\u00e9", b"")], timestamp=1_700_000_001_000),
    NewRecord(b"", b"", timestamp=1_700_000_000_001),
]


def read_one(data: bytes) -> DefaultRecordBatch:
    records = MemoryRecords(data)
    batch = records.next_batch()
    assert batch is not None and records.next_batch() is None
    return batch


def test_worked_example_of_the_spec_is_byte_identical() -> None:
    expected = bytes.fromhex(
        "0000000000000000 00000039 00000000 02 965a94b1 0000 00000000"
        "0000018bcfe56800 0000018bcfe56800 ffffffffffffffff ffff ffffffff 00000001"
        "0e0000000102610 0".replace(" ", ""))
    built = build_batch([NewRecord(None, b"a", timestamp=1_700_000_000_000)], base_offset=0)
    assert built == expected


@pytest.mark.parametrize("codec", list(CODECS))
def test_every_codec_reads_back_in_kafka_python(codec: str) -> None:
    data = build_batch(RECORDS, base_offset=1000, partition_leader_epoch=7, compression=codec,
                       producer_id=4242, producer_epoch=3, base_sequence=17)
    batch = read_one(data)
    assert batch.validate_crc()
    assert batch.magic == 2
    assert batch.compression_type == CODECS[codec]
    assert batch.base_offset == 1000
    assert batch.leader_epoch == 7
    assert batch.last_offset_delta == 4
    assert batch.producer_id == 4242 and batch.producer_epoch == 3
    assert batch.base_sequence == 17 and batch.last_sequence == 21
    assert batch.first_timestamp == 1_700_000_000_000
    assert batch.max_timestamp == 1_700_000_001_000
    assert batch.timestamp_type == 0
    assert not batch.is_transactional and not batch.is_control_batch
    assert batch.size_in_bytes == len(data)
    records = list(batch)
    assert [r.offset for r in records] == [1000, 1001, 1002, 1003, 1004]
    assert [r.key for r in records] == [r.key for r in RECORDS]
    assert [r.value for r in records] == [r.value for r in RECORDS]
    assert [r.timestamp for r in records] == [r.timestamp for r in RECORDS]
    assert [list(r.headers) for r in records] == [
        [("h1", b"x"), ("h2", None)], [], [], [("\u00e9t\u00e9", b"")], []]


def test_compressed_section_is_a_real_stream_of_the_codec() -> None:
    import gzip

    data = build_batch(RECORDS, base_offset=0, compression="gzip")
    plain = build_batch(RECORDS, base_offset=0)
    # the compressed payload decompresses (stdlib gzip) to exactly the uncompressed records
    assert gzip.decompress(data[61:]) == plain[61:]
    assert struct.unpack_from(">i", data, 57)[0] == len(RECORDS)  # count stays uncompressed


def test_log_append_time_sets_attribute_and_max_timestamp() -> None:
    data = build_batch(RECORDS, base_offset=5, timestamp_type="LogAppendTime",
                       log_append_time=1_800_000_000_000)
    batch = read_one(data)
    assert batch.validate_crc()
    assert batch.timestamp_type == 1
    assert batch.attributes & 0x08
    assert batch.max_timestamp == 1_800_000_000_000
    # readers report the append time for every record of a LogAppendTime batch
    assert {r.timestamp for r in batch} == {1_800_000_000_000}


def test_transactional_batch() -> None:
    data = build_batch(RECORDS[:2], base_offset=10, producer_id=9, producer_epoch=1,
                       base_sequence=0, is_transactional=True)
    batch = read_one(data)
    assert batch.validate_crc()
    assert batch.is_transactional and not batch.is_control_batch
    assert batch.attributes == 0x10


def test_sequence_wraps_past_int_max() -> None:
    data = build_batch(RECORDS[:3], base_offset=0, producer_id=1, producer_epoch=0,
                       base_sequence=2**31 - 2)
    assert read_one(data).last_sequence == 0  # MAX-1, MAX, then 0


@pytest.mark.parametrize("control_type,type_id", [("ABORT", 0), ("COMMIT", 1)])
def test_control_batch_reads_as_marker(control_type: str, type_id: int) -> None:
    data = build_control_batch(control_type, base_offset=77, producer_id=123, producer_epoch=4,
                               coordinator_epoch=9, partition_leader_epoch=2,
                               timestamp=1_700_000_000_000)
    batch = read_one(data)
    assert batch.validate_crc()
    assert batch.is_control_batch and batch.is_transactional
    assert batch.attributes == 0x30
    assert batch.producer_id == 123 and batch.producer_epoch == 4
    assert batch.base_sequence == -1
    assert batch.leader_epoch == 2
    (record,) = list(batch)
    assert record.offset == 77
    assert record.type == type_id and record.version == 0
    assert record.abort == (control_type == "ABORT")
    assert record.key == struct.pack(">hh", 0, type_id)
    assert record.value == struct.pack(">hi", 0, 9)


def _kafka_python_batch(records: list[NewRecord], **producer) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0,
                                        is_transactional=producer.get("is_transactional", False),
                                        producer_id=producer.get("producer_id", -1),
                                        producer_epoch=producer.get("producer_epoch", -1),
                                        base_sequence=producer.get("base_sequence", -1),
                                        batch_size=1 << 20)
    for i, record in enumerate(records):
        builder.append(i, timestamp=record.timestamp, key=record.key, value=record.value,
                       headers=list(record.headers))
    return bytes(builder.build())


@pytest.mark.parametrize("producer", [
    {},
    {"producer_id": 5, "producer_epoch": 0, "base_sequence": 100},
    {"producer_id": 5, "producer_epoch": 2, "base_sequence": 0, "is_transactional": True},
])
def test_byte_identical_to_kafka_python_builder(producer: dict) -> None:
    # kafka-python writes baseOffset 0 and partitionLeaderEpoch 0 (the broker sets them)
    ours = build_batch(RECORDS, base_offset=0, partition_leader_epoch=0, **producer)
    assert ours == _kafka_python_batch(RECORDS, **producer)


def test_empty_batch_keeps_given_offsets_and_timestamps() -> None:
    # an empty batch left by compaction: count 0, lastOffsetDelta kept, base timestamp -1
    data = build_batch([], base_offset=50, last_offset_delta=4, max_timestamp=1234,
                       producer_id=3, producer_epoch=0, base_sequence=10)
    batch = read_one(data)
    assert batch.validate_crc()
    assert batch.records_count == 0 and list(batch) == []
    assert batch.last_offset == 54 and batch.last_sequence == 14
    assert batch.first_timestamp == -1 and batch.max_timestamp == 1234


@pytest.mark.parametrize("kwargs", [
    {"compression": "brotli"},
    {"compression": 5},
    {"timestamp_type": "NoTimestampType"},
    {"is_transactional": True},  # without a producer id
    {"timestamp_type": "LogAppendTime"},  # without log_append_time
])
def test_invalid_arguments_are_rejected(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        build_batch(RECORDS, base_offset=0, **kwargs)


def test_control_type_must_be_a_marker() -> None:
    with pytest.raises(ValueError):
        build_control_batch("LEADER_CHANGE", base_offset=0, producer_id=1, producer_epoch=0,
                            timestamp=0)


def test_compacted_batch_with_offset_gaps_and_delete_horizon() -> None:
    records = [NewRecord(b"a", None, timestamp=1_000_500), NewRecord(b"b", b"2", timestamp=1_000_900)]
    data = build_batch(records, base_offset=100, offset_deltas=[1, 4], last_offset_delta=5,
                       delete_horizon_ms=1_000_000, max_timestamp=1_000_950)
    batch = read_one(data)
    assert batch.validate_crc()
    assert batch.attributes & 0x40  # hasDeleteHorizonMs
    assert batch.first_timestamp == 1_000_000  # the base timestamp field holds the horizon
    assert batch.last_offset == 105 and batch.max_timestamp == 1_000_950
    got = [(r.offset, r.key, r.value, r.timestamp) for r in batch]
    assert got == [(101, b"a", None, 1_000_500), (104, b"b", b"2", 1_000_900)]


@pytest.mark.parametrize("deltas", [[0], [1, 1], [2, 1], [-1, 0]])
def test_bad_offset_deltas(deltas: list[int]) -> None:
    with pytest.raises(ValueError):
        build_batch([NewRecord(None, b"x", timestamp=0)] * 2, base_offset=0, offset_deltas=deltas)


def test_out_of_range_header_field() -> None:
    with pytest.raises(ValueError):
        build_batch(RECORDS, base_offset=0, producer_epoch=40000)
