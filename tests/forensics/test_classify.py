"""Classification of the FORENSICS.md Part C scenarios, expected values taken from the spec."""

from __future__ import annotations

from forensics_helpers import dense, replica

from segtools.forensics.classify import classify_partition
from segtools.forensics.elections import Election, PartitionHistory


def by_broker(verdict):
    return {r.broker: r for r in verdict.replicas}


def test_s0_healthy_baseline_consistent_even_with_follower_hw_behind():
    spec = dense([(0, 9, 0), (10, 19, 1)])
    v = classify_partition([replica(1, spec, hw=20), replica(2, spec, hw=18), replica(3, spec, hw=20)])
    assert {r.status for r in v.replicas} == {"CONSISTENT"}
    assert not v.divergent_ranges and not v.problem


def test_s1_lagging_follower_and_truncated_below_hw():
    full = dense([(0, 9, 0), (10, 19, 1)])
    v = classify_partition([replica(1, full, hw=20), replica(3, dense([(0, 9, 0)]), hw=10)])
    assert by_broker(v)[3].status == "LAGGING_PREFIX"
    assert by_broker(v)[3].fork_offset is None
    # HWC above LEO, but the reference holds [LEO, HWC): harmless (S11a) -- also what a copy
    # of a running broker looks like (realdata kafka-2.5 `early`, __consumer_offsets-12)
    v2 = classify_partition([replica(1, full, hw=20), replica(3, dense([(0, 9, 0)]), hw=15)])
    assert by_broker(v2)[3].status == "LAGGING_PREFIX"
    assert "HW_ABOVE_LEO_COVERED" in {f.code for f in by_broker(v2)[3].findings}
    # ... and when no replica holds the committed offsets any more, it is a local loss
    v3 = classify_partition([replica(1, full[:12], hw=12), replica(3, dense([(0, 9, 0)]), hw=15)])
    assert by_broker(v3)[3].status == "TRUNCATED_BELOW_HW"
    assert by_broker(v3)[1].status == "CONSISTENT"


def test_s3_fork_in_the_middle_is_log_matching_violation():
    a = replica(1, [(0, 0, 0, "m1"), (1, 1, 0, "m2"), (2, 2, 1, "m4")], hw=3)
    b = replica(2, [(0, 0, 0, "m1"), (1, 1, 1, "m3"), (2, 2, 1, "m4")], hw=3)
    v = classify_partition([a, b])
    statuses = sorted(r.status for r in v.replicas)
    assert statuses == ["CONSISTENT", "LOG_MATCHING_VIOLATION"]
    bad = next(r for r in v.replicas if r.status == "LOG_MATCHING_VIOLATION")
    assert bad.fork_offset == 1
    # the spliced copy is A (epoch 1 starts later there, S6 rule), B is the reference
    assert (bad.broker, v.reference_broker) == (1, 2)
    # m2 was committed in S3 but an identical disk picture arises in S6 where it was not:
    # below the fork the HW checkpoint speaks for the new lineage, so it is not counted
    assert bad.divergent == {"first_offset": 1, "last_offset": 1, "records": 1, "committed_records": 0}


def test_s5_unclean_failovers_committed_loss_of_r1_and_z1():
    r100 = replica(100, [(0, 0, 0, "r0"), (1, 1, 2, "x1"), (2, 2, 2, "x2"), (3, 3, 2, "x3"),
                         (4, 4, 4, "y1"), (5, 5, 4, "y2")], hw=6)
    r101 = replica(101, [(0, 0, 0, "r0"), (1, 1, 1, "r1"), (2, 2, 3, "z1")], hw=3, clean=False)
    hist = PartitionHistory("t", None, 0, leader=100, leader_epoch=4, elections={
        0: Election(0, 100, (100, 101), False), 1: Election(1, 101, (101,), False),
        2: Election(2, 100, (100,), True), 3: Election(3, 101, (101,), True),
        4: Election(4, 100, (100,), True)})
    v = classify_partition([r100, r101], history=hist)
    r = by_broker(v)[101]
    assert v.reference_broker == 100
    assert (r.status, r.fork_offset, r.cause) == ("COMMITTED_LOSS", 1, "UNCLEAN_ELECTION")
    assert r.divergent == {"first_offset": 1, "last_offset": 2, "records": 2, "committed_records": 2}
    assert by_broker(v)[100].status == "CONSISTENT"
    # without metadata the cause is undetermined (D.6)
    assert by_broker(classify_partition([r100, r101]))[101].cause is None


def test_s5_pre_kip279_epoch_regression_inside_one_replica():
    r101 = replica(101, [(0, 0, 0, "r0"), (1, 1, 1, "r1"), (2, 2, 3, "z1"), (3, 3, 2, "x3"),
                         (4, 4, 4, "y1"), (5, 5, 4, "y2")], hw=6)
    r100 = replica(100, [(0, 0, 0, "r0"), (1, 1, 2, "x1"), (2, 2, 2, "x2"), (3, 3, 2, "x3"),
                         (4, 4, 4, "y1"), (5, 5, 4, "y2")], hw=6)
    v = classify_partition([r100, r101])
    r = by_broker(v)[101]
    codes = {f.code for f in r.findings}
    assert "EPOCH_REGRESSION" in codes
    assert r.status == "LOG_MATCHING_VIOLATION"


def test_s6_missed_truncation_spliced_replica():
    r1 = replica(1, [(0, 0, 2, "id1"), (1, 1, 2, "id2")], hw=2)
    r3 = replica(3, [(0, 0, 0, "id0"), (1, 1, 2, "id2")], hw=2)
    v = classify_partition([r1, r3])
    r = by_broker(v)[3]
    assert v.reference_broker == 1 and r.reconciled
    assert (r.status, r.fork_offset) == ("LOG_MATCHING_VIOLATION", 0)


def test_s7_unclean_election_committed_and_uncommitted_buckets():
    a = replica(1, dense([(100, 149, 5)]), hw=145, clean=False)
    c = replica(3, dense([(100, 119, 5), (120, 129, 6)]), hw=130)
    b = replica(2, dense([(100, 119, 5), (120, 129, 6)]), hw=130)
    v = classify_partition([a, b, c])
    assert v.reference_broker == 2      # tie on epoch/LEO/HW -> lowest id; B == C
    r = by_broker(v)[1]
    assert (r.status, r.fork_offset) == ("COMMITTED_LOSS", 120)
    assert r.divergent == {"first_offset": 120, "last_offset": 149, "records": 30, "committed_records": 25}
    assert by_broker(v)[3].status == "CONSISTENT"
    rng = v.divergent_ranges[0]
    assert rng.is_committed(144) and not rng.is_committed(145)
    assert [o for o in range(100, 160) if rng.is_committed(o)] == list(range(120, 145))
    # 30 divergent batches with one committed bound: one entry, not one per batch (the
    # verdict is what the Spark driver collects)
    assert rng.committed_bounds == [(120, 149, 145)]


def test_s8_acks1_clean_failover_is_diverged_uncommitted():
    a = replica(1, dense([(480, 509, 3)]), hw=505, clean=False)
    b = replica(2, dense([(480, 504, 3)]), hw=505, lec=[(3, 480), (4, 505)])
    v = classify_partition([a, b])
    assert v.reference_broker == 2          # empty tail epoch 4 makes it the newest lineage
    r = by_broker(v)[1]
    assert (r.status, r.fork_offset, r.cause) == ("DIVERGED_UNCOMMITTED", 505, None)
    assert r.divergent["records"] == 5 and r.divergent["committed_records"] == 0


def test_s11b_last_replica_standing_local_loss_reelected():
    leader = replica(2, dense([(0, 79, 1)]), hw=100, clean=False)
    f0 = replica(0, dense([(0, 99, 1)]), hw=95)
    v = classify_partition([leader, f0])
    # leader has the higher... equal epoch, shorter LEO -> f0 would be chosen without metadata
    hist = PartitionHistory("t", None, 0, leader=2, leader_epoch=1,
                            elections={1: Election(1, 2, (2,), False)})
    v = classify_partition([leader, f0], history=hist)
    assert by_broker(v)[2].status == "TRUNCATED_BELOW_HW"
    r = by_broker(v)[0]
    assert (r.status, r.fork_offset, r.cause) == ("COMMITTED_LOSS", 80, "LOCAL_LOSS_REELECTED")
    assert r.divergent["committed_records"] == 15


def test_s14_s15_s17_benign_differences_stay_consistent():
    spec = dense([(0, 49, 0), (50, 99, 3)])
    a = replica(1, spec, hw=100, lec=[(0, 0), (3, 50), (5, 100)])          # empty tail epoch + gap
    b = replica(2, spec[30:], hw=100, lec=[(0, 30), (3, 50)], log_start_checkpoint=30)
    c = replica(3, spec, hw=97, lec=[(0, 0), (3, 50), (4, 120)], clean=False)   # stale ckpt entry
    for bt in c.batches[60:]:
        bt.segment = "00000000000000000060.log"                              # other layout
    v = classify_partition([a, b, c])
    assert {r.status for r in v.replicas} == {"CONSISTENT"}, [(r.broker, r.status, r.findings) for r in v.replicas]
    codes = {f.code for f in v.findings}
    assert {"BENIGN_LOG_START_DIFFERS", "BENIGN_SEGMENT_LAYOUT_DIFFERS", "BENIGN_EPOCH_GAPS"} <= codes
    assert "STALE_EPOCH_CKPT" in {f.code for f in by_broker(v)[3].findings}


def test_s16_compaction_below_cleaner_checkpoint_is_not_divergence():
    spec = [(0, 4, 0, "a"), (5, 9, 0, "b"), (10, 14, 0, "c"), (15, 19, 0, "d")]
    compacted = [(0, 4, 0, "a'"), (10, 14, 0, "c'"), (15, 19, 0, "d")]       # b emptied away
    v = classify_partition([replica(1, spec, hw=20), replica(2, compacted, hw=20, cleaner_checkpoint=15)])
    assert {r.status for r in v.replicas} == {"CONSISTENT"}


def test_s20_crc_invalid_local_vs_replicated_and_torn_tail():
    spec = dense([(0, 9, 0)])
    a, b = replica(1, spec, hw=10), replica(2, spec, hw=10)
    b.batches[4].crc_valid = False
    v = classify_partition([a, b])
    assert by_broker(v)[2].status == "CRC_INVALID"
    assert any(f.code == "CRC_INVALID" and "(local)" in f.detail for f in v.findings)
    a.batches[4].crc_valid = False
    v = classify_partition([a, b])
    assert any(f.code == "CRC_INVALID" and "(replicated)" in f.detail for f in v.findings)
    # a trailing invalid batch on a crashed broker is a torn tail, cut like Kafka's recovery
    c = replica(3, spec, hw=9, clean=False)
    c.batches[-1].crc_valid = False
    v = classify_partition([replica(1, spec, hw=10), c])
    r = by_broker(v)[3]
    assert r.status == "LAGGING_PREFIX" and r.log_end_offset == 9
    assert "TORN_TAIL" in {f.code for f in r.findings}


def test_s22_other_topic_id_and_special_dirs_never_reference():
    spec = dense([(0, 9, 0)])
    a = replica(1, spec, hw=10, topic_id="AAAAAAAAAAAAAAAAAAAAAA")
    b = replica(2, spec, hw=10, topic_id="AAAAAAAAAAAAAAAAAAAAAA")
    z = replica(3, dense([(0, 19, 4)]), hw=20, topic_id="BBBBBBBBBBBBBBBBBBBBBB")
    f = replica(4, dense([(0, 29, 9)]), hw=30, topic_id="AAAAAAAAAAAAAAAAAAAAAA", state="future")
    v = classify_partition([a, b, z, f])
    assert v.reference_broker == 1
    assert by_broker(v)[3].status == "NOT_COMPARABLE"


def test_non_monotonic_offsets_inside_one_replica():
    r = replica(1, [(0, 4, 0, "a"), (5, 9, 0, "b"), (7, 12, 0, "c")], hw=0)
    v = classify_partition([r])
    assert by_broker(v)[1].status == "NON_MONOTONIC_OFFSETS"


def test_s12_empty_disk_elected_leader_loses_everything():
    new_leader = replica(1, dense([(0, 4, 7)]), hw=5, lec=[(7, 0)])
    old = replica(2, dense([(0, 39, 2), (40, 89, 3)]), hw=88)
    v = classify_partition([new_leader, old])
    r = by_broker(v)[2]
    assert v.reference_broker == 1
    assert (r.status, r.fork_offset, r.divergent["committed_records"]) == ("COMMITTED_LOSS", 0, 88)
    assert any(f.code == "LOG_RESTARTED_FROM_EMPTY" for f in v.findings)
    # a plain unclean election later in the log is not that signature
    v7 = classify_partition([replica(1, dense([(0, 9, 5), (10, 14, 6)]), hw=15),
                             replica(2, dense([(0, 19, 5)]), hw=18)])
    assert not any(f.code == "LOG_RESTARTED_FROM_EMPTY" for f in v7.findings)


def test_s2_clean_election_without_local_loss_is_protocol_violation():
    """FORENSICS.md S2 (HWC_B = 2): A truncated to its HW on restart and was elected cleanly in
    epoch 1; B still holds m2, committed. No local loss is visible on A -> PROTOCOL_VIOLATION."""
    a = replica(1, [(0, 0, 0, "m1"), (1, 1, 1, "m3")], hw=2, lec=[(0, 0), (1, 1)])
    b = replica(2, [(0, 0, 0, "m1"), (1, 1, 0, "m2")], hw=2, lec=[(0, 0)], clean=False)
    hist = PartitionHistory("t", None, 0, leader=1, leader_epoch=1, elections={
        0: Election(0, 2, (1, 2), False), 1: Election(1, 1, (1,), False)})
    v = classify_partition([a, b], history=hist)
    assert v.reference_broker == 1
    r = by_broker(v)[2]
    assert (r.status, r.fork_offset, r.cause) == ("COMMITTED_LOSS", 1, "PROTOCOL_VIOLATION")
    assert r.divergent["committed_records"] == 1
