"""The soundness harness on the real engine (issue 21), lean: one real Kafka cluster run
(``run_on_kafka``, what ``segtools simulate --engine kafka`` runs), degraded into evidence sets
and judged by the real cluster's truth; and Kafka's truncation rule checked against what the
real broker did. The long run is ``benchmarks/soundness.py --engine kafka``.

The story: the follower (broker 2) stops, the leader (broker 1) appends acks=1 records alone and
stops too, broker 2 comes back and is elected uncleanly, appends in its new epoch, then broker 1
returns and, as a follower, truncates its divergent tail. The broker's own log line
``Truncating partition t-0 with TruncationState(offset=N, ...) due to leader epoch`` is the
oracle for the truncation point compare predicts from the copies taken just before broker 1
returned. Beside it, in the same cluster run, topic ``u`` on broker 3 (never stopped) is written
with acks=all and loses nothing: the story whose proven answer is "safe".

The sets (soundness_degrade.real_kinds, all from the one run): every single degradation that
needs no second run, each pair of removals, and each topic's dirs alone (with each removal).
The copies are taken after the stale broker 1 restarted and truncated (the issue's
copies-after-restart case: b3, b4 survive on no dir, only in acks.jsonl); ``retention`` cuts each
real log at its second batch (real segments are at least 1 MiB: one segment each). advise runs
on every partition of every set (none is offline at the end of this story)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from soundness_check import VIOLATIONS, Outcome, check, table
from soundness_degrade import degrade, real_kinds

import segtools
from tests.forensics.test_answers import SOLE_ISR_WITHIN_EPOCH

pytestmark = pytest.mark.realkafka

# the model test's story (tests/forensics/test_answers.py), on the release's own features
SCENARIO = yaml.safe_load(SOLE_ISR_WITHIN_EPOCH)
SCENARIO["name"] = "follower-truncates-on-rejoin"
del SCENARIO["cluster"]["kafka_features"]
# the safe story, in the same run: broker 3 never stops, u's only replica
SCENARIO["cluster"]["brokers"] = [1, 2, 3]
SCENARIO["topics"].append({"name": "u", "replication_factor": 1, "min_insync_replicas": 1,
                           "assignment": {0: [3]}})
SCENARIO["steps"].insert(0, {"produce": {"topic": "u", "partition": 0, "acks": "all", "values": ["u0", "u1", "u2"]}})

_TRUNCATED = re.compile(r"Truncating partition t-0 with TruncationState\(offset=(\d+), completed=\w+\) "
                        r"due to leader epoch")


@pytest.fixture(scope="module")
def real_sets(tmp_path_factory):
    from segtools.realcluster.kafka_runtime import KafkaUnavailableError, kafka_runtime

    try:
        kafka_runtime()
    except KafkaUnavailableError as exc:
        pytest.fail(f"real Kafka is needed for this test: {exc}")
    work = tmp_path_factory.mktemp("real-soundness")
    sets = list(degrade(SCENARIO["name"], SCENARIO, str(work), real_kinds("u", "t"), engine="kafka"))
    return work, sets


def test_real_engine_sets_are_judged_sound(real_sets):
    _work, sets = real_sets
    outs: list[Outcome] = [check(ev, advise_all=True) for ev in sets]
    print("\n" + table(outs))          # the figures (pytest -s)
    assert len(outs) >= 30, [o.kind for o in outs]
    by_kind = {o.kind: o for o in outs}
    # the truth is the real cluster's: broker 1's acks=1 tail (b3, b4) is lost, and the copies
    # were taken after broker 1 restarted and truncated it: no given dir holds it any more
    full = next(ev for ev in sets if ev.kind == "full")
    lost = {r["value"]: r for r in full.truth["t-0"]["lost"]}
    assert {"b3", "b4"} <= set(lost) and all(lost[v]["on_brokers"] == [] for v in ("b3", "b4"))
    assert full.truth["u-0"]["lost"] == []
    # retention deleted real records below a new log start
    cut = [ev for ev in sets if "retention" in ev.kind.split("+")]
    assert cut and all(any(m.startswith("segments_below:") for m in ev.missing) for ev in cut)
    found = {k: [d for o in outs for d in o.details if f": {k}: " in d] for k in VIOLATIONS}
    assert {k: v for k, v in found.items() if v} == {}
    assert sum(o.answers["compare:error"] + o.answers["advise:error"] for o in outs) == 0
    # the full set's answer is the loss, not an all-clear; u alone is proven safe
    assert by_kind["full"].answers["compare:lost"] == 1, (by_kind["full"].answers, by_kind["full"].details)
    assert by_kind["topic:u"].answers["compare:safe"] == 1, by_kind["topic:u"].details
    assert by_kind["topic:u+no_metadata_log"].answers["compare:safe"] == 0
    # advise ran on every set with a partition left: at least one case per set beyond compare
    assert all(o.cases >= 2 for o in outs), [(o.kind, o.cases) for o in outs if o.cases < 2]


def test_predicted_truncation_point_is_what_kafka_did(real_sets):
    work, _sets = real_sets
    base = Path(work) / "base"
    done = [int(m.group(1)) for m in _TRUNCATED.finditer((base / "kafka" / "broker-1.log").read_text())]
    assert done, "broker 1 never truncated t-0 by leader epoch on its return"
    # the copies taken after each step (both brokers' logs): the last one in which broker 1
    # still holds its divergent tail is the state Kafka's truncation started from
    predicted = None
    for copy in sorted(p for p in (base / "kafka" / "steps").iterdir() if (p / "broker-1" / "t-0").is_dir()):
        if not (copy / "broker-2" / "t-0").is_dir():
            continue
        report = segtools.compare([copy / "broker-1", copy / "broker-2"], find_metadata_log=False,
                                  progress=False).report_json()
        (part,) = [p for p in report["partitions"] if p["topic"] == "t"]
        reps = {r["broker"]: r for r in part["replicas"]}
        if reps[1]["log_end_offset"] == 5 and part["reference_broker"] == 2:
            predicted = reps[1]["fork_offset"]
    assert predicted is not None, "no step copy holds broker 1's untruncated tail under broker 2's new epoch"
    assert done[-1] == predicted, (done, predicted)


def test_sole_isr_leader_records_are_committed(real_sets):
    """Broker 1 appended b3, b4 with broker 2 out of the ISR (the ISR shrank to [1] within epoch
    0, min.insync.replicas 1): committed the moment they were written, whatever the lagging HW
    checkpoint says (issue 21 "Real Kafka disagrees"). The real cluster's truth is the oracle."""
    _work, sets = real_sets
    full = next(ev for ev in sets if ev.kind == "full")
    truth = {(r["offset"], r["leader_epoch"]): r["committed"] for r in full.truth["t-0"]["lost"]
             if r["value"] in ("b3", "b4")}
    assert len(truth) == 2 and all(truth.values()), full.truth["t-0"]["lost"]
    report = segtools.compare(full.broker_dirs, acks=full.acks, metadata_log=full.metadata_log,
                              find_metadata_log=False, progress=False).report_json()
    (part,) = [p for p in report["partitions"] if p["topic"] == "t"]
    said = {(a["offset"], a["leader_epoch"]): a["committed"] for a in part["acked_offsets_lost"]}
    said.update({(r["offset"], r["leader_epoch"]): r["committed"] for r in part["lost_records"]})
    assert {k: said.get(k) for k in truth} == truth, part["answer"]
