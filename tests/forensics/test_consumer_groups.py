"""S21: consumer groups whose committed position lies on a lost lineage."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import segtools
from segtools.forensics.consumer_groups import consumed_divergence
from segtools.forensics.epochs import EpochMap

S7 = Path(__file__).resolve().parents[2] / "samples" / "generated" / "S7-simple-unclean-election"


def test_s21_walk():
    # surviving lineage: epoch 0 up to 2, epoch 2 ends at 4, epoch 4 to the end (6)
    lineage = EpochMap([(0, 0), (2, 1), (4, 4)], 6)
    assert consumed_divergence(3, 3, lineage) is None       # epoch 2 still covers [1, 4)
    assert consumed_divergence(3, 1, lineage) == 1          # epoch 1 never existed here: [1, 3)
    assert consumed_divergence(5, 4, lineage) is None
    assert consumed_divergence(6, 2, lineage) == 4          # read past the end of epoch 2
    assert consumed_divergence(9, -1, lineage) == 6         # no epoch: only the log end helps
    assert consumed_divergence(6, -1, lineage) is None


def write_commits(partition_dir: Path, commits: list[tuple[str, str, int, int, int]]) -> None:
    from segtools.internal_topics.consumer_offsets import encode_key, encode_value
    from segtools.writer import LogWriter, NewRecord, build_batch

    w = LogWriter(str(partition_dir))
    for i, (group, topic, part, offset, epoch) in enumerate(commits):
        key = encode_key(1, {"group": group, "topic": topic, "partition": part})
        value = encode_value(1, 3, {"offset": offset, "leaderEpoch": epoch, "metadata": "",
                                    "commitTimestamp": 1_700_000_000_000 + i})
        w.append(build_batch([NewRecord(key, value, (), 1_700_000_000_000 + i)], base_offset=i))
    w.close()


def s7_with_groups(tmp_path: Path) -> Path:
    root = tmp_path / "s7"
    shutil.copytree(S7, root)
    for p in root.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    # broker 2 is the surviving leader (epochs 0:0 1:15, LEO 25); broker 1 kept epoch 0 to 29
    write_commits(root / "broker-2" / "__consumer_offsets-0", [
        ("reader-of-lost", "orders", 0, 28, 0),      # read 15..27 of broker 1's lost epoch-0 tail
        ("healthy", "orders", 0, 20, 1),
        ("old-client", "orders", 0, 40, -1),         # no epoch, beyond the log end
        ("moved-on", "orders", 0, 29, 0),
        ("moved-on", "orders", 0, 25, 1),            # a later commit replaces the earlier one
    ])
    return root


def test_groups_that_consumed_lost_records_are_reported(tmp_path):
    report = segtools.compare([str(s7_with_groups(tmp_path))], find_metadata_log=False)
    orders = next(p for p in report.partitions if p.verdict.topic == "orders")
    found = sorted(f.detail.split("'")[1] + f"@{f.offset}" for f in orders.extra_findings
                   if f.code == "GROUP_CONSUMED_DIVERGENT")
    assert found == ["old-client@25", "reader-of-lost@15"]
    doc = report.to_json()["partitions"]
    assert any(f["code"] == "GROUP_CONSUMED_DIVERGENT" for p in doc for f in p["findings"])
