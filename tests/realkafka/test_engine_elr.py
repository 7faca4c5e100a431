"""S24-elr-clean-election on the release's defaults (issues 10 and 22): `simulate --engine kafka
--kafka-home DIR` end to end, on a Kafka distribution laid out like the tarball (built from the
Maven jars of the newest release), and the same story on 4.3.1 (`long`).

S24 names no features: Kafka 4.1 and later format it with eligible leader replicas (KIP-966)
on. With min ISR 2 the brokers that leave after the ISR fell below it go to the ELR; the last
leader's shutdown empties the ISR and broker 2 is elected from the ELR when it returns: a
clean election that `compare` (the controller's log) and `advise` (the offline snapshot) see
as such, and the model (in lockstep with the cluster's features) tells the same story.

The oracle for the metadata is the real kafka-dump-log --cluster-metadata-decoder; segtools'
own metadata-log reader must read the same ELR lists from the real controller's log."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from cluster_fixtures import (
    SCENARIOS,
    build_kafka_home,
    check_run_files,
    java_processes_of,
    lost_view,
    require_real_kafka,
    run_both,
    story_checks,
)

from segtools.cli.main import cli

pytestmark = pytest.mark.realkafka

ELR = "eligible.leader.replicas.version"
S24 = SCENARIOS / "S24-elr-clean-election.yaml"


def test_elr_scenario_with_kafka_home(tmp_path):
    """The newest release, from a --kafka-home distribution, through the CLI."""
    from segtools.realcluster.features import lockstep_scenario
    from segtools.realcluster.kafka_runtime import KAFKA_VERSION
    from segtools.simulate import load_scenario, run

    require_real_kafka()
    home = build_kafka_home(tmp_path / "dist")
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["simulate", str(S24), "--engine", "kafka",
                                   "--kafka-home", str(home), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert java_processes_of(out) == [] and java_processes_of(home) == []
    check_run_files(out)

    # --kafka-home: every JVM ran the distribution's jars, and its version was read from them
    log = story_checks(out)
    assert log["kafka_home"] == str(home)
    assert log["classpath_dirs"] == [str(home / "libs")]
    assert log["kafka_version"] == KAFKA_VERSION      # the jars build_kafka_home laid out
    real = json.loads((out / "truth.json").read_text())
    model = run(lockstep_scenario(load_scenario(S24), log["features"]), tmp_path / "model").truth
    check_elr_clean_election(real, model, out, log)

    # the oracle: the real controller's PartitionChangeRecords, decoded by kafka-dump-log
    from segtools.forensics.elections import load_histories
    from segtools.realcluster.dumplog import dump_metadata, dump_records
    from segtools.realcluster.kafka_runtime import kafka_runtime

    segments = sorted(str(p) for p in (out / "controller" / "__cluster_metadata-0").glob("*.log"))
    meta = dump_metadata(kafka_runtime(home), segments)
    topic_id = next(r["data"]["topicId"] for _, r in meta
                    if r["type"] == "TOPIC_RECORD" and r["data"]["name"] == "orders")
    changes = [(off, r["data"]) for off, r in meta
               if r["type"] == "PARTITION_CHANGE_RECORD" and r["data"]["topicId"] == topic_id]
    assert [(off, d) for off, d in changes if "eligibleLeaderReplicas" in d], changes
    # the ISR emptied with 2 in the ELR (3 left while the ISR still met min ISR), then 2 was
    # elected from it, not uncleanly
    offline = next(d for _, d in changes if d.get("leader") == -1)
    assert offline["isr"] == [] and 2 in offline["eligibleLeaderReplicas"], offline
    elected = [d for _, d in changes if d.get("leader") == 2]
    assert len(elected) == 1 and elected[0].get("leaderRecoveryState", 0) != 1
    assert 2 not in elected[0].get("eligibleLeaderReplicas", [])

    # segtools' metadata-log reader sees the same ELR on every change of the partition
    hist = load_histories(out / "controller")[("orders", 0)]
    ours = {c["offset"]: c["elr"] for c in hist.changes if c["record"] == "PartitionChange"}
    assert ours == {off: d.get("eligibleLeaderReplicas") for off, d in changes}

    # the clean election from the ELR kept every acknowledged record: the real tool's reading
    # of broker 2's final log holds every value an acks=all send had acknowledged
    acks = [json.loads(line) for line in (out / "acks.jsonl").read_text().splitlines()]
    acked = [a["value"] for a in acks if a["ok"] and a["acks"] == "all"]
    assert acked == ["a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2", "b3", "b4"], acks
    final = dump_records(kafka_runtime(home), sorted(str(p) for p in (out / "broker-2" / "orders-0").glob("*.log")))
    values = [r.value for recs in final.values() for r in recs if not r.control]
    assert values[:len(acked)] == acked


# 4.3.1 has the same ELR default as the newest release: `long` keeps the suite in budget
@pytest.mark.long
def test_elr_clean_election_on_4_3_1(tmp_path):
    real, model, real_dir = run_both(S24, tmp_path, kafka_version="4.3.1")
    log = story_checks(real_dir)
    assert log["kafka_version"] == "4.3.1"
    check_elr_clean_election(real, model, real_dir, log)


def check_elr_clean_election(real, model, real_dir, log):
    """S24 with the release's defaults: ELR on, broker 2 elected from the ELR, nothing
    committed lost, as compare and advise read it and as the model (in lockstep) says."""
    from segtools.advise import advise
    from segtools.forensics.elections import load_histories

    assert log["format_features"] == {}          # nothing forced: the release's defaults
    assert log["features"][ELR] == 1
    story = log["story"]["cluster"]["orders-0"]
    assert [(c["leader"], c["election"]) for c in story if c["election"]] == \
        [(1, "initial"), (None, "offline"), (2, "elr")]
    # compare's reading of the real controller log: the election of broker 2 is clean (elr)
    hist = load_histories(real_dir / "controller")[("orders", 0)]
    assert hist.leader == 2 and hist.election_class(hist.leader_epoch) == "elr"
    assert not hist.elections[hist.leader_epoch].unclean
    # advise, asked while the partition was offline: broker 2 is a clean choice (in the ELR)
    adv = [a for a in advise([real_dir / "snapshots" / "before-return"], acks_path=real_dir / "acks.jsonl")
           if a.topic == "orders"]
    assert len(adv) == 1 and adv[0].state is not None
    assert adv[0].state.leader is None and adv[0].state.isr == () and 2 in adv[0].state.elr
    assert adv[0].state.election_for(2) == "clean" and adv[0].state.election_for(3) == "unclean"
    # nothing committed is lost, and the model (ELR on, as the cluster) loses the same
    assert [x for x in real["orders-0"]["lost"] if x["committed"]] == []
    assert lost_view(real) == lost_view(model)
    assert real["orders-0"]["leader"] == model["orders-0"]["leader"] == 2
