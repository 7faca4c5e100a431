"""By hand (not collected by pytest; minutes on 2 cores): tiering on a real 3-broker Kafka
4.3.1 cluster with Kafka's LocalTieredStorage and the topic-based metadata manager
(tiered_cluster.py), then ``segtools tier`` on its log dirs: 0 findings when clean, each
mutation of a copy of the remote folder found. Needs jvm/pom.xml's ``tiered-storage`` profile
resolved by Maven. The lean subset runs in CI as test_tier_realkafka.py.

    .venv/bin/python tests/tier/realcluster_check.py /tmp/tier-check [clean|killed|unclean|unclean-noroll]

``unclean`` (iii): what a consumer is served and what Kafka deletes after an unclean election,
against the audit (docs/TIER.md has the runs); ``unclean-noroll`` the same without local
retention, where the new leader's own upload takes an old segment's place in Kafka's index.
"""

from __future__ import annotations

import glob
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from tiered_cluster import TieredCluster  # noqa: E402


def run_cluster(out: Path, records: int = 6000) -> dict[str, Any]:
    cluster = TieredCluster(out)
    try:
        cluster.start()
        cluster.create_topic("tt", **{"local.retention.bytes": "1"})
        cluster.produce("tt", records)
        cluster.wait(lambda: len(cluster.remote_logs("tt")) >= 4
                     and all(len(v) == 1 for v in cluster.local_logs("tt").values()),
                     "four tiered segments and the local copies deleted", timeout=180)
        return cluster.list_offsets("tt:0")["tt:0"]
    finally:
        cluster.stop()


def main(out: Path) -> int:
    from segtools.tier import audit

    if out.exists():
        sys.exit(f"{out} exists: give a new folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    live = run_cluster(out)
    brokers = sorted(str(p) for p in out.glob("broker-*"))
    report = audit(brokers, remote_root=str(out / "tiered"))
    (p,) = report.partitions
    print("live", live, "audit", p.to_json(), "findings", [f.kind for f in report.findings])
    assert report.findings == [], report.findings
    assert (p.earliest_offset, p.earliest_local_offset, p.latest_tiered_offset,
            p.log_end_offset) == (live["earliest"], live["earliest_local"],
                                  live["latest_tiered"], live["latest"])
    mutant = out / "mutant"
    shutil.copytree(out / "tiered", mutant)
    logs = sorted(glob.glob(f"{mutant}/*/*/*.log"))
    os.remove(logs[1])
    os.truncate(logs[2], os.path.getsize(logs[2]) - 100)
    stray = os.path.join(os.path.dirname(logs[0]), "00000000000000099999-ZZZZZZZZZZZZZZZZZZZZZQ")
    for f in glob.glob(logs[0][:-4] + ".*"):   # a leaked copy of segment 0's objects
        shutil.copy(f, stray + Path(f).suffix)
    kinds = sorted(f.kind for f in audit(brokers, remote_root=str(mutant)).findings)
    print("mutant findings", kinds)
    assert {"metadata_without_objects", "object_size_mismatch",
            "object_without_metadata"} <= set(kinds), kinds
    return 0




def leader_killed_during_upload(out: Path) -> dict[str, Any]:
    """(ii) The leader is SIGKILLed the moment the plugin has written a remote .log (the copy
    of the other objects and the COPY_SEGMENT_FINISHED record still to come): the audit of
    the brokers' dirs must report that segment as a dangling COPY_SEGMENT_STARTED."""
    import threading

    from segtools.files.tiered_storage import remote_segment_id
    from segtools.tier import audit

    cluster = TieredCluster(out)
    seen: list[str] = []
    try:
        cluster.start()
        cluster.create_topic("tt")
        leader, _ = cluster.view("tt")
        done = threading.Event()

        def watch() -> None:       # kill at the first remote .log, polled every millisecond
            while not done.is_set():
                logs = cluster.remote_logs("tt")
                if logs:
                    cluster.rc.brokers[leader].kill()
                    seen.extend(logs)
                    return
                time.sleep(0.001)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            cluster.produce("tt", 1300, acks="1")   # one 1 MiB segment rolls and is uploaded
            cluster.wait(lambda: bool(seen), "the first upload", timeout=120)
        finally:
            done.set()
            watcher.join()
        time.sleep(3)   # the other brokers see the leader gone; the evidence is taken now
    finally:
        cluster.stop()
    report = audit(cluster.brokers)
    killed = {remote_segment_id(p) for p in seen}
    dangling = {f.segment_id for f in report.findings if f.kind == "dangling_started"}
    states = {s.segment_id: [h[0] for h in s.history] for s in report.segments}
    print("(ii) leader", leader, "killed at", seen, "dangling", dangling, "histories", states)
    assert killed <= dangling, (killed, dangling, states)
    return {"leader": leader, "segment": sorted(killed), "findings": [f.kind for f in report.findings]}


def _runs(served: list[tuple[int, str]]) -> list[tuple[int, int, str]]:
    """(first offset, last offset, key prefix) of each run of records from one lineage."""
    out: list[tuple[int, int, str]] = []
    for offset, key in served:
        who = key.rstrip("0123456789")
        if out and out[-1][2] == who and out[-1][1] + 1 == offset:
            out[-1] = (out[-1][0], offset, who)
        else:
            out.append((offset, offset, who))
    return out


def unclean_election_after_uploads(out: Path, roll: bool = True) -> dict[str, Any]:
    """(iii) Topic ``tu`` on brokers 1 (leader) and 2. Both take 100 records (keys ``c``);
    broker 2 is killed and drops out of the ISR; broker 1 takes 2,600 more alone (keys ``o``,
    the old leader's lineage) and uploads two segments; broker 1 is killed, broker 2 restarted
    and elected uncleanly; it takes 2,600 records of its own (keys ``n``) and uploads them.
    Recorded live: what a consumer from offset 0 is served (by key, whose lineage each record
    is) before and after the new leader's records, and which segments Kafka deletes, with the
    topic untouched, then after DeleteRecords moves the log start offset one past the start of
    the new leader's epoch (the condition Kafka's RemoteLogManager deletes segments of older
    epochs under, docs/TIER.md). The audit of the dirs copied before the election names the
    out-of-lineage set; it must equal what Kafka deleted; the audit of the dirs copied while
    the consumer read must name the offsets it was served from another lineage."""
    from segtools.errors import SegtoolsError
    from segtools.files.checkpoints import read_leader_epoch_checkpoint
    from segtools.tier import audit

    cluster = TieredCluster(out)
    before = out.parent / (out.name + "-before-election")
    serving = out.parent / (out.name + "-while-served")
    facts: dict[str, Any] = {}
    deleted: dict[str, set[str]] = {}

    def kafka_deleted(when: str) -> bool:
        try:
            segs = [s for s in audit(cluster.brokers).segments if s.topic == "tu"]
        except SegtoolsError:   # live dirs: a file renamed or removed while listed
            return False
        deleted[when] = {s.segment_id for s in segs if any(h[0] >= 2 for h in s.history)}
        return bool(deleted[when]) and all(s.state == 3 for s in segs
                                           if s.segment_id in deleted[when])

    try:
        cluster.start()
        conf = {"min.insync.replicas": "1"}
        if roll:   # tiered segments are deleted locally at once
            conf["local.retention.bytes"] = "1"
        cluster.create_topic("tu", replicas=[1, 2], **conf)
        cluster.wait(lambda: cluster.view("tu") == (1, [1, 2]), "tu led by 1 with ISR [1, 2]")
        cluster.produce("tu", 100, prefix="c")
        # killed, not paused: a paused broker holds its connections open and the metadata
        # manager's clients wait on it (seen: an upload failing after 60 s)
        cluster.rc.crash(2)
        cluster.wait(lambda: cluster.view("tu")[1] == [1], "broker 2 out of the ISR", timeout=60)
        cluster.produce("tu", 2600, acks="1", prefix="o")
        cluster.wait(lambda: len(cluster.remote_logs("tu")) >= 2, "two uploads by broker 1",
                     timeout=120)
        time.sleep(5)   # COPY_SEGMENT_FINISHED written (a metadata partition may have moved)
        cluster.rc.crash(1)
        cluster.rc.restart(2)
        time.sleep(3)
        for b in cluster.brokers:
            shutil.copytree(b, before / Path(b).name)
        old = set(cluster.remote_logs("tu"))
        cluster.elect_unclean("tu", via=[2, 3])
        print("(iii) unclean election: broker 2 leads tu-0")
        time.sleep(5)
        if roll:
            # the new leader's segment holding [0, 100) rolls at its next append; Kafka then
            # takes it as tiered (its epoch 0 ends at 99, and the remote tier holds epoch 0
            # up to 2051) and deletes it locally: reads below 100 go to the remote tier
            cluster.alter_topic("tu", **{"segment.ms": "1000"})
            time.sleep(2)
            cluster.produce("tu", 1, prefix="r")
            cluster.wait(lambda: not os.path.exists(f"{out}/broker-2/tu-0/{0:020d}.log"),
                         "broker 2's local [0, 100) deleted as tiered", timeout=60)
            facts["broker_2_local_logs"] = [Path(p).name for p in cluster.local_logs("tu")[
                f"{out}/broker-2"]]
        served, err = cluster.consume_from("tu", 0)
        facts["served_before_new_records"] = {"runs": _runs(served), "error": err}
        print("(iii) served from 0 before new records:", facts["served_before_new_records"])
        cluster.produce("tu", 2600, prefix="n")
        cluster.wait(lambda: len(set(cluster.remote_logs("tu")) - old) >= 1,
                     "an upload by the new leader", timeout=120)
        time.sleep(5)
        served, err = cluster.consume_from("tu", 0)
        facts["served"] = {"runs": _runs(served), "error": err}
        print("(iii) served from 0:", facts["served"])
        for b in cluster.brokers:
            shutil.copytree(b, serving / Path(b).name)
        # Kafka's own clean-up with the topic's retention untouched (7 days)
        cluster.wait(lambda: kafka_deleted("untouched"), "a deletion", timeout=30, fail=False)
        chain = read_leader_epoch_checkpoint(f"{out}/broker-2/tu-0/leader-epoch-checkpoint")
        facts["chain_broker_2"] = [(e.epoch, e.start_offset) for e in chain]
        # what the audit of the copies says Kafka deletes, and from which log start offset
        predicted = audit(sorted(str(p) for p in serving.glob("broker-*")))
        lineage = [f for f in predicted.findings if f.kind == "out_of_lineage" and f.broker == 2]
        never = {f.segment_id for f in lineage if "so Kafka never deletes it" in f.message}
        at = {f.segment_id: int(f.message.split("log start offset reaches ")[1].split()[0])
              for f in lineage if "log start offset reaches" in f.message}
        cut = min(at.values())
        facts["predicted"] = {"delete_at": at, "never": sorted(never)}
        cluster.delete_records("tu", cut)
        facts["delete_records_before"] = cut
        cluster.wait(lambda: kafka_deleted(f"log start {cut}"), "a deletion", timeout=60,
                     fail=False)
        time.sleep(10)   # and nothing more is deleted later
        kafka_deleted(f"log start {cut}, 10 s later")
    finally:
        cluster.stop()
    report = audit(sorted(str(p) for p in before.glob("broker-*")))
    rejected = {f.segment_id for f in report.findings
                if f.kind == "out_of_lineage" and f.broker == 2}
    uploaded = {s.segment_id for s in report.segments if s.topic == "tu"}
    after = {s.segment_id: [h[0] for h in s.history] for s in audit(cluster.brokers).segments
             if s.topic == "tu"}
    foreign = [(f.start_offset, f.end_offset) for f in predicted.findings
               if f.kind == "served_out_of_lineage"]
    facts.update(uploaded=sorted(uploaded), out_of_lineage=sorted(rejected),
                 deleted_by_kafka={k: sorted(v) for k, v in deleted.items()},
                 histories_after=after, audit_served_out_of_lineage=foreign)
    print("(iii)", facts)
    assert rejected == uploaded, (rejected, uploaded)
    assert deleted.get("untouched", set()) == set(), deleted
    # the out-of-lineage set is what Kafka deletes at the predicted log start offset, except
    # the segments the audit says Kafka never deletes (no longer in its index)
    gone = deleted.get(f"log start {cut}, 10 s later", set())
    assert gone & rejected == {s for s, v in at.items() if v <= cut}, (gone, at)
    assert rejected - gone == never | {s for s, v in at.items() if v > cut}, (gone, never)
    # what the consumer was served of the old leader's lineage is what the audit names
    old_runs = [(a, b) for a, b, who in facts["served"]["runs"] if who == "o"]
    assert old_runs == foreign, (old_runs, foreign)
    return facts


if __name__ == "__main__":
    which = sys.argv[2] if len(sys.argv) > 2 else "all"
    if which in ("clean", "all"):
        main(Path(sys.argv[1]) / "clean")
    if which in ("killed", "all"):
        print(leader_killed_during_upload(Path(sys.argv[1]) / "killed"))
    if which in ("unclean", "all"):
        print(unclean_election_after_uploads(Path(sys.argv[1]) / "unclean"))
    if which == "unclean-noroll":
        print(unclean_election_after_uploads(Path(sys.argv[1]) / "unclean-noroll", roll=False))
