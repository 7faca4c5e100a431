"""`segtools salvage` on real broker segments (tests/data/realdata) mutated at test time.

Expected values come from the ORIGINAL file: its batch boundaries (length fields of an intact
file, every batch CRC-checked by kafka-python, an independent reader) and which of those
batches the mutation changed. The rebuilt segment must be exactly the unchanged batches, the
manifest must list exactly the changed ones (adjacent ones as one range), and kafka-python
must read the rebuilt file whole."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner
from hang_guard import no_hang
from segment_extents import batch_extents

from segtools.cli.main import cli

SOURCES = [
    "kafka-2.5-zk-first-topic/final/first_topic-2/00000000000000000000.log",
    "kafka-2.5-zk-first-topic/final/__consumer_offsets-32/00000000000000000000.log",
    "kafka-3.6-kraft-flink-stack/logdir/connect-offsets-14/00000000000000000000.log",
    "kafka-3.6-kraft-flink-stack/logdir/_confluent-controlcenter-7-6-0-1-monitoring-trigger-event-rekey-0/00000000000000000000.log",
    # legacy magic 0 / 1 message sets (CRC-32), staged as a segment below
    "kafka-0.8-0.9-legacy-messages/fetch1.mytopic.1p.nocompression.kafka.0821.tmy-topic.p0.records.bin",
    "kafka-0.8-0.9-legacy-messages/fetch1.mytopic.1p.gzip.kafka.0821.tmy-topic.p0.records.bin",
]


def _extents(data: bytes) -> list[tuple[int, int]]:
    """Batch extents of an INTACT file, each checked by kafka-python (CRC and framing)."""
    from kafka.record.memory_records import MemoryRecords

    out = batch_extents(data)
    assert (out[-1][1] if out else 0) == len(data)
    records = MemoryRecords(data)
    n = 0
    while (batch := records.next_batch()) is not None:
        assert batch.validate_crc()
        n += 1
    assert n == len(out)
    return out


def _stage(realdata: Path, rel: str, dest: Path) -> Path:
    part = dest / "orders-0"
    part.mkdir(parents=True)
    seg = part / "00000000000000000000.log"
    seg.write_bytes((realdata / rel).read_bytes())
    return seg


def _covered(rel: int) -> bool:
    """Byte positions inside a batch that the CRC protects or that decide where the batch is
    (length, magic, crc): a flip there is always detectable. Bytes 0-7 (baseOffset) and 12-15
    (partitionLeaderEpoch) are not, and have their own test below."""
    return not (rel < 8 or 12 <= rel < 16)


def _mutants(data: bytes, extents: list[tuple[int, int]], rng: random.Random) -> list[tuple[str, bytes]]:
    out = []
    for _ in range(3):   # bit flips in the protected bytes of random batches
        buf = bytearray(data)
        for _ in range(rng.choice((1, 2, 3))):
            start, end = rng.choice(extents)
            rel = rng.choice([r for r in range(end - start) if _covered(r)])
            buf[start + rel] ^= 1 << rng.randrange(8)
        out.append(("bitflip", bytes(buf)))
    for _ in range(2):   # zeroed ranges
        buf = bytearray(data)
        at = rng.randrange(len(data) - 40)
        n = rng.choice((40, 100, 1000, 5000))
        buf[at:at + n] = bytes(len(buf[at:at + n]))
        out.append(("zeroed", bytes(buf)))
    cut = rng.randrange(len(data) // 2, len(data))   # a torn tail
    out.append(("truncate", data[:cut]))
    return out


Extents = list[tuple[int, int]]


def _expected(data: bytes, mutant: bytes, extents: Extents) -> tuple[Extents, Extents]:
    """(intact extents, damaged ranges merged) from the original and the mutant's bytes."""
    intact, damaged = [], []
    for start, end in extents:
        if end <= len(mutant) and mutant[start:end] == data[start:end]:
            intact.append((start, end))
        elif start < len(mutant):
            stop = min(end, len(mutant))
            if damaged and damaged[-1][1] == start:
                damaged[-1] = (damaged[-1][0], stop)
            else:
                damaged.append((start, stop))
    return intact, damaged


def _name(rel: str) -> str:
    return rel.split("/")[-2] if rel.endswith(".log") else rel.split("/")[-1][:30]


@pytest.mark.parametrize("rel", SOURCES, ids=_name)
def test_every_intact_batch_is_kept_and_every_damaged_range_listed(realdata, tmp_path, rel):
    from kafka.record.memory_records import MemoryRecords

    data = (realdata / rel).read_bytes()
    extents = _extents(data)
    rng = random.Random(rel)
    for i, (kind, mutant) in enumerate(_mutants(data, extents, rng)):
        seg = _stage(realdata, rel, tmp_path / f"in{i}")
        seg.write_bytes(mutant)
        out = tmp_path / f"out{i}"
        result = CliRunner().invoke(cli, ["salvage", str(seg), "--out", str(out)])
        intact, damaged = _expected(data, mutant, extents)
        assert result.exit_code == (1 if damaged else 0), (kind, result.output)
        assert seg.read_bytes() == mutant   # the input is evidence
        manifest = json.loads((out / "manifest.json").read_text())
        (entry,) = manifest["segments"]
        assert [(d["start"], d["end"]) for d in entry["dropped"]] == damaged, (kind, i)
        if kind == "truncate" and damaged:
            assert entry["dropped"][-1]["reason"] == "torn_tail"
        rebuilt = (out / "orders-0" / "00000000000000000000.log").read_bytes()
        assert rebuilt == b"".join(data[s:e] for s, e in intact), (kind, i)
        # kafka-python reads the rebuilt segment whole, every CRC valid
        records, n = MemoryRecords(rebuilt), 0
        while (batch := records.next_batch()) is not None:
            assert batch.validate_crc()
            n += 1
        assert n == len(intact)
        # what Kafka's LogSegment.recover would throw away: intact batches behind the first damage
        if damaged:
            behind = [x for x in intact if x[0] >= damaged[0][0]]
            assert entry["kafka_recovery"]["truncates_at_position"] == damaged[0][0]
            assert [r[:2] for r in entry["kafka_recovery"]["intact_ranges_deleted"]] == [list(x) for x in behind]
        assert (out / "_SUCCESS").is_file() and not (out / "_PARTIAL").exists()


def test_a_changed_base_offset_is_found_though_the_crc_does_not_cover_it(realdata, tmp_path):
    rel = SOURCES[2]
    data = (realdata / rel).read_bytes()
    extents = _extents(data)
    buf = bytearray(data)
    start, end = extents[len(extents) // 2]
    buf[start + 1] ^= 0x40     # baseOffset += 2**54 on a batch in the middle
    start2, end2 = extents[10]
    buf[start2] ^= 0x80        # baseOffset negative: below the segment's base offset
    seg = _stage(realdata, rel, tmp_path / "in")
    seg.write_bytes(bytes(buf))
    result = CliRunner().invoke(cli, ["salvage", str(seg), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    entry = json.loads((tmp_path / "out" / "manifest.json").read_text())["segments"][0]
    got = [(d["start"], d["end"], d["reason"]) for d in entry["dropped"]]
    expected = sorted([(start, end, "inconsistent_header"), (start2, end2, "inconsistent_header")])
    assert got == expected


def test_clean_segment_is_rebuilt_byte_for_byte_with_kafkas_indexes(realdata, tmp_path):
    """Unchanged input: same .log, and the .index Kafka itself wrote for it (3.6 broker);
    .timeindex timestamps as Kafka wrote them (Kafka before 3.8 pointed an entry at the record
    with the max timestamp, Kafka 4's recover at its batch's last offset: same batch)."""
    src = realdata / "kafka-3.6-kraft-flink-stack/logdir/orders-0"
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["salvage", str(src), "--out", str(out)])
    assert result.exit_code == 0, result.output
    new = out / "orders-0"
    assert (new / "00000000000000000000.log").read_bytes() == (src / "00000000000000000000.log").read_bytes()

    def entries(p: Path, width: int) -> list[bytes]:
        d = p.read_bytes()
        e = [d[i:i + width] for i in range(0, len(d) - width + 1, width)]
        while e and not any(e[-1]):
            e.pop()
        return e

    assert entries(new / "00000000000000000000.index", 8) == entries(src / "00000000000000000000.index", 8)
    ours = entries(new / "00000000000000000000.timeindex", 12)
    kafka = entries(src / "00000000000000000000.timeindex", 12)
    assert [e[:8] for e in ours] == [e[:8] for e in kafka]
    assert len(ours) > 100


def test_refuses_an_output_inside_the_input_and_a_non_empty_folder(realdata, tmp_path):
    seg = _stage(realdata, SOURCES[0], tmp_path / "in")
    runner = CliRunner()
    result = runner.invoke(cli, ["salvage", str(seg), "--out", str(seg.parent / "salvaged")])
    assert result.exit_code == 2 and "inside the input" in result.output
    assert sorted(p.name for p in seg.parent.iterdir()) == ["00000000000000000000.log"]
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("keep")
    result = runner.invoke(cli, ["salvage", str(seg), "--out", str(busy)])
    assert result.exit_code == 2 and "not empty" in result.output
    assert (busy / "x").read_text() == "keep"


def test_a_large_zeroed_range_is_skipped_quickly(tmp_path):
    """Resynchronising over 64 MiB of zeros (a preallocated or wiped region) takes numpy steps,
    not a Python loop per byte."""

    from kafka.record.default_records import DefaultRecordBatchBuilder

    def batch(base: int) -> bytes:
        b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
        b.append(0, timestamp=1_700_000_000_000 + base, key=b"k", value=b"v%d" % base, headers=[])
        raw = bytearray(b.build())
        raw[0:8] = base.to_bytes(8, "big")
        return bytes(raw)

    part = tmp_path / "t-0"
    part.mkdir()
    seg = part / "00000000000000000000.log"
    with open(seg, "wb") as fh:
        fh.write(batch(0))
        fh.write(bytes(64 << 20))
        fh.write(batch(1))
    with no_hang(300):     # a byte-by-byte rescan of the 64 MiB hole would run for hours
        result = CliRunner().invoke(cli, ["salvage", str(seg), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    entry = json.loads((tmp_path / "out" / "manifest.json").read_text())["segments"][0]
    first = len(batch(0))
    assert [(d["start"], d["end"]) for d in entry["dropped"]] == [(first, first + (64 << 20))]
    assert entry["kept_batches"] == 2
    assert entry["kafka_recovery"]["intact_batches_deleted"] == 1


def test_a_partition_dir_is_salvaged_segment_by_segment(tmp_path):
    """Three segments written by segtools' writer, the middle one damaged: every segment is
    rebuilt under its own name, only the middle one has a dropped range, and the manifest says
    Kafka's recovery would also delete the segments after it (LogLoader.recoverLog)."""
    from segtools.writer import LogWriter, NewRecord, build_batch

    part = tmp_path / "t-0"
    w = LogWriter(part, segment_bytes=2000)
    for i in range(40):
        w.append(build_batch([NewRecord(b"k%d" % i, b"v" * 50, timestamp=1000 + i)], base_offset=i))
    w.close()
    logs = sorted(p.name for p in part.glob("*.log"))
    assert len(logs) == 3
    mid = part / logs[1]
    data = bytearray(mid.read_bytes())
    data[300] ^= 1
    mid.write_bytes(bytes(data))
    result = CliRunner().invoke(cli, ["salvage", str(part), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output
    assert sorted(p.name for p in (tmp_path / "out" / "t-0").glob("*.log")) == logs
    entries = json.loads((tmp_path / "out" / "manifest.json").read_text())["segments"]
    assert [bool(e["dropped"]) for e in entries] == [False, True, False]
    assert entries[1]["kafka_recovery"]["later_segments_deleted_if_unflushed"] == [logs[2]]
    assert entries[0]["kafka_recovery"]["later_segments_deleted_if_unflushed"] == []
