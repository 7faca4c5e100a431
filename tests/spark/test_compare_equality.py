"""Both runners of the one pipeline give the same report: every generated sample and 200 random
simulator scenarios, each set compared in ONE Spark job (every sample's topics renamed apart,
so partitions of different inputs never meet), against the local runner over the same plan
and against ``segtools.compare()`` per input. Plus the API and the CLI on Spark."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

import segtools
from segtools.cli.main import cli
from segtools.forensics.collect import ReplicaSpec, discover_replicas
from segtools.forensics.elections import PartitionHistory, load_histories
from segtools.forensics.loss import AckIndex
from segtools.forensics.pipeline import LocalRunner
from segtools.spark.compare_job import run_specs

pytestmark = pytest.mark.spark

GENERATED = Path(__file__).resolve().parents[2] / "samples" / "generated"
SAMPLES = sorted(p for p in GENERATED.iterdir() if (p / "truth.json").is_file())
SEP = "~"


@pytest.fixture(autouse=True)
def _no_settle_wait(monkeypatch):
    """The reader waits 50 ms per damaged file for a writer to show itself (a file changing
    under it); nothing writes here, and the simulator's torn tails would cost seconds."""
    import segtools.records.batches

    monkeypatch.setattr(segtools.records.batches, "_SETTLE_SECONDS", 0.0)


def _combined(inputs: dict[str, Path]) -> tuple[list[ReplicaSpec], AckIndex, dict[tuple[str, int], PartitionHistory]]:
    """One plan over many inputs: topic ``t`` of input ``name`` becomes ``name~t``; the acks and
    the metadata histories are renamed the same way."""
    specs: list[ReplicaSpec] = []
    entries = []
    histories: dict[tuple[str, int], PartitionHistory] = {}
    for name, root in inputs.items():
        for s in discover_replicas([str(root)]):
            s.topic, s.replica_id = f"{name}{SEP}{s.topic}", len(specs)
            specs.append(s)
        acks = root / "acks.jsonl"
        for line in acks.read_text().splitlines() if acks.is_file() else []:
            if line.strip():
                e = json.loads(line)
                e["topic"] = f"{name}{SEP}{e['topic']}"
                entries.append(e)
        if (root / "controller").is_dir():
            for (topic, partition), h in load_histories(root / "controller").items():
                histories[(f"{name}{SEP}{topic}", partition)] = h
    return specs, AckIndex(entries), histories


def _split(doc: dict) -> dict[str, list[dict]]:
    """The combined report's partitions per input, with their own topic names back."""
    out: dict[str, list[dict]] = {}
    for p in doc["partitions"]:
        name, topic = p["topic"].split(SEP, 1)
        out.setdefault(name, []).append({**p, "topic": topic})
    return out


def _plain(obj):
    return json.loads(json.dumps(obj))


def _check(spark, inputs: dict[str, Path]) -> dict[str, list[dict]]:
    specs, acks, histories = _combined(inputs)
    local = _plain(LocalRunner().run(specs, acks=acks, histories=histories).to_json())
    distributed = _plain(run_specs(spark, specs, acks=acks, histories=histories).to_json())
    assert distributed == local
    parts = _split(local)
    assert set(parts) == set(inputs)
    return parts


def test_both_runners_and_the_api_agree_on_every_sample(spark):
    assert len(SAMPLES) >= 20
    parts = _check(spark, {p.name: p for p in SAMPLES})
    for sample in SAMPLES:
        alone = _plain(segtools.compare(sample, acks=sample / "acks.jsonl").to_json())
        assert alone["partitions"] == parts[sample.name], sample.name


def test_both_runners_agree_on_200_random_scenarios(spark, tmp_path, monkeypatch):
    from segtools.simulate import random_scenario, run

    # the scenarios are written, read back and deleted by this process: durability on disk
    # proves nothing here and fsync was most of the generation time
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    inputs: dict[str, Path] = {}
    lost = 0
    for seed in range(200):
        scenario = random_scenario(seed)
        scenario["cluster"]["metadata_log"] = seed % 2 == 0     # half with, half without KRaft log
        root = tmp_path / f"s{seed}"
        result = run(scenario, str(root))
        lost += sum(len(t["lost"]) for t in result.truth.values())
        inputs[f"s{seed}"] = root
    assert lost > 0
    parts = _check(spark, inputs)
    # a tenth of them also through segtools.compare() on its own (the combined plan is the
    # same pipeline over the same files: the split must be each input's own report)
    for seed in range(0, 200, 10):
        root = inputs[f"s{seed}"]
        alone = _plain(segtools.compare(root, acks=root / "acks.jsonl").to_json())
        assert alone["partitions"] == parts[f"s{seed}"], seed


def test_api_and_cli_on_spark_equal_local(spark, tmp_path):
    sample = GENERATED / "S3-kip101-divergent-logs"
    acks = sample / "acks.jsonl"
    local = segtools.compare(sample, acks=acks)
    on_spark = segtools.compare(sample, acks=acks, engine="spark", spark=spark)
    assert on_spark.runner == "spark"
    assert _plain(on_spark.to_json()) == _plain(local.to_json())
    out = tmp_path / "r.json"
    res = CliRunner().invoke(cli, ["compare", str(sample), "--spark", "--acks", str(acks), "--report", str(out)])
    assert res.exit_code == local.exit_code == 1, res.output
    doc = json.loads(out.read_text())
    assert doc["summary"]["runner"] == "spark"
    expected = local.report_json(runner="spark", generated_at=doc["summary"]["generated_at"])
    assert doc == _plain(expected)


def test_a_segment_that_stops_is_one_read_error_row(spark, tmp_path):
    """errors=column: the reader's own message arrives as a row (nothing is read twice), and it
    is the message the in-process scan gives."""
    import shutil

    from segtools.records import columnar

    pdir = tmp_path / "broker-1" / "orders-0"
    shutil.copytree(GENERATED / "S0-healthy-baseline" / "broker-1" / "orders-0", pdir)
    seg = sorted(pdir.glob("*.log"))[0]
    data = bytearray(seg.read_bytes())
    second = 12 + int.from_bytes(data[8:12], "big")      # offset(8) + batch length(4) + length
    assert second < len(data)
    data[second + 8:second + 12] = (5).to_bytes(4, "big")   # a batch length below Kafka's minimum
    seg.write_bytes(bytes(data))
    os.utime(seg, (1_600_000_000, 1_600_000_000))
    with pytest.raises(segtools.SegtoolsError) as exc:
        for _ in columnar.iter_batch_batches(str(seg)):
            pass
    import segtools.spark as sspark

    sspark.register(spark)
    rows = (spark.read.format("kafka_segments").option("level", "batches").option("errors", "column")
            .load(str(pdir)).collect())
    errors = [r for r in rows if r.read_error is not None]
    assert [r.read_error for r in errors] == [str(exc.value)]
    assert errors[0].segment == seg.name and errors[0].base_offset is None
    assert all(r.crc_valid for r in rows if r.read_error is None)
