"""Issue 10 sections 3 and 4 in one real cluster: `simulate --engine kafka --kafka-home DIR`
end to end, on a Kafka distribution laid out like the 4.3 tarball (built from the Maven jars),
running a scenario with eligible leader replicas (KIP-966) switched on.

The oracle for the metadata is the real kafka-dump-log --cluster-metadata-decoder; segtools'
own metadata-log reader must read the same ELR lists from the real controller's log."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from cluster_fixtures import build_kafka_home, java_processes_of, require_real_kafka

from segtools.cli.main import cli

pytestmark = pytest.mark.realkafka

# min ISR 2: the controlled shutdown of 2 leaves ISR {1} below it, so 2 moves to the ELR; when
# 1 (the last ISR member) goes too the ISR is empty and the ELR holds both. Broker 2 comes
# back after a clean shutdown, so the controller may elect it from the ELR: a clean election
# that keeps every acknowledged record (without ELR the partition would stay offline).
ELR_SCENARIO = """\
name: real-elr
seed: 9
cluster: {brokers: [1, 2, 3], kafka_features: {eligible_leader_replicas: true}}
topics:
  - {name: elr, replication_factor: 3, min_insync_replicas: 2, assignment: {0: [1, 2, 3]}}
steps:
  - produce: {topic: elr, partition: 0, acks: all, values: [e0, e1, e2]}
  - shutdown: {broker: 3}
  - produce: {topic: elr, partition: 0, acks: all, values: [e3]}
  - shutdown: {broker: 2}
  - shutdown: {broker: 1}
  - restart: {broker: 2}
"""


def test_elr_scenario_with_kafka_home(tmp_path):
    require_real_kafka()
    home = build_kafka_home(tmp_path / "dist")
    scenario = tmp_path / "elr.yaml"
    scenario.write_text(ELR_SCENARIO)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["simulate", str(scenario), "--engine", "kafka",
                                   "--kafka-home", str(home), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert java_processes_of(out) == [] and java_processes_of(home) == []

    # --kafka-home: every JVM ran the distribution's jars, and its version was read from them
    run = json.loads((out / "kafka" / "run.json").read_text())
    assert run["kafka_home"] == str(home)
    assert run["classpath_dirs"] == [str(home / "libs")]
    from segtools.realcluster.kafka_runtime import KAFKA_VERSION

    assert run["kafka_version"] == KAFKA_VERSION      # the jars build_kafka_home laid out
    assert run["features"]["eligible.leader.replicas.version"] == 1
    assert [w for w in run["waits"] if w["reached"] is False] == []

    # the oracle: the real controller's PartitionChangeRecords, decoded by kafka-dump-log
    from segtools.forensics.elections import load_histories
    from segtools.realcluster.dumplog import dump_metadata, dump_records
    from segtools.realcluster.kafka_runtime import kafka_runtime

    segments = sorted(str(p) for p in (out / "controller" / "__cluster_metadata-0").glob("*.log"))
    meta = dump_metadata(kafka_runtime(home), segments)
    topic_id = next(r["data"]["topicId"] for _, r in meta
                    if r["type"] == "TOPIC_RECORD" and r["data"]["name"] == "elr")
    changes = [(off, r["data"]) for off, r in meta
               if r["type"] == "PARTITION_CHANGE_RECORD" and r["data"]["topicId"] == topic_id]
    with_elr = [(off, d) for off, d in changes if "eligibleLeaderReplicas" in d]
    assert with_elr, changes
    # the ISR emptied with 1 and 2 in the ELR, then 2 was elected from it, not uncleanly
    offline = next(d for _, d in changes if d.get("leader") == -1)
    assert offline["isr"] == [] and sorted(offline["eligibleLeaderReplicas"]) == [1, 2]
    elected = [d for _, d in changes if d.get("leader") == 2]
    assert len(elected) == 1 and elected[0].get("leaderRecoveryState", 0) != 1
    assert 2 not in elected[0]["eligibleLeaderReplicas"]

    # segtools' metadata-log reader sees the same ELR on every change of the partition
    hist = load_histories(out / "controller")[("elr", 0)]
    ours = {c["offset"]: c["elr"] for c in hist.changes if c["record"] == "PartitionChange"}
    assert ours == {off: d.get("eligibleLeaderReplicas") for off, d in changes}

    # the clean election from the ELR kept every acknowledged record
    truth = json.loads((out / "truth.json").read_text())["elr-0"]
    acks = [json.loads(line) for line in (out / "acks.jsonl").read_text().splitlines()]
    assert [a["value"] for a in acks if a["ok"]] == ["e0", "e1", "e2", "e3"]
    assert truth["leader"] == 2 and truth["lost"] == []
    assert truth["elections"][-1]["leader"] == 2 and truth["elections"][-1]["unclean"] is False
    final = dump_records(kafka_runtime(home), sorted(str(p) for p in (out / "broker-2" / "elr-0").glob("*.log")))
    assert [r.value for recs in final.values() for r in recs if not r.control] == ["e0", "e1", "e2", "e3"]
    consumed, start = truth["consumed"], truth["elections"][-1]["start_offset"]
    if truth["high_watermark"] >= start:
        assert [v for _, v in consumed["read_committed"]] == ["e0", "e1", "e2", "e3"], consumed
    else:
        # broker 2 stopped before it learnt HW 4: as leader its HW is below its epoch's start
        # and, with ISR {2} under min.insync.replicas 2, may not advance (KIP-966), so Kafka
        # answers ListOffsets with OFFSET_NOT_AVAILABLE: a consumer cannot start reading
        assert truth["isr"] == [2] and "offsets" in consumed["error"], consumed
