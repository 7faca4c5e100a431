"""By hand (not collected by pytest; ~3 minutes on 2 cores): tiering on a real 3-broker Kafka
4.3.1 cluster with Kafka's LocalTieredStorage and the topic-based metadata manager, then
``segtools tier`` on its log dirs: 0 findings when clean, each mutation of a copy of the remote
folder found. Needs jvm/pom.xml's ``tiered-storage`` profile resolved by Maven.

    .venv/bin/python tests/tier/realcluster_check.py /tmp/tier-check
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

TIERED_BROKER = [
    "remote.log.storage.system.enable=true",
    "remote.log.storage.manager.class.name="
    "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
    "remote.log.storage.manager.impl.prefix=rsm.config.",
    "remote.log.metadata.manager.listener.name=PLAINTEXT",
    "remote.log.manager.task.interval.ms=1000",
    "log.retention.check.interval.ms=1000",
]


def classpath(version: str = "4.3.1") -> str:
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"segtools-tiered-cp-{version}.txt"
    subprocess.run(["mvn", "-q", "-B", "-f", str(REPO / "jvm" / "pom.xml"), "-Ptiered-storage",
                    f"-Dkafka.version={version}", "dependency:build-classpath",
                    f"-Dmdep.outputFile={out}"], check=True, stdin=subprocess.DEVNULL)
    return out.read_text().strip()


def run_cluster(out: Path, records: int = 40000) -> dict[str, Any]:
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

    from segtools.realcluster import cluster, config
    from segtools.realcluster.kafka_runtime import KafkaRuntime, find_java
    from segtools.simulate import load_scenario

    tiered = out / "tiered"
    tiered.mkdir(parents=True)
    broker_props, controller_props = config.broker_properties, config.controller_properties
    extra = "\n".join([*TIERED_BROKER, f"rsm.config.dir={tiered}"])
    # the controller validates remote.storage.enable on topics, so it needs the switch too
    config.broker_properties = lambda *a, **k: broker_props(*a, **k) + "\n" + extra + "\n"  # type: ignore[assignment]
    config.controller_properties = lambda *a, **k: (  # type: ignore[assignment]
        controller_props(*a, **k) + "\nremote.log.storage.system.enable=true\n")
    scenario = load_scenario(REPO / "samples" / "scenarios" / "S0-healthy-baseline.yaml")
    rc = cluster.RealCluster(scenario, str(out), KafkaRuntime(find_java(), classpath(), "4.3.1"))
    try:
        rc.start(timeout=120)
        admin = AdminClient({"bootstrap.servers": rc.bootstrap()})
        for fut in admin.create_topics([NewTopic("tt", 1, 3, config={
                "remote.storage.enable": "true", "segment.bytes": "1048576",
                "local.retention.bytes": "1", "min.insync.replicas": "2"})]).values():
            fut.result(60)
        producer = Producer({"bootstrap.servers": rc.bootstrap(), "acks": "all"})
        for i in range(records):
            producer.produce("tt", value=os.urandom(100), key=str(i).encode())
            if i % 1000 == 0:
                producer.poll(0)
        producer.flush(60)

        def offset(spec: Any) -> int:
            res = admin.list_offsets({TopicPartition("tt", 0): spec})
            return int(next(iter(res.values())).result(30).offset)

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(glob.glob(f"{tiered}/*/*/*.log")) < 4:
            time.sleep(2)
        time.sleep(5)  # let local retention delete the tiered local segments
        return {"earliest": offset(OffsetSpec.earliest()), "latest": offset(OffsetSpec.latest())}
    finally:
        rc.stop()
        config.broker_properties, config.controller_properties = broker_props, controller_props


def main(out: Path) -> int:
    from segtools.tier import audit

    if out.exists():
        sys.exit(f"{out} exists: give a new folder")
    live = run_cluster(out)
    brokers = sorted(str(p) for p in out.glob("broker-*"))
    report = audit(brokers, remote_root=str(out / "tiered"))
    (p,) = report.partitions
    print("live", live, "audit", p.to_json(), "findings", [f.kind for f in report.findings])
    assert report.findings == [], report.findings
    assert (p.earliest_offset, p.log_end_offset) == (live["earliest"], live["latest"])
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


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
