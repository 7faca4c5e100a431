"""segtools.files.logdir on the real broker directories and on constructed ones (special partition
dirs, transient suffixes, damaged root files)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from segtools.errors import CheckpointFormatError, InputError
from segtools.files.logdir import (
    is_partition_dir_name,
    open_log_dir,
    open_partition_dir,
    parse_partition_dir_name,
)

KRAFT = "kafka-3.6-kraft-flink-stack/logdir"
ZK = "kafka-2.5-zk-first-topic/final"
UID = "0123456789abcdef0123456789abcdef"


def _expected_order(root: Path) -> list[str]:
    names = [n for n in os.listdir(root) if (root / n).is_dir()]
    return sorted(names, key=lambda n: (n.rsplit("-", 1)[0], int(n.rsplit("-", 1)[1])))


def test_real_kraft_log_dir(realdata: Path) -> None:
    root = realdata / KRAFT
    log = open_log_dir(root)
    assert len(log.partitions) == 152
    assert [p.name for p in log.partitions] == _expected_order(root)
    assert log.problems == [] and log.other_dirs == []
    assert log.meta_properties == {"node.id": "1", "version": "1", "cluster.id": "MkU3OEVBNTcwNTJENDM2Qg"}
    assert log.broker_id == 1
    assert log.bootstrap_checkpoint == str(root / "bootstrap.checkpoint")
    assert log.recovery_points[("products", 0)] == 17097
    assert log.checkpoints["cleaner-offset-checkpoint"] is None
    for name in ("customers", "products"):
        part = log.partition(name, 0)
        assert part is not None and part.log_paths == []
        assert [s.base_offset for s in part.segments_without_log] == [0]
        seg = part.segments[0]
        assert seg.index_path and seg.timeindex_path and not seg.has_log
    meta = log.partition("__cluster_metadata", 0)
    assert meta is not None and meta.state == ""
    assert [(s.end_offset, s.epoch) for s in meta.kraft_snapshots] == [(7752, 1), (14926, 1)]
    assert [s.offset for s in meta.snapshots] == [17027]
    assert meta.quorum_state is not None and meta.quorum_state["leaderId"] == 1
    assert meta.partition_metadata is not None and meta.partition_metadata.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert meta.leader_epoch_checkpoint is not None and meta.leader_epoch_checkpoint[0].epoch == 1
    assert [s.base_offset for s in meta.segments] == [0] and meta.segments[0].has_log
    # every .log in the tree is a live segment of some partition
    logs = sorted(str(p) for p in root.rglob("*.log"))
    assert sorted(p for part in log.partitions for p in part.log_paths) == logs


def test_real_zk_log_dir(realdata: Path) -> None:
    log = open_log_dir(realdata / ZK)
    assert len(log.partitions) == 54
    assert log.topics == ["__consumer_offsets", "first_topic", "new_topic"]
    assert log.broker_id == 0
    assert set(log.checkpoints) == {"replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                                    "log-start-offset-checkpoint", "cleaner-offset-checkpoint"}
    part = log.partition("first_topic", 0)
    assert part is not None
    assert [os.path.basename(p) for p in part.segments[0].paths] == \
        ["00000000000000000000.log", "00000000000000000000.timeindex"]
    assert [s.offset for s in part.snapshots] == [11]


def test_single_partition_dir_is_accepted(realdata: Path) -> None:
    path = realdata / ZK / "first_topic-2"
    log = open_log_dir(path)
    assert [(p.topic, p.partition) for p in log.partitions] == [("first_topic", 2)]
    assert log.checkpoints == {}
    part = open_partition_dir(path)
    assert part.segments[0].log_path == str(path / "00000000000000000000.log")


@pytest.mark.parametrize("name, expected", [
    ("orders-0", ("orders", 0, "")),
    ("my-topic-12", ("my-topic", 12, "")),
    ("topic.with.dots-3", ("topic.with.dots", 3, "")),
    (f"my-topic-3.{UID}-delete", ("my-topic", 3, "delete")),
    (f"t-1.{UID}-future", ("t", 1, "future")),
    (f"t-7.{UID}-stray", ("t", 7, "stray")),
])
def test_parse_partition_dir_name(name: str, expected: tuple[str, int, str]) -> None:
    assert parse_partition_dir_name(name) == expected


@pytest.mark.parametrize("name", ["orders", "orders-", "-1", "orders-x", "t-1-delete",
                                  "lost+found", "t-99999999999", ""])
def test_bad_partition_dir_names(name: str) -> None:
    assert not is_partition_dir_name(name)
    with pytest.raises(InputError):
        parse_partition_dir_name(name)


def _touch(path: Path, data: bytes = b"") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@pytest.fixture()
def built_log_dir(tmp_path: Path) -> Path:
    root = tmp_path / "kafka-logs"
    z = "0" * 20
    for name in ("t-10", "t-2", "a-0", f"t-1.{UID}-future", f"my-topic-3.{UID}-delete",
                 f"x-0.{UID}-stray"):
        _touch(root / name / f"{z}.log")
    p = root / "t-1"
    for f in (f"{z}.log", f"{z}.index", f"{z}.timeindex", "00000000000000000100.log",
              "00000000000000000100.index", "00000000000000000100.txnindex",
              "00000000000000000050.log.deleted", "00000000000000000050.index.deleted",
              "00000000000000000100.log.cleaned", "00000000000000000100.log.swap",
              "00000000000000000100.snapshot", "00000000000000000050.snapshot.deleted",
              "00000000000000000100-0000000002.checkpoint", "leader-epoch-checkpoint.tmp", "notes.txt"):
        _touch(p / f)
    _touch(p / "leader-epoch-checkpoint", b"0\n2\n0 0\n3 100\n")
    _touch(root / "t-2" / "partition.metadata", b"version: 0\ntopic_id: oops")
    (root / "lost+found").mkdir()
    _touch(root / "recovery-point-offset-checkpoint", b"0\n1\nt 1\n")
    _touch(root / "replication-offset-checkpoint", b"0\n2\nt 1 120\nt 10 5\n")
    _touch(root / ".kafka_cleanshutdown", b'{"version":0,"brokerEpoch":7}')
    _touch(root / ".lock")
    return root


def test_built_log_dir(built_log_dir: Path) -> None:
    log = open_log_dir(built_log_dir)
    assert [(p.topic, p.partition, p.state) for p in log.partitions] == [
        ("a", 0, ""), ("my-topic", 3, "delete"), ("t", 1, ""), ("t", 1, "future"),
        ("t", 2, ""), ("t", 10, ""), ("x", 0, "stray")]
    assert log.partition("my-topic", 3, "delete").unique_id == UID
    assert log.clean_shutdown and log.clean_shutdown_info.broker_epoch == 7
    assert log.replication_offsets == {("t", 1): 120, ("t", 10): 5}
    assert log.checkpoints["recovery-point-offset-checkpoint"] is None
    assert log.other_dirs == [str(built_log_dir / "lost+found")]
    assert str(built_log_dir / ".lock") in log.other_files
    kinds = sorted((type(e).__name__, e.field) for e in log.problems)
    assert kinds == [("CheckpointFormatError", "line 2"), ("CheckpointFormatError", "line 3")]

    t1 = log.partition("t", 1)
    assert [s.base_offset for s in t1.segments] == [0, 100]
    assert t1.segments[1].txnindex_path and t1.segments[1].timeindex_path is None
    assert [(s.base_offset, s.suffix, len(s.paths)) for s in t1.suffixed_segments] == \
        [(50, ".deleted", 2), (100, ".cleaned", 1), (100, ".swap", 1)]
    assert [s.offset for s in t1.snapshots] == [100]
    assert [(s.offset, s.suffix) for s in t1.suffixed_snapshots] == [(50, ".deleted")]
    assert [(s.end_offset, s.epoch) for s in t1.kraft_snapshots] == [(100, 2)]
    assert [(e.epoch, e.start_offset) for e in t1.leader_epoch_checkpoint] == [(0, 0), (3, 100)]
    assert sorted(os.path.basename(f) for f in t1.other_files) == ["leader-epoch-checkpoint.tmp", "notes.txt"]
    t2 = log.partition("t", 2)
    assert t2.partition_metadata is None and isinstance(t2.problems[0], CheckpointFormatError)


def test_strict_raises_on_damaged_files(built_log_dir: Path) -> None:
    with pytest.raises(CheckpointFormatError):
        open_log_dir(built_log_dir, strict=True)


def test_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        open_log_dir(tmp_path / "missing")
    _touch(tmp_path / "file")
    with pytest.raises(InputError):
        open_log_dir(tmp_path / "file")
    with pytest.raises(InputError):
        open_partition_dir(tmp_path)            # name is not <topic>-<n>
    empty = tmp_path / "empty"
    empty.mkdir()
    assert open_log_dir(empty).partitions == []


def test_log_dir_named_like_a_partition(tmp_path: Path) -> None:
    root = tmp_path / "kafka-logs-1"
    _touch(root / "orders-0" / ("0" * 20 + ".log"))
    log = open_log_dir(root)
    assert [(p.topic, p.partition) for p in log.partitions] == [("orders", 0)]
