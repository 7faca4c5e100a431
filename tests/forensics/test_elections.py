"""Election history from KRaft metadata records (FORENSICS.md A.9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from segtools.errors import InputError
from segtools.forensics.elections import load_histories, replay

TID = "dRIZhvotRveXjSZwRXM2gA"


def test_replay_epochs_unclean_flag_and_expected_leader():
    records = [
        ("TOPIC_RECORD", 0, {"name": "orders", "topicId": TID}),
        ("PARTITION_RECORD", 0, {"partitionId": 0, "topicId": TID, "replicas": [1, 2, 3], "isr": [1, 2, 3],
                                 "leader": 1, "leaderRecoveryState": 0, "leaderEpoch": 5, "partitionEpoch": 0}),
        # ISR shrink only: no leader change, no epoch bump in our replay
        ("PARTITION_CHANGE_RECORD", 0, {"partitionId": 0, "topicId": TID, "isr": [1], "leader": -2}),
        # leader lost: epoch 6 with leader -1
        ("PARTITION_CHANGE_RECORD", 0, {"partitionId": 0, "topicId": TID, "isr": None, "leader": -1}),
        # unclean: ISR forced to the new leader, LeaderRecoveryState=RECOVERING (KIP-704)
        ("PARTITION_CHANGE_RECORD", 0, {"partitionId": 0, "topicId": TID, "isr": [3], "leader": 3,
                                        "leaderRecoveryState": 1}),
        ("PartitionChangeRecord", 0, {"partitionId": 0, "topicId": TID, "leader": -1}),
    ]
    h = replay(records)[("orders", 0)]
    assert sorted(h.elections) == [5, 6, 7, 8]
    assert [h.elections[e].unclean for e in (5, 6, 7, 8)] == [False, False, True, False]
    assert h.elections[7].leader == 3 and h.elections[7].isr == (3,)
    assert h.unclean_epochs_after(5) == [7]
    # offline now: the last leader is the only ISR member a clean election can pick
    assert (h.leader, h.last_leader, h.expected_leader) == (-1, 3, 3)


def test_forced_isr_without_recovery_state_counts_as_unclean():
    records = [
        ("PARTITION_RECORD", 0, {"partitionId": 1, "topicId": TID, "replicas": [1, 2], "isr": [1],
                                 "leader": 1, "leaderRecoveryState": 0, "leaderEpoch": 0, "partitionEpoch": 0}),
        ("PARTITION_CHANGE_RECORD", 0, {"partitionId": 1, "topicId": TID, "isr": [2], "leader": 2}),
    ]
    h = replay(records)[(TID, 1)]        # no TopicRecord: keyed by the id
    assert h.elections[1].unclean


def test_real_kraft_log_topic_ids_match_partition_metadata(realdata):
    logdir = realdata / "kafka-3.6-kraft-flink-stack" / "logdir"
    histories = load_histories(logdir)
    checked = 0
    for pdir in sorted(Path(logdir).iterdir()):
        meta = pdir / "partition.metadata"
        if not meta.is_file() or pdir.name.startswith("__cluster_metadata"):
            continue
        topic, _, part = pdir.name.rpartition("-")
        topic_id = meta.read_text().split("topic_id:")[1].split()[0]
        assert histories[(topic, int(part))].topic_id == topic_id
        checked += 1
    assert checked > 100


def test_not_a_metadata_log(tmp_path):
    with pytest.raises(InputError):
        load_histories(tmp_path)


def _kraft_copy(realdata, tmp_path, keep_log: bool):
    import shutil

    src = realdata / "kafka-3.6-kraft-flink-stack" / "logdir" / "__cluster_metadata-0"
    dst = tmp_path / "__cluster_metadata-0"
    shutil.copytree(src, dst)
    if not keep_log:
        for f in dst.glob("*.log"):
            f.unlink()
    return src, dst


def _state(histories):
    return {k: (h.topic_id, h.leader, h.leader_epoch, h.isr) for k, h in histories.items()}


def test_snapshot_gives_the_state_when_the_log_is_gone(realdata, tmp_path):
    """KRaft deletes metadata segments a snapshot covers; the snapshot then holds the topics and
    partitions. With the log gone, the latest snapshot (end offset 14926) must give the state
    the log's first 14926 records give."""
    from segtools.internal_topics.metadata import decode_record
    from segtools.records import columnar

    src, dst = _kraft_copy(realdata, tmp_path, keep_log=False)
    prefix = []
    for rb in columnar.iter_record_batches(src / "00000000000000000000.log", topic="__cluster_metadata",
                                           partition=0, end_offset=14926):
        for value, control in zip(rb.column("value").to_pylist(), rb.column("is_control").to_pylist()):
            if not control and value is not None:
                prefix.append(decode_record(value))
    expected = _state(replay(prefix))
    got = _state(load_histories(dst))
    assert got == expected
    assert any(not t.startswith("__") and t != h[0] for (t, _p), h in got.items())   # names, not ids
    # with the log starting at 0, the log alone is replayed (snapshots ignored): unchanged
    assert _state(load_histories(src)) == _state(load_histories(_kraft_copy(realdata, tmp_path / "b", True)[1]))
