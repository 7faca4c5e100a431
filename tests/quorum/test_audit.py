"""The quorum audit on controller dirs whose history the test chose (tests/quorum/builders.py)."""

from __future__ import annotations

import json
import os

import jsonschema
import pytest
from click.testing import CliRunner

from segtools import schemas
from segtools.cli.main import cli
from segtools.quorum import audit_dirs
from tests.quorum.builders import controller, data, failover, leader_change, qs

pytestmark = pytest.mark.fast


def _kinds(result: object) -> list[str]:
    return sorted(f.kind for f in result.findings)  # type: ignore[attr-defined]


def test_failover_divergence_truncation_and_committed_prefix(tmp_path: object) -> None:
    c1, c2, c3 = failover(str(tmp_path))
    r = audit_dirs([c1, c2, c3])
    d12 = next(d for d in r.divergences if (d.a, d.b) == (c1, c2))
    assert (d12.common_end, d12.offset, d12.epoch_a, d12.epoch_b, d12.stale) == (6, 6, 1, 2, c1)
    d23 = next(d for d in r.divergences if (d.a, d.b) == (c2, c3))
    assert d23.offset is None and d23.common_end == 10
    # 2 of 3 voters hold epoch 2 (the highest) through offset 9: committed below 10
    assert r.committed_end == 10
    keep = {s.node: s for s in r.survivors}
    assert keep[c1].loses_committed and keep[c1].loses == ((c2, 6, 10), (c3, 6, 10))
    assert not keep[c2].loses_committed and keep[c2].loses == ((c1, 6, 9),)
    assert _kinds(r) == ["divergence", "divergence"]


def test_old_epoch_on_a_majority_is_not_proven_committed(tmp_path: object) -> None:
    # Raft figure 8: offsets 6-8 of epoch 1 sit on two of three voters, but node 2 voted in
    # epoch 2 (its quorum-state): a leader of epoch 2 may overwrite them; only 0-5 ... also not
    # proven (epoch 1 < 2), so nothing beyond what a snapshot shows is claimed
    common = [leader_change(0, 1, 1, [1, 2, 3], [1, 2])] + [data(o, 1) for o in range(1, 9)]
    c1 = controller(str(tmp_path), "c1", 1, common, quorum_state=qs(1, 1))
    c2 = controller(str(tmp_path), "c2", 2, common, quorum_state=qs(2, -1, 3))
    r = audit_dirs([c1, c2])
    assert r.committed_end == 0
    assert "nothing proven" in r.committed_reason


def test_split_brain_two_leaders_in_one_epoch(tmp_path: object) -> None:
    dirs = failover(str(tmp_path), node3_leader=3)
    r = audit_dirs(dirs)
    assert "split-brain" in _kinds(r)


def test_double_vote_quorum_state_against_granting_voters(tmp_path: object) -> None:
    # node 3 is among the voters granting leader 2 in epoch 2, its quorum-state says it voted 1
    dirs = failover(str(tmp_path), node3_voted=1)
    r = audit_dirs(dirs)
    assert [f.nodes for f in r.findings if f.kind == "double-vote"] == [(dirs[2],)]


def test_deleted_quorum_state_is_found_and_blocks_the_proof(tmp_path: object) -> None:
    dirs = failover(str(tmp_path), node3_state=False)
    r = audit_dirs(dirs)
    assert any(f.kind == "evidence" and "quorum-state is missing" in f.message
               for f in r.findings)
    # every voter given: the majority's batches of the newest epoch on disk prove it anyway
    assert r.committed_end == 10
    # voter 1 not given: node 3 without quorum-state may follow a newer leader unseen here
    r = audit_dirs(dirs[1:])
    assert r.committed_end == 0 and "cannot tell" in r.committed_reason


def test_mutated_copy_same_offset_and_epoch_different_bytes(tmp_path: object) -> None:
    c1, c2, c3 = failover(str(tmp_path))
    log = os.path.join(c3, "__cluster_metadata-0", "00000000000000000000.log")
    with open(log, "r+b") as fh:
        blob = bytearray(fh.read())
        blob[-1] ^= 0xFF          # last batch (offset 9, epoch 2): its record's last byte
        fh.seek(0)
        fh.write(blob)
    r = audit_dirs([c1, c2, c3])
    viol = [f for f in r.findings if f.kind == "log-matching-violation"]
    assert [(f.nodes, f.offset) for f in viol] == [((c2, c3), 9)]
    assert any("CRC mismatch" in f.message for f in r.findings if f.kind == "evidence")


def test_cluster_ids_differ(tmp_path: object) -> None:
    b = [leader_change(0, 1, 1, [1], [1])]
    c1 = controller(str(tmp_path), "c1", 1, b, quorum_state=qs(1, 1), cluster_id="AAAAAAAAAAAAAAAAAAAAAA")
    c2 = controller(str(tmp_path), "c2", 2, b, quorum_state=qs(1, 1), cluster_id="BBBBBBBBBBBBBBBBBBBBBB")
    assert "split-at-formatting" in _kinds(audit_dirs([c1, c2]))


def test_cli_exit_codes_and_json(tmp_path: object) -> None:
    runner = CliRunner()
    dirs = failover(str(tmp_path))
    res = runner.invoke(cli, ["quorum", *dirs])
    assert res.exit_code == 1, res.output
    assert "committed: proven below offset 10" in res.output
    assert f"keep {dirs[0]} (end 9): loses {dirs[1]} 6..10; {dirs[2]} 6..10 (LOSES COMMITTED" \
        in res.output
    assert "FINDING divergence" in res.output
    res = runner.invoke(cli, ["quorum", dirs[1], dirs[2], "--json"])
    assert res.exit_code == 0, res.output
    assert '"proven_below": 10' in res.output
    res = runner.invoke(cli, ["quorum", str(tmp_path)])
    assert res.exit_code == 2 and "no __cluster_metadata-0" in res.output


def test_fingerprint_from_feature_level_record(tmp_path: object) -> None:
    from segtools.internal_topics.metadata import encode_record
    from segtools.writer import NewRecord, build_batch

    # level 14 is what a real Kafka 3.6 controller wrote (a 3.6 cluster's snapshot)
    value = encode_record("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version",
                                                      "featureLevel": 14})
    b = [leader_change(0, 1, 1, [1], [1]),
         build_batch([NewRecord(None, value, (), 1)], base_offset=1, partition_leader_epoch=1)]
    c1 = controller(str(tmp_path), "c1", 1, b, quorum_state=qs(1, 1))
    (fp,) = audit_dirs([c1]).fingerprints
    assert fp.release_min == "3.6" and "or later" in fp.note


def test_broker_replicas_against_the_controllers(tmp_path: object) -> None:
    # builders.failover: committed below 10 (epoch 2 on c2, c3); c1 holds epoch 1's stale 6-8.
    # b1 copied c2's log up to offset 8 (behind: lacks 8, 9); b2 kept the old leader's suffix.
    import os
    import shutil

    from segtools.quorum.nodes import METADATA_DIR
    from tests.quorum.builders import failover

    root = str(tmp_path)
    c1, c2, c3 = failover(root)
    b1 = os.path.join(root, "b1")
    shutil.copytree(c2, b1)
    log = os.path.join(b1, METADATA_DIR, "00000000000000000000.log")
    with open(log, "rb") as fh:
        blob = fh.read()
    with open(log, "wb") as fh:          # the first 8 batches (offsets 0-7), one record each
        fh.write(blob[:sum(len(x) for x in _batches(blob)[:8])])
    b2 = os.path.join(root, "b2")
    shutil.copytree(c1, b2)
    r = audit_dirs([c1, c2, c3], [b1, b2])
    rows = {x.broker: (x.log_end, x.identical_below, x.first_divergence, x.stale_suffix,
                       x.missing_committed) for x in r.replicas}
    assert rows == {b1: (8, 8, None, False, 2), b2: (9, 6, 6, True, 1)}
    assert [o.nodes[0] for o in r.observations if o.kind == "replica-diverges"] == [b2]
    res = CliRunner().invoke(cli, ["quorum", c1, c2, c3, "--broker", b1, "--json"])
    doc = json.loads(res.stdout)
    jsonschema.Draft202012Validator(schemas.load("quorum")).validate(doc)
    assert doc["broker_replicas"][0]["missing_committed"] == 2


def _batches(blob: bytes) -> list[bytes]:
    import struct

    out, pos = [], 0
    while pos < len(blob):
        size = 12 + struct.unpack_from(">i", blob, pos + 8)[0]
        out.append(blob[pos:pos + size])
        pos += size
    return out
