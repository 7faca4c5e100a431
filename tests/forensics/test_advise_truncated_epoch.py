"""advise on a dir that no longer knows an epoch its broker led because a later leader truncated
it (issue 21, random-66 / drop_last_leader of the 2,008-set harness run).

Kafka's follower truncation drops the leader-epoch entries at or past the truncation offset
(LeaderEpochFileCache.truncateFromEnd), so a broker that led an epoch, was cut back below that
epoch's start by the next (unclean) leader and then stopped cleanly has a final dir "behind the
metadata log". That is neither an early copy nor a power loss: its ``.kafka_cleanshutdown``
carries the broker epoch of its last registration in the metadata log. advise must not name a
later copy of that dir as missing evidence; a crashed broker's dir (no marker) stays "cannot
tell". Oracle: the simulator's truth.json (what was lost, which broker led which epoch).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from segtools.advise import CANNOT_TELL, LOST, advise
from segtools.simulate import run

# broker 1 leads epoch 0 (a0, replicated), broker 2 epoch 1, broker 1 again in epoch 2 alone
# (b0, acks=1); broker 2 is then elected uncleanly and broker 1, restarted, truncates b0 and its
# epoch-2 entry away
STORY = """\
name: truncated-epoch
seed: 7
cluster: {brokers: [1, 2], metadata_log: true}
topics:
  - {name: tr, partitions: 1, replication_factor: 2, min_insync_replicas: 1,
     unclean_leader_election: true, assignment: {0: [1, 2]}}
steps:
  - produce: {topic: tr, partition: 0, acks: all, values: [a0]}
  - crash: {broker: 1}
  - restart: {broker: 1}
  - crash: {broker: 2}
  - produce: {topic: tr, partition: 0, acks: 1, values: [b0]}
  - crash: {broker: 1}
  - restart: {broker: 2}
  - elect: {topic: tr, partition: 0, leader: 2, unclean: true}
  - restart: {broker: 1}
"""


def _run(root: Path, last_stop: str) -> dict:
    # time passes first: the truncated epoch cache reaches the file asynchronously (Kafka 3.7+:
    # truncateFromEndAsyncFlush; the model with the next checkpoint), a crash before it keeps
    # the old entry on disk
    scenario = yaml.safe_load(STORY + f"  - advance: {{ms: 6000}}\n  - {last_stop}: {{broker: 1}}\n"
                                      "  - shutdown: {broker: 2}\n")
    return run(scenario, str(root)).truth["tr-0"]


def _given(root: Path) -> list:
    return advise([root / "broker-1", root / "broker-2"], metadata_log=root / "controller",
                  acks_path=root / "acks.jsonl", find_metadata_log=False)


def test_a_final_clean_copy_truncated_below_its_epoch_is_no_missing_evidence(tmp_path):
    truth = _run(tmp_path, "shutdown")
    led = [e["epoch"] for e in truth["elections"] if e["leader"] == 1]
    # the story as truth tells it: broker 1 led an epoch its final dir does not know, b0 is lost
    assert truth["replicas"]["1"]["latest_epoch"] < max(led)
    assert truth["replicas"]["1"]["clean_shutdown"]
    (b0,) = truth["lost"]
    assert b0["value"] == "b0" and b0["cause"] == "UNCLEAN_ELECTION"
    marker = json.loads((tmp_path / "broker-1" / ".kafka_cleanshutdown").read_text())
    assert isinstance(marker["brokerEpoch"], int)
    (adv,) = _given(tmp_path)
    assert adv.missing == []
    assert adv.verdict == LOST
    assert all((b0["offset"], b0["leader_epoch"]) in {(r.offset, r.leader_epoch) for r in c.lost_from_acks}
               for c in adv.candidates)


def test_a_crashed_brokers_dir_behind_its_epoch_stays_cannot_tell(tmp_path):
    """Without .kafka_cleanshutdown nothing proves the copy final or its tail flushed."""
    truth = _run(tmp_path, "crash")
    assert not truth["replicas"]["1"]["clean_shutdown"]
    assert not (tmp_path / "broker-1" / ".kafka_cleanshutdown").exists()
    (adv,) = _given(tmp_path)
    assert adv.verdict == CANNOT_TELL
    assert [(m.broker, m.role) for m in adv.missing] == [(1, "given dir behind the metadata log")]


def test_a_marker_from_an_earlier_registration_proves_nothing(tmp_path):
    """A copy taken at an earlier clean stop (its brokerEpoch is not the broker's last
    registration): the broker ran again after it, so the copy may be early."""
    _run(tmp_path, "shutdown")
    marker = tmp_path / "broker-1" / ".kafka_cleanshutdown"
    doc = json.loads(marker.read_text())
    marker.write_text(json.dumps({**doc, "brokerEpoch": doc["brokerEpoch"] - 1}))
    (adv,) = _given(tmp_path)
    assert adv.verdict == CANNOT_TELL
    assert [(m.broker, m.role) for m in adv.missing] == [(1, "given dir behind the metadata log")]
