"""The table of known Kafka bugs (segtools/quorum/known_bugs.py) matched to what the audit
finds, one test per row, on controller dirs whose history the test chose
(tests/quorum/builders.py): the oracle is that history and the row's affected releases."""

from __future__ import annotations

import json

import jsonschema
import pytest
from click.testing import CliRunner

from segtools import schemas
from segtools.cli.main import cli
from segtools.quorum import audit_dirs
from segtools.quorum.known_bugs import KNOWN_BUGS
from tests.quorum.builders import (
    controller,
    data,
    feature_level,
    leader_change,
    qs,
    voters_record,
)

pytestmark = pytest.mark.fast

D1, D2, D3 = "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg", "AAAAAAAAAAAAAAAAAAAAAw"


def _matches(r: object, key: str) -> list[tuple[str, str]]:
    return [(m.mark, m.verdict) for m in r.known_bugs  # type: ignore[attr-defined]
            if m.bug.key == key]


def test_every_row_is_sourced() -> None:
    for bug in KNOWN_BUGS:
        assert bug.key.startswith("KAFKA-") and bug.marks and bug.versions_source
        assert any(f"jira/browse/{bug.key}" in link for link in bug.links)
        assert any("github.com/apache/kafka/pull/" in link for link in bug.links)


@pytest.mark.parametrize("level, verdict", [(14, "possible"), (19, "excluded")])
def test_kafka_15489_old_leader_appending_after_a_new_epoch(tmp_path: object, level: int,
                                                           verdict: str) -> None:
    # node 1 leads epoch 1 and keeps appending 6-8 (timestamps ~5030 ms) after node 2's
    # epoch 2 began at 1006 ms; metadata.version 14 is Kafka 3.6 (affected), 19 is 3.7 (fixed)
    common = [leader_change(0, 1, 1, [1, 2, 3], [1, 2]), feature_level(1, 1, level)] + \
        [data(o, 1) for o in range(2, 6)]
    old = common + [data(o, 1, "a-stale-leader-batch") for o in range(6, 9)]
    new = common + [leader_change(6, 2, 2, [1, 2, 3], [2, 3])] + [data(o, 2) for o in (7, 8, 9)]
    root = str(tmp_path)
    dirs = [controller(root, "c1", 1, old, quorum_state=qs(1, 1)),
            controller(root, "c2", 2, new, quorum_state=qs(2, 2, 2)),
            controller(root, "c3", 3, new, quorum_state=qs(2, 2, 2))]
    r = audit_dirs(dirs)
    stale = [o for o in r.observations if o.kind == "stale-leader-appended"]
    assert [o.nodes for o in stale] == [(dirs[0],), (dirs[0],)]      # vs c2 and vs c3
    assert "epoch 1" in stale[0].message and "ms after" in stale[0].message
    assert _matches(r, "KAFKA-15489") == [("stale-leader-appended", verdict)] * 2
    # without the old leader's log there is no stale suffix: nothing observed, nothing matched
    r2 = audit_dirs(dirs[1:])
    assert not r2.observations and _matches(r2, "KAFKA-15489") == []


def test_kafka_19850_removed_voter_added_again(tmp_path: object) -> None:
    v123, v12 = [(1, D1), (2, D2), (3, D3)], [(1, D1), (2, D2)]
    log = [leader_change(0, 1, 1, [], [1, 2]), voters_record(1, 1, v123),
           feature_level(2, 1, 30), voters_record(3, 1, v12), data(4, 1),
           voters_record(5, 1, v123), data(6, 1)]
    c1 = controller(str(tmp_path), "c1", 1, log, quorum_state=qs(1, 1))
    r = audit_dirs([c1])
    assert [[i for i, _ in v.voters] for v in r.voter_history] == [[1, 2, 3], [1, 2], [1, 2, 3]]
    rejoined = [o for o in r.observations if o.kind == "voter-rejoined"]
    assert [(o.offset, "voter 3" in o.message) for o in rejoined] == [(5, True)]
    assert _matches(r, "KAFKA-19850") == [("voter-rejoined", "possible")]   # not fixed
    assert r.findings == []                  # an operator may have added it: not a finding
    res = CliRunner().invoke(cli, ["quorum", c1, "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    jsonschema.Draft202012Validator(schemas.load("quorum")).validate(doc)
    assert [(b["bug"], b["verdict"], b["mark"]) for b in doc["known_bugs"]] == [
        ("KAFKA-19850", "possible", "voter-rejoined")]
    # removed and never added again: nothing to match
    c2 = controller(str(tmp_path), "c2", 1, log[:5], quorum_state=qs(1, 1))
    assert _matches(audit_dirs([c2]), "KAFKA-19850") == []


def test_kafka_19489_static_quorum_beside_a_dynamic_bootstrap(tmp_path: object) -> None:
    # node 1 ran the static quorum {1, 2} (LEADER_CHANGE, no VotersRecord); node 3 was
    # formatted --standalone: its own VotersRecord {3} in 0-0.checkpoint, leader of itself
    import os

    c1 = controller(str(tmp_path), "c1", 1, [leader_change(0, 1, 1, [1, 2], [1, 2]),
                                              data(1, 1)], quorum_state=qs(1, 1))
    boot = voters_record(0, 0, [(3, D3)])
    c3 = controller(str(tmp_path), "c3", 3, [voters_record(0, 1, [(3, D3)]),
                                              leader_change(1, 1, 3, [3], [3])],
                    quorum_state=qs(1, 3))
    snap = os.path.join(c3, "__cluster_metadata-0", "00000000000000000000-0000000000.checkpoint")
    with open(snap, "wb") as fh:
        fh.write(boot)
    r = audit_dirs([c1, c3])
    kinds = sorted(f.kind for f in r.findings)
    assert "split-at-formatting" in kinds and "split-brain" in kinds, kinds
    # no metadata.version in the bootstrap files: the formatting release cannot be told
    # beyond the dynamic bootstrap (3.9+), inside 3.9-4.1: possible
    assert set(_matches(r, "KAFKA-19489")) == {("split-at-formatting", "possible"),
                                              ("split-brain", "possible")}
    # bootstrap.checkpoint of a 4.2 format (metadata.version 29) dates the formatting after
    # the fix: excluded
    for d in (c1, c3):
        with open(os.path.join(d, "bootstrap.checkpoint"), "wb") as fh:
            fh.write(feature_level(0, 0, 29))
    r = audit_dirs([c1, c3])
    assert {v for _, v in _matches(r, "KAFKA-19489")} == {"excluded"}
    res = CliRunner().invoke(cli, ["quorum", c1, c3])
    assert res.exit_code == 1 and "KNOWN BUG KAFKA-19489 (excluded)" in res.output, res.output



def _bootstrap(d: str, voters: list[tuple[int, str]]) -> None:
    import os

    snap = os.path.join(d, "__cluster_metadata-0", "00000000000000000000-0000000000.checkpoint")
    with open(snap, "wb") as fh:
        fh.write(voters_record(0, 0, voters))


def _static_qs(epoch: int, leader: int, voters: list[int]) -> dict[str, object]:
    # quorum-state data_version 0, as a node running controller.quorum.voters writes it
    # (read from the real Kafka 4.1.0 run of tests/quorum/kafka19489_run.py --layout static)
    return {"clusterId": "", "leaderId": leader, "leaderEpoch": epoch, "votedId": -1,
            "appliedOffset": 0, "currentVoters": [{"voterId": v} for v in voters],
            "data_version": 0}


def test_kafka_19489_static_nodes_following_the_standalone_leader(tmp_path: object) -> None:
    # what the real 4.1.0 run left: node 3 formatted --standalone beside
    # controller.quorum.voters=1,2,3 leads epoch 1 alone (voters {3}); nodes 1 and 2, static
    # (quorum-state currentVoters [1, 2, 3]), follow it and copy its log, bootstrap VotersRecord
    # {3} in its first batch included. One leader, one log: only the quorum-states show the
    # two views. Nodes 1 and 2 hold offsets 0-3, node 3 0-5.
    log = [voters_record(0, 1, [(3, D3)]), leader_change(1, 1, 3, [3], [3])] + \
        [data(o, 1) for o in range(2, 6)]
    c1 = controller(str(tmp_path), "c1", 1, log[:4], quorum_state=_static_qs(1, 3, [1, 2, 3]))
    c2 = controller(str(tmp_path), "c2", 2, log[:4], quorum_state=_static_qs(1, 3, [1, 2, 3]))
    c3 = controller(str(tmp_path), "c3", 3, log, quorum_state=qs(1, 3))
    _bootstrap(c3, [(3, D3)])
    r = audit_dirs([c1, c2, c3])
    split = [f for f in r.findings if f.kind == "split-at-formatting"]
    assert [f.nodes[0] for f in split] == [c1, c2], [f.message for f in r.findings]
    assert all("static voter set [1, 2, 3]" in f.message and "[3]" in f.message for f in split)
    assert set(_matches(r, "KAFKA-19489")) == {("split-at-formatting", "possible")}
    # committed: node 3 alone is a majority of {3}, but nodes 1 and 2 count {1, 2, 3}: only
    # what two of the three hold (offsets 0-3) is committed in both views
    assert r.committed_end == 4, r.committed_reason
    # the same logs without the static quorum-states: one quorum {3}, all of node 3's log
    for d in (c1, c2):
        with open(f"{d}/__cluster_metadata-0/quorum-state", "w") as fh:
            json.dump(qs(1, 3), fh)
    r = audit_dirs([c1, c2, c3])
    assert not [f for f in r.findings if f.kind == "split-at-formatting"]
    assert r.committed_end == 6, r.committed_reason


def test_a_static_quorum_upgraded_to_kraft_version_1_is_not_a_split(tmp_path: object) -> None:
    # a static quorum {1, 2, 3} upgraded to kraft.version 1 writes its VotersRecord later in the
    # log, with the static voters; a follower's quorum-state may still be data_version 0.
    # A later removal of voter 3 is an operator's change, not a second bootstrap.
    v123, v12 = [(1, D1), (2, D2), (3, D3)], [(1, D1), (2, D2)]
    log = [leader_change(0, 1, 1, [1, 2, 3], [1, 2]), data(1, 1), data(2, 1),
           voters_record(3, 1, v123), data(4, 1), voters_record(5, 1, v12), data(6, 1)]
    c1 = controller(str(tmp_path), "c1", 1, log, quorum_state=qs(1, 1))
    c2 = controller(str(tmp_path), "c2", 2, log, quorum_state=_static_qs(1, 1, [1, 2, 3]))
    r = audit_dirs([c1, c2])
    assert not [f for f in r.findings if f.kind == "split-at-formatting"], r.findings


def test_two_bootstrapped_quorums_are_not_a_voter_rejoining(tmp_path: object) -> None:
    # the real 4.1.0 run of the flags layout: nodes 1, 2 bootstrapped {1, 2}, node 3 {3}; each
    # quorum elected its own leader in epoch 1. Merged, the voter sets at offset 0 alternate;
    # no node's own history ever removes and re-adds a voter.
    v12 = [(1, D1), (2, D2)]
    # (each first leader copies its bootstrap VotersRecord into its log, here at offset 2)
    mine = [leader_change(0, 1, 1, [1, 2], [1, 2]), data(1, 1), voters_record(2, 1, v12)]
    theirs = [leader_change(0, 1, 3, [3], [3]), data(1, 1, "3"), voters_record(2, 1, [(3, D3)])]
    c1 = controller(str(tmp_path), "c1", 1, mine, quorum_state=qs(1, 1))
    c2 = controller(str(tmp_path), "c2", 2, mine, quorum_state=qs(1, 1))
    c3 = controller(str(tmp_path), "c3", 3, theirs, quorum_state=qs(1, 3))
    for d, v in ((c1, v12), (c2, v12), (c3, [(3, D3)])):
        _bootstrap(d, v)
    r = audit_dirs([c1, c2, c3])
    kinds = {f.kind for f in r.findings}
    assert {"split-at-formatting", "split-brain"} <= kinds, kinds
    assert not [o for o in r.observations if o.kind == "voter-rejoined"], r.observations
    assert _matches(r, "KAFKA-19850") == []


def test_a_snapshot_ending_at_a_voters_record_comes_before_it(tmp_path: object) -> None:
    # the snapshot 00..03-1 ends at offset 3 (exclusive): it holds the voters before the
    # VotersRecord at offset 3 removes voter 3. Sorted after it, the history would read
    # {1,2,3} {1,2} {1,2,3} (a removal undone) instead of {1,2,3} {1,2}.
    import os

    v123, v12 = [(1, D1), (2, D2), (3, D3)], [(1, D1), (2, D2)]
    log = [leader_change(0, 1, 1, [], [1, 2]), voters_record(1, 1, v123), data(2, 1),
           voters_record(3, 1, v12), data(4, 1)]
    # two nodes: c1's log record at 3 and c2's snapshot ending at 3 meet in the merged history
    c1 = controller(str(tmp_path), "c1", 1, log, quorum_state=qs(1, 1))
    c2 = controller(str(tmp_path), "c2", 2, log, quorum_state=qs(1, 1))
    snap = os.path.join(c2, "__cluster_metadata-0", "00000000000000000003-0000000001.checkpoint")
    with open(snap, "wb") as fh:
        fh.write(voters_record(0, 1, v123))
    r = audit_dirs([c1, c2])
    assert [([i for i, _ in v.voters], v.offset) for v in r.voter_history] == [
        ([1, 2, 3], 1), ([1, 2, 3], 3), ([1, 2], 3)]
    assert not [o for o in r.observations if o.kind == "voter-rejoined"]
