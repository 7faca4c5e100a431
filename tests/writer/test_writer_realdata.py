"""Replaying real broker logs through LogWriter reproduces the broker's own index and producer
snapshot files (the oracle is Kafka itself: files in tests/data/realdata, not written by us)."""

from __future__ import annotations

import shutil
from pathlib import Path

from kafka.record import MemoryRecords

from segtools.files.indexes import read_time_index
from segtools.writer import LogWriter


def kafka_python_batches(data: bytes) -> list[tuple[bytes, int, int]]:
    """(batch bytes, base offset, last offset) split by kafka-python's reader."""
    records = MemoryRecords(data)
    out, pos = [], 0
    while (batch := records.next_batch()) is not None:
        size = batch.size_in_bytes
        out.append((data[pos:pos + size], batch.base_offset,
                    batch.base_offset + batch.last_offset_delta))
        pos += size
    assert pos == len(data)
    return out


def replay(partition: Path, target: Path) -> LogWriter:
    """Append every batch of every segment of ``partition`` (one append per batch, as a leader
    appends one produce request) into a new log at ``target``; closes it."""
    logs = sorted(partition.glob("*.log"))
    writer = LogWriter(target)
    first_base = int(logs[0].name[:20])
    if first_base:
        writer.truncate_fully_and_start_at(first_base)
    for log in logs:
        if int(log.name[:20]) != writer.active_segment_base:
            writer.roll()
        for raw, _base, _last in kafka_python_batches(log.read_bytes()):
            writer.append(raw)
    writer.close()
    return writer


def v2_partitions(realdata: Path) -> list[Path]:
    out = []
    for index in sorted(realdata.glob("**/*.index")):
        log = index.with_suffix(".log")
        if log.exists() and log.stat().st_size > 0 and log.read_bytes()[16] == 2:
            out.append(index.parent)
    return sorted(set(out))


def test_offset_and_time_indexes_match_the_broker(realdata: Path, tmp_path: Path) -> None:
    partitions = v2_partitions(realdata)
    assert len(partitions) >= 25  # 3.6 KRaft stack (incl. __cluster_metadata) + 2.5 ZK
    checked_entries = 0
    for n, partition in enumerate(partitions):
        target = tmp_path / f"p{n}-0"
        replay(partition, target)
        for index in sorted(partition.glob("*.index")):
            base = int(index.name[:20])
            ours = target / index.name
            # the offset index is byte-identical
            assert ours.read_bytes() == index.read_bytes(), index
            checked_entries += index.stat().st_size // 8
            theirs_time = read_time_index(index.with_suffix(".timeindex"))
            ours_time = read_time_index(ours.with_suffix(".timeindex"))
            assert ours_time["timestamp"].tolist() == theirs_time["timestamp"].tolist(), index
            # Brokers before KAFKA-16310 (3.8) stored the offset of the *record* holding the max
            # timestamp; the spec's rule (and ours) stores the last offset of its batch. Both
            # must name the same batch.
            batches = kafka_python_batches(index.with_suffix(".log").read_bytes())
            for (_, r_ours), (_, r_theirs) in zip(ours_time.tolist(), theirs_time.tolist()):
                (batch,) = [b for b in batches if b[1] <= base + r_theirs <= b[2]]
                assert base + r_ours == batch[2], index
    assert checked_entries > 500


def test_producer_snapshots_match_the_broker(realdata: Path, tmp_path: Path) -> None:
    snapshots = [s for s in sorted(realdata.glob("**/*.snapshot")) if any(s.parent.glob("*.log"))]
    with_entries = 0
    for n, snapshot in enumerate(snapshots):
        target = tmp_path / f"s{n}-0"
        writer = replay(snapshot.parent, target)
        # the broker's last snapshot is named after its log end offset at shutdown
        assert writer.log_end_offset == int(snapshot.name[:20]), snapshot
        ours = target / snapshot.name
        assert ours.read_bytes() == snapshot.read_bytes(), snapshot
        with_entries += snapshot.stat().st_size > 10
    assert with_entries >= 10  # idempotent producers, several with 5 entries in HashMap order


def test_recovering_a_copy_of_real_partitions_rebuilds_the_broker_offset_index(
        realdata: Path, tmp_path: Path) -> None:
    partitions = v2_partitions(realdata)
    for n, partition in enumerate(partitions):
        copy = tmp_path / f"c{n}-0"
        shutil.copytree(partition, copy)
        for f in copy.iterdir():
            f.chmod(0o644)
        logs = sorted(copy.glob("*.log"))
        # a crash mid-write: a third of the first batch appended again at the end
        head = logs[0].read_bytes()[:40]
        with open(logs[-1], "ab") as f:
            f.write(head)
        for index in copy.glob("*.index"):
            index.write_bytes(b"")  # lost, to be rebuilt
        writer = LogWriter(copy, create=False)
        assert writer.recover(0) == len(head)
        for index in sorted(partition.glob("*.index")):
            assert (copy / index.name).read_bytes()[: index.stat().st_size] == index.read_bytes(), index
        assert [p.read_bytes() for p in sorted(copy.glob("*.log"))] == [
            p.read_bytes() for p in sorted(partition.glob("*.log"))]
        writer.close()
        for index in sorted(partition.glob("*.index")):
            assert (copy / index.name).read_bytes() == index.read_bytes(), index
