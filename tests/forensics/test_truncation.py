"""Kafka's offline truncation rule against the worked examples of FORENSICS.md A.2 / Part C."""

from __future__ import annotations

from forensics_helpers import batch

from segtools.forensics.epochs import EpochMap, build_epoch_map, epoch_entries_from_batches
from segtools.forensics.truncation import fork_offset


def emap(entries, leo):
    return EpochMap(entries=list(entries), log_end_offset=leo)


def test_end_offset_for_matches_kafka_cache_semantics():
    m = emap([(0, 0), (2, 1), (4, 4)], 6)
    assert m.end_offset_for(4) == (4, 6)      # latest epoch -> LEO
    assert m.end_offset_for(3) == (2, 4)      # floor epoch 2, next epoch starts at 4
    assert m.end_offset_for(1) == (0, 1)
    assert m.end_offset_for(9) == (4, 6)
    # below every known epoch: (requested, start of first epoch)
    assert emap([(3, 10)], 20).end_offset_for(1) == (1, 10)


def test_s5_fast_unclean_failovers_fork_at_1():
    # S5 evidence state: 100 `0:0 2:1 4:4` LEO 6, 101 `0:0 1:1 3:2` LEO 3 -> T = 1
    ref = emap([(0, 0), (2, 1), (4, 4)], 6)
    rep = emap([(0, 0), (1, 1), (3, 2)], 3)
    assert fork_offset(ref, rep) == 1


def test_s7_unclean_election_fork_at_new_epoch_start():
    ref = emap([(5, 100), (6, 120)], 130)
    rep = emap([(5, 100)], 150)
    assert fork_offset(ref, rep) == 120


def test_s1_lagging_follower_fork_is_its_leo():
    assert fork_offset(emap([(0, 0), (1, 10)], 20), emap([(0, 0)], 10)) == 10


def test_s12_log_restarted_from_empty_forks_at_zero():
    # the new leader's first epoch entry is N:0, the others hold lower epochs at the same offsets
    assert fork_offset(emap([(7, 0)], 5), emap([(2, 0), (3, 40)], 90)) == 0


def test_s8_acks1_clean_failover():
    assert fork_offset(emap([(3, 480), (4, 505)], 520), emap([(3, 480)], 510)) == 505


def test_epoch_entries_drop_superseded_entries_like_assign():
    bs = [batch(0, 0, 1, "a"), batch(1, 1, 3, "b"), batch(2, 2, 2, "c")]   # regression 3 -> 2
    assert epoch_entries_from_batches(bs) == [(1, 0), (2, 2)]


def test_checkpoint_reconcile_keeps_empty_tail_epoch_and_clips_stale():
    bs = [batch(0, 9, 0, "a"), batch(10, 19, 1, "b")]
    m = build_epoch_map(bs, 20, [(0, 0), (1, 10), (2, 20)])
    assert m.entries == [(0, 0), (1, 10), (2, 20)]
    assert ("EMPTY_TAIL_EPOCH", "epoch 2 at 20") in m.notes
    stale = build_epoch_map(bs, 20, [(0, 0), (1, 10), (2, 25)])
    assert stale.entries == [(0, 0), (1, 10)]
    assert [c for c, _ in stale.notes] == ["STALE_EPOCH_CKPT"]
    missing = build_epoch_map(bs, 20, [(0, 0)])
    assert [c for c, _ in missing.notes] == ["CKPT_MISSING_EPOCH"]


def test_returned_epoch_below_all_of_the_followers_truncates_to_its_first_start():
    """Issue 21: the leader answers epoch 0 (end 5) for the follower's epoch 1; the follower's
    cache answers (0, start of its first epoch) for an epoch below all of its own
    (LeaderEpochFileCache.endOffsetFor), the epochs match, and Kafka truncates to
    min(5, 0, LEO) = 0 (the broker logs TruncationState(offset=0)). Stopping at the follower's
    LEO instead left its epoch-1 batches below the fork: a false LOG_MATCHING_VIOLATION."""
    leader = emap([(0, 0), (2, 5)], 8)
    follower = emap([(1, 0)], 3)
    assert fork_offset(leader, follower) == 0
    # and its log start moved by retention: it truncates to its first (rewritten) start
    assert fork_offset(leader, emap([(1, 2)], 4)) == 2


def test_no_log_matching_violation_when_the_follower_starts_in_another_epoch():
    from forensics_helpers import replica

    from segtools.forensics.classify import classify_partition

    leader = replica(1, [(0, 4, 0, "a"), (5, 7, 2, "c")], hw=8)
    follower = replica(2, [(0, 2, 1, "b")], hw=0)
    v = classify_partition([leader, follower])
    rv = {r.broker: r for r in v.replicas}
    assert rv[1].is_reference
    assert rv[2].status != "LOG_MATCHING_VIOLATION" and rv[2].fork_offset == 0
    assert rv[2].divergent["records"] == 3
