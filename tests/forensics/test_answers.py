"""Three-valued answers of compare (issue 21): lost / safe / cannot_tell, checked against the
simulator's truth.json and acks.jsonl (the oracle), never against compare's own output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli

# Two brokers, two unclean elections; the stale replica rejoins and truncates before the copies
# are taken (issue 21 "false all-clear"): the record acknowledged at offset 1 (acks=all) in the
# first unclean leader's epoch is on no disk any more.
FALSE_ALL_CLEAR = """\
name: false-all-clear
seed: 21
cluster: {brokers: [1, 2], segment_index_bytes: 1024, metadata_log: true}
topics:
  - {name: t, replication_factor: 2, min_insync_replicas: 1, unclean_leader_election: true,
     assignment: {0: [1, 2]}}
steps:
  - produce: {topic: t, partition: 0, acks: all, count: 1, value_bytes: 4}
  - crash: {broker: 2}
  - crash: {broker: 1}
  - restart: {broker: 2}
  - produce: {topic: t, partition: 0, acks: all, count: 1, value_bytes: 4}
  - crash: {broker: 2}
  - restart: {broker: 1}
  - produce: {topic: t, partition: 0, acks: all, count: 1, value_bytes: 4}
  - restart: {broker: 2}
  - advance: {ms: 6000}
"""

# RF 3, acks=all, nobody stops: one epoch, every ISR member's dir present.
QUIET = """\
name: quiet
seed: 22
cluster: {brokers: [1, 2, 3], segment_index_bytes: 1024, metadata_log: true}
topics:
  - {name: t, replication_factor: 3, min_insync_replicas: 2, assignment: {0: [1, 2, 3]}}
steps:
  - produce: {topic: t, partition: 0, acks: all, count: 5, value_bytes: 4}
  - advance: {ms: 6000}
"""


def _simulate(tmp_path: Path, text: str, name: str) -> Path:
    scenario = tmp_path / f"{name}.yaml"
    scenario.write_text(text)
    out = tmp_path / name
    res = CliRunner().invoke(cli, ["simulate", str(scenario), "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def _compare(*args: str, tmp_path: Path) -> tuple[int, dict, str]:
    report = tmp_path / "r.json"
    if report.exists():
        report.unlink()
    res = CliRunner().invoke(cli, ["compare", *args, "--no-spark", "--report", str(report)])
    assert res.exit_code in (0, 1), res.output
    return res.exit_code, json.loads(report.read_text()), res.output


@pytest.fixture(scope="module")
def fac(tmp_path_factory):
    return _simulate(tmp_path_factory.mktemp("fac"), FALSE_ALL_CLEAR, "fac")


def test_false_all_clear_is_a_loss_with_acks(fac, tmp_path):
    truth = json.loads((fac / "truth.json").read_text())["t-0"]
    gone = [x for x in truth["lost"] if x["acked"] and not x["on_brokers"]]
    assert gone, "the scenario must lose an acknowledged record from every disk"
    code, doc, out = _compare(str(fac / "broker-1"), str(fac / "broker-2"), "--acks", str(fac / "acks.jsonl"),
                              tmp_path=tmp_path)
    assert code == 1
    assert doc["schema_version"] >= 2
    assert doc["summary"]["answer"] == "lost" and doc["summary"]["exit_code"] == 1
    part = doc["partitions"][0]
    assert part["answer"]["value"] == "lost"
    got = {(x["offset"], x["leader_epoch"]) for x in part["acked_offsets_lost"]}
    assert got == {(x["offset"], x["leader_epoch"]) for x in gone}
    # acks=all in acks.jsonl: committed
    assert all(x["committed"] for x in part["acked_offsets_lost"])
    assert doc["summary"]["acked_offsets_lost"]["total"] == len(gone)
    assert "ACKED_OFFSETS_LOST" in {f["code"] for f in part["findings"]}
    assert "answer: LOST" in out


def test_false_all_clear_without_acks_cannot_tell(fac, tmp_path):
    code, doc, out = _compare(str(fac / "broker-1"), str(fac / "broker-2"), tmp_path=tmp_path)
    assert code == 1
    assert doc["summary"]["answer"] == "cannot_tell"
    assert doc["summary"]["verdict"] == "CANNOT_TELL"
    missing = {m["evidence"] for m in doc["partitions"][0]["answer"]["missing"]}
    # two unclean elections, both stale replicas already truncated; no acks to check
    assert {"acks", "untruncated_log"} <= missing
    assert "answer: CANNOT TELL" in out


def test_missing_last_isr_member_cannot_tell(fac, tmp_path):
    # only broker 2's dir: the metadata log's ISR [1, 2] names broker 1 too
    code, doc, _ = _compare(str(fac / "broker-2"), "--metadata-log", str(fac / "controller"),
                            "--acks", str(fac / "acks.jsonl"), tmp_path=tmp_path)
    assert code == 1
    missing = doc["partitions"][0]["answer"]["missing"]
    assert {"evidence": "log_dir", "broker": 1} in [{k: m[k] for k in ("evidence", "broker") if k in m}
                                                    for m in missing]


@pytest.fixture(scope="module")
def quiet(tmp_path_factory):
    return _simulate(tmp_path_factory.mktemp("quiet"), QUIET, "quiet")


def test_quiet_cluster_is_proven_safe(quiet, tmp_path):
    truth = json.loads((quiet / "truth.json").read_text())["t-0"]
    assert truth["lost"] == []
    code, doc, out = _compare(str(quiet), tmp_path=tmp_path)
    assert code == 0, doc["summary"]
    assert doc["summary"]["answer"] == "safe" and doc["partitions"][0]["answer"]["missing"] == []
    assert "answer: safe" in out


def test_no_metadata_log_cannot_tell(quiet, tmp_path):
    copy = tmp_path / "dirs"
    for b in (1, 2, 3):
        shutil.copytree(quiet / f"broker-{b}", copy / f"broker-{b}")
    code, doc, _ = _compare(str(copy), tmp_path=tmp_path)
    assert code == 1
    assert [m["evidence"] for m in doc["partitions"][0]["answer"]["missing"]] == ["metadata_log"]


def test_acked_offsets_below_log_start_cannot_tell(quiet, tmp_path):
    # an acknowledged offset the replicas no longer hold because their logs start above it
    from segtools.forensics.api import compare
    from segtools.forensics.loss import AckIndex

    report = compare([str(quiet)], acks=AckIndex([{"topic": "t", "partition": 0, "offset": 2, "leader_epoch": 0,
                                                    "ok": True, "acks": "1"}]))
    for p in report.partitions:
        for r in p.verdict.replicas:
            r.log_start_offset = 3
    report.attach_lost_offsets(AckIndex([{"topic": "t", "partition": 0, "offset": 2, "leader_epoch": 0,
                                          "ok": True, "acks": "1"}]))
    assert report.answer() == "cannot_tell" and report.exit_code == 1
    assert [m["evidence"] for m in report.partitions[0].answer["missing"]] == ["segments_below_log_start"]


def test_a_partition_no_given_dir_holds_cannot_tell(tmp_path):
    # RF 1 on two partitions: only the broker holding partition 0 is given; the metadata log
    # lists partition 1 (on broker 2) too
    text = """\
name: rf1
seed: 23
cluster: {brokers: [1, 2], segment_index_bytes: 1024, metadata_log: true}
topics:
  - {name: t, partitions: 2, replication_factor: 1, min_insync_replicas: 1, assignment: {0: [1], 1: [2]}}
steps:
  - produce: {topic: t, partition: 0, acks: all, count: 2, value_bytes: 4}
  - produce: {topic: t, partition: 1, acks: all, count: 2, value_bytes: 4}
  - advance: {ms: 6000}
"""
    out = _simulate(tmp_path, text, "rf1")
    code, doc, _ = _compare(str(out / "broker-1"), "--metadata-log", str(out / "controller"), tmp_path=tmp_path)
    assert [p["partition"] for p in doc["partitions"]] == [0]
    assert doc["partitions"][0]["answer"]["value"] == "safe"
    assert code == 1 and doc["summary"]["answer"] == "cannot_tell"
    gap = [g for g in doc["summary"]["missing_evidence"] if g["partition"] == 1]
    assert gap and gap[0]["missing"][0]["brokers"] == [2]


def test_lost_commit_marker_names_the_transaction_log(tmp_path):
    """S19: the data of a committed transaction reached every replica, its COMMIT marker only
    the leader that then crashed. Truth loses no record, yet the surviving log holds the
    transaction open: not safe, and the evidence named is the coordinator's log (which no dir
    holds), not another copy of the marker (every replica's dir is given)."""
    scenario = Path(__file__).parents[2] / "samples" / "scenarios" / "S19-txn-marker-lost.yaml"
    text = scenario.read_text().replace("cluster: {", "cluster: {metadata_log: true, ")
    out = _simulate(tmp_path, text, "s19")
    truth = json.loads((out / "truth.json").read_text())["orders-0"]
    assert truth["lost"] == [] and sorted(truth["replicas"]) == ["1", "2", "3"]
    assert not any(next((out / f"broker-{b}").glob("__transaction_state-*"), None) for b in (1, 2, 3))
    code, doc, _ = _compare(str(out), "--acks", str(out / "acks.jsonl"), tmp_path=tmp_path)
    answer = doc["partitions"][0]["answer"]
    assert code == 1 and answer["value"] == "cannot_tell"
    assert [m["evidence"] for m in answer["missing"]] == ["transaction_state"]


# The ISR shrinks to the leader alone within its epoch (broker 2 stops), the leader appends
# acks=1 records, stops too, and broker 2 is elected uncleanly: those records were committed
# (the HW follows a sole ISR member's log end) although the epoch began with ISR [1, 2] and no
# HW checkpoint was written after them (issue 21 "Real Kafka disagrees"). ELR on, so the
# metadata log holds the topic's min.insync.replicas=1 (below it the HW would stay put).
SOLE_ISR_WITHIN_EPOCH = """\
name: sole-isr-within-epoch
seed: 2101
cluster: {brokers: [1, 2], metadata_log: true, kafka_features: {eligible_leader_replicas: 1}}
topics:
  - {name: t, replication_factor: 2, min_insync_replicas: 1, unclean_leader_election: true,
     assignment: {0: [1, 2]}}
steps:
  - produce: {topic: t, partition: 0, acks: all, values: [a0, a1, a2]}
  - crash: {broker: 2}
  - produce: {topic: t, partition: 0, acks: '1', values: [b3, b4]}
  - crash: {broker: 1}
  - restart: {broker: 2}
  - produce: {topic: t, partition: 0, acks: '1', values: [c3]}
  - restart: {broker: 1}
  - advance: {ms: 6000}
"""


def test_sole_isr_leader_within_an_epoch_is_committed(tmp_path):
    out = _simulate(tmp_path, SOLE_ISR_WITHIN_EPOCH, "sole")
    truth = {(r["offset"], r["leader_epoch"]): r["committed"]
             for r in json.loads((out / "truth.json").read_text())["t-0"]["lost"]}
    assert truth == {(3, 0): True, (4, 0): True}
    code, doc, _ = _compare(str(out), "--acks", str(out / "acks.jsonl"), tmp_path=tmp_path)
    (part,) = doc["partitions"]
    assert code == 1 and part["answer"]["value"] == "lost"
    assert {(a["offset"], a["leader_epoch"]): a["committed"] for a in part["acked_offsets_lost"]} == truth
