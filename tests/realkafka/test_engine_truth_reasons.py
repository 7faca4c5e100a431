"""The real engine's truth: why an election happened when no copy shows its leader's epoch.

An election whose new leader is paused at every later step (seed 1003, docs/ENGINES.md class
10) never writes its epoch into that leader's leader-epoch-checkpoint, so no copy shows it.
Its reason is then the fault of the step during which the controller wrote it, as in the
model: a crash makes an acks=1 record's loss LEADER_CRASH_ACKS_1, not UNCOMMITTED."""

from __future__ import annotations

from types import SimpleNamespace

from segtools.realcluster.truth import LEADER_CRASH_ACKS_1, UNCOMMITTED, _cause, _Election, _reason_at


def _runner(*kinds: str) -> SimpleNamespace:
    return SimpleNamespace(scenario=SimpleNamespace(steps=[SimpleNamespace(kind=k) for k in kinds]))


def test_the_reason_is_the_last_fault_up_to_the_electing_step():
    r = _runner("produce", "pause", "produce", "crash", "produce", "restart", "produce")
    assert _reason_at(r, 3) == "crash"      # elected during the crash step
    assert _reason_at(r, 4) == "crash"      # during the produce after it (session expiry)
    assert _reason_at(r, 6) == "restart"
    assert _reason_at(r, 1) == "create"     # no fault yet
    assert _reason_at(r, -1) == "create"    # written with the topic
    assert _reason_at(r, None) == "unknown"


def test_an_acks_1_record_lost_to_a_crash_election_keeps_its_cause():
    crash = _Election(epoch=1, leader=3, unclean=False, reason=_reason_at(
        _runner("produce", "pause", "produce", "crash"), 3), isr=[1, 3], step=3)
    assert _cause(2, 0, "1", True, False, [crash]) == LEADER_CRASH_ACKS_1
    unknown = _Election(epoch=1, leader=3, unclean=False, reason="unknown", isr=[1, 3])
    assert _cause(2, 0, "1", True, False, [unknown]) == UNCOMMITTED
