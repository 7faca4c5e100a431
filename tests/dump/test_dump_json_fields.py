"""--output json/ndjson: topic and partition on every object, binary data as base64 objects,
decoded internal-topic payloads as nested JSON (issue 9)."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

from dump_builders import SEG, SPEC_V2_BATCH, run

REALDATA = Path(__file__).resolve().parents[1] / "data" / "realdata"
KRAFT = REALDATA / "kafka-3.6-kraft-flink-stack" / "logdir"


def _ndjson(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines()]


def _json_docs(text: str) -> list[dict]:
    decoder, docs, pos = json.JSONDecoder(), [], 0
    while pos < len(text.rstrip()):
        doc, end = decoder.raw_decode(text, pos)
        docs.append(doc)
        pos = end + 1
    return docs


def _broker(tmp_path: Path) -> Path:
    broker = tmp_path / "broker"
    part = broker / "orders-3"
    part.mkdir(parents=True)
    (part / f"{SEG}.log").write_bytes(SPEC_V2_BATCH + b"\x01\x02")  # + a finding
    (part / f"{SEG}.timeindex").write_bytes(bytes.fromhex("0000018bcfe56800 00000000"))
    (part / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    (broker / "replication-offset-checkpoint").write_text("0\n1\norders 3 1\n")
    return broker


def test_every_ndjson_object_carries_topic_and_partition(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    result = run("--output", "ndjson", "--print-data-log", broker)
    objs = _ndjson(result.stdout)
    types = {o["type"] for o in objs}
    assert {"file", "header", "batch", "record", "time_index_entry", "leader_epoch_entry",
            "checkpoint_entry", "finding"} <= types
    for o in objs:
        assert "topic" in o and "partition" in o, o
        if o["file"].endswith("replication-offset-checkpoint"):
            assert (o["topic"], o["partition"]) == (None, None), o
        else:
            assert (o["topic"], o["partition"]) == ("orders", 3), o
    assert result.exit_code == 1


def test_json_documents_carry_topic_and_partition(tmp_path: Path) -> None:
    broker = _broker(tmp_path)
    docs = _json_docs(run("--output", "json", broker).stdout)
    assert [(Path(d["file"]).name, d["topic"], d["partition"]) for d in docs] == [
        ("replication-offset-checkpoint", None, None), ("leader-epoch-checkpoint", "orders", 3),
        (f"{SEG}.log", "orders", 3), (f"{SEG}.timeindex", "orders", 3)]


def test_binary_keys_values_and_headers_are_base64_objects(tmp_path: Path) -> None:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, timestamp=5, key=b"\xff\xfeK", value="héllo".encode(),
                   headers=[("trace", b"\x80\x81"), ("name", b"plain")])
    builder.append(1, timestamp=6, key=None, value=b"\xc3\x28", headers=[])
    part = tmp_path / "bin-0"
    part.mkdir()
    log = part / f"{SEG}.log"
    log.write_bytes(bytes(builder.build()))
    for output in ("ndjson", "json"):
        result = run("--output", output, "--print-data-log", log)
        if output == "ndjson":
            records = [o for o in _ndjson(result.stdout) if o["type"] == "record"]
        else:
            records = _json_docs(result.stdout)[0]["batches"][0]["records"]
        first, second = records
        assert first["key"] == {"base64": base64.b64encode(b"\xff\xfeK").decode()}
        assert first["payload"] == "héllo"
        assert first["headers"] == [
            {"key": "trace", "value": {"base64": base64.b64encode(b"\x80\x81").decode()}},
            {"key": "name", "value": "plain"}]
        assert "key" not in second and second["headers"] == []
        assert second["payload"] == {"base64": base64.b64encode(b"\xc3\x28").decode()}
    # the text output still prints what Kafka's StringDecoder prints
    assert "payload: \ufffd(" in run("--print-data-log", log).stdout


def test_offsets_decoder_payloads_are_nested_objects() -> None:
    log = KRAFT / "__consumer_offsets-46" / f"{SEG}.log"
    records = [o for o in _ndjson(run("--output", "ndjson", "--offsets-decoder", log).stdout)
               if o["type"] == "record"]
    assert records
    for r in records:
        assert isinstance(r["key"], dict) and r["key"]["type"] in ("0", "1", "2"), r
        assert isinstance(r["payload"], (dict, str)), r
    commits = [r for r in records if r["key"]["type"] == "1" and isinstance(r["payload"], dict)]
    assert commits and all(isinstance(r["payload"]["data"]["offset"], int) for r in commits)
    assert all(r["key"]["data"]["group"] for r in commits)


def test_cluster_metadata_payloads_are_nested_objects() -> None:
    log = KRAFT / "__cluster_metadata-0" / f"{SEG}.log"
    # the first 60 KB hold the bootstrap and broker registration records
    result = run("--output", "ndjson", "--cluster-metadata-decoder", "--max-bytes", "60000", log)
    payloads = [o["payload"] for o in _ndjson(result.stdout)
                if o["type"] == "record" and "payload" in o]
    assert payloads and all(isinstance(p, dict) and "type" in p and "data" in p
                            for p in payloads)
    assert any(p["type"] == "REGISTER_BROKER_RECORD" for p in payloads)


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def test_transaction_log_payloads_are_nested_objects(tmp_path: Path) -> None:
    from dump_builders import v2_batch

    ts = 1700000000000
    key = struct.pack(">h", 0) + _string("txn-1")
    value = (struct.pack(">hqhib", 0, 5000, 3, 60000, 1)              # Ongoing
             + struct.pack(">i", 1) + _string("orders") + struct.pack(">ii", 1, 2)
             + struct.pack(">qq", ts, ts - 10))
    part = tmp_path / "__transaction_state-7"
    part.mkdir()
    log = part / f"{SEG}.log"
    log.write_bytes(v2_batch([(key, value, ts), (key, None, ts)]))
    records = [o for o in _ndjson(run("--output", "ndjson", "--transaction-log-decoder",
                                      log).stdout) if o["type"] == "record"]
    assert [r["key"]["transactionalId"] for r in records] == ["txn-1", "txn-1"]
    payload = records[0]["payload"]
    assert (payload["producerId"], payload["producerEpoch"],
            payload["transactionTimeoutMs"]) == (5000, 3, 60000)
    assert payload["transactionPartitions"] == [{"topic": "orders", "partitionIds": [2]}]
    assert records[1]["payload"] == "<DELETE>"
    assert (records[0]["topic"], records[0]["partition"]) == ("__transaction_state", 7)
