"""The model's leader-epoch-checkpoint follows Kafka: a replica assigns its new leader epoch at its
log end when it becomes leader (Partition.makeLeader -> UnifiedLog.maybeAssignEpochStartOffset,
since KAFKA-7415), not at its first append; log recovery drops an entry at or past the log end
(LogLoader.load -> LeaderEpochFileCache.truncateFromEndAsyncFlush(nextOffset), in Kafka 4.3.1's
kafka-storage jar) and so does a follower's truncation (truncateFromEnd: entries whose start
offset is >= the truncation offset).

Oracles: the elections in truth.json (leader, epoch, start offset) and, for the never-appending
leader, a real broker's dir: Kafka 3.6's empty partitions in tests/data/realdata carry the
creation epoch's entry ``0 0`` although they hold no batch."""

from __future__ import annotations

from pathlib import Path

from segtools.simulate import run

REAL = Path(__file__).resolve().parents[1] / "data" / "realdata" / "kafka-3.6-kraft-flink-stack" / "logdir"

# broker 1 leads epoch 0 and appends a0 (replicated); it crashes, broker 2 takes over cleanly in
# epoch 1 at offset 1 and is killed before anything is produced to it
ELECTED_THEN_KILLED = {
    "name": "epoch-at-election", "seed": 5,
    "cluster": {"brokers": [1, 2], "metadata_log": True},
    "topics": [{"name": "e", "partitions": 1, "replication_factor": 2, "min_insync_replicas": 1,
                "assignment": {0: [1, 2]}},
               {"name": "idle", "partitions": 1, "replication_factor": 1, "assignment": {0: [1]}}],
    "steps": [
        {"produce": {"topic": "e", "partition": 0, "acks": "all", "values": ["a0"]}},
        {"crash": {"broker": 1}},
        {"crash": {"broker": 2}},
    ],
}


def _entries(path: Path) -> list[tuple[int, int]]:
    # the text format (version, count, "epoch offset" lines), read without segtools' reader
    lines = path.read_text().split("\n")
    assert lines[0] == "0" and int(lines[1]) == len([x for x in lines[2:] if x])
    return [(int(a), int(b)) for a, b in (x.split() for x in lines[2:] if x)]


def test_a_leader_killed_before_appending_has_its_epoch_entry(tmp_path):
    result = run(ELECTED_THEN_KILLED, str(tmp_path))
    (elected,) = [e for e in result.truth["e-0"]["elections"] if e["leader"] == 2]
    assert elected["start_offset"] == 1
    assert not any(a.get("leader_epoch") == elected["epoch"] for a in result.acks)   # never appended
    entries = _entries(tmp_path / "broker-2" / "e-0" / "leader-epoch-checkpoint")
    assert entries[-1] == (elected["epoch"], elected["start_offset"])
    assert (0, 0) in entries       # epoch 0 came with a0's batch


def test_an_idle_partition_carries_its_creation_epoch_like_a_real_broker(tmp_path):
    run(ELECTED_THEN_KILLED, str(tmp_path))
    model = tmp_path / "broker-1" / "idle-0"
    assert not any(f.stat().st_size for f in model.glob("*.log"))
    real = REAL / "__consumer_offsets-0"
    assert not any(f.stat().st_size for f in real.glob("*.log"))    # a leader that never appended
    assert _entries(real / "leader-epoch-checkpoint") == [(0, 0)]
    assert _entries(model / "leader-epoch-checkpoint") == [(0, 0)]


def test_recovery_drops_an_entry_at_the_log_end(tmp_path):
    """Broker 2's epoch-1 entry starts at its log end: restarted, it is gone (truncateFromEnd);
    the epoch it is elected in after the restart is assigned again at that log end."""
    scenario = {**ELECTED_THEN_KILLED, "steps": [*ELECTED_THEN_KILLED["steps"], {"restart": {"broker": 2}},
                                                 {"crash": {"broker": 2}}]}
    result = run(scenario, str(tmp_path))
    elections = [e for e in result.truth["e-0"]["elections"] if e["leader"] == 2]
    assert [e["start_offset"] for e in elections] == [1, 1]
    entries = _entries(tmp_path / "broker-2" / "e-0" / "leader-epoch-checkpoint")
    assert entries == [(0, 0), (elections[-1]["epoch"], 1)]
