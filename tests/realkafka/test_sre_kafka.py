"""The SRE commands judged by real Kafka 4.3.1 (issue 14, parts 1 and 3). One broker serves
every test here (a real cluster start is the expensive part).

Salvage: a real lz4 segment (tests/data/realdata, Kafka 3.6) is damaged at test time (a bit
flip in one batch, a zeroed range over several, a torn tail) and salvaged. Then
1. the real kafka-dump-log reads the rebuilt segment and its indexes with no error, no invalid
   bytes, no index mismatch, and one batch line per kept batch;
2. the real broker, started on a log dir holding the rebuilt partition (unclean: recovery runs
   from offset 0), recovers it without truncating anything or rewriting the log, and a
   consumer reads every kept record (offsets, keys and values as kafka-python reads them from
   the rebuilt file: an independent reader).

Lost records back: samples/generated/real-durability-matrix/snapshots/acks1-before-restart
holds log dirs a real Kafka 4.3.1 cluster wrote (segtools simulate --engine kafka) just before
the restart that lost the acks=1 tail; truth.json holds what its producer saw lost
(independent of compare). The same broker gets the surviving replicas (the report's reference
broker) copied in: the cluster as the incident left it. `segtools replay` of `compare
--lost-out` must put every lost record back exactly once (a consumer reads the partition),
and a second replay must add nothing.

Real Kafka is required: a missing Java/Maven/jar/confluent-kafka FAILS."""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from cluster_fixtures import REPO
from fresh_broker import broker_with
from segment_extents import batch_extents

pytestmark = pytest.mark.realkafka

SAMPLE = REPO / "samples" / "generated" / "real-durability-matrix"
SNAPSHOT = SAMPLE / "snapshots" / "acks1-before-restart"

SOURCE = ("kafka-3.6-kraft-flink-stack/logdir/"
          "_confluent-controlcenter-7-6-0-1-monitoring-trigger-event-rekey-0/00000000000000000000.log")
TOPIC = "salvaged"
NAME = "00000000000000000000"


@pytest.fixture(scope="module")
def salvaged(realdata, tmp_path_factory) -> dict:
    from segtools.cli.main import cli

    root = tmp_path_factory.mktemp("salvage-kafka")
    data = (realdata / SOURCE).read_bytes()
    ext = batch_extents(data)
    buf = bytearray(data)
    buf[ext[40][0] + 30] ^= 0x04                              # one batch's attributes/records
    z0, z1 = ext[200][0] + 20, ext[230][0] + 5                # zeros over ~30 batches
    buf[z0:z1] = bytes(z1 - z0)
    cut = ext[-3][0] + 25                                     # a torn tail
    mutant = bytes(buf[:cut])
    part = root / "in" / f"{TOPIC}-0"
    part.mkdir(parents=True)
    (part / f"{NAME}.log").write_bytes(mutant)
    out = root / "out"
    result = CliRunner().invoke(cli, ["salvage", str(part), "--out", str(out)])
    assert result.exit_code == 1, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    entry = manifest["segments"][0]
    kept_extents = [e for e in ext if e[1] <= cut and mutant[e[0]:e[1]] == data[e[0]:e[1]]]
    assert entry["kept_batches"] == len(kept_extents) > 400
    assert len(entry["dropped"]) == 3
    return {"dir": out / f"{TOPIC}-0", "kept": len(kept_extents), "root": root,
            "input": part / f"{NAME}.log"}


def _records(log: Path) -> dict[int, tuple[bytes | None, bytes | None]]:
    """Every data record of a segment, read by kafka-python."""
    from kafka.record.memory_records import MemoryRecords

    out = {}
    records = MemoryRecords(log.read_bytes())
    while (batch := records.next_batch()) is not None:
        assert batch.validate_crc()
        if getattr(batch, "is_control_batch", False):
            continue
        for rec in batch:
            out[rec.offset] = (rec.key, rec.value)
    return out


def test_kafka_dump_log_reads_the_rebuilt_segment_without_error(salvaged, kafka_dump_log):
    folder = salvaged["dir"]
    log, index, timeindex = (str(folder / f"{NAME}{s}") for s in (".log", ".index", ".timeindex"))
    deep = kafka_dump_log.run_cli(["--deep-iteration", "--files", log], folder)
    assert not deep.crashed and deep.status == 0, deep.exception or deep.stderr
    assert "invalid bytes" not in deep.stdout.lower()
    assert deep.stdout.count("baseOffset:") == salvaged["kept"]
    checks = kafka_dump_log.run_cli(["--verify-index-only", "--files", f"{index},{timeindex}"], folder)
    assert not checks.crashed and checks.status == 0, checks.exception or checks.stderr
    assert "Mismatches" not in checks.stdout and "mismatch" not in checks.stdout.lower(), checks.stdout
    sanity = kafka_dump_log.run_cli(["--index-sanity-check", "--files", f"{index},{timeindex}"], folder)
    assert not sanity.crashed and sanity.status == 0
    assert sanity.stdout.count("passed sanity check") == 2, sanity.stdout


def _hashes(folder: Path) -> dict[str, bytes]:
    out = {}
    for p in sorted(folder.iterdir()):
        if p.suffix == ".log":
            out[p.name] = hashlib.sha256(p.read_bytes()).digest()
        elif p.suffix in (".index", ".timeindex"):
            width = 8 if p.suffix == ".index" else 12
            d = p.read_bytes()
            e = [d[i:i + width] for i in range(0, len(d) - width + 1, width)]
            while e and not any(e[-1]):   # the zero preallocation a broker adds on open
                e.pop()
            out[p.name] = hashlib.sha256(b"".join(e)).digest()
    return out


def _consume(bootstrap: str, topics: list[str]) -> dict[str, list[tuple[bytes | None, bytes | None, list]]]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 0})
    ends = {t: c.get_watermark_offsets(TopicPartition(t, 0), timeout=10) for t in topics}
    c.assign([TopicPartition(t, 0, ends[t][0]) for t in topics if ends[t][1] > ends[t][0]])
    got: dict[str, dict[int, tuple]] = {t: {} for t in topics}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(len(got[t]) < ends[t][1] - ends[t][0] for t in topics):
        for m in c.consume(500, timeout=1):
            if not m.error():
                got[m.topic()][m.offset()] = (m.key(), m.value(), m.headers() or [])
    c.close()
    return {t: [got[t][o] for o in sorted(got[t])] for t in topics}



@pytest.fixture(scope="module")
def lost(tmp_path_factory) -> dict:
    from segtools.cli.main import cli

    root = tmp_path_factory.mktemp("lost-out")
    lost_dir, report = root / "lost", root / "report.json"
    result = CliRunner().invoke(cli, ["compare", str(SNAPSHOT), "--no-spark", "--lost-out", str(lost_dir),
                                      "--report", str(report)])
    assert result.exit_code == 1, result.output
    rows = [json.loads(ln) for ln in (lost_dir / "lost.ndjson").read_text().splitlines()]
    reference = {p["topic"]: p["reference_broker"] for p in json.loads(report.read_text())["partitions"]}
    topics = sorted({r["topic"] for r in rows})
    return {"dir": lost_dir, "rows": rows, "topics": topics,
            "surviving": {t: SNAPSHOT / f"broker-{reference[t]}" / f"{t}-0" for t in topics}}


@pytest.fixture(scope="module")
def broker(salvaged, lost, tmp_path_factory):
    """One real broker holding the salvaged partition and the surviving replicas."""
    before = _hashes(salvaged["dir"])
    with broker_with({TOPIC: salvaged["dir"], **lost["surviving"]},
                     tmp_path_factory.mktemp("cluster")) as (cluster, log_dir, mark):
        yield {"cluster": cluster, "log_dir": log_dir, "mark": mark, "before": before,
               "bootstrap": cluster.bootstrap()}


def test_a_real_broker_recovers_the_rebuilt_dir_without_truncating_it(salvaged, broker):
    from confluent_kafka import Consumer, TopicPartition

    cluster = broker["cluster"]
    expected = _records(salvaged["dir"] / f"{NAME}.log")
    end = max(expected) + 1
    consumer = Consumer({"bootstrap.servers": broker["bootstrap"], "group.id": "segtools-salvage",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 0})
    cluster.wait_for(lambda: consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=5)[1] == end,
                     90, "the salvaged partition led with its whole log")
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    got: dict[int, tuple[bytes | None, bytes | None]] = {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not got or max(got) < max(expected)):
        for m in consumer.consume(500, timeout=1):
            if not m.error():
                got[m.offset()] = (m.key(), m.value())
    consumer.close()
    assert got == expected
    # nothing truncated or rewritten (indexes compared without the broker's zero preallocation)
    assert _hashes(broker["log_dir"] / f"{TOPIC}-0") == broker["before"]
    log4j = broker["log_dir"].parent / "kafka" / "broker-1.log"
    text = log4j.read_bytes()[broker["mark"]:].decode("utf-8", "replace")
    ours = [ln for ln in text.splitlines() if f"{TOPIC}-0" in ln]
    assert any("Recovering unflushed segment" in ln for ln in ours), "recovery did not run"
    bad = [ln for ln in ours if re.search(r"[Tt]runcat|Corruption|invalid|Deleting segment", ln)
           and "LeaderEpochCache" not in ln]
    assert bad == []


def test_replay_puts_every_lost_record_back_once(lost, broker):
    from segtools.cli.main import cli

    runner = CliRunner()
    rows, topics, lost_dir = lost["rows"], lost["topics"], lost["dir"]
    truth = json.loads((SAMPLE / "truth.json").read_text())
    expected = sorted((k.rsplit("-", 1)[0], x["value"]) for k, v in truth.items() if k.startswith("acks1-")
                      for x in v["lost"])
    assert sorted((r["topic"], r["value"]) for r in rows) == expected and len(expected) == 8
    assert [(r["topic"], r["offset"]) for r in rows] == sorted((r["topic"], r["offset"]) for r in rows)
    cluster, bootstrap = broker["cluster"], broker["bootstrap"]
    cluster.wait_for(lambda: all(v for v in _consume(bootstrap, topics).values()), 90, "the topics led")
    before = _consume(bootstrap, topics)
    assert all(r["value"].encode() not in [v for _k, v, _h in before[r["topic"]]] for r in rows)

    # the snapshot's records carry 2024 timestamps: past the default retention, the broker would
    # delete them once replayed, so replay holds them until the topics keep them
    held = runner.invoke(cli, ["replay", str(lost_dir), "--bootstrap-server", bootstrap, "--dry-run"])
    assert held.exit_code == 1 and held.output.count("(older_than_retention;") == 8, held.output
    from confluent_kafka.admin import ConfigResource, ResourceType

    for fut in cluster.admin().alter_configs(
            [ConfigResource(ResourceType.TOPIC, t, set_config={"retention.ms": "-1"}) for t in topics]).values():
        fut.result()
    cluster.wait_for(lambda: runner.invoke(cli, ["replay", str(lost_dir), "--bootstrap-server", bootstrap,
                                                 "--dry-run"]).exit_code == 0, 30, "retention.ms=-1 seen")
    dry = runner.invoke(cli, ["replay", str(lost_dir), "--bootstrap-server", bootstrap, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert dry.output.count("would produce acks1-") == 8
    assert _consume(bootstrap, topics) == before

    first = runner.invoke(cli, ["replay", str(lost_dir), "--bootstrap-server", bootstrap])
    assert first.exit_code == 0, first.output
    assert "0 already in the cluster, produced 8" in first.output
    after = _consume(bootstrap, topics)
    for t in topics:
        assert after[t][:len(before[t])] == before[t]
        added = after[t][len(before[t]):]
        assert [v.decode() for _k, v, _h in added] == [r["value"] for r in rows if r["topic"] == t]
        assert all(dict(h).get("segtools.replay.source") for _k, _v, h in added)

    second = runner.invoke(cli, ["replay", str(lost_dir), "--bootstrap-server", bootstrap])
    assert second.exit_code == 0, second.output
    assert "8 already in the cluster, produced 0" in second.output
    assert _consume(bootstrap, topics) == after
