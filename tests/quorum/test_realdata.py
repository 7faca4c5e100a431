"""The quorum audit, snapshot replay and time travel on a real Kafka 3.6 controller's
metadata dir (tests/data/realdata/kafka-3.6-kraft-flink-stack, provenance in its README).
Oracles: the snapshots Kafka itself wrote at offsets 7752 and 14926, and the release in the
directory's provenance."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli
from segtools.quorum import audit_dirs, load_node
from segtools.quorum.image import Image, diff, image_at, image_from_snapshot, replay

pytestmark = pytest.mark.fast

LOGDIR = Path(__file__).resolve().parents[1] / "data" / "realdata" / \
    "kafka-3.6-kraft-flink-stack" / "logdir"
SNAP_1 = "00000000000000007752-0000000001.checkpoint"
SNAP_2 = "00000000000000014926-0000000001.checkpoint"


def test_replay_reproduces_both_real_snapshots() -> None:
    r = audit_dirs([str(LOGDIR)])
    checks = [(c.end_offset, c.checked, c.first_difference) for _, c in r.snapshot_checks]
    assert checks == [(7752, True, None), (14926, True, None)]
    assert [c.entities for _, c in r.snapshot_checks] == [582, 586]
    assert r.findings == []
    assert r.fingerprints[0].release_min == "3.6"


def test_time_travel_equals_the_snapshot_kafka_wrote_there() -> None:
    node = load_node(str(LOGDIR))
    pdir = LOGDIR / "__cluster_metadata-0"
    # from nothing, the log alone, up to offset 14926: Kafka's own snapshot of that point
    assert diff(replay(Image(), sorted({b.path for b in node.batches}), until_offset=14926),
                image_from_snapshot(str(pdir / SNAP_2), 14926)) == []
    # and an earlier point is not that image (the comparison can fail)
    assert diff(image_at(node, offset=7752), image_from_snapshot(str(pdir / SNAP_2), 14926))


def test_a_snapshot_swapped_for_an_older_one_is_found(tmp_path: Path) -> None:
    copy = tmp_path / "logdir"
    shutil.copytree(LOGDIR / "__cluster_metadata-0", copy / "__cluster_metadata-0")
    shutil.copy(LOGDIR / "meta.properties", copy / "meta.properties")
    shutil.copy(copy / "__cluster_metadata-0" / SNAP_1, copy / "__cluster_metadata-0" / SNAP_2)
    r = audit_dirs([str(copy)])
    bad = [f for f in r.findings if f.kind == "snapshot-mismatch"]
    assert [f.offset for f in bad] == [14926] and "first entity differing" in bad[0].message


def test_cli_image_diff_between_two_points() -> None:
    res = CliRunner().invoke(cli, ["quorum", str(LOGDIR), "--image-at", "end",
                                   "--diff-from", "14926"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert (out["from"], out["to"]) == (14926, 17027)
    # the diff is exactly what replaying 14926..17027 changes relative to Kafka's snapshot
    node = load_node(str(LOGDIR))
    want = diff(image_from_snapshot(str(LOGDIR / "__cluster_metadata-0" / SNAP_2), 14926),
                image_at(node))
    assert len(out["changes"]) == len(want) > 0
