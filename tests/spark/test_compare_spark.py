"""The Spark path: the kafka_segments data source against kafka-python, and the compare job
against the in-process detection core, truth.json and real broker data."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import segtools
from segtools.forensics.loss import AckIndex

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
GENERATED = REPO / "samples" / "generated"
SPARK_KAFKA = [("key", "binary"), ("value", "binary"), ("topic", "string"), ("partition", "int"),
               ("offset", "bigint"), ("timestamp", "timestamp"), ("timestampType", "int"),
               ("headers", "array<struct<key:string,value:binary>>")]


def _kafka_python_batches(partition_dir: Path):
    from kafka.record import MemoryRecords

    out = []
    for seg in sorted(partition_dir.glob("*.log")):
        records = MemoryRecords(seg.read_bytes())
        while (b := records.next_batch()) is not None:
            out.append((b.base_offset, b.leader_epoch, b.crc, [(r.offset, r.key, r.value) for r in b]))
    return out


def test_data_source_levels_match_kafka_python(spark, realdata):
    import segtools.spark

    segtools.spark.register(spark)
    log_dir = realdata / "kafka-2.5-zk-first-topic" / "final"
    oracle = {p: _kafka_python_batches(log_dir / p) for p in ("first_topic-0", "first_topic-1", "new_topic-0")}
    batches = (spark.read.format("kafka_segments").option("level", "batches").load(str(log_dir))
               .where("topic in ('first_topic', 'new_topic')").collect())
    records = spark.read.format("kafka_segments").load(str(log_dir / "first_topic-0"))
    assert records.dtypes[:8] == SPARK_KAFKA
    got_batches = {}
    for r in batches:
        got_batches.setdefault(f"{r.topic}-{r.partition}", []).append(
            (r.base_offset, r.partition_leader_epoch, r.crc, r.crc_valid, r.broker))
    for name, expected in oracle.items():
        rows = sorted(got_batches[name])
        assert [(b, e, c) for b, e, c, _, _ in rows] == [(b, e, c) for b, e, c, _ in expected]
        assert all(valid and broker == 0 for *_, valid, broker in rows)   # broker.id=0
    got_records = sorted((r.offset, r.key, bytes(r.value)) for r in records.collect())
    assert got_records == [rec for *_, recs in oracle["first_topic-0"] for rec in recs]
    assert records.rdd.getNumPartitions() == 1        # one InputPartition per segment
    # a file:// URI goes through pyarrow's filesystem layer; topics/partitions prune segments
    via_uri = (spark.read.format("kafka_segments").option("topics", "first_topic").option("partitions", "0")
               .load((log_dir).as_uri()))
    assert via_uri.rdd.getNumPartitions() == 1
    assert sorted((r.offset, r.key, bytes(r.value)) for r in via_uri.collect()) == got_records


def _spark_vs_local(spark, folder: Path, sample: Path):
    controller = sample / "controller"
    given = {"acks": AckIndex.load(sample / "acks.jsonl"), "find_metadata_log": False,
             "metadata_log": controller if controller.is_dir() else None}
    distributed = segtools.compare([str(folder)], engine="spark", spark=spark, **given)
    local = segtools.compare([str(folder)], **given)
    return distributed, local


@pytest.mark.parametrize("name", ["S7-simple-unclean-election", "b-unclean-stale-return",
                                  "S19-txn-marker-lost",
                                  "S5-kip279-fast-unclean-failovers/snapshots/before-101-returns"])
def test_spark_compare_agrees_with_in_process_on_samples(spark, name):
    folder = GENERATED / name
    sample = GENERATED / name.split("/")[0]
    distributed, local = _spark_vs_local(spark, folder, sample)
    assert distributed.to_json() == local.to_json()
    assert any(p.lost for p in distributed.partitions) or name.startswith("S19")
    assert distributed.exit_code == 1


def test_spark_compare_agrees_on_random_scenarios(spark, tmp_path):
    import sys

    from segtools.simulate import random_scenario, run

    sys.path.insert(0, str(REPO / "tests" / "forensics"))
    from forensics_helpers import check_against_truth, disk_records_by_replica

    lost = checked = 0
    for seed in range(100):
        # the first three scenarios whose truth.json has lost records still on some disk
        scenario = random_scenario(seed)
        scenario["cluster"]["metadata_log"] = True
        root = tmp_path / f"s{seed}"
        result = run(scenario, str(root))
        if not any(truth["lost"] for truth in result.truth.values()):
            continue
        disk = disk_records_by_replica(root)
        if not any((x["offset"], x["leader_epoch"]) in recs for t in result.truth.values()
                   for x in t["lost"] for k, recs in disk.items() if k[:2] == (t["topic"], t["partition"])):
            continue
        checked += 1
        if checked > 3:
            break
        distributed, local = _spark_vs_local(spark, root, root)
        assert distributed.to_json() == local.to_json()
        assert check_against_truth(distributed, result.truth, disk, with_metadata=True) == []
        lost += sum(len(p.lost) for p in distributed.partitions)
    assert lost > 0


def test_cli_on_real_data_early_vs_final_and_a_flipped_byte(spark, realdata, tmp_path):
    from segtools.cli.compare import compare

    src = realdata / "kafka-2.5-zk-first-topic"
    runner = CliRunner()
    report = tmp_path / "report.json"
    res = runner.invoke(compare, [str(src / "early"), str(src / "final"), "--report", str(report),
                                  "--tables", str(tmp_path / "tables")])
    # nothing lost, but no metadata log proves the inputs hold every ISR member: cannot tell
    assert res.exit_code == 1 and "answer: CANNOT TELL" in res.output, res.output
    parts = json.loads(report.read_text())["partitions"]
    statuses = {r["status"] for p in parts for r in p["replicas"]}
    assert statuses == {"CONSISTENT", "LAGGING_PREFIX"}
    first0 = next(p for p in parts if (p["topic"], p["partition"]) == ("first_topic", 0))
    by_dir = {Path(r["log_dir"]).name: r for r in first0["replicas"]}
    assert (by_dir["early"]["status"], by_dir["early"]["log_end_offset"]) == ("LAGGING_PREFIX", 10)
    assert (by_dir["final"]["status"], by_dir["final"]["log_end_offset"]) == ("CONSISTENT", 11)
    assert first0["lost_records"] == []
    for table in ("batches", "replicas", "verdicts"):
        assert list((tmp_path / "tables" / table).glob("*.parquet")), table
    import pyarrow.parquet as pq

    index = pq.read_table(tmp_path / "tables" / "batches").to_pylist()
    mine = sorted((r["base_offset"], r["crc"]) for r in index
                  if r["topic"] == "first_topic" and r["partition"] == 0 and r["log_dir"].endswith("final"))
    assert mine == sorted((b, c) for b, _, c, _ in _kafka_python_batches(src / "final" / "first_topic-0"))

    # a copy of `final` with one byte of batch 3's value flipped: that batch is reported
    copy = tmp_path / "final-copy"
    shutil.copytree(src / "final", copy)
    seg = copy / "first_topic-0" / "00000000000000000000.log"
    os.chmod(seg, 0o644)
    oracle = _kafka_python_batches(src / "final" / "first_topic-0")
    data = bytearray(seg.read_bytes())
    positions, pos = [], 0
    while pos < len(data):
        positions.append(pos)
        pos += int.from_bytes(data[pos + 8:pos + 12], "big") + 12
    flip_at = positions[4] - 2                       # last value byte of the batch at index 3
    data[flip_at] ^= 0xFF
    seg.write_bytes(bytes(data))
    res = runner.invoke(compare, [str(src / "final"), str(copy), "--report", str(report)])
    assert res.exit_code == 1, res.output
    first0 = next(p for p in json.loads(report.read_text())["partitions"]
                  if (p["topic"], p["partition"]) == ("first_topic", 0))
    bad = next(r for r in first0["replicas"] if Path(r["log_dir"]).name == "final-copy")
    assert bad["status"] == "CRC_INVALID"
    crc = next(f for f in bad["findings"] if f["code"] == "CRC_INVALID")
    assert (crc["offset"], crc["position"], crc["segment"]) == (oracle[3][0], positions[3], seg.name)
    good = next(r for r in first0["replicas"] if Path(r["log_dir"]).name == "final")
    assert good["status"] == "CONSISTENT"


def test_cli_unusable_input_exits_2(tmp_path):
    from segtools.cli.compare import compare

    res = CliRunner().invoke(compare, [str(tmp_path), "--no-spark"])
    assert res.exit_code == 2
    assert "no Kafka partition" in res.output and "Traceback" not in res.output


def test_spark_compare_agrees_on_damaged_replicas(spark, tmp_path):
    import sys

    sys.path.insert(0, str(REPO / "tests" / "forensics"))
    from test_corrupt_inputs import _copy, corrupt_length

    root = _copy(tmp_path)
    (root / "broker-2" / ".kafka_cleanshutdown").write_text("")
    corrupt_length(root / "broker-2" / "orders-0" / "00000000000000000000.log", 3)
    with open(root / "broker-3" / "orders-0" / "00000000000000000000.log", "ab") as fh:
        fh.write(b"\x00\x00\x00\x00\x00\x00\x00\x09garbage-bytes")
    (root / "broker-3" / ".kafka_cleanshutdown").unlink(missing_ok=True)
    distributed = segtools.compare([str(root)], engine="spark", spark=spark, find_metadata_log=False)
    assert distributed.to_json() == segtools.compare([str(root)], find_metadata_log=False).to_json()
    reps = {r.broker: r.status for p in distributed.partitions for r in p.verdict.replicas}
    assert reps[2] == "CRC_INVALID" and distributed.exit_code == 1


def test_spark_reports_groups_that_consumed_lost_records(spark, tmp_path):
    import sys

    sys.path.insert(0, str(REPO / "tests" / "forensics"))
    from test_consumer_groups import s7_with_groups

    root = s7_with_groups(tmp_path)
    distributed = segtools.compare([str(root)], engine="spark", spark=spark, find_metadata_log=False)
    assert distributed.to_json() == segtools.compare([str(root)], find_metadata_log=False).to_json()
    codes = [f["code"] for p in distributed.to_json()["partitions"] for f in p["findings"]]
    assert codes.count("GROUP_CONSUMED_DIVERGENT") == 2


def test_spark_gives_the_same_three_valued_answer(spark, tmp_path):
    """Issue 21's false all-clear on the Spark runner: the acknowledged offset no replica holds
    is lost there too, with the same answer and missing evidence as in process."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "forensics"))
    from test_answers import FALSE_ALL_CLEAR

    from segtools.cli.main import cli as cli_main
    from segtools.forensics.api import compare as run

    (tmp_path / "s.yaml").write_text(FALSE_ALL_CLEAR)
    out = tmp_path / "fac"
    assert CliRunner().invoke(cli_main, ["simulate", str(tmp_path / "s.yaml"), "--out", str(out)]).exit_code == 0
    dirs = [str(out / "broker-1"), str(out / "broker-2")]
    local = run(dirs, acks=str(out / "acks.jsonl"))
    distributed = run(dirs, acks=str(out / "acks.jsonl"), engine="spark", spark=spark)
    assert distributed.answer() == local.answer() == "lost" and distributed.exit_code == 1
    assert ([p.to_json()["answer"] for p in distributed.partitions]
            == [p.to_json()["answer"] for p in local.partitions])
    truth = json.loads((out / "truth.json").read_text())["t-0"]
    gone = [{"offset": x["offset"], "leader_epoch": x["leader_epoch"], "committed": True}
            for x in truth["lost"] if x["acked"] and not x["on_brokers"]]
    assert ([p.to_json()["acked_offsets_lost"] for p in distributed.partitions]
            == [p.to_json()["acked_offsets_lost"] for p in local.partitions] == [gone])
