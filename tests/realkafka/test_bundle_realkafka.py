"""Issue 26 on real-engine dirs: collect -> verify -> compare on the bundle equals compare on
the originals, also with --redact (then 0 planted payload strings left in the bundle).

One small run of the real engine (`simulate --engine kafka`, 2 brokers): keyed records with
planted keys, values and header values on an uncompressed and a gzip topic (the broker
compresses); broker 2 stops, broker 1 takes acks=1 records alone and stops; broker 2 is elected
uncleanly and writes on. Broker 1's disk keeps the records the cluster lost. The oracle for
the bundle is compare on the real brokers' own dirs (and grep for the planted strings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cluster_fixtures import java_processes_of, require_real_kafka

pytestmark = pytest.mark.realkafka

PLANTED = ("PLANTVAL", "PLANTKEY", "PLANTHDR")


def _produce(topic: str, tag: str, n: int, acks: str | int) -> str:
    keys = ", ".join(f"PLANTKEY-{tag}-{i}" for i in range(n))
    values = ", ".join(f"PLANTVAL-{tag}-{i}-" + "x" * 30 for i in range(n))
    return (f"  - produce: {{topic: {topic}, partition: 0, acks: {acks}, keys: [{keys}], "
            f"values: [{values}], headers: {{trace: PLANTHDR-{tag}}}}}\n")


SCENARIO = (
    "name: real-bundle\nseed: 26\n"
    "cluster: {brokers: [1, 2], metadata_log: true, kafka_features: {eligible_leader_replicas: false}}\n"
    "topics:\n"
    "  - {name: plain, replication_factor: 2, min_insync_replicas: 1, unclean_leader_election: true,"
    " assignment: {0: [1, 2]}}\n"
    "  - {name: gz, replication_factor: 2, min_insync_replicas: 1, unclean_leader_election: true,"
    " assignment: {0: [1, 2]}, compression: gzip}\n"
    "steps:\n"
    + _produce("plain", "a", 4, "all") + _produce("gz", "a", 4, "all")
    + "  - crash: {broker: 2}\n"
    + _produce("plain", "lost", 3, 1) + _produce("gz", "lost", 3, 1)
    + "  - crash: {broker: 1}\n  - restart: {broker: 2}\n"
    + "  - elect: {topic: plain, partition: 0, unclean: true}\n"
    + "  - elect: {topic: gz, partition: 0, unclean: true}\n"
    + _produce("plain", "new", 2, "all") + _produce("gz", "new", 2, "all")
    + "  - advance: {ms: 5000}\n")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "segtools", *args], capture_output=True, text=True,
                          timeout=600, check=False)


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_real_kafka()
    from segtools.realcluster import run_on_kafka
    from segtools.simulate import load_scenario

    root = tmp_path_factory.mktemp("real-bundle")
    scenario = root / "real-bundle.yaml"
    scenario.write_text(SCENARIO)
    out = root / "real"
    run_on_kafka(load_scenario(scenario), out, allow_drift=True)
    assert java_processes_of(out) == []
    return out


def _answers(report: dict[str, Any]) -> list[Any]:
    return [(p["topic"], p["partition"], p["reference_broker"],
             [(r["broker"], r["status"], r["fork_offset"], r["log_end_offset"], r["high_watermark"],
               r["divergent"], sorted(f["code"] for f in r["findings"])) for r in p["replicas"]],
             [(x["broker"], x["offset"], x["leader_epoch"], x["committed"], x["acked"])
              for x in p["lost_records"]],
             sorted(f["code"] for f in p["findings"]))
            for p in report["partitions"]]


@pytest.mark.parametrize("redact", [False, True], ids=["plain", "redacted"])
def test_collect_verify_compare_on_real_engine_dirs(real, tmp_path, redact):
    brokers = sorted(str(p) for p in real.glob("broker-*"))
    bundle = tmp_path / "bundle"
    made = _run("collect", *brokers, "--out", str(bundle), *(["--redact"] if redact else []))
    assert made.returncode == 0, made.stderr
    assert _run("verify", str(bundle)).returncode == 0
    acks = str(real / "acks.jsonl")
    a = _run("compare", *brokers, "--no-spark", "--acks", acks, "--report", "-")
    b = _run("compare", str(bundle), "--no-spark", "--acks", acks, "--report", "-")
    assert a.returncode == b.returncode == 1, (a.stderr, b.stderr)
    ra, rb = json.loads(a.stdout), json.loads(b.stdout)
    assert _answers(ra) == _answers(rb)
    lost = {p["topic"]: {x["offset"] for x in p["lost_records"]} for p in ra["partitions"]}
    assert lost.get("plain") and lost.get("gz"), lost       # the run lost records on both topics
    found = subprocess.run(["grep", "-rla", "PLANT", str(bundle)], capture_output=True, text=True,
                           check=False).stdout.split()
    if redact:
        assert found == []
        manifest = json.loads((bundle / "MANIFEST.json").read_text())
        assert manifest["redaction"]["batches_redacted"] > 0
        assert not [n for n in manifest["redaction"]["notes"] if "zero-filled" in n["note"]]
    else:
        assert found        # the unredacted bundle keeps the payloads (the grep can see them)


def _dump_log_text(runtime: Any, files: list[str]) -> str:
    from segtools.realcluster.dumplog import _run as run_dump_log

    return run_dump_log(runtime, files)


CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def test_real_kafka_dump_log_reads_redacted_batches_of_every_codec(tmp_path):
    """The padding that keeps a recompressed batch's size (zeros after a gzip or lz4 stream, a
    zstd skippable frame, empty snappy blocks and stream headers) is read by Kafka's own
    decoders: the real kafka-dump-log finds every record, at the same offsets, CRC valid. One
    kafka-dump-log run reads the segments of every codec (a JVM start each would cost ~3 s)."""
    require_real_kafka()
    from segtools.realcluster.dumplog import dump_records
    from segtools.realcluster.kafka_runtime import kafka_runtime
    from segtools.redact import Redactor
    from segtools.writer.batch_builder import NewRecord, build_batch

    files: dict[str, tuple[str, str]] = {}
    for codec in CODECS:
        data = b"".join(
            build_batch([NewRecord(key=f"PLANTKEY-{b}-{i}".encode(),
                                   value=f"PLANTVAL-{b}-{i}-".encode() * 6,
                                   headers=[("trace", f"PLANTHDR-{b}".encode())], timestamp=1000 + i)
                         for i in range(8)], base_offset=8 * b, compression=codec)
            for b in range(4))
        redactor = Redactor(salt=b"0123456789abcdef")
        redacted = redactor.segment(data)
        assert len(redacted) == len(data) and b"PLANT" not in redacted, codec
        assert not [n for n in redactor.notes if "zero-filled" in n.note], codec
        pair = []
        for name, content in (("orig", data), ("red", redacted)):
            (tmp_path / codec / name).mkdir(parents=True)
            path = tmp_path / codec / name / "00000000000000000000.log"
            path.write_bytes(content)
            pair.append(str(path))
        files[codec] = (pair[0], pair[1])
    every = [f for pair in files.values() for f in pair]
    runtime = kafka_runtime()
    dumped = dump_records(runtime, every)
    text = _dump_log_text(runtime, every)
    for codec, (orig_path, red_path) in files.items():
        # the text of one file runs from its "Dumping <path>" line to the next one
        part = text.split(f"Dumping {red_path}", 1)[1].split("Dumping ", 1)[0]
        batches = [line.lower() for line in part.splitlines() if line.startswith("baseOffset:")]
        assert len(batches) == 4 and all("isvalid: true" in b for b in batches), (codec, batches)
        orig, red = dumped[orig_path], dumped[red_path]
        assert [r.offset for r in orig] == list(range(32)), codec
        assert [r.offset for r in red] == [r.offset for r in orig], codec
