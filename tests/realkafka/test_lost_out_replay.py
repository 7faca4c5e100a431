"""`compare --lost-out` + `segtools replay` on real Kafka data (issue 14, part 3).

Evidence: samples/generated/real-durability-matrix/snapshots/acks1-before-restart, log dirs a
real Kafka 4.3.1 cluster wrote (segtools simulate --engine kafka) just before the restart that
lost the acks=1 tail; truth.json holds what its producer saw lost (independent of compare).
A fresh real broker gets the surviving replicas (the report's reference broker) copied in
and recovers them: the cluster as the incident left it. Replay must put every lost record
back exactly once (a consumer reads the partition), and a second replay must add nothing.
Real Kafka is required: a missing Java/Maven/jar/confluent-kafka FAILS."""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner
from cluster_fixtures import REPO, require_real_kafka
from fresh_broker import broker_with

pytestmark = pytest.mark.realkafka

SAMPLE = REPO / "samples" / "generated" / "real-durability-matrix"
SNAPSHOT = SAMPLE / "snapshots" / "acks1-before-restart"


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


def test_replay_puts_every_lost_record_back_once(tmp_path):
    require_real_kafka()
    from segtools.cli.main import cli

    runner = CliRunner()
    lost_dir = tmp_path / "lost"
    report = tmp_path / "report.json"
    result = runner.invoke(cli, ["compare", str(SNAPSHOT), "--no-spark", "--lost-out", str(lost_dir),
                                 "--report", str(report)])
    assert result.exit_code == 1, result.output
    lost = [json.loads(ln) for ln in (lost_dir / "lost.ndjson").read_text().splitlines()]
    truth = json.loads((SAMPLE / "truth.json").read_text())
    expected = sorted((k.rsplit("-", 1)[0], x["value"]) for k, v in truth.items() if k.startswith("acks1-")
                      for x in v["lost"])
    assert sorted((r["topic"], r["value"]) for r in lost) == expected and len(expected) == 8
    assert [(r["topic"], r["offset"]) for r in lost] == sorted((r["topic"], r["offset"]) for r in lost)
    doc = json.loads(report.read_text())
    reference = {p["topic"]: p["reference_broker"] for p in doc["partitions"]}
    topics = sorted({r["topic"] for r in lost})
    surviving = {t: SNAPSHOT / f"broker-{reference[t]}" / f"{t}-0" for t in topics}

    with broker_with(surviving, tmp_path / "cluster") as (cluster, _broker, _mark):
        bootstrap = cluster.bootstrap()
        cluster.wait_for(lambda: all(v for v in _consume(bootstrap, topics).values()), 90, "the topics led")
        before = _consume(bootstrap, topics)
        assert all(r["value"].encode() not in [v for _k, v, _h in before[r["topic"]]] for r in lost)

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
            assert [v.decode() for _k, v, _h in added] == [r["value"] for r in lost if r["topic"] == t]
            assert all(dict(h).get("segtools.replay.source") for _k, _v, h in added)

        second = runner.invoke(cli, ["replay", str(lost_dir), "--bootstrap-server", bootstrap])
        assert second.exit_code == 0, second.output
        assert "8 already in the cluster, produced 0" in second.output
        assert _consume(bootstrap, topics) == after
