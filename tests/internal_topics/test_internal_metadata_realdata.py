"""KRaft metadata records written by a real Kafka 3.6 controller (realdata) decode, re-encode to
the identical bytes, and agree with facts on disk that do not come from the metadata log."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
from kafka.record import MemoryRecords

from segtools.internal_topics import metadata
from segtools.records.batches import iter_batches

LOGDIR = "kafka-3.6-kraft-flink-stack/logdir"


def _metadata_files(realdata: Path) -> list[Path]:
    part = realdata / LOGDIR / "__cluster_metadata-0"
    files = sorted(part.glob("*.log")) + sorted(part.glob("*.checkpoint"))
    files.append(realdata / LOGDIR / "bootstrap.checkpoint")
    assert len(files) == 4, files
    return files


def _values(path: Path) -> list[tuple[int, bytes]]:
    out = []
    for batch in iter_batches(path):
        if batch.is_control:
            continue
        for record in batch.records():
            assert record.key is None  # metadata records never have a key
            out.append((record.offset, bytes(record.value)))
    return out


def _oracle_count(path: Path) -> int:
    """Number of data records per kafka-python's reader (independent of segtools.records.batches)."""
    records = MemoryRecords(path.read_bytes())
    n = 0
    while (batch := records.next_batch()) is not None:
        if not batch.is_control_batch:
            n += sum(1 for _ in batch)
    return n


@pytest.fixture(scope="module")
def decoded(realdata: Path) -> dict[Path, list[tuple[int, bytes, str, int, dict]]]:
    out = {}
    for path in _metadata_files(realdata):
        rows = []
        for offset, value in _values(path):
            name, version, data = metadata.decode_record(value)
            rows.append((offset, value, name, version, data))
        out[path] = rows
    return out


def test_every_record_decodes_and_reencodes_to_identical_bytes(realdata, decoded):
    total = 0
    for path, rows in decoded.items():
        assert len(rows) == _oracle_count(path), path
        for offset, value, name, version, data in rows:
            assert metadata.encode_record(name, version, data) == value, (path.name, offset, name)
        total += len(rows)
    # log (17,027 records incl. control) + 2 snapshots + bootstrap
    assert total == 18197


def test_record_types_and_versions_seen(decoded):
    seen = collections.Counter((name, version) for rows in decoded.values()
                               for _, _, name, version, _ in rows)
    # the types a 3.6 combined-mode controller writes (versions from the frame, not from us)
    for expected in [("TOPIC_RECORD", 0), ("PARTITION_RECORD", 0), ("CONFIG_RECORD", 0),
                     ("PARTITION_CHANGE_RECORD", 0), ("REGISTER_BROKER_RECORD", 2),
                     ("BROKER_REGISTRATION_CHANGE_RECORD", 0),
                     ("BROKER_REGISTRATION_CHANGE_RECORD", 1), ("FEATURE_LEVEL_RECORD", 0),
                     ("PRODUCER_IDS_RECORD", 0), ("NO_OP_RECORD", 0),
                     ("ZK_MIGRATION_STATE_RECORD", 0), ("BEGIN_TRANSACTION_RECORD", 0),
                     ("END_TRANSACTION_RECORD", 0)]:
        assert seen[expected] > 0, expected


def _log_rows(realdata, decoded):
    return decoded[realdata / LOGDIR / "__cluster_metadata-0" / "00000000000000000000.log"]


def test_topics_and_partition_counts_match_partition_dirs(realdata, decoded):
    topics, removed = {}, set()
    partitions = collections.Counter()
    for _, _, name, _, data in _log_rows(realdata, decoded):
        if name == "TOPIC_RECORD":
            topics[data["topicId"]] = data["name"]
        elif name == "PARTITION_RECORD":
            partitions[data["topicId"]] += 1
        elif name == "REMOVE_TOPIC_RECORD":
            removed.add(data["topicId"])
    from_log = {topics[t]: partitions[t] for t in topics if t not in removed}
    on_disk = collections.Counter(
        entry.name.rsplit("-", 1)[0] for entry in (realdata / LOGDIR).iterdir()
        if entry.is_dir() and not entry.name.startswith("__cluster_metadata"))
    assert from_log == dict(on_disk)
    assert len(from_log) == 63 and from_log["__consumer_offsets"] == 50


def test_topic_ids_match_partition_metadata_files(realdata, decoded):
    ids = {data["topicId"]: data["name"] for _, _, name, _, data in _log_rows(realdata, decoded)
           if name == "TOPIC_RECORD"}
    checked = 0
    for entry in (realdata / LOGDIR).iterdir():
        pm = entry / "partition.metadata"
        if entry.name.startswith("__cluster_metadata") or not pm.exists():
            continue
        topic_id = pm.read_text().split("topic_id:")[1].strip()
        assert ids[topic_id] == entry.name.rsplit("-", 1)[0]
        checked += 1
    assert checked > 100


def test_register_broker_record_matches_meta_properties(realdata, decoded):
    props = dict(line.split("=", 1) for line in
                 (realdata / LOGDIR / "meta.properties").read_text().splitlines()
                 if "=" in line and not line.startswith("#"))
    regs = [data for _, _, name, _, data in _log_rows(realdata, decoded)
            if name == "REGISTER_BROKER_RECORD"]
    assert [r["brokerId"] for r in regs] == [int(props["node.id"])]
    assert {e["name"] for e in regs[0]["endPoints"]} == {"PLAINTEXT", "PLAINTEXT_HOST"}


def test_format_record_json_lines(realdata, decoded):
    rows = _log_rows(realdata, decoded)
    for offset, value, name, version, _data in rows[:2000]:
        line = metadata.format_record(value, offset=offset)
        parsed = json.loads(line)
        assert list(parsed) == ["type", "version", "data"]
        assert parsed["type"] == name and parsed["version"] == version
        assert " " not in line.replace(" ", "") and ": " not in line  # compact Jackson output
    topic = next(v for _, v, n, _, _ in rows if n == "TOPIC_RECORD")
    assert metadata.format_record(topic) == (
        '{"type":"TOPIC_RECORD","version":0,"data":{"name":"_schemas",'
        '"topicId":"qWNLiUNvR7eGR5czomqQJA"}}')
    # qWNLiUNvR7eGR5czomqQJA is the id in _schemas-0/partition.metadata, written by the broker
    pm = (realdata / LOGDIR / "_schemas-0" / "partition.metadata").read_text()
    assert "qWNLiUNvR7eGR5czomqQJA" in pm


def test_snapshot_files_hold_the_same_topics_as_the_log(realdata, decoded):
    part = realdata / LOGDIR / "__cluster_metadata-0"
    latest = decoded[part / "00000000000000014926-0000000001.checkpoint"]
    in_snapshot = {d["name"] for _, _, n, _, d in latest if n == "TOPIC_RECORD"}
    # snapshot 00000000000000014926-0000000001 covers the log up to offset 14925
    in_log = {d["name"] for o, _, n, _, d in _log_rows(realdata, decoded)
              if n == "TOPIC_RECORD" and o < 14926}
    assert in_snapshot == in_log and len(in_log) > 50
    boot = decoded[realdata / LOGDIR / "bootstrap.checkpoint"]
    # the bootstrap snapshot only pins metadata.version (3.6 = feature level 14, IBP 3.6-IV2)
    assert [(n, d) for _, _, n, _, d in boot] == [
        ("FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": 14})]
