"""Legacy (magic 0/1) message sets from segtools.writer, checked against real 0.8 broker bytes,
kafka-python's reader and builder, and the worked examples of FORMATS.md 2.3."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import pytest
from kafka.record import MemoryRecords
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from segtools.writer import NewRecord, build_legacy_message_set

LEGACY = "kafka-0.8-0.9-legacy-messages"


def kafka_python_records(data: bytes) -> list:
    """(wrapper batch, [records]) pairs as kafka-python reads them; every wrapper's CRC must
    be valid (checked before iterating, which replaces the buffer with the inner set)."""
    records = MemoryRecords(data)
    out = []
    while (batch := records.next_batch()) is not None:
        assert batch.validate_crc()
        out.append((batch, list(batch)))
    return out


def test_spec_examples_are_byte_identical() -> None:
    v1 = build_legacy_message_set([NewRecord(b"k", b"v", timestamp=1_700_000_000_000)], magic=1,
                                  base_offset=0)
    assert v1 == bytes.fromhex("000000000000000000000018 39268c33 01 00 0000018bcfe56800"
                               "00000001 6b 00000001 76".replace(" ", ""))
    v0 = build_legacy_message_set([NewRecord(None, b"v")], magic=0, base_offset=7)
    assert v0 == bytes.fromhex("0000000000000007 0000000f d20cbff5 00 00 ffffffff 00000001 76"
                               .replace(" ", ""))


def _real(realdata: Path, name: str) -> bytes:
    return (realdata / LEGACY / name).read_bytes()


def test_uncompressed_magic0_identical_to_a_real_0_8_broker(realdata: Path) -> None:
    data = _real(realdata, "fetch1.mytopic.1p.nocompression.kafka.0821.tmy-topic.p0.records.bin")
    lines = (realdata / LEGACY / "fetch1.txt").read_bytes().split(b"\n")
    built = build_legacy_message_set([NewRecord(None, line) for line in lines[:42]], magic=0,
                                     base_offset=0)
    assert built == data


def test_gzip_magic0_wrapper_matches_a_real_0_8_broker(realdata: Path) -> None:
    data = _real(realdata, "fetch1.mytopic.1p.gzip.kafka.0821.tmy-topic.p0.records.bin")
    lines = (realdata / LEGACY / "fetch1.txt").read_bytes().split(b"\n")
    built = build_legacy_message_set([NewRecord(None, line) for line in lines[:42]], magic=0,
                                     base_offset=0, compression="gzip")
    assert len(built) == len(data)
    # offset 41 (last inner), size, magic 0, attributes gzip, null key
    assert built[:12] == data[:12] and built[16:22] == data[16:22]
    value_at = 12 + 4 + 2 + 4 + 4
    assert gzip.decompress(built[value_at:]) == gzip.decompress(data[value_at:])
    # same deflate stream; only the gzip header's OS byte differs (JDK 8 wrote 0, JDK 17 255)
    assert built[value_at + 10:] == data[value_at + 10:]


@pytest.mark.parametrize("magic,codec", [(0, "gzip"), (0, "snappy"), (1, "gzip"), (1, "snappy"),
                                         (1, "lz4")])
def test_compressed_wrappers_read_back_in_kafka_python(magic: int, codec: str) -> None:
    # (magic 0 + lz4 needs the xxhash package in kafka-python: see the KAFKA-3160 test below)
    records = [NewRecord(f"k{i}".encode(), f"value {i} ".encode() * 10,
                         timestamp=1_600_000_000_000 + i) for i in range(5)]
    data = build_legacy_message_set(records, magic=magic, base_offset=100, compression=codec)
    ((wrapper, inner),) = kafka_python_records(data)
    assert wrapper.magic == magic
    assert struct.unpack_from(">q", data, 0)[0] == 104  # wrapper carries the last offset
    assert [r.offset for r in inner] == [100, 101, 102, 103, 104]
    assert [r.key for r in inner] == [r.key for r in records]
    assert [r.value for r in inner] == [r.value for r in records]
    assert all(r.validate_crc() for r in inner)
    if magic == 1:
        assert [r.timestamp for r in inner] == [r.timestamp for r in records]
        # the wrapper holds the max timestamp (bytes 18..26: after offset, size, crc, magic, attrs)
        assert struct.unpack_from(">q", data, 18)[0] == 1_600_000_000_004


def test_magic1_inner_offsets_are_relative_and_magic0_absolute() -> None:
    import zlib

    for magic, expected in ((1, [0, 1, 2]), (0, [10, 11, 12])):
        data = build_legacy_message_set([NewRecord(None, b"x")] * 3, magic=magic, base_offset=10,
                                        compression="gzip")
        value_at = 12 + 4 + 2 + (8 if magic == 1 else 0) + 4 + 4
        inner = zlib.decompress(data[value_at:], 31)
        offsets, pos = [], 0
        while pos < len(inner):
            offset, size = struct.unpack_from(">qi", inner, pos)
            offsets.append(offset)
            pos += 12 + size
        assert offsets == expected


def test_magic0_lz4_wrapper_has_the_kafka_3160_header_checksum() -> None:
    import lz4.frame

    records = [NewRecord(None, b"payload %d" % i) for i in range(4)]
    data = build_legacy_message_set(records, magic=0, base_offset=0, compression="lz4")
    frame = data[12 + 4 + 2 + 4 + 4:]
    reference = lz4.frame.compress(b"", block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                                   block_linked=False, content_checksum=False, store_size=False)
    assert frame[:6] == reference[:6]  # magic, FLG 0x60, BD 0x40 as Kafka writes them
    assert frame[6] != reference[6]  # checksum over magic+FLG+BD, not FLG+BD (KAFKA-3160)
    fixed = frame[:6] + reference[6:7] + frame[7:]
    inner = lz4.frame.decompress(fixed)
    plain = build_legacy_message_set(records, magic=0, base_offset=0)
    assert inner == plain  # magic 0 inner offsets are absolute, so the inner set is the plain set
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(frame)  # a strict reader rejects the broken checksum


def test_log_append_time_magic1() -> None:
    records = [NewRecord(None, b"a", timestamp=1), NewRecord(None, b"b", timestamp=2)]
    plain = build_legacy_message_set(records, magic=1, base_offset=0,
                                     timestamp_type="LogAppendTime", log_append_time=999)
    got = [r for _, rs in kafka_python_records(plain) for r in rs]
    assert [(r.timestamp, r.timestamp_type) for r in got] == [(999, 1), (999, 1)]
    wrapped = build_legacy_message_set(records, magic=1, base_offset=0, compression="gzip",
                                       timestamp_type="LogAppendTime", log_append_time=999)
    ((wrapper, inner),) = kafka_python_records(wrapped)
    assert struct.unpack_from(">q", wrapped, 18)[0] == 999 and wrapper.timestamp_type == 1
    assert [r.timestamp for r in inner] == [999, 999]


@pytest.mark.parametrize("magic", [0, 1])
def test_uncompressed_byte_identical_to_kafka_python_builder(magic: int) -> None:
    records = [NewRecord(b"key", b"value", timestamp=1_650_000_000_000),
               NewRecord(None, b"v2", timestamp=1_650_000_000_001),
               NewRecord(b"k3", None, timestamp=1_650_000_000_002)]
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    for i, r in enumerate(records):
        builder.append(i, timestamp=r.timestamp, key=r.key, value=r.value)
    assert build_legacy_message_set(records, magic=magic, base_offset=0) == bytes(builder.build())


@pytest.mark.parametrize("kwargs", [
    {"magic": 2},
    {"magic": 1, "compression": "zstd"},
    {"magic": 1, "timestamp_type": "LogAppendTime"},
])
def test_invalid_legacy_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        build_legacy_message_set([NewRecord(None, b"x")], base_offset=0, **kwargs)
