"""Every batch file written by real brokers (tests/data/realdata) parses with zero CRC errors
and agrees with independent facts: kafka-python's reader on the same bytes, the brokers'
own offset indexes and offset checkpoints, the README's counts and the legacy text vectors."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from kafka.record.memory_records import MemoryRecords

from segtools.records.batches import SegmentReader, iter_batches, segment_paths

LEGACY = "kafka-0.8-0.9-legacy-messages"
KRAFT = "kafka-3.6-kraft-flink-stack/logdir"


def _batch_files(root: Path) -> list[Path]:
    files = [p for p in root.rglob("*") if p.is_file() and
             p.name.endswith((".log", ".checkpoint", ".records.bin"))]
    return sorted(files)


def _kafka_python_view(raw: bytes):
    """(batches, records) as kafka-python reads them: independent oracle."""
    batches, records = [], []
    mr = MemoryRecords(raw)
    while True:
        kb = mr.next_batch()
        if kb is None:
            break
        # validate before iterating: kafka-python's legacy validate_crc() is wrong after its
        # deep iteration has decompressed the wrapper
        batches.append((kb, kb.validate_crc()))
        records.extend((r.offset, r.timestamp, r.key, r.value, list(r.headers or []))
                       for r in kb)
    return batches, records


def test_every_real_batch_file_parses_with_valid_crcs_and_matches_kafka_python(realdata):
    files = _batch_files(realdata)
    # 55 segments, 4 KRaft snapshots (bootstrap.checkpoint too), 6 legacy message sets
    assert len(files) == 65
    totals = Counter()
    for path in files:
        raw = path.read_bytes()
        with SegmentReader(path) as reader:
            batches = list(reader)
            assert reader.valid_bytes == reader.file_size == len(raw), path
        # kafka-python reports no timestamp (None) for magic 0 messages; Kafka's -1
        records = [(r.offset, None if r.magic == 0 else r.timestamp, r.key, r.value, r.headers)
                   for b in batches for r in b.records()]
        if "invalid_crc" not in path.name:
            assert all(b.crc_valid for b in batches), path
        kbatches, krecords = _kafka_python_view(raw)
        assert len(batches) == len(kbatches), path
        for b, (kb, kvalid) in zip(batches, kbatches):
            # kafka-python's CRC check agrees with ours (only the invalid_crc vector fails)
            assert kvalid == b.crc_valid == ("invalid_crc" not in path.name), path
            assert b.crc == (kb.crc if b.magic == 2 else kb._crc)
            if b.magic == 2:
                assert (b.base_offset, b.last_offset_delta, b.last_offset, b.records_count,
                        b.partition_leader_epoch, b.producer_id, b.producer_epoch,
                        b.base_sequence, b.last_sequence, b.base_timestamp, b.max_timestamp,
                        b.is_transactional, b.is_control, b.compression_id,
                        b.timestamp_type == "LogAppendTime", b.size) == \
                    (kb.base_offset, kb.last_offset_delta, kb.last_offset, kb.records_count,
                     kb.leader_epoch, kb.producer_id, kb.producer_epoch, kb.base_sequence,
                     kb.last_sequence, kb.first_timestamp, kb.max_timestamp,
                     kb.is_transactional, kb.is_control_batch, kb.compression_type,
                     kb.timestamp_type == 1, kb.size_in_bytes), path
            assert b.magic == kb.magic
        assert records == krecords, path
        totals["files"] += 1
        totals["batches"] += len(batches)
        totals["records"] += len(records)
        totals["bytes"] += len(raw)
        for b in batches:
            totals[f"attrs=0x{b.attributes:04x}"] += 1
    # the README names LZ4 (0x0003) and LZ4 + LogAppendTime (0x000b) batches
    assert totals["attrs=0x0003"] > 0 and totals["attrs=0x000b"] > 0
    assert totals["records"] > 100_000


def test_kraft_metadata_log_counts_from_readme(realdata):
    batches = list(iter_batches(realdata / KRAFT / "__cluster_metadata-0"))
    assert len(batches) == 16_340
    assert batches[0].base_offset == 0
    assert batches[-1].last_offset == 17_026
    # offsets are contiguous across batches
    for prev, nxt in zip(batches, batches[1:]):
        assert nxt.base_offset == prev.last_offset + 1
    leader_changes = [c for b in batches for c in b.control_records()]
    assert leader_changes and {c.type_name for c in leader_changes} == {"LEADER_CHANGE"}


def test_kraft_snapshots_have_header_and_footer(realdata):
    for path in sorted((realdata / KRAFT / "__cluster_metadata-0").glob("*.checkpoint")):
        end_offset = int(path.name[:20])
        batches = list(SegmentReader(path))
        first = batches[0].control_records()
        last = batches[-1].control_records()
        assert [c.type_name for c in first] == ["SNAPSHOT_HEADER"]
        assert [c.type_name for c in last] == ["SNAPSHOT_FOOTER"]
        assert first[0].value["version"] == 0
        # the snapshot holds records up to (excluding) its end offset
        data_offsets = [r.offset for b in batches[1:-1] for r in b.records()]
        assert max(data_offsets) < end_offset


def test_small_zk_topic_values(realdata):
    records = [r for b in iter_batches(realdata / "kafka-2.0-zk-small/logdir/subhash-0")
               for r in b.records()]
    assert [r.value for r in records] == [b"subhash", b"reddy", b"kaipa"]
    assert [r.offset for r in records] == [0, 1, 2]


def _checkpoint(path: Path) -> dict[tuple[str, int], int]:
    lines = path.read_text().splitlines()
    out = {}
    for line in lines[2:]:
        topic, part, off = line.rsplit(" ", 2)
        out[(topic, int(part))] = int(off)
    return out


@pytest.mark.parametrize("logdir,checkpoints", [
    ("kafka-2.5-zk-first-topic/final",
     ["recovery-point-offset-checkpoint", "replication-offset-checkpoint"]),
    (KRAFT, ["recovery-point-offset-checkpoint", "replication-offset-checkpoint"]),
    ("kafka-2.0-zk-small/logdir", ["replication-offset-checkpoint"]),
])
def test_log_end_offsets_match_broker_checkpoints(realdata, logdir, checkpoints):
    """After a clean shutdown the broker's checkpoints hold each partition's log end offset."""
    root = realdata / logdir
    for name in checkpoints:
        checked = 0
        for (topic, part), offset in _checkpoint(root / name).items():
            pdir = root / f"{topic}-{part}"
            logs = sorted(pdir.glob("*.log"))
            if not logs:
                continue  # e.g. customers-0 lost its .log (README)
            batches = list(iter_batches(pdir))
            leo = batches[-1].last_offset + 1 if batches else int(logs[0].name[:20])
            assert leo == offset, (name, topic, part)
            checked += 1
        assert checked >= 4


def test_offset_index_entries_point_at_batches(realdata):
    """Broker-written .index entries: (last offset - base, position of the batch)."""
    checked = 0
    for index in sorted(realdata.rglob("*.index")):
        log = index.with_suffix(".log")
        if not log.exists() or index.stat().st_size == 0:
            continue
        base = int(index.name[:20])
        entries = np.frombuffer(index.read_bytes(), dtype=[("rel", ">i4"), ("pos", ">i4")])
        by_pos = {b.position: b for b in SegmentReader(log)}
        for i, (rel, pos) in enumerate(entries.tolist()):
            if i > 0 and rel == 0 and pos == 0:
                break  # preallocated zero tail
            batch = by_pos[pos]
            assert batch.last_offset == base + rel, (index, i)
            checked += 1
    assert checked > 100


def test_early_is_prefix_of_final(realdata):
    early = realdata / "kafka-2.5-zk-first-topic/early"
    final = realdata / "kafka-2.5-zk-first-topic/final"
    compared = 0
    for pdir in sorted(p for p in early.iterdir() if p.is_dir()):
        a = [(r.offset, r.key, r.value) for b in iter_batches(pdir) for r in b.records()]
        b = [(r.offset, r.key, r.value) for b in iter_batches(final / pdir.name)
             for r in b.records()]
        assert b[:len(a)] == a, pdir.name
        compared += bool(a)
    assert compared >= 4


def test_broker_log_dir_order_topic_then_partition(realdata):
    root = realdata / "kafka-2.5-zk-first-topic/final"
    # every partition dir with a .log, in reading order (empty segments included)
    dirs = [os.path.basename(os.path.dirname(p)) for p in segment_paths(root)]
    keys = [(n.rpartition("-")[0], int(n.rpartition("-")[2])) for n in dirs]
    with_log = [d.name for d in root.iterdir() if d.is_dir() and any(d.glob("*.log"))]
    assert sorted(dirs) == sorted(with_log) and len(dirs) == len(set(dirs))
    assert keys == sorted(keys)
    # iter_batches follows that order
    seen = []
    for b in iter_batches(root):
        name = os.path.basename(os.path.dirname(b.path))
        if not seen or seen[-1] != name:
            seen.append(name)
    assert seen == [d for d in dirs if d in set(seen)]
    assert len(set(seen)) == len(seen)


# ------------------------------------------------------------------------- legacy 0.8/0.9 vectors

def _legacy_file(realdata: Path, stem: str) -> Path:
    return realdata / LEGACY / f"{stem}.tmy-topic.p0.records.bin"


@pytest.mark.parametrize("stem,codec,outer", [
    ("fetch1.mytopic.1p.nocompression.kafka.0821", "none", 42),
    ("fetch1.mytopic.1p.gzip.kafka.0821", "gzip", 1),
    ("fetch1.mytopic.1p.snappy.kafka.0821", "snappy", 1),
    ("fetch1.mytopic.1p.snappy.kafka.0822", "snappy", 1),
])
def test_legacy_fetch1_messages_are_the_text_lines(realdata, stem, codec, outer):
    lines = (realdata / LEGACY / "fetch1.txt").read_bytes().split(b"\n")
    assert lines[-1] == b""
    lines = lines[:-1]
    assert len(lines) == 42
    with SegmentReader(_legacy_file(realdata, stem)) as reader:
        batches = list(reader)
        assert reader.valid_bytes == reader.file_size
    assert len(batches) == outer
    assert {b.magic for b in batches} == {0}
    assert {b.compression for b in batches} == {codec}
    assert all(b.crc_valid for b in batches)
    assert {b.timestamp_type for b in batches} == {"NoTimestampType"}
    records = [r for b in batches for r in b.records()]
    assert [r.value for r in records] == lines
    assert [r.offset for r in records] == list(range(42))
    assert {r.key for r in records} == {None}
    assert {r.timestamp for r in records} == {-1}
    assert all(r.crc_valid for r in records)
    if outer == 1:  # README: one outer message at offset 41 holding offsets 0..41
        assert batches[0].last_offset == 41 and batches[0].base_offset == 0
        assert batches[0].records_count == 42


def test_legacy_fetch2_and_invalid_crc(realdata):
    text = (realdata / LEGACY / "fetch2.txt").read_bytes().rstrip(b"\n")
    [good] = list(SegmentReader(_legacy_file(realdata, "fetch2.mytopic.nocompression.kafka.0900")))
    [bad] = list(SegmentReader(
        _legacy_file(realdata, "fetch2.mytopic.nocompression.invalid_crc.kafka.0900")))
    assert good.crc_valid is True
    assert [r.value for r in good.records()] == [text]
    assert bad.crc_valid is False
    assert bad.crc != bad.computed_crc
    assert bad.computed_crc == good.computed_crc  # same message bytes, different stored CRC
    [rec] = list(bad.records())
    assert rec.crc_valid is False and rec.value == text
    # kafka-python agrees which one is corrupt
    raw_bad = _legacy_file(realdata, "fetch2.mytopic.nocompression.invalid_crc.kafka.0900")
    assert MemoryRecords(raw_bad.read_bytes()).next_batch().validate_crc() is False
