"""The log dirs a simulation writes are real Kafka log dirs: kafka-python reads every segment with
valid CRCs, indexes point at batch starts, checkpoints and root files have Kafka's layout."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from sim_oracle import index_problems, partition_dirs, read_partition, read_segment

from segtools.simulate import run

SCENARIOS = Path(__file__).resolve().parents[2] / "samples" / "scenarios"

ROLLING = {
    "name": "rolling", "seed": 11,
    "cluster": {"brokers": [1, 2, 3], "segment_bytes": 600, "index_interval_bytes": 150,
                "segment_index_bytes": 4096, "metadata_log": True},
    "topics": [{"name": "orders", "partitions": 2, "replication_factor": 3, "min_insync_replicas": 2,
                "compression": "gzip"},
               {"name": "plain", "partitions": 1, "replication_factor": 2}],
    "producers": [{"name": "idem", "idempotent": True}, {"name": "tx", "transactional_id": "tx-1"}],
    "steps": [
        {"produce": {"topic": "orders", "acks": "all", "count": 30, "value_bytes": 20, "batch_size": 3,
                     "headers": {"h": "v"}}},
        {"produce": {"topic": "plain", "acks": 1, "count": 25, "value_bytes": 30, "producer": None}},
        {"produce": {"topic": "orders", "partition": 0, "acks": "all", "count": 12, "producer": "idem",
                     "batch_size": 4}},
        {"begin_transaction": {"producer": "tx"}},
        {"produce": {"topic": "orders", "partition": 1, "acks": "all", "count": 5, "producer": "tx"}},
        {"abort_transaction": {"producer": "tx"}},
        {"produce": {"topic": "orders", "partition": 1, "acks": "all", "count": 5, "producer": "tx"}},
        {"commit_transaction": {"producer": "tx"}},
        {"shutdown": {"broker": 2}},
        {"produce": {"topic": "plain", "acks": 1, "count": 10}},
        {"crash": {"broker": 3, "lose_unflushed": True}},
        {"advance": {"ms": 6000}},
    ],
}


@pytest.fixture(scope="module")
def rolling_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("rolling") / "out"
    run(ROLLING, out)
    return out


def test_every_segment_reads_back_with_kafka_python(rolling_out):
    n_segments = 0
    for _broker, _name, pdir in partition_dirs(str(rolling_out)):
        logs = sorted(n for n in os.listdir(pdir) if n.endswith(".log"))
        n_segments += len(logs)
        prev_last = -1
        for log in logs:
            batches, valid = read_segment(os.path.join(pdir, log))
            assert not batches or int(log[:20]) <= batches[0].base_offset
            for b in batches:
                assert b.crc_valid, f"{pdir}/{log}@{b.position}"
                assert b.base_offset > prev_last  # offsets strictly increase across the log
                prev_last = b.last_offset
        assert index_problems(pdir) == []
    assert n_segments > 6  # segment_bytes 600 made the logs roll


def test_power_loss_leaves_a_torn_tail_only_on_the_crashed_broker(rolling_out):
    torn = {}
    for broker, name, pdir in partition_dirs(str(rolling_out)):
        logs = sorted(n for n in os.listdir(pdir) if n.endswith(".log"))
        path = os.path.join(pdir, logs[-1])
        _, valid = read_segment(path)
        torn[(broker, name)] = os.path.getsize(path) - valid
    assert any(v > 0 for (b, _), v in torn.items() if b == 3)
    assert all(v == 0 for (b, _), v in torn.items() if b != 3)


def test_transaction_markers_and_idempotent_batches(rolling_out):
    pdir = os.path.join(rolling_out, "broker-1", "orders-1")
    batches = read_partition(pdir)
    controls = [b for b in batches if b.is_control]
    assert len(controls) == 2
    # kafka-python decodes control records as (version, type) keys: ABORT=0 then COMMIT=1
    types = [b.records[0][1][3] for b in controls]
    assert types == [0, 1]
    txn = [f for f in os.listdir(pdir) if f.endswith(".txnindex")]
    assert txn, "an aborted transaction gets a .txnindex entry"


def test_root_files_and_checkpoints(rolling_out):
    b2 = rolling_out / "broker-2"
    assert (b2 / ".kafka_cleanshutdown").exists()  # shut down cleanly
    assert json.loads((b2 / ".kafka_cleanshutdown").read_text())["version"] == 0
    assert not (rolling_out / "broker-3" / ".kafka_cleanshutdown").exists()  # crashed
    assert not (rolling_out / "broker-1" / ".kafka_cleanshutdown").exists()  # still running
    props = dict(line.split("=", 1) for line in (b2 / "meta.properties").read_text().splitlines()
                 if line and not line.startswith("#"))
    assert props["node.id"] == "2" and props["version"] == "1" and props["cluster.id"]
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                 "log-start-offset-checkpoint"):
        lines = (b2 / name).read_text().split("\n")
        assert lines[0] == "0" and int(lines[1]) == len([x for x in lines[2:] if x])
    hw = (rolling_out / "broker-1" / "replication-offset-checkpoint").read_text().split("\n")
    assert {line.split()[0] for line in hw[2:] if line} == {"orders", "plain"}
    pm = (b2 / "orders-0" / "partition.metadata").read_text()
    assert pm.startswith("version: 0\ntopic_id: ") and not pm.endswith("\n")
    lec = (b2 / "orders-0" / "leader-epoch-checkpoint").read_text().split("\n")
    assert lec[:3] == ["0", "1", "0 0"]


def test_preallocated_indexes_on_running_and_crashed_brokers_trimmed_on_clean(rolling_out):
    def active_index(b):
        pdir = rolling_out / f"broker-{b}" / "orders-0"
        last = sorted(p for p in os.listdir(pdir) if p.endswith(".index"))[-1]
        return os.path.getsize(pdir / last)
    assert active_index(1) == 4096
    assert active_index(3) == 4096
    assert active_index(2) % 8 == 0 and active_index(2) < 4096


def test_metadata_log_decodes(rolling_out):
    from segtools.internal_topics.metadata import decode_record

    pdir = os.path.join(rolling_out, "controller", "__cluster_metadata-0")
    kinds = []
    for b in read_partition(pdir):
        assert b.crc_valid
        kinds += [decode_record(v)[0] for _, _, v in b.records]
    assert kinds.count("REGISTER_BROKER_RECORD") == 3
    assert kinds.count("TOPIC_RECORD") == 2 and kinds.count("PARTITION_RECORD") == 3
    assert "FENCE_BROKER_RECORD" in kinds and "PARTITION_CHANGE_RECORD" in kinds


@pytest.mark.parametrize("scenario", sorted(p.name for p in SCENARIOS.glob("*.yaml")))
def test_sample_scenarios_write_valid_logs(scenario, tmp_path):
    from segtools.simulate import simulate

    simulate(SCENARIOS / scenario, tmp_path / "out")
    roots = [tmp_path / "out"] + sorted((tmp_path / "out" / "snapshots").glob("*")) \
        if (tmp_path / "out" / "snapshots").exists() else [tmp_path / "out"]
    for root in roots:
        for _broker, _name, pdir in partition_dirs(str(root)):
            for b in read_partition(pdir):
                assert b.crc_valid
            assert index_problems(pdir) == []


@pytest.mark.parametrize("seed", [3, 17, 42, 99])
def test_metadata_log_replays_to_the_elections_in_truth(seed, tmp_path):
    """Replaying PartitionRecord / PartitionChangeRecord (FORENSICS.md A.9: every change that
    sets a leader raises the epoch; LeaderRecoveryState=1 marks an unclean election) gives the
    leader of every epoch that truth.json lists."""
    from segtools.internal_topics.metadata import decode_record
    from segtools.simulate import random_scenario

    sc = random_scenario(seed, metadata_log=True)
    out = tmp_path / "out"
    run(sc, out)
    truth = json.loads((out / "truth.json").read_text())
    names = {}
    replay: dict[tuple[str, int], list[tuple[int, int | None, bool]]] = {}
    state = {}
    for b in read_partition(str(out / "controller" / "__cluster_metadata-0")):
        for _, _, v in b.records:
            kind, _, d = decode_record(v)
            if kind == "TOPIC_RECORD":
                names[d["topicId"]] = d["name"]
            elif kind == "PARTITION_RECORD":
                key = (names[d["topicId"]], d["partitionId"])
                state[key] = d["leaderEpoch"]
                replay[key] = [(d["leaderEpoch"], None if d["leader"] < 0 else d["leader"], False)]
            elif kind == "PARTITION_CHANGE_RECORD" and d.get("leader", -2) != -2:  # -2: unchanged
                key = (names[d["topicId"]], d["partitionId"])
                state[key] += 1
                replay[key].append((state[key], None if d["leader"] < 0 else d["leader"],
                                    d.get("leaderRecoveryState") == 1))
    for (topic, p), elections in replay.items():
        expected = [(e["epoch"], e["leader"], e["unclean"]) for e in truth[f"{topic}-{p}"]["elections"]]
        assert elections == expected
