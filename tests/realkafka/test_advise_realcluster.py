"""Issue 14 on a real Kafka 4.3.1 cluster: `segtools advise` predicts, for each candidate
leader of an offline partition, exactly the records that are gone once that candidate is
really elected.

One run of the real engine (`simulate --engine kafka`): a 3-broker RF 3 topic with three
partitions whose replicas end up holding different records (broker 3 stops first, broker 2
after the acks=all records, broker 1 holds acks=1 records alone), then broker 1 stops too, so
every partition is offline; `snapshot` copies the broker dirs and the controller's metadata
log at that moment. Then each partition gets a different leader, really: broker 3 starts and
is elected uncleanly for partition 1 (Admin API, as the engine's `elect` step does), broker 2
starts and is elected uncleanly for partition 0, broker 1 starts and the controller elects it
cleanly for partition 2 (it is the last ISR member). The oracle is the real kafka-dump-log over
the offline copies and over the final logs, and the real controller's elections."""

from __future__ import annotations

import pytest
from cluster_fixtures import java_processes_of, require_real_kafka, run_log

pytestmark = pytest.mark.realkafka

SCENARIO = """\
name: real-advise
seed: 14
# ELR off (Kafka 4.1+ turns it on by default): the story is unclean elections of ISR members
cluster: {brokers: [1, 2, 3], metadata_log: true, kafka_features: {eligible_leader_replicas: false}}
topics:
  - {name: adv, partitions: 3, replication_factor: 3, min_insync_replicas: 1,
     assignment: {0: [1, 2, 3], 1: [1, 2, 3], 2: [1, 2, 3]}}
steps:
  - produce: {topic: adv, partition: 0, acks: all, values: [p0-a0, p0-a1]}
  - produce: {topic: adv, partition: 1, acks: all, values: [p1-a0, p1-a1]}
  - produce: {topic: adv, partition: 2, acks: all, values: [p2-a0, p2-a1]}
  - crash: {broker: 3}
  - produce: {topic: adv, partition: 0, acks: all, values: [p0-b0, p0-b1]}
  - produce: {topic: adv, partition: 1, acks: all, values: [p1-b0, p1-b1]}
  - produce: {topic: adv, partition: 2, acks: all, values: [p2-b0, p2-b1]}
  - crash: {broker: 2}
  - produce: {topic: adv, partition: 0, acks: 1, values: [p0-c0, p0-c1]}
  - produce: {topic: adv, partition: 1, acks: 1, values: [p1-c0, p1-c1]}
  - produce: {topic: adv, partition: 2, acks: 1, values: [p2-c0, p2-c1]}
  - crash: {broker: 1}
  - snapshot: {name: offline}
  - restart: {broker: 3}
  - elect: {topic: adv, partition: 1, unclean: true}
  - restart: {broker: 2}
  - elect: {topic: adv, partition: 0, unclean: true}
  - restart: {broker: 1}
  - advance: {ms: 5000}
"""

# the candidate each partition really elects in the run above
ELECTED = {0: 2, 1: 3, 2: 1}


def test_advise_predicts_what_each_real_election_loses(tmp_path):
    require_real_kafka()
    from segtools.advise import advise
    from segtools.realcluster import run_on_kafka
    from segtools.realcluster.dumplog import dump_records
    from segtools.realcluster.kafka_runtime import kafka_runtime
    from segtools.simulate import load_scenario

    scenario_file = tmp_path / "real-advise.yaml"
    scenario_file.write_text(SCENARIO)
    out = tmp_path / "real"
    # advise is checked against what this cluster really did (its final logs, its metadata
    # log); where the cluster's story differs from the model's it is recorded in run.json
    real = run_on_kafka(load_scenario(scenario_file), out, allow_drift=True)
    assert java_processes_of(out) == []
    assert [w for w in run_log(out)["waits"] if w["reached"] is False] == []
    runtime = kafka_runtime()
    offline = out / "snapshots" / "offline"

    # the oracle: one real kafka-dump-log run over every segment, offline copies and final logs
    segments = {(folder, b, p): sorted(str(f) for f in (folder / f"broker-{b}" / f"adv-{p}").glob("*.log"))
                for folder in (offline, out) for b in (1, 2, 3) for p in (0, 1, 2)}
    dumped = dump_records(runtime, [f for files in segments.values() for f in files])

    def disk(folder, broker, p):
        """offset -> (value, leader epoch) of that replica."""
        return {r.offset: (r.value, r.leader_epoch) for f in segments[(folder, broker, p)]
                for r in dumped[f] if not r.control}

    def hw_checkpoint(broker, p):
        """The replica's HW in its replication-offset-checkpoint (Kafka's text format: version,
        count, then `topic partition offset` lines), read here without segtools."""
        lines = (offline / f"broker-{broker}" / "replication-offset-checkpoint").read_text().splitlines()
        return next((int(x.split()[2]) for x in lines[2:] if x.split()[:2] == ["adv", str(p)]), 0)

    # advise on the offline copy, with the acks and the controller's log found next to it
    advice = {a.partition: a for a in advise([offline], acks_path=out / "acks.jsonl") if a.topic == "adv"}
    assert sorted(advice) == [0, 1, 2]
    for p, cand in ELECTED.items():
        adv = advice[p]
        # the metadata log as of the snapshot: offline, broker 1 the last ISR member (with ELR,
        # on by default since Kafka 4.1, the controller keeps it in the ELR with an empty ISR)
        st = adv.state
        assert st is not None and st.leader is None and st.replicas == (1, 2, 3)
        assert st.isr == (1,) or (st.isr == () and st.elr == (1,)), st
        before = {b: disk(offline, b, p) for b in (1, 2, 3)}
        assert before[1] != before[2] != before[3], before      # the replicas differ
        final = disk(out, cand, p)
        truth = real.truth[f"adv-{p}"]
        # the candidate was really elected, uncleanly exactly when advise said so
        assert truth["leader"] == cand
        election = next(c.election for c in adv.candidates if c.broker == cand)
        assert truth["elections"][-1]["leader"] == cand
        assert truth["elections"][-1]["unclean"] is (election == "unclean"), truth["elections"]
        # every replica followed it: the final logs are the new leader's
        for b in (1, 2, 3):
            assert [v for _, (v, _e) in sorted(disk(out, b, p).items())] == \
                [v for _, (v, _e) in sorted(final.items())], (p, b)
        # what is really gone: records some replica held while offline that the final log lacks
        held = {v for recs in before.values() for v, _e in recs.values()}
        really_lost = held - {v for v, _e in final.values()}
        cost = next(c for c in adv.candidates if c.broker == cand)
        predicted = {before[r.broker][r.offset][0] for r in cost.lost}
        assert predicted == really_lost, (p, cand, cost.lost)
        assert {x["value"] for x in truth["lost"]} == really_lost
        # the classes against the producer's acks and the disk: a record acked with acks=all
        # is committed; an acks=1 one is committed when below the HW checkpoint of a replica
        # holding it (the checkpoint is written every few seconds: the disk may not know the
        # leader's HW passed it, truth.json's "committed" does), else acked
        acks_all = {x["value"] for x in truth["lost"] if x["acked"] and x["acks"] == "all"}
        for r in cost.lost:
            value = before[r.broker][r.offset][0]
            below = any(before[b].get(r.offset, (None,))[0] == value and r.offset < hw_checkpoint(b, p)
                        for b in (1, 2, 3))
            want = "committed" if value in acks_all or below else "acked"
            assert r.klass == want, (value, r, hw_checkpoint(1, p))
            assert next(x for x in truth["lost"] if x["value"] == value)["acked"] is True
    # the expected shape, independent of advise: electing 3 loses the acks=all and acks=1
    # records 3 never got, electing 2 the acks=1 records only broker 1 had, electing 1 nothing
    assert {x["value"] for x in real.truth["adv-1"]["lost"]} == {"p1-b0", "p1-b1", "p1-c0", "p1-c1"}
    assert {x["value"] for x in real.truth["adv-0"]["lost"]} == {"p0-c0", "p0-c1"}
    assert real.truth["adv-2"]["lost"] == []
    # the advice itself: ranked best first (broker 1, clean, loses nothing), commands per state
    for p in (0, 1, 2):
        adv = advice[p]
        assert adv.verdict == "safe" and adv.missing == [] and adv.recommended == 1
        assert [c.broker for c in adv.candidates] == [1, 2, 3]
        assert [c.election for c in adv.candidates] == ["clean", "unclean", "unclean"]
        assert "no command needed" in adv.commands()[0]
        three = adv.commands(broker=3)
        assert '"replicas": [3, 1, 2]' in three[1] and three[-1].endswith(
            f"--election-type unclean --topic adv --partition {p}")

    # issue 21: the same offline copies without broker 1's dir (the last ISR member, alone
    # holding the acks=1 records): advise cannot tell, names broker 1, recommends nobody and
    # counts the acked records only broker 1 held (kafka-dump-log above) in every cost
    from click.testing import CliRunner

    from segtools.cli.main import cli
    from segtools.forensics.api import default_metadata_log

    metadata = default_metadata_log([offline])
    assert metadata is not None
    given = [offline / "broker-2", offline / "broker-3"]
    partial = {a.partition: a for a in advise(given, acks_path=out / "acks.jsonl", metadata_log=metadata)
               if a.topic == "adv"}
    assert sorted(partial) == [0, 1, 2]
    for p, adv in partial.items():
        assert adv.verdict == "cannot tell" and adv.recommended is None
        assert [(m.broker, m.role) for m in adv.missing] == [(1, "last ISR")]
        on_1 = disk(offline, 1, p)
        only_1 = {v for v, _e in on_1.values()} - {v for b in (2, 3) for v, _e in disk(offline, b, p).values()}
        assert only_1 == {f"p{p}-c0", f"p{p}-c1"}
        for c in adv.candidates:
            assert c.lower_bound
            assert {on_1[r.offset][0] for r in c.lost_from_acks} == only_1, (p, c.broker)
    for with_acks in (True, False):
        args = ["advise", *map(str, given), "--metadata-log", metadata, "--topic", "adv"]
        result = CliRunner().invoke(cli, args + (["--acks", str(out / "acks.jsonl")] if with_acks else []))
        assert result.exit_code == 1, result.output
        assert result.output.count("verdict: cannot tell") == 3 and "verdict: safe" not in result.output
        assert result.output.count("missing: broker 1's log dir (last ISR)") == 3
