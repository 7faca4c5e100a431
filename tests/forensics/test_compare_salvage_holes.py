"""Issue 23: compare reads the holes `segtools salvage` leaves (segtools-salvage.json). A
replica rebuilt by salvage neither holds nor lacks the offsets of a hole: status SALVAGE_HOLE,
the other replicas' batches there are not compared with it, and the answer is never `safe`.

The cluster is the simulator's (truth.json is the oracle: nothing was lost); the damage is
made here in a copy of one broker's log dir, the offsets of the damaged batch are read from
the ORIGINAL segment by kafka-python, and the dir is rebuilt with `segtools salvage` and put
back in place, as an SRE would. Before, a salvaged leader made compare report the healthy
follower's record in the hole as lost (answer `lost`, LOG_MATCHING_VIOLATION on the follower)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from segment_extents import batch_extents

from segtools.cli.main import cli

pytestmark = pytest.mark.fast

# RF 2, acks=all, ISR of both all along: one epoch, ten one-record batches on each broker.
QUIET = """\
name: quiet
seed: 23
cluster: {brokers: [1, 2], segment_index_bytes: 1024, metadata_log: true}
topics:
  - {name: t, replication_factor: 2, min_insync_replicas: 2, assignment: {0: [1, 2]}}
steps:
  - produce: {topic: t, partition: 0, acks: all, count: 10, value_bytes: 4}
  - advance: {ms: 6000}
"""

SEGMENT = "t-0/00000000000000000000.log"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("quiet")
    (root / "q.yaml").write_text(QUIET)
    res = CliRunner().invoke(cli, ["simulate", str(root / "q.yaml"), "--out", str(root / "sim")])
    assert res.exit_code == 0, res.output
    truth = json.loads((root / "sim" / "truth.json").read_text())["t-0"]
    assert truth["lost"] == [] and truth["leader"] == 1, truth
    return root / "sim"


def _offsets(data: bytes) -> list[tuple[int, int]]:
    """(base offset, last offset) of every batch, by kafka-python (the independent reader)."""
    from kafka.record.memory_records import MemoryRecords

    out = []
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        offs = [r.offset for r in batch]
        out.append((offs[0], offs[-1]))
    return out


def _salvaged_copy(cluster: Path, broker: int, batch: int | None, tmp_path: Path) -> tuple[Path, tuple[int, int]]:
    """A copy of broker's log dir whose t-0 is rebuilt by `segtools salvage` after a CRC-covered
    byte of batch number ``batch`` was flipped (None: no damage); and that batch's offsets."""
    logdir = tmp_path / f"broker-{broker}-salvaged"
    shutil.copytree(cluster / f"broker-{broker}", logdir)
    seg = logdir / SEGMENT
    data = bytearray(seg.read_bytes())
    offsets = _offsets(bytes(data))
    assert len(offsets) == 10
    if batch is not None:
        start, _end = batch_extents(bytes(data))[batch]
        data[start + 40] ^= 0x01
        seg.write_bytes(bytes(data))
    out = tmp_path / "salvage-out"
    res = CliRunner().invoke(cli, ["salvage", str(logdir / "t-0"), "--out", str(out)])
    assert res.exit_code == (0 if batch is None else 1), res.output
    for f in (out / "t-0").iterdir():       # the rebuilt segment, its indexes and the marker
        shutil.copyfile(f, logdir / "t-0" / f.name)
    return logdir, offsets[batch if batch is not None else 0]


def _compare(tmp_path: Path, *dirs: Path) -> tuple[int, dict]:
    report = tmp_path / "report.json"
    res = CliRunner().invoke(cli, ["compare", *map(str, dirs), "--no-spark", "--report", str(report)])
    assert res.exit_code in (0, 1), res.output
    doc = json.loads(report.read_text())
    part = next(p for p in doc["partitions"] if p["topic"] == "t")
    return res.exit_code, part


@pytest.mark.parametrize(("broker", "batch"), [(1, 4), (2, 4), (1, 9)],
                         ids=["leader-middle", "follower-middle", "leader-last-batch"])
def test_a_salvage_hole_is_cannot_tell_never_safe_nor_a_false_loss(cluster: Path, tmp_path: Path,
                                                                    broker: int, batch: int) -> None:
    salvaged, (first, last) = _salvaged_copy(cluster, broker, batch, tmp_path)
    other = cluster / f"broker-{3 - broker}"
    code, part = _compare(tmp_path, salvaged, other, cluster / "controller")
    assert code == 1
    # truth.json: nothing lost; the hole makes it unprovable, not a loss
    assert part["answer"]["value"] == "cannot_tell", part["answer"]
    assert part["lost_records"] == []
    reps = {r["broker"]: r for r in part["replicas"]}
    assert reps[broker]["status"] == "SALVAGE_HOLE"
    holes = [f for f in reps[broker]["findings"] if f["code"] == "SALVAGE_HOLE"]
    assert [f["offset"] for f in holes] == [first]
    # the healthy replica is not blamed for the records the rebuilt one lacks
    assert reps[3 - broker]["status"] == "CONSISTENT", reps[3 - broker]
    missing = [m for m in part["answer"]["missing"] if m["evidence"] == "salvage_hole"]
    assert [m["broker"] for m in missing] == [broker]
    assert f"offsets {first}" in missing[0]["detail"]
    assert last == first


def test_a_salvaged_dir_without_holes_compares_as_the_original(cluster: Path, tmp_path: Path) -> None:
    salvaged, _ = _salvaged_copy(cluster, 1, None, tmp_path)
    code, part = _compare(tmp_path, salvaged, cluster / "broker-2", cluster / "controller")
    (tmp_path / "o").mkdir()
    _, original = _compare(tmp_path / "o", cluster / "broker-1", cluster / "broker-2", cluster / "controller")
    assert part["answer"] == original["answer"]
    assert part["answer"]["value"] == "safe"      # the control: the holes above are what decide
    assert {r["status"] for r in part["replicas"]} == {"CONSISTENT"}


def test_an_unreadable_marker_is_a_hole_of_unknown_extent(cluster: Path, tmp_path: Path) -> None:
    salvaged, _ = _salvaged_copy(cluster, 2, None, tmp_path)
    (salvaged / "t-0" / "segtools-salvage.json").write_text("{not json")
    _code, part = _compare(tmp_path, cluster / "broker-1", salvaged, cluster / "controller")
    assert part["answer"]["value"] == "cannot_tell"
    rep = next(r for r in part["replicas"] if r["broker"] == 2)
    assert rep["status"] == "SALVAGE_HOLE"
