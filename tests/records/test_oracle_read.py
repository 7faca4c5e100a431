"""Batches built by kafka-python (an independent implementation) read back field by field.

Expected values are the inputs handed to kafka-python's builders, and kafka-python's own
readers on the same bytes; never our writer.
"""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder

from segtools.errors import CorruptBatchError
from segtools.primitives.crc import crc32c
from segtools.records.batches import SegmentBatch, SegmentReader, iter_batches

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
INT32_MAX = 2**31 - 1

RECORDS = [
    # (offset delta, timestamp, key, value, headers)
    (0, 1_700_000_000_000, b"key-0", b"value-0", []),
    (1, 1_700_000_000_005, None, b"null key", [("h1", b"x")]),
    (2, 1_700_000_000_003, b"null value", None, [("h1", b"a"), ("h2", None)]),
    (3, 1_700_000_000_100, None, None, [("\u00fcnic\u00f8de", b"\x00\xff")]),
    (4, 1_700_000_000_050, b"", b"", []),
    (5, 1_700_000_000_007, b"k" * 300, b"v" * 20000, [("big", b"h" * 500)]),
]


def _kp_batch(codec: int, records=RECORDS, *, transactional=False, producer_id=-1,
              producer_epoch=-1, base_sequence=-1, base_offset=0) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec,
                                  is_transactional=transactional, producer_id=producer_id,
                                  producer_epoch=producer_epoch, base_sequence=base_sequence,
                                  batch_size=10**8)
    for delta, ts, k, v, h in records:
        b.append(delta, ts, k, v, h)
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, base_offset)  # baseOffset is outside the CRC
    return bytes(buf)


def _write(tmp_path, name: str, *chunks: bytes):
    p = tmp_path / name
    p.write_bytes(b"".join(chunks))
    return p


def _kp_records(buf: bytes):
    mr = MemoryRecords(buf)
    out = []
    while True:
        batch = mr.next_batch()
        if batch is None:
            return out
        out.append((batch, list(batch)))


@pytest.mark.parametrize("codec", sorted(CODECS))
@pytest.mark.parametrize("mode", ["plain", "idempotent", "transactional"])
def test_v2_batches_from_kafka_python(tmp_path, codec, mode):
    kw = {}
    if mode != "plain":
        kw = dict(producer_id=123_456_789_012, producer_epoch=7, base_sequence=INT32_MAX - 2,
                  transactional=(mode == "transactional"))
    first = _kp_batch(codec, base_offset=1000, **kw)
    second = _kp_batch(codec, RECORDS[:2], base_offset=1006, **kw)
    path = _write(tmp_path, "00000000000000001000.log", first, second)

    with SegmentReader(path) as reader:
        batches = list(reader)
        assert reader.valid_bytes == reader.file_size == len(first) + len(second)
    assert len(batches) == 2
    oracle = _kp_records(first + second)

    for batch, (kbatch, krecords), source in zip(batches, oracle, (RECORDS, RECORDS[:2])):
        assert batch.magic == 2
        assert batch.crc_valid is True
        assert batch.crc == kbatch.crc
        # kafka-python sends a batch uncompressed when compression does not help (small one)
        assert batch.compression_id == kbatch.compression_type
        assert batch.compression == CODECS[batch.compression_id]
        if source is RECORDS:
            assert batch.compression_id == codec
        assert batch.base_offset == kbatch.base_offset
        assert batch.last_offset == batch.base_offset + len(source) - 1
        assert batch.last_offset_delta == len(source) - 1
        assert batch.records_count == len(source)
        assert batch.timestamp_type == "CreateTime"
        assert batch.base_timestamp == source[0][1]
        assert batch.max_timestamp == max(r[1] for r in source)
        assert batch.is_control is False
        assert batch.has_delete_horizon is False and batch.delete_horizon_ms is None
        assert batch.is_transactional == (mode == "transactional")
        assert batch.producer_id == kbatch.producer_id
        assert batch.producer_epoch == kbatch.producer_epoch
        assert batch.base_sequence == kbatch.base_sequence
        if mode == "plain":
            assert (batch.producer_id, batch.producer_epoch, batch.base_sequence,
                    batch.last_sequence) == (-1, -1, -1, -1)
        else:
            assert batch.producer_id == 123_456_789_012 and batch.producer_epoch == 7
            # sequences wrap at Int.MAX to 0 (FORMATS.md 1.4): 6 records from MAX-2 end at 2
            assert batch.last_sequence == {6: 2, 2: INT32_MAX - 1}[len(source)]
        assert batch.size == len(batch.raw()) == batch.batch_length + 12
        assert batch.raw() == (first if batch.position == 0 else second)

        records = list(batch.records())
        assert len(records) == len(source) == len(krecords)
        for rec, krec, (delta, ts, key, value, headers) in zip(records, krecords, source):
            assert rec.offset == batch.base_offset + delta == krec.offset
            assert rec.offset_delta == delta
            assert rec.timestamp == ts == krec.timestamp
            assert rec.key == key == krec.key
            assert rec.value == value == krec.value
            assert rec.headers == [(hk, hv) for hk, hv in headers] == list(krec.headers)
            assert rec.is_control is False
            assert rec.magic is None and rec.crc is None
            if mode == "plain":
                assert rec.sequence == -1
            else:
                assert rec.sequence == [INT32_MAX - 2, INT32_MAX - 1, INT32_MAX, 0, 1, 2][delta]


def test_v2_log_append_time_reports_max_timestamp_for_every_record(tmp_path):
    buf = bytearray(_kp_batch(1, base_offset=5))
    # Broker-side LogAppendTime: set attribute bit 3 and maxTimestamp, recompute CRC-32C
    attrs = struct.unpack_from(">h", buf, 21)[0] | 0x08
    struct.pack_into(">h", buf, 21, attrs)
    struct.pack_into(">q", buf, 35, 1_800_000_000_000)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    batch = SegmentBatch.from_bytes(bytes(buf))
    assert batch.crc_valid and batch.timestamp_type == "LogAppendTime"
    records = list(batch.records())
    assert [r.timestamp for r in records] == [1_800_000_000_000] * len(RECORDS)
    assert [r.timestamp_delta for r in records] == [ts - RECORDS[0][1] for _, ts, *_ in RECORDS]
    kbatch, krecords = _kp_records(bytes(buf))[0]
    assert [k.timestamp for k in krecords] == [r.timestamp for r in records]


def test_v2_memory_records_builder_multiple_batches_dir(tmp_path):
    """MemoryRecordsBuilder batches in two segments of a partition dir, read in offset order."""
    part = tmp_path / "orders-3"
    part.mkdir()
    expected = []
    for seg_base, codec in ((0, 3), (40, 4)):
        chunks = []
        offset = seg_base
        for n in range(4):
            b = MemoryRecordsBuilder(magic=2, compression_type=codec, batch_size=10**7,
                                     offset=offset)
            for i in range(10):
                b.append(timestamp=1_600_000_000_000 + offset + i, key=b"k%d" % (offset + i),
                         value=b"v%d" % (offset + i), headers=[("n", b"%d" % n)])
                expected.append((offset + i, b"k%d" % (offset + i), b"v%d" % (offset + i)))
            offset += 10
            b.close()
            chunks.append(bytes(b.buffer()))
        (part / f"{seg_base:020d}.log").write_bytes(b"".join(chunks))
    # written in reverse name order on purpose; listing must still be by offset
    got = [(r.offset, r.key, r.value) for b in iter_batches(part) for r in b.records()]
    assert got == expected


# ------------------------------------------------------------------------------- legacy v0/v1

LEGACY = [(1_500_000_000_000 + i, b"key-%d" % i if i % 3 else None,
           b"value-%d" % i if i % 4 else None) for i in range(7)]


def _legacy(magic: int, codec: int, first_offset: int = 0, relative: bool = False) -> bytes:
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=10**7)
    for i, (ts, k, v) in enumerate(LEGACY):
        b.append(i if relative else first_offset + i, ts, k, v)
    return bytes(b.build())


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_uncompressed(tmp_path, magic):
    raw = _legacy(magic, 0, first_offset=100)
    path = _write(tmp_path, "00000000000000000100.log", raw)
    batches = list(iter_batches(path))
    assert len(batches) == len(LEGACY)  # one batch per outer message
    oracle = _kp_records(raw)
    for i, (batch, (_kbatch, krecs)) in enumerate(zip(batches, oracle)):
        ts, key, value = LEGACY[i]
        assert batch.magic == magic and batch.compression == "none"
        assert batch.base_offset == batch.last_offset == 100 + i
        assert batch.records_count == 1
        assert batch.partition_leader_epoch == -1 and batch.producer_id == -1
        assert batch.crc_valid is True
        assert batch.crc == struct.unpack_from(">I", raw, batch.position + 12)[0]
        assert batch.computed_crc == zlib.crc32(raw[batch.position + 16:
                                                    batch.position + batch.size])
        assert batch.timestamp_type == ("NoTimestampType" if magic == 0 else "CreateTime")
        assert batch.max_timestamp == (-1 if magic == 0 else ts)
        [rec] = list(batch.records())
        assert (rec.offset, rec.key, rec.value) == (100 + i, key, value)
        assert (rec.offset, rec.key, rec.value) == (krecs[0].offset, krecs[0].key,
                                                    krecs[0].value)
        assert rec.timestamp == (-1 if magic == 0 else ts)
        assert rec.magic == magic and rec.crc_valid is True and rec.headers == []


@pytest.mark.parametrize("magic,codec", [(0, 1), (0, 2), (1, 1), (1, 2), (1, 3)])
def test_legacy_compressed_wrappers(tmp_path, magic, codec):
    if magic == 0:  # magic 0: inner offsets absolute
        raw = bytearray(_legacy(magic, codec, first_offset=500))
        wrapper_offset = 506
        expected_offsets = list(range(500, 507))
    else:  # magic 1: inner offsets relative 0..6, broker stores the absolute last offset
        raw = bytearray(_legacy(magic, codec, relative=True))
        wrapper_offset = 1000
        expected_offsets = list(range(994, 1001))
    struct.pack_into(">q", raw, 0, wrapper_offset)  # offset is outside the message CRC
    raw = bytes(raw)
    path = _write(tmp_path, "00000000000000000000.log", raw)
    [batch] = list(iter_batches(path))
    assert batch.compression == CODECS[codec] and batch.crc_valid
    assert batch.last_offset == wrapper_offset
    assert batch.base_offset == expected_offsets[0]
    assert batch.records_count == len(LEGACY)
    records = list(batch.records())
    [(kbatch, krecs)] = _kp_records(raw)
    assert [r.offset for r in records] == expected_offsets == [k.offset for k in krecs]
    assert [(r.key, r.value) for r in records] == [(k, v) for _, k, v in LEGACY]
    assert [(r.key, r.value) for r in records] == [(k.key, k.value) for k in krecs]
    if magic == 1:
        assert [r.timestamp for r in records] == [ts for ts, _, _ in LEGACY]
        assert {r.timestamp_type for r in records} == {"CreateTime"}
    else:
        assert {r.timestamp for r in records} == {-1}


def test_legacy_v1_wrapper_offset_zero_keeps_inner_offsets(tmp_path):
    """librdkafka quirk: wrapper offset 0 => inner offsets used as they are."""
    raw = _legacy(1, 1, first_offset=0, relative=True)
    assert struct.unpack_from(">q", raw, 0)[0] == 0
    batch = SegmentBatch.from_bytes(raw)
    assert [r.offset for r in batch.records()] == list(range(len(LEGACY)))


def test_legacy_v1_log_append_time_wrapper_timestamp(tmp_path):
    raw = bytearray(_legacy(1, 1, relative=True))
    struct.pack_into(">q", raw, 0, 20)
    # wrapper: set LogAppendTime bit and timestamp, then recompute its CRC-32
    raw[17] |= 0x08
    struct.pack_into(">q", raw, 18, 1_234_567_890_123)
    struct.pack_into(">I", raw, 12, zlib.crc32(bytes(raw[16:])))
    batch = SegmentBatch.from_bytes(bytes(raw))
    assert batch.crc_valid and batch.timestamp_type == "LogAppendTime"
    assert batch.max_timestamp == 1_234_567_890_123
    records = list(batch.records())
    assert {r.timestamp for r in records} == {1_234_567_890_123}
    assert {r.timestamp_type for r in records} == {"LogAppendTime"}
    [(kbatch, krecs)] = _kp_records(bytes(raw))
    assert [k.timestamp for k in krecs] == [r.timestamp for r in records]
    assert [r.offset for r in records] == list(range(14, 21))


def test_legacy_v1_wrapper_offset_below_last_inner_is_corrupt():
    from segtools.errors import CorruptBatchError
    raw = bytearray(_legacy(1, 1, relative=True))
    struct.pack_into(">q", raw, 0, 3)  # 3 < last inner offset 6, and not 0
    batch = SegmentBatch.from_bytes(bytes(raw), path="/x/00000000000000000000.log",
                                   position=0)
    with pytest.raises(CorruptBatchError, match="wrapper offset '3'") as info:
        list(batch.records())
    assert info.value.path == "/x/00000000000000000000.log"
    assert info.value.base_offset == 3


# ------------------------------------------------------------------------------- property test

_header = st.tuples(st.text(st.characters(blacklist_categories=("Cs",)), max_size=8),
                    st.one_of(st.none(), st.binary(max_size=16)))
_record = st.tuples(st.integers(-10**6, 10**6), st.one_of(st.none(), st.binary(max_size=40)),
                    st.one_of(st.none(), st.binary(max_size=200)),
                    st.lists(_header, max_size=3))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(_record, min_size=1, max_size=12), codec=st.sampled_from([0, 1, 2, 3, 4]),
       gaps=st.lists(st.integers(0, 5), min_size=12, max_size=12))
def test_random_batches_match_kafka_python(records, codec, gaps):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=10**8)
    delta = 0
    expected = []
    for (ts_off, k, v, h), gap in zip(records, gaps):
        delta += gap
        ts = 1_700_000_000_000 + ts_off
        b.append(delta, ts, k, v, h)
        expected.append((delta, ts, k, v, h))
    raw = bytes(b.build())
    batch = SegmentBatch.from_bytes(raw)
    assert batch.crc_valid
    assert batch.last_offset_delta == expected[-1][0]
    got = [(r.offset_delta, r.timestamp, r.key, r.value, r.headers) for r in batch.records()]
    assert got == expected


def test_legacy_records_honour_their_own_max_message_size():
    """``records(max_message_size=)`` bounds one inner message, whatever bound the batch was
    read with (it used to be ignored: the inner set was only ever read with the first one)."""
    raw = bytearray(_legacy(1, 1, relative=True))
    struct.pack_into(">q", raw, 0, 1000)
    raw = bytes(raw)
    # inner messages of LEGACY are at most 22 + 8 + 7 = 37 bytes long (v1 overhead, key, value)
    tight = SegmentBatch.from_bytes(raw, max_message_size=30)
    assert tight.records_count == 0
    with pytest.raises(CorruptBatchError, match="largest allowable message size"):
        list(tight.records(max_message_size=30))
    assert [r.offset for r in tight.records(max_message_size=1000)] == list(range(994, 1001))
    roomy = SegmentBatch.from_bytes(raw)
    assert [r.value for r in roomy.records()] == [v for _, _, v in LEGACY]
    with pytest.raises(CorruptBatchError, match="largest allowable message size") as info:
        list(roomy.records(max_message_size=30))
    assert info.value.base_offset == 994 and info.value.field.startswith("inner[")
