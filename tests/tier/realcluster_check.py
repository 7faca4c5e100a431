"""By hand (not collected by pytest; minutes on 2 cores): tiering on a real 3-broker Kafka
4.3.1 cluster with Kafka's LocalTieredStorage and the topic-based metadata manager
(tiered_cluster.py), then ``segtools tier`` on its log dirs: 0 findings when clean, each
mutation of a copy of the remote folder found. Needs jvm/pom.xml's ``tiered-storage`` profile
resolved by Maven. The lean subset runs in CI as test_tier_realkafka.py.

    .venv/bin/python tests/tier/realcluster_check.py /tmp/tier-check
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


def unclean_election_after_uploads(out: Path) -> dict[str, Any]:
    """(iii) Topic ``tu`` on brokers 1 (leader) and 2. Both take 100 records; broker 2 is
    killed and drops out of the ISR; broker 1 takes ~2.6 MB more alone and uploads two
    segments; broker 1 is killed, broker 2 restarted and elected uncleanly. The evidence copied
    before the election gives the audit's out-of-lineage set against broker 2's chain; the
    metadata after Kafka's own clean-up says which segments Kafka deleted: the sets must be
    equal."""
    from segtools.errors import SegtoolsError
    from segtools.tier import audit

    cluster = TieredCluster(out)
    before = out.parent / (out.name + "-before-election")
    try:
        cluster.start()
        cluster.create_topic("tu", replicas=[1, 2], **{"min.insync.replicas": "1"})
        cluster.wait(lambda: cluster.view("tu") == (1, [1, 2]), "tu led by 1 with ISR [1, 2]")
        cluster.produce("tu", 100)
        # killed, not paused: a paused broker holds its connections open and the metadata
        # manager's clients wait on it (seen: an upload failing after 60 s)
        cluster.rc.crash(2)
        cluster.wait(lambda: cluster.view("tu")[1] == [1], "broker 2 out of the ISR", timeout=60)
        cluster.produce("tu", 2600, acks="1")
        cluster.wait(lambda: len(cluster.remote_logs("tu")) >= 2, "two uploads by broker 1",
                     timeout=120)
        time.sleep(5)   # COPY_SEGMENT_FINISHED written (a metadata partition may have moved)
        cluster.rc.crash(1)
        cluster.rc.restart(2)
        time.sleep(3)
        for b in cluster.brokers:
            shutil.copytree(b, before / Path(b).name)
        cluster.elect_unclean("tu", via=[2, 3])
        print("(iii) unclean election: broker 2 leads tu-0")
        deleted: dict[str, set[str]] = {}

        def kafka_deleted(when: str) -> bool:
            try:
                segs = [s for s in audit(cluster.brokers).segments if s.topic == "tu"]
            except SegtoolsError:   # live dirs: a file renamed or removed while listed
                return False
            deleted[when] = {s.segment_id for s in segs if any(h[0] >= 2 for h in s.history)}
            return bool(deleted[when]) and all(s.state == 3 for s in segs
                                               if s.segment_id in deleted[when])

        # Kafka's own clean-up with the topic's retention untouched (7 days)
        found = cluster.wait(lambda: kafka_deleted("untouched"), "a deletion", timeout=60,
                             fail=False)
        if not found:   # then with retention breached by every record (retention.ms=1000)
            cluster.alter_topic("tu", **{"retention.ms": "1000"})
            cluster.wait(lambda: kafka_deleted("retention.ms=1000"), "a deletion", timeout=60,
                         fail=False)
    finally:
        cluster.stop()
    report = audit(sorted(str(p) for p in before.glob("broker-*")))
    rejected = {f.segment_id for f in report.findings
                if f.kind == "out_of_lineage" and f.broker == 2}
    uploaded = {s.segment_id for s in report.segments if s.topic == "tu"}
    after = {s.segment_id: [h[0] for h in s.history] for s in audit(cluster.brokers).segments
             if s.topic == "tu"}
    print("(iii) uploaded", sorted(uploaded), "out of lineage for broker 2", sorted(rejected),
          "deleted by Kafka", {k: sorted(v) for k, v in deleted.items()}, "histories after", after)
    assert rejected == uploaded, (rejected, uploaded)
    return {"uploaded": sorted(uploaded), "out_of_lineage": sorted(rejected),
            "deleted_by_kafka": {k: sorted(v) for k, v in deleted.items()}}


if __name__ == "__main__":
    which = sys.argv[2] if len(sys.argv) > 2 else "all"
    if which in ("clean", "all"):
        main(Path(sys.argv[1]) / "clean")
    if which in ("killed", "all"):
        print(leader_killed_during_upload(Path(sys.argv[1]) / "killed"))
    if which in ("unclean", "all"):
        print(unclean_election_after_uploads(Path(sys.argv[1]) / "unclean"))
