"""Kafka 4.x rules of compare on metadata and logs built to Kafka's rules: KIP-966 election
classes (PartitionChangeBuilder.electAnyLeader), the high watermark frozen under min ISR,
unclean restarts (ReplicationControlManager.handleBrokerUncleanShutdown) and transactions
paired by producer id (ProducerAppendInfo). The real-cluster counterparts are in
tests/realkafka/test_forensics4x_*.py."""

from __future__ import annotations

from segtools.forensics.elections import classify_election, replay
from segtools.forensics.model import BatchFacts
from segtools.forensics.transactions import partition_transactions

TID = "dRIZhvotRveXjSZwRXM2gA"


def _part(**kw):
    return ("PartitionChangeRecord", 2, {"partitionId": 0, "topicId": TID, "leader": -2, **kw})


def _base(min_isr: int = 2, elr: int = 1):
    return [
        ("FeatureLevelRecord", 0, {"name": "eligible.leader.replicas.version", "featureLevel": elr}),
        ("TopicRecord", 0, {"name": "orders", "topicId": TID}),
        ("ConfigRecord", 0, {"resourceType": 2, "resourceName": "orders", "name": "min.insync.replicas",
                             "value": str(min_isr)}),
        ("PartitionRecord", 0, {"partitionId": 0, "topicId": TID, "replicas": [1, 2, 3], "isr": [1, 2, 3],
                                "leader": 1, "leaderRecoveryState": 0, "leaderEpoch": 0, "partitionEpoch": 0}),
    ]


def _classes(h):
    return [(c["leader_epoch"], c["leader"], c["election_class"]) for c in h.changes if "election_class" in c]


def test_elr_election_is_clean_and_hw_freezes_below_min_isr():
    recs = _base() + [
        _part(isr=[1, 2]),                                          # 3 leaves: ISR 2 >= min ISR
        _part(isr=[1], eligibleLeaderReplicas=[2]),                 # 2 leaves: ELR {2}, HW frozen
        _part(isr=[], leader=-1, eligibleLeaderReplicas=[1, 2], lastKnownElr=[1]),   # 1 fenced
        _part(isr=[2], leader=2, eligibleLeaderReplicas=[1], lastKnownElr=[]),       # ELR election
        _part(isr=[2, 3], eligibleLeaderReplicas=[]),               # back to min ISR
    ]
    h = replay([(*r, {"offset": i, "timestamp_ms": 1000 * i}) for i, r in enumerate(recs)])[("orders", 0)]
    assert _classes(h) == [(0, 1, "initial"), (1, -1, "offline"), (2, 2, "elr")]
    assert not h.elections[2].unclean
    assert [c.get("hw_frozen", False) for c in h.changes] == [False, False, True, True, True, False]
    assert [(s["from_offset"], s["to_offset"], s["min_isr"]) for s in h.hw_frozen] == [(5, 8, 2)]


def test_last_known_leader_and_unclean_elections():
    recs = _base(min_isr=3) + [
        _part(isr=[1], eligibleLeaderReplicas=[2, 3]),
        _part(isr=[], leader=-1, eligibleLeaderReplicas=[1, 2, 3], lastKnownElr=[1]),
        # 2 and 3 re-register after unclean stops: dropped from ELR, no election
        _part(eligibleLeaderReplicas=[1, 3]),
        _part(eligibleLeaderReplicas=[1]),
        _part(eligibleLeaderReplicas=[]),
        # nobody eligible: the last known leader comes back (unclean: RECOVERING, ISR forced)
        _part(isr=[1], leader=1, leaderRecoveryState=1, lastKnownElr=[]),
        _part(leader=-1, isr=[1]),
        _part(isr=[3], leader=3, leaderRecoveryState=1),           # classic unclean
    ]
    h = replay(recs)[("orders", 0)]
    assert _classes(h)[1:] == [(1, -1, "offline"), (2, 1, "last_known_leader"), (3, -1, "offline"),
                               (4, 3, "unclean")]
    assert h.elections[2].unclean and h.elections[4].unclean
    assert [c["election"] for c in h.changes if "election" in c][2] == "unclean"


def test_classify_election_table():
    assert classify_election(2, (1, 2), (), (), (1, 2), False) == "isr"
    assert classify_election(2, (), (2, 3), (), (2,), False) == "elr"
    assert classify_election(1, (), (), (1,), (1,), True) == "last_known_leader"
    assert classify_election(3, (), (2,), (1,), (3,), True) == "unclean"
    assert classify_election(3, (1,), (), (), (3,), False) == "unclean"       # forced, pre-KIP-704
    assert classify_election(-1, (1,), (), (), (1,), False) == "offline"


def _reg(b, epoch, **kw):
    return ("RegisterBrokerRecord", 3, {"brokerId": b, "brokerEpoch": epoch, "fenced": True, **kw})


def test_restart_without_elr_removals_is_no_controller_event_but_the_log_dir_tells(tmp_path):
    from segtools.forensics.shutdowns import last_stop

    recs = _base(elr=0) + [
        _reg(1, 10), _reg(2, 11),
        # a follower's clean stop and a crash look alike here: fenced, no removal at return
        ("BrokerRegistrationChangeRecord", 1, {"brokerId": 2, "brokerEpoch": 11, "fenced": 1}),
        _part(isr=[1, 3]),
        _reg(2, 20),
        ("BrokerRegistrationChangeRecord", 1, {"brokerId": 2, "brokerEpoch": 20, "fenced": 0}),
        ("BrokerRegistrationChangeRecord", 1, {"brokerId": 1, "brokerEpoch": 10, "fenced": 1}),
    ]
    h = replay(recs)
    assert h.unclean_shutdowns == []
    down = tmp_path / "broker-1"
    down.mkdir()
    assert last_stop(str(down), False, 1, h.brokers)["last_stop"] == "unclean"
    assert last_stop(str(down), False, 2, h.brokers)["last_stop"] == "running"
    (down / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":10}')
    info = last_stop(str(down), True, 1, h.brokers)
    assert (info["last_stop"], info["clean_shutdown_broker_epoch"], info.get("stale_clean_shutdown_file")) == \
        ("clean", 10, None)
    (down / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":3}')
    assert last_stop(str(down), True, 1, h.brokers)["stale_clean_shutdown_file"] is True


def test_controller_detected_unclean_restart():
    recs = _base() + [
        _reg(2, 5),
        _part(isr=[1], eligibleLeaderReplicas=[2]),
        # re-registration with ELR on: the controller drops 2 from the ELR in the same batch
        _part(eligibleLeaderReplicas=[]),
        _reg(2, 9),
    ]
    h = replay(recs)
    (ev,) = h.unclean_shutdowns
    assert (ev["broker"], ev["previous_broker_epoch"], ev["broker_epoch"], ev["detected_by"]) == \
        (2, 5, 9, "controller")
    assert ev["removed_from"] == [{"topic": "orders", "partition": 0}]


def _b(base, last, pid, epoch, *, txn=True, control=False, ts=0):
    return BatchFacts(base_offset=base, last_offset=last, partition_leader_epoch=0, crc=0,
                      records_count=last - base + 1, producer_id=pid, producer_epoch=epoch,
                      base_sequence=0, is_transactional=txn, is_control=control, max_timestamp=ts)


def test_transactions_v2_pair_by_producer_id_with_bumped_marker_epoch():
    batches = [
        _b(0, 2, 7, 0), _b(3, 3, 7, 1, control=True),           # committed (v2: epoch + 1)
        _b(4, 5, 8, 3), _b(6, 6, 8, 4, control=True),           # aborted
        _b(7, 8, 7, 1),                                         # next transaction of 7, open
        _b(9, 9, 9, 0), _b(10, 10, 9, 1, txn=False),            # 9 moved on: hanging
    ]
    kinds = {3: "COMMIT", 6: "ABORT"}
    rep = partition_transactions(batches, high_watermark=11, log_end_offset=11, topic="t", partition=0,
                                 transaction_version=2, marker_type=lambda b: kinds[b.base_offset])
    states = [(t["producer_id"], t["first_offset"], t["state"]) for t in rep["transactions"]]
    assert states == [(7, 0, "committed"), (8, 4, "aborted"), (7, 7, "open"), (9, 9, "hanging")]
    assert rep["last_stable_offset"] == 7
    hanging = rep["transactions"][-1]
    assert hanging["abort_command"] == ("kafka-transactions.sh --bootstrap-server <broker:port> abort "
                                        "--topic t --partition 0 --start-offset 9")
    assert not any(t.get("marker_epoch_unexpected") for t in rep["transactions"])
    # (producer id, epoch) pairing would have left both v2 transactions open
    assert rep["counts"] == {"committed": 1, "aborted": 1, "open": 1, "hanging": 1}


def test_stale_open_transaction_is_hanging_and_lso_stops_at_hw():
    batches = [_b(0, 0, 5, 0, ts=1_000), _b(1, 1, -1, -1, txn=False, ts=1_000 + 16 * 60_000)]
    rep = partition_transactions(batches, high_watermark=2, log_end_offset=2, topic="t", partition=3)
    assert rep["transactions"][0]["state"] == "hanging"
    assert rep["last_stable_offset"] == 0
    rep = partition_transactions([_b(0, 0, 5, 0), _b(1, 1, 5, 0, control=True)], high_watermark=1,
                                 log_end_offset=2, topic="t", partition=3)
    assert rep["transactions"][0]["state"] == "ended" and rep["last_stable_offset"] == 1


def test_corrupt_epoch_checkpoint_is_evidence_and_epochs_come_from_batches(tmp_path):
    """KAFKA-16541: a leader-epoch-checkpoint left NUL-filled by an OS crash."""
    import segtools
    from segtools.simulate import run
    from segtools.simulate.scenario import parse_scenario

    spec = {"name": "k16541", "seed": 3, "cluster": {"brokers": [1, 2]},
            "topics": [{"name": "t", "replication_factor": 2, "min_insync_replicas": 1,
                        "assignment": {0: [1, 2]}}],
            "steps": [{"produce": {"topic": "t", "partition": 0, "acks": "all", "count": 3}},
                      {"shutdown": {"broker": 1}},
                      {"produce": {"topic": "t", "partition": 0, "acks": "all", "count": 2}},
                      {"restart": {"broker": 1}}, {"advance": {"ms": 6000}}]}
    out = tmp_path / "sim"
    run(parse_scenario(spec), out)
    lec = out / "broker-2" / "t-0" / "leader-epoch-checkpoint"
    good = [tuple(map(int, line.split())) for line in lec.read_text().splitlines()[2:]]
    lec.write_bytes(b"\0" * 24)
    report = segtools.compare([str(out)], find_metadata_log=False)
    (part,) = report.partitions
    rep2 = next(r for r in part.verdict.replicas if r.broker == 2)
    codes = [f.code for f in rep2.findings]
    assert "EPOCH_CKPT_CORRUPT" in codes and "READ_ERROR" in codes
    # the epochs rebuilt from the batches are what Kafka had checkpointed
    assert [tuple(e) for e in rep2.epochs] == good
    assert lec.read_bytes() == b"\0" * 24          # the evidence is untouched


def _replica(root, broker, batches, hw):
    from segtools.files.checkpoints import write_meta_properties, write_offset_checkpoint
    from segtools.writer import LogWriter

    ld = root / f"broker-{broker}"
    w = LogWriter(ld / "t-0")
    for raw in batches:
        w.append(raw, validate=False)
    w.close()
    write_offset_checkpoint(ld / "replication-offset-checkpoint", {("t", 0): hw})
    write_meta_properties(ld / "meta.properties", {"version": "1", "node.id": str(broker),
                                                   "cluster.id": "Ab9x0HJVQmSi6tc2zlS0WA"})


def _kv(n, start=0, tweak=None):
    from segtools.writer import NewRecord

    return [NewRecord(f"k{i}".encode(), (tweak if i == 2 and tweak else f"v{i}").encode(), (), 1_000 + i)
            for i in range(start, start + n)]


def test_cleaner_format_upconversion_below_hw_is_benign_record_by_record(tmp_path):
    """KIP-724: one replica still holds a magic-1 gzip message set where the other's cleaner
    wrote v2 batches with other boundaries; same records -> BENIGN_FORMAT_CONVERTED; one value
    different -> still a log-matching violation."""
    import segtools
    from segtools.writer import build_batch, build_legacy_message_set

    tail = build_batch(_kv(2, 5), base_offset=5, partition_leader_epoch=0)
    for name, tweak, benign in (("same", None, True), ("differs", "X", False)):
        root = tmp_path / name
        _replica(root, 1, [build_legacy_message_set(_kv(5), magic=1, base_offset=0, compression="gzip"), tail], 7)
        _replica(root, 2, [build_batch(_kv(3, tweak=tweak), base_offset=0, partition_leader_epoch=0),
                           build_batch(_kv(2, 3), base_offset=3, partition_leader_epoch=0), tail], 7)
        (part,) = segtools.compare([str(root)], find_metadata_log=False).partitions
        statuses = sorted(r.status for r in part.verdict.replicas)
        codes = {f.code for r in part.verdict.replicas for f in r.findings}
        if benign:
            assert "BENIGN_FORMAT_CONVERTED" in codes and "LOG_MATCHING_VIOLATION" not in codes, statuses
            assert statuses == ["CONSISTENT", "CONSISTENT"]
        else:
            assert "LOG_MATCHING_VIOLATION" in codes and "BENIGN_FORMAT_CONVERTED" not in codes


def test_cause_names_the_last_known_leader_that_restarted_uncleanly(tmp_path):
    """The model (ELR on): broker 1 leads alone (min ISR 1) and crashes after losing its
    unflushed tail; nobody else is eligible, so when it registers again the controller drops it
    from the ELR (unclean restart) and elects it as the last known leader: the committed
    records it lost are gone, and the cause names that election and that restart."""
    import segtools
    from segtools.forensics.elections import load_histories
    from segtools.forensics.loss import AckIndex
    from segtools.simulate import run
    from segtools.simulate.scenario import parse_scenario

    spec = {"name": "lkl", "seed": 5, "cluster": {"brokers": [1, 2], "metadata_log": True,
                                                 "kafka_features": {"eligible_leader_replicas": True}},
            "topics": [{"name": "t", "replication_factor": 2, "min_insync_replicas": 1,
                        "assignment": {0: [1, 2]}}],
            "steps": [{"produce": {"topic": "t", "partition": 0, "acks": "all", "count": 4}},
                      {"advance": {"ms": 61000}},
                      {"shutdown": {"broker": 2}},
                      {"produce": {"topic": "t", "partition": 0, "acks": "all", "count": 3}},
                      {"advance": {"ms": 6000}},
                      {"snapshot": {"name": "before"}},
                      {"crash": {"broker": 1, "lose_unflushed": True}},
                      {"restart": {"broker": 1}},
                      {"produce": {"topic": "t", "partition": 0, "acks": "all", "count": 1}},
                      {"advance": {"ms": 6000}}]}
    out = tmp_path / "sim"
    run(parse_scenario(spec), out)
    histories = load_histories(out / "controller")
    classes = [c["election_class"] for c in histories[("t", 0)].changes if "election_class" in c]
    assert classes == ["initial", "offline", "last_known_leader"]
    # the snapshot's broker 1 (before its power loss) against the final broker 1
    import shutil
    shutil.copytree(out / "snapshots" / "before" / "broker-1", tmp_path / "cmp" / "broker-9")
    shutil.copytree(out / "broker-1", tmp_path / "cmp" / "broker-1")
    (tmp_path / "cmp" / "broker-9" / "meta.properties").write_text(
        (tmp_path / "cmp" / "broker-9" / "meta.properties").read_text().replace("node.id=1", "node.id=9"))
    report = segtools.compare([str(tmp_path / "cmp")], acks=AckIndex.load(out / "acks.jsonl"),
                              metadata_log=out / "controller", find_metadata_log=False)
    rv = next(r for r in report.partitions[0].verdict.replicas if r.broker == 9)
    assert rv.cause == "UNCLEAN_ELECTION"
    assert rv.cause_election == {"epoch": 2, "leader": 1, "class": "last_known_leader", "isr": [1],
                                 "leader_restarted_uncleanly": True}


def test_transaction_list_is_bounded_but_counts_and_open_ones_are_complete():
    from segtools.forensics import transactions as t

    batches = [_b(0, 0, 99, 0)]                         # open, first
    for i in range(t.MAX_LISTED + 5):
        batches += [_b(1 + 2 * i, 1 + 2 * i, 7, i), _b(2 + 2 * i, 2 + 2 * i, 7, i + 1, control=True)]
    rep = t.partition_transactions(batches, high_watermark=None, log_end_offset=10**6, topic="t",
                                   partition=0, marker_type=lambda b: "COMMIT")
    assert rep["counts"] == {"committed": t.MAX_LISTED + 5, "open": 1}
    assert rep["transactions_not_listed"] == 5
    assert len(rep["transactions"]) == t.MAX_LISTED + 1 and rep["transactions"][0]["state"] == "open"
    assert rep["transactions"][1]["first_offset"] == 1 + 2 * 5     # the latest ended ones kept
    assert rep["last_stable_offset"] == 0
