"""What Kafka serves and deletes of a partition's remote segments (segtools.tier.lineage's
EpochIndex, serve_walk, deletion_threshold, and the audit's findings from them).

Oracles: Kafka 4.3.1's own RemoteLogMetadataCache (EpochIndexOracle.java, on random event
sequences made here), and two runs of an unclean election on a real 3-broker 4.3.1 cluster
(tests/tier/realcluster_check.py ... unclean, 2026-11-28; docs/TIER.md): the evidence of each
is rebuilt here from the run's recorded metadata, and the expected answer is what the real
consumer was served and what Kafka deleted."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_tier_audit import _sid, broker_dir, start, update  # noqa: E402

from segtools.tier import audit  # noqa: E402
from segtools.tier.lineage import (  # noqa: E402
    EpochIndex,
    Seg,
    deletion_threshold,
    epoch_for_offset,
    serve_walk,
)

FINISHED, DELETE_STARTED, DELETE_FINISHED = 1, 2, 3


def _random_case(rng: random.Random) -> list[tuple[str, ...]]:
    """Segments over a few start offsets (so uploads at the same start collide, as after a
    leader change), each taken a random way along its legal states, interleaved."""
    paths = []
    for n in range(rng.randint(2, 6)):
        lo = rng.choice([0, 10, 20, 30])
        hi = lo + rng.choice([9, 19, 29])
        epochs = {rng.randint(0, 1): lo}
        for epoch in sorted(rng.sample(range(2, 5), rng.randint(0, 2))):
            epochs[epoch] = rng.randint(max(epochs.values()), hi)
        eps = ",".join(f"{e}:{o}" for e, o in sorted(epochs.items()))
        steps = [("start", f"s{n}", str(lo), str(hi), eps)]
        for state in (FINISHED, DELETE_STARTED, DELETE_FINISHED):
            if rng.random() < (0.85 if state == FINISHED else 0.3):
                steps.append(("update", f"s{n}", str(state)))
            else:
                break
        paths.append(steps)
    events: list[tuple[str, ...]] = []
    while any(paths):
        events.append(rng.choice([p for p in paths if p]).pop(0))
    return events


def _ours(events: list[tuple[str, ...]]) -> list[str]:
    index, segs = EpochIndex(), {}
    for ev in events:
        if ev[0] == "start":
            epochs = {int(e): int(o) for e, o in (x.split(":") for x in ev[4].split(","))}
            segs[ev[1]] = Seg(ev[1], int(ev[2]), int(ev[3]), epochs)
            index.started(segs[ev[1]])
        else:
            {FINISHED: index.finished, DELETE_STARTED: index.delete_started,
             DELETE_FINISHED: index.delete_finished}[int(ev[2])](segs[ev[1]])
    out = []
    for epoch in range(5):
        for offset in range(0, 61, 3):
            got = index.lookup(epoch, offset)
            out.append(f"lookup {epoch} {offset} {got.segment_id if got else '-'}")
        listed = sorted(s for s in segs if epoch in index.listed(s))
        out.append(f"list {epoch} {','.join(listed) or '-'}")
    return out


@pytest.mark.slow   # one JVM
def test_epoch_index_equals_kafkas_cache(tmp_path: Path) -> None:
    from tiered_cluster import classpath

    from segtools.realcluster.kafka_runtime import find_java
    from segtools.realcluster.processes import run_tool

    rng = random.Random(27)
    cases = [_random_case(rng) for _ in range(300)]
    lines = []
    for events in cases:
        lines.append("case")
        lines.extend(" ".join(ev) for ev in events)
        for epoch in range(5):
            lines.extend(f"lookup {epoch} {offset}" for offset in range(0, 61, 3))
            lines.append(f"list {epoch}")
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    res = run_tool([find_java(), "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                    "-cp", classpath(),
                    str(Path(__file__).with_name("EpochIndexOracle.java")),
                    str(tmp_path / "in.txt")], timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    kafka = res.stdout.split("case\n")[1:]
    assert len(kafka) == len(cases)
    for events, theirs in zip(cases, kafka, strict=True):
        assert _ours(events) == theirs.splitlines(), events
    # not vacuous: Kafka serves many reads, and leaves some FINISHED segments unlisted
    served = sum(line.split()[-1] != "-" for t in kafka for line in t.splitlines()
                 if line.startswith("lookup"))
    unlisted = 0
    for events, theirs in zip(cases, kafka, strict=True):
        finished = {ev[1] for ev in events if ev[0] == "update" and ev[2] == str(FINISHED)}
        deleting = {ev[1] for ev in events if ev[0] == "update" and ev[2] != str(FINISHED)}
        listed = {n for line in theirs.splitlines() if line.startswith("list")
                  for n in line.split()[2].split(",")}
        unlisted += len(finished - deleting - listed)
    assert served > 1000 and unlisted > 0, (served, unlisted)


def _found(report: object, kind: str) -> list[tuple[str, int | None, int | None]]:
    return sorted((f.segment_id, f.start_offset, f.end_offset)
                  for f in report.findings if f.kind == kind)  # type: ignore[attr-defined]


@pytest.mark.fast
def test_unclean_election_serves_the_old_leaders_records(tmp_path: Path) -> None:
    """Run 2 (topic with local.retention.bytes=1): broker 1 alone uploaded A [0, 1027] and
    B [1028, 2051] in epoch 0; broker 2, holding only 0-99, was elected uncleanly (epoch 2 from
    100), deleted its local [0, 100) as tiered and uploaded C [100, 100], D [101, 1124],
    E [1125, 2148]. The real consumer from offset 0 was served 0-99, then broker 1's records
    100-1027 (out of A), then broker 2's from 1028; DeleteRecords to 100 made Kafka delete A
    and B, and nothing else."""
    a, b, c, d, e = range(5)
    md = [start(a, 0, 1027, {0: 0}), update(a, 1), start(b, 1028, 2051, {0: 1028}),
          update(b, 1), start(c, 100, 100, {2: 100}, broker=2), update(c, 1, broker=2),
          start(d, 101, 1124, {2: 101}, broker=2), update(d, 1, broker=2),
          start(e, 1125, 2148, {2: 1125}, broker=2), update(e, 1, broker=2)]
    r = audit([str(broker_dir(tmp_path, md, local_start=2149, log_end=2701,
                              epochs={0: 0, 2: 100}))])
    assert {f.kind for f in r.findings} == {"out_of_lineage", "served_out_of_lineage"}
    assert _found(r, "served_out_of_lineage") == [(_sid(a), 100, 1027)]
    assert _found(r, "out_of_lineage") == [(_sid(a), 0, 1027), (_sid(b), 1028, 2051)]
    assert all("log start offset reaches 100 " in f.message for f in r.findings
               if f.kind == "out_of_lineage")


@pytest.mark.fast
def test_same_start_upload_leaves_the_old_one_unlisted(tmp_path: Path) -> None:
    """Run 1 (local retention left at its default): the new leader kept its [0, 100) locally
    and uploaded C [0, 1027] (epochs 0 and 2) and D [1028, 2051]. C took A's place at offset 0
    of epoch 0 in Kafka's index: after DeleteRecords to 101 Kafka deleted B and never A."""
    a, b, c, d = range(4)
    md = [start(a, 0, 1027, {0: 0}), update(a, 1), start(b, 1028, 2051, {0: 1028}),
          update(b, 1), start(c, 0, 1027, {0: 0, 2: 100}, broker=2), update(c, 1, broker=2),
          start(d, 1028, 2051, {2: 1028}, broker=2), update(d, 1, broker=2)]
    r = audit([str(broker_dir(tmp_path, md, local_start=0, log_end=2701,
                              epochs={0: 0, 2: 100}))])
    assert _found(r, "unlisted_segment") == [(_sid(a), 0, 1027)]
    lineage = {f.segment_id: f.message for f in r.findings if f.kind == "out_of_lineage"}
    assert set(lineage) == {_sid(a), _sid(b)}
    assert "never deletes it" in lineage[_sid(a)]
    assert "log start offset reaches 100 " in lineage[_sid(b)]
    assert {f.kind for f in r.findings} == {"out_of_lineage", "unlisted_segment"}


@pytest.mark.fast
def test_walk_and_thresholds_by_kafkas_rules() -> None:
    # epochForOffset: an entry starting exactly at the offset wins, the first such
    assert [epoch_for_offset({0: 0, 1: 10, 2: 10}, o) for o in (0, 9, 10, 11)] == [0, 0, 1, 2]
    index = EpochIndex()
    old = Seg("old", 0, 49, {0: 0, 1: 20})       # the old leader's epoch 1 from 20
    index.finished(old)
    # the new leader's chain: epoch 1 never had records here, epoch 2 from 30
    walk = serve_walk(index, {0: 0, 2: 30}, 0, 60, 80)
    assert walk.served == [(0, 19, "old")]
    # the read at 0 is answered from "old" on to its end: its epoch-1 records 20-49 where
    # the leader's chain has epoch 0 (20-29) and epoch 2 (30-49)
    assert walk.foreign == [(20, 29, "old", 1, 0), (30, 49, "old", 1, 2)]
    # 20-29 are epoch 0 for the leader, and no segment holds epoch 0 past 19; 30-59 are
    # epoch 2, held by no segment: nothing is served for them
    assert walk.gaps == [(20, 59)]
    # deleted once the log start offset reaches 30 (the chain then starts at epoch 2 > 1)
    assert deletion_threshold(old, {0: 0, 2: 30}) == 30
    # a chain whose last epoch is the segment's: once the log start passes its end
    assert deletion_threshold(Seg("s", 10, 19, {1: 10}), {0: 0, 1: 12}) == 20
    assert deletion_threshold(Seg("s", 10, 19, {3: 10}), {0: 0, 1: 12}) is None


def _epochs_in_range(chain: dict[int, int], lo: int, hi: int) -> dict[int, int]:
    """epochEntriesInRange(lo, hi + 1) of a chain (how a broker records a segment's epochs)."""
    out = {e: o for e, o in chain.items() if lo <= o <= hi}
    holder = epoch_for_offset(chain, lo)
    if holder is not None and lo not in out.values():
        out[holder] = lo
    return out


@pytest.mark.fast
def test_one_lineage_is_served_whole(tmp_path: Path) -> None:
    """Ground truth by construction: 500 histories of one lineage (leader changes at random
    offsets, segments uploaded in order by whoever led, some uploaded twice as after a leader
    change, the oldest deleted by retention with the chain truncated at the new log start).
    Every offset from the log start to the first local offset is served, from its own epoch:
    no gap, nothing foreign, and every segment stays listed."""
    rng = random.Random(405)
    for _ in range(500):
        log_end = rng.randint(50, 400)
        starts = sorted(rng.sample(range(1, log_end), rng.randint(0, 4)))
        chain = dict(enumerate([0, *starts]))
        cuts = sorted(rng.sample(range(1, log_end - 1), rng.randint(1, 6)))   # segment ends + 1
        bounds = list(zip([0, *cuts[:-1]], [c - 1 for c in cuts], strict=True))
        index = EpochIndex()
        segs = [Seg(f"s{i}", lo, hi, _epochs_in_range(chain, lo, hi))
                for i, (lo, hi) in enumerate(bounds)]
        for seg in segs:
            index.started(seg)
            index.finished(seg)
            if rng.random() < 0.2:   # uploaded again by the next leader: same offsets
                again = Seg(seg.segment_id + "b", seg.start, seg.end, seg.epochs)
                index.started(again)
                index.finished(again)
        deleted = rng.randint(0, len(segs) - 1)
        for seg in segs[:deleted]:
            index.delete_started(seg)
            index.delete_finished(seg)
        log_start = segs[deleted].start
        live = {e: o for e, o in chain.items() if o >= log_start}
        holder = epoch_for_offset(chain, log_start)
        if holder is not None and log_start not in live.values():
            live[holder] = log_start                    # truncateFromStart
        local_start = rng.randint(segs[-1].start, segs[-1].end + 1)
        walk = serve_walk(index, live, log_start, local_start, log_end)
        assert walk.gaps == [] and walk.foreign == [], (chain, bounds, walk)
        held = sorted((lo, hi) for lo, hi, _ in walk.served)
        assert held == [] if local_start == log_start else \
            held[0][0] == log_start and held[-1][1] >= local_start - 1
        assert all(b[0] == a[1] + 1 for a, b in zip(held, held[1:], strict=False))
        assert all(index.listed(s.segment_id) for s in segs[deleted:])


@pytest.mark.fast
def test_the_leader_is_the_one_the_metadata_log_names(tmp_path: Path) -> None:
    """Run 2's partition with two replicas that both hold epoch 2 (a follower caught up):
    without a KRaft metadata log on the evidence both could lead, and each is named; with one
    whose last PartitionRecord makes broker 1 leader, only broker 1 serves reads."""
    import base64

    from segtools.internal_topics.metadata import encode_record
    from segtools.writer.batch_builder import NewRecord, build_batch
    from tests.tier.test_tier_audit import TOPIC_ID

    a, b, c, d, e = range(5)
    md = [start(a, 0, 1027, {0: 0}), update(a, 1), start(b, 1028, 2051, {0: 1028}),
          update(b, 1), start(c, 100, 100, {2: 100}), update(c, 1),
          start(d, 101, 1124, {2: 101}), update(d, 1), start(e, 1125, 2148, {2: 1125}),
          update(e, 1)]
    dirs = [str(broker_dir(tmp_path, md, local_start=2149, log_end=2701, epochs={0: 0, 2: 100},
                           node=n)) for n in (1, 2)]
    served = sorted(f.broker for f in audit(dirs).findings
                    if f.kind == "served_out_of_lineage")
    assert served == [1, 2]
    tid = base64.urlsafe_b64decode(TOPIC_ID + "==")
    records = [("TopicRecord", 0, {"name": "t", "topicId": tid}),
               ("PartitionRecord", 0, {"partitionId": 0, "topicId": tid, "replicas": [1, 2],
                                       "isr": [1, 2], "removingReplicas": [],
                                       "addingReplicas": [], "leader": 1,
                                       "leaderRecoveryState": 0, "leaderEpoch": 2,
                                       "partitionEpoch": 3})]
    log = Path(dirs[1]) / "__cluster_metadata-0"
    log.mkdir()
    (log / f"{0:020d}.log").write_bytes(b"".join(
        build_batch([NewRecord(None, encode_record(*r), (), 1)], base_offset=i)
        for i, r in enumerate(records)))
    found = [f for f in audit(dirs).findings if f.kind == "served_out_of_lineage"]
    assert [(f.broker, f.start_offset, f.end_offset) for f in found] == [(1, 100, 1027)]
