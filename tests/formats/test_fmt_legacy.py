"""Legacy v0/v1 message declarations: FORMATS.md 2.3 vectors, real 0.8/0.9 message sets,
kafka-python's legacy builder as an independent oracle."""

from __future__ import annotations

import zlib
from pathlib import Path

import pytest
from construct import ConstructError
from fmt_helpers import roundtrip
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from segtools.formats.legacy import RECORD_OVERHEAD_V0, LegacyLogEntry, LegacyMessage

V1_EXAMPLE = bytes.fromhex(
    "0000000000000000 00000018 39268c33 01 00 0000018bcfe56800 00000001 6b 00000001 76"
    .replace(" ", ""))
V0_EXAMPLE = bytes.fromhex(
    "0000000000000007 0000000f d20cbff5 00 00 ffffffff 00000001 76".replace(" ", ""))
LEGACY_DIR = "kafka-0.8-0.9-legacy-messages"


def test_v1_example() -> None:
    entry = roundtrip(LegacyLogEntry, V1_EXAMPLE)
    assert len(V1_EXAMPLE) == 36
    msg = entry.message
    assert (entry.offset, entry.message_size) == (0, 24)
    assert (msg.crc, msg.magic, msg.timestamp, msg.key, msg.value) == \
        (958827571, 1, 1700000000000, b"k", b"v")
    assert zlib.crc32(V1_EXAMPLE[16:]) == msg.crc


def test_v0_example() -> None:
    entry = roundtrip(LegacyLogEntry, V0_EXAMPLE)
    msg = entry.message
    assert (entry.offset, msg.crc, msg.magic, msg.timestamp, msg.key, msg.value) == \
        (7, 3524050933, 0, None, None, b"v")
    assert entry.message_size == RECORD_OVERHEAD_V0 + 1


def _entries(data: bytes) -> list[tuple[int, bytes]]:
    out, pos = [], 0
    while pos + 12 <= len(data):
        size = int.from_bytes(data[pos + 8:pos + 12], "big")
        if pos + 12 + size > len(data):
            break
        out.append((pos, data[pos:pos + 12 + size]))
        pos += 12 + size
    return out


@pytest.mark.parametrize("name", [
    "fetch1.mytopic.1p.nocompression.kafka.0821.tmy-topic.p0.records.bin",
    "fetch1.mytopic.1p.gzip.kafka.0821.tmy-topic.p0.records.bin",
    "fetch1.mytopic.1p.snappy.kafka.0822.tmy-topic.p0.records.bin",
    "fetch2.mytopic.nocompression.kafka.0900.tmy-topic.p0.records.bin",
])
def test_real_legacy_entries_roundtrip_and_crc(realdata: Path, name: str) -> None:
    data = (realdata / LEGACY_DIR / name).read_bytes()
    entries = _entries(data)
    assert entries
    for _, raw in entries:
        entry = roundtrip(LegacyLogEntry, raw)
        assert entry.message.magic == 0
        assert zlib.crc32(raw[16:]) == entry.message.crc
    if "nocompression" in name and name.startswith("fetch1"):
        lines = (realdata / LEGACY_DIR / "fetch1.txt").read_bytes().split(b"\n")
        values = [LegacyLogEntry.parse(raw).message.value for _, raw in entries]
        assert values == lines[:len(values)]
        assert len(values) == 42


def test_invalid_crc_file_differs_only_in_crc(realdata: Path) -> None:
    good = (realdata / LEGACY_DIR / "fetch2.mytopic.nocompression.kafka.0900.tmy-topic.p0.records.bin").read_bytes()
    bad = (realdata / LEGACY_DIR
           / "fetch2.mytopic.nocompression.invalid_crc.kafka.0900.tmy-topic.p0.records.bin").read_bytes()
    entry = roundtrip(LegacyLogEntry, _entries(bad)[0][1])
    assert zlib.crc32(_entries(bad)[0][1][16:]) != entry.message.crc
    assert LegacyLogEntry.parse(_entries(good)[0][1]).message.value == entry.message.value


@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_python_built_messages_parse(magic: int) -> None:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    specs = [(b"key", b"value"), (None, b"x" * 200), (b"k", None)]
    for i, (k, v) in enumerate(specs):
        builder.append(i, timestamp=1700000000000 + i if magic else None, key=k, value=v)
    data = bytes(builder.build())
    parsed = [roundtrip(LegacyLogEntry, raw) for _, raw in _entries(data)]
    assert [(e.offset, e.message.key, e.message.value) for e in parsed] == \
        [(i, k, v) for i, (k, v) in enumerate(specs)]
    if magic:
        assert [e.message.timestamp for e in parsed] == [1700000000000 + i for i in range(3)]


def test_message_with_leftover_bytes_is_rejected() -> None:
    body = V0_EXAMPLE[12:] + b"\x00"
    with pytest.raises(ConstructError):
        LegacyMessage.parse(body)


def test_negative_magic_uses_the_v1_layout_like_the_reader() -> None:
    # LegacyRecord only special-cases magic 0 (keyOffset, timestamp); any other value below 2,
    # even a negative one, is laid out with the 8-byte timestamp, as segtools.records.legacy reads it
    from segtools.records.batches import SegmentBatch

    body = bytearray(V1_EXAMPLE[12:])
    body[4] = 0xFF                                       # magic -1
    msg = LegacyMessage.parse(bytes(body))
    assert (msg.magic, msg.timestamp, msg.key, msg.value) == (-1, 1700000000000, b"k", b"v")
    assert LegacyMessage.build(msg) == bytes(body)
    batch = SegmentBatch.from_bytes(V1_EXAMPLE[:12] + bytes(body))
    assert (batch.magic, batch.base_timestamp) == (msg.magic, msg.timestamp)
