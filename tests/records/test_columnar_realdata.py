"""Columnar reader on real broker files, legacy message sets and directory inputs."""

from __future__ import annotations

import random
import shutil
import struct
from pathlib import Path

import pyarrow as pa
import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from test_columnar_gen import (
    LOG_NAME,
    Rec,
    kp_batch,
    oracle_batches,
    oracle_rows,
    random_segment,
    write_segment,
)

from segtools.records import columnar
from segtools.records.schema import BATCH_SCHEMA, RECORD_SCHEMA

ENGINES = columnar.available_engines()
ORACLE_COLUMNS = ["offset", "timestamp_ms", "timestampType", "key", "value", "headers",
                  "leader_epoch", "batch_base_offset", "producer_id", "producer_epoch",
                  "sequence", "is_transactional", "is_control", "crc_valid", "magic"]


def _real_logs(realdata: Path) -> list[Path]:
    logs = sorted(realdata.rglob("*.log"))
    assert len(logs) >= 50
    return logs


def test_every_real_log_matches_kafka_python_and_engines_agree(realdata):
    total = 0
    for path in _real_logs(realdata):
        data = path.read_bytes()
        tables = [columnar.read_records(path, engine=e) for e in ENGINES]
        assert tables[0].equals(tables[-1]), path
        assert tables[0].select(ORACLE_COLUMNS).to_pylist() == oracle_rows(data), path
        scans = [columnar.read_batch_table(path, engine=e) for e in ENGINES]
        assert scans[0].equals(scans[-1]), path
        got = scans[0].to_pylist()
        want = oracle_batches(data)
        assert [{k: g[k] for k in w} for g, w in zip(got, want)] == want, path
        assert len(got) == len(want)
        # real broker data: every CRC is good (README of realdata)
        assert all(scans[0].column("crc_valid").to_pylist()), path
        total += tables[0].num_rows
    assert total > 10_000


def test_real_metadata_log_counts(realdata):
    # README: 16,340 batches, offsets 0..17026
    path = realdata / "kafka-3.6-kraft-flink-stack/logdir/__cluster_metadata-0" / LOG_NAME
    scan = columnar.read_batch_table(path)
    assert scan.num_rows == 16_340
    records = columnar.read_records(path)
    assert records.column("offset")[0].as_py() == 0
    assert records.column("offset")[-1].as_py() == 17_026
    assert set(records.column("topic").to_pylist()) == {"__cluster_metadata"}
    assert set(records.column("partition").to_pylist()) == {0}


def test_real_lz4_and_log_append_time_batches(realdata):
    logdir = realdata / "kafka-3.6-kraft-flink-stack/logdir"
    found = set()
    for path in sorted(logdir.rglob("*.log")):
        scan = columnar.read_batch_table(path)
        found |= set(scan.column("attributes").to_pylist())
    assert {3, 11} <= found          # README: lz4 (0x0003) and lz4 + LogAppendTime (0x000b)


def test_partition_and_log_dir_inputs(realdata, tmp_path):
    logdir = realdata / "kafka-2.5-zk-first-topic/final"
    pdir = logdir / "first_topic-1"
    t = columnar.read_records(pdir)
    assert set(t.column("topic").to_pylist()) == {"first_topic"}
    assert set(t.column("partition").to_pylist()) == {1}
    assert t.equals(columnar.read_records(pdir / LOG_NAME))
    whole = columnar.read_records(logdir, broker=5)
    assert set(whole.column("broker").to_pylist()) == {5}
    expected = sum(len(oracle_rows(p.read_bytes())) for p in logdir.rglob("*.log"))
    assert whole.num_rows == expected
    assert {"first_topic", "new_topic", "__consumer_offsets"} <= set(whole.column("topic").to_pylist())
    # an explicit topic/partition wins over the directory name
    t2 = columnar.read_records(pdir, topic="renamed", partition=9)
    assert set(t2.column("topic").to_pylist()) == {"renamed"}
    assert set(t2.column("partition").to_pylist()) == {9}


def _legacy_set(magic: int, codec: int, base_offset: int, values: list[bytes]) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 30)
    for i, v in enumerate(values):
        builder.append(i, timestamp=1_600_000_000_000 + i if magic else None,
                       key=b"k%d" % i if i % 2 else None, value=v)
    buf = bytearray(builder.build())
    # uncompressed: patch every entry's absolute offset; wrapper: its offset is the last offset
    pos = 0
    i = 0
    while pos < len(buf):
        size = struct.unpack_from(">i", buf, pos + 8)[0]
        if codec == 0:
            struct.pack_into(">q", buf, pos, base_offset + i)
        else:
            struct.pack_into(">q", buf, pos, base_offset + len(values) - 1)
        pos += 12 + size
        i += 1
    return bytes(buf)


def _kp_legacy_rows(data: bytes) -> list[dict]:
    rows = []
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        for r in batch:
            rows.append({"offset": r.offset, "timestamp_ms": r.timestamp,
                         "timestampType": r.timestamp_type, "key": r.key, "value": r.value})
    return rows


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("magic,codec", [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2), (1, 3)])
def test_legacy_message_sets_match_kafka_python(tmp_path, engine, magic, codec):
    values = [b"value-%d " % i * 5 for i in range(6)]
    data = _legacy_set(magic, codec, 20, values) + _legacy_set(magic, codec, 26, values)
    path = write_segment(tmp_path, data)
    t = columnar.read_records(path, engine=engine)
    got = t.select(["offset", "timestamp_ms", "timestampType", "key", "value"]).to_pylist()
    want = _kp_legacy_rows(data)
    for row in want:
        if row["timestampType"] is None:   # kafka-python says None where Kafka says -1
            row["timestampType"] = -1
        if row["timestamp_ms"] is None:
            row["timestamp_ms"] = -1
    assert got == want
    assert set(t.column("magic").to_pylist()) == {magic}
    assert set(t.column("leader_epoch").to_pylist()) == {-1}
    assert set(t.column("producer_id").to_pylist()) == {-1}
    assert set(t.column("headers").to_pylist()) == {None}
    scan = columnar.read_batch_table(path, engine=engine)
    assert scan.schema == BATCH_SCHEMA
    assert scan.num_rows == (2 if codec else 12)


@pytest.mark.parametrize("engine", ENGINES)
def test_legacy_then_v2_in_one_segment(tmp_path, engine):
    # a segment that lived through a message-format upgrade
    legacy = _legacy_set(1, 0, 0, [b"old-%d" % i for i in range(3)])
    v2 = kp_batch([Rec(b"k", b"new-%d" % i) for i in range(2)], base_offset=3)
    t = columnar.read_records(write_segment(tmp_path, legacy + v2), engine=engine)
    assert t.column("offset").to_pylist() == [0, 1, 2, 3, 4]
    assert t.column("magic").to_pylist() == [1, 1, 1, 2, 2]
    assert t.column("value").to_pylist() == [b"old-0", b"old-1", b"old-2", b"new-0", b"new-1"]


@pytest.mark.parametrize("engine", ENGINES)
def test_real_legacy_fetch_bytes(realdata, tmp_path, engine):
    folder = realdata / "kafka-0.8-0.9-legacy-messages"
    lines = (folder / "fetch1.txt").read_text().splitlines()
    for src in sorted(folder.glob("fetch1.*.records.bin")):
        d = tmp_path / src.name.replace(".", "_")
        d.mkdir()
        shutil.copy(src, d / LOG_NAME)
        t = columnar.read_records(d / LOG_NAME, engine=engine)
        assert t.column("offset").to_pylist() == list(range(42)), src.name
        assert [v.decode() for v in t.column("value").to_pylist()] == lines[:42], src.name
        assert all(t.column("crc_valid").to_pylist())
        assert set(t.column("timestampType").to_pylist()) == {-1}
    bad = folder / "fetch2.mytopic.nocompression.invalid_crc.kafka.0900.tmy-topic.p0.records.bin"
    d = tmp_path / "invalid"
    d.mkdir()
    shutil.copy(bad, d / LOG_NAME)
    assert columnar.read_records(d / LOG_NAME, engine=engine).column("crc_valid").to_pylist() == [False]
    assert columnar.read_batch_table(d / LOG_NAME, engine=engine).column("crc_valid").to_pylist() == [False]


def test_empty_segment_gives_empty_tables(tmp_path):
    path = write_segment(tmp_path, b"")
    assert columnar.read_records(path).num_rows == 0
    assert columnar.read_records(path).schema == RECORD_SCHEMA
    assert columnar.read_batch_table(path).num_rows == 0


def test_public_api_is_exported():
    import segtools

    assert segtools.read_records is columnar.read_records
    assert segtools.read_batch_table is columnar.read_batch_table
    assert isinstance(segtools.read_records, type(columnar.read_records))


def test_large_segment_is_read_in_bounded_chunks(tmp_path):
    rng = random.Random(4)
    batch_bytes = [kp_batch([Rec(b"k", bytes(rng.randrange(256) for _ in range(100)))] * 50,
                            base_offset=0) for _ in range(4)]
    out = bytearray()
    offset = 0
    while len(out) < 8 << 20:
        buf = bytearray(batch_bytes[offset // 50 % 4])
        struct.pack_into(">q", buf, 0, offset)
        out += buf
        offset += 50
    path = write_segment(tmp_path, bytes(out))
    sizes = [b.num_rows for b in columnar.iter_record_batches(path, max_rows=10_000)]
    assert sum(sizes) == offset
    assert max(sizes) <= 10_000 and len(sizes) >= offset // 10_000
    first_offsets = [b.column("offset")[0].as_py() for b in columnar.iter_record_batches(path, max_rows=10_000)]
    assert first_offsets == sorted(first_offsets)
    assert pa.Table.from_batches(list(columnar.iter_record_batches(path))).num_rows == offset


def test_consecutive_legacy_entries_share_output_chunks(tmp_path):
    data = _legacy_set(1, 0, 0, [b"m%d" % i for i in range(250)])
    path = write_segment(tmp_path, data)
    sizes = [b.num_rows for b in columnar.iter_record_batches(path, max_rows=100)]
    assert sizes == [100, 100, 50]
    t = columnar.read_records(path)
    assert t.column("offset").to_pylist() == list(range(250))


_BATCH_FIELDS = ["base_offset", "last_offset", "partition_leader_epoch", "magic", "crc",
                 "crc_valid", "attributes", "compression", "timestamp_type", "is_transactional",
                 "is_control", "last_offset_delta", "base_timestamp", "max_timestamp",
                 "producer_id", "producer_epoch", "base_sequence", "records_count", "position",
                 "size"]


def _agree_with_object_reader(path: Path) -> None:
    from segtools.records.batches import SegmentReader

    records = columnar.read_records(path).to_pylist()
    batches = columnar.read_batch_table(path).to_pylist()
    objects = []
    rows = []
    with SegmentReader(str(path)) as reader:
        for b in reader:
            objects.append(b)
            for r in b.records():
                rows.append((r.offset, r.timestamp, r.key, r.value,
                             [tuple(h) for h in r.headers] or None, r.sequence, b.is_control))
    mine = [(x["offset"], x["timestamp_ms"], x["key"], x["value"],
             [(h["key"], h["value"]) for h in x["headers"]] if x["headers"] else None,
             x["sequence"], x["is_control"]) for x in records]
    assert mine == rows, path
    assert [{f: x[f] for f in _BATCH_FIELDS} for x in batches] == \
        [{f: getattr(b, f) for f in _BATCH_FIELDS} for b in objects], path


def test_columnar_and_object_reader_agree(realdata, tmp_path):
    # two implementations in this repo written by different people: a cross-check, the
    # kafka-python tests above are the independent oracle
    for path in _real_logs(realdata):
        _agree_with_object_reader(path)
    for seed in range(10):
        _agree_with_object_reader(write_segment(tmp_path, random_segment(random.Random(seed)),
                                                name=f"r-{seed}"))
    for magic, codec in [(0, 1), (1, 2)]:
        data = _legacy_set(magic, codec, 5, [b"x%d" % i * 3 for i in range(4)])
        _agree_with_object_reader(write_segment(tmp_path, data, name=f"l{magic}{codec}-0"))
