"""The JSON outputs added to segtools/schemas after compare/advise/collect/verify/replay (issue 26):
dump json/ndjson, quorum (audit, image, diff), tier, salvage's manifest and marker, _SUCCESS and
compare --lost-out's lost.ndjson. Each test runs the real command on real brokers' files
(tests/data/realdata) or on a simulated incident, validates every document or line, and shows
with one broken copy that the schema is not vacuous."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from segtools import schemas
from segtools.cli.main import cli

REALDATA = Path(__file__).resolve().parent / "data" / "realdata"
KRAFT = REALDATA / "kafka-3.6-kraft-flink-stack" / "logdir"
ZK25 = REALDATA / "kafka-2.5-zk-first-topic" / "final"
ZK20 = REALDATA / "kafka-2.0-zk-small" / "logdir"


def _check(doc: object, name: str) -> None:
    jsonschema.Draft202012Validator(schemas.load(name)).validate(doc)


def _rejects(doc: object, name: str) -> None:
    with pytest.raises(jsonschema.ValidationError):
        _check(doc, name)


def _json_docs(text: str) -> list[dict[str, Any]]:
    """dump --output json: documents one after another."""
    decoder, docs, pos = json.JSONDecoder(), [], 0
    text = text.rstrip()
    while pos < len(text):
        doc, end = decoder.raw_decode(text, pos)
        docs.append(doc)
        pos = end
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return docs


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of a real partition dir whose segment has one byte of a batch in its middle
    flipped (a CRC-invalid batch) and a torn tail: findings in dump, holes in salvage."""
    root = tmp_path_factory.mktemp("damaged")
    src = ZK25 / "first_topic-0"
    part = root / "first_topic-0"
    shutil.copytree(src, part)
    log = next(p for p in sorted(part.glob("*.log")) if p.stat().st_size > 400)
    data = bytearray(log.read_bytes())
    data[len(data) // 2] ^= 0xFF
    log.write_bytes(bytes(data) + b"\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00")
    return part


META = KRAFT / "__cluster_metadata-0"


# the KRaft case: every kind of file but the 1.2 MB metadata log itself (its snapshot is a
# records file of the same shape), so the validation stays a few seconds
@pytest.mark.parametrize("inputs", [[ZK25], [ZK20], [KRAFT / "__consumer_offsets-0", KRAFT / "connect-offsets-14",
                                                     META / "00000000000000007752-0000000001.checkpoint",
                                                     META / "00000000000000000000.index",
                                                     META / "00000000000000000000.timeindex",
                                                     META / "quorum-state", META / "partition.metadata",
                                                     META / "leader-epoch-checkpoint", KRAFT / "bootstrap.checkpoint",
                                                     KRAFT / "meta.properties",
                                                     KRAFT / "replication-offset-checkpoint"]],
                         ids=["zk25-broker", "zk20-broker", "kraft-files"])
def test_dump_json_and_ndjson_validate_on_real_brokers(inputs: list[Path]) -> None:
    args = [str(p) for p in inputs]
    res = CliRunner().invoke(cli, ["dump", *args, "--output", "json", "--print-data-log"])
    assert res.exit_code in (0, 1), res.output
    docs = _json_docs(res.stdout)
    assert docs
    for doc in docs:
        _check(doc, "dump-json")
    res = CliRunner().invoke(cli, ["dump", *args, "--output", "ndjson", "--print-data-log"])
    assert res.exit_code in (0, 1), res.output
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    assert sum(o["type"] == "file" for o in lines) == len(docs)
    # the schema's per-type branches are exercised (every kind of file in a log dir)
    assert {"file", "batch", "checkpoint_entry", "leader_epoch_entry"} <= {o["type"] for o in lines}
    if META in inputs[0].parents or any(p.parent == META for p in inputs):
        assert {"header", "quorum_state", "partition_metadata", "property", "index_entry",
                "time_index_entry", "record"} <= {o["type"] for o in lines}
    for line in lines:
        _check(line, "dump-ndjson")
    # not vacuous: a document or a file line without its version, a batch without its CRC check
    _rejects({k: v for k, v in docs[0].items() if k != "schema_version"}, "dump-json")
    head = next(o for o in lines if o["type"] == "file")
    _rejects({k: v for k, v in head.items() if k != "schema_version"}, "dump-ndjson")
    batch = next((o for o in lines if o["type"] == "batch"), None)
    if batch is not None:
        _rejects({k: v for k, v in batch.items() if k != "crc_valid"}, "dump-ndjson")


def test_dump_findings_validate(damaged: Path) -> None:
    """Real errors (a CRC-invalid batch, a torn tail) are findings in both shapes."""
    res = CliRunner().invoke(cli, ["dump", str(damaged), "--output", "json"])
    assert res.exit_code == 1, res.output
    docs = _json_docs(res.stdout)
    assert any(d["findings"] for d in docs)
    for doc in docs:
        _check(doc, "dump-json")
    res = CliRunner().invoke(cli, ["dump", str(damaged), "--output", "ndjson"])
    lines = [json.loads(line) for line in res.stdout.splitlines()]
    findings = [o for o in lines if o["type"] == "finding"]
    assert findings
    for line in lines:
        _check(line, "dump-ndjson")
    _rejects({**findings[0], "kind": "Not A Kind"}, "dump-ndjson")


def test_dump_line_outside_a_file_carries_the_version() -> None:
    """A note or finding about a path that never became a file document stands alone, with its
    own version (the sinks are driven directly: which paths do that depends on the walk)."""
    import io

    from segtools.dump.json_out import JsonSink, NdjsonSink

    for sink_class, name in ((NdjsonSink, "dump-ndjson"), (JsonSink, "dump-ndjson")):
        out = io.StringIO()
        sink = sink_class(out, io.StringIO())
        sink.note("segtools: skipped x: not a Kafka file", {"path": "x"})
        sink.finding("unusable_input", {"problem": True, "message": "cannot read y"})
        lines = [json.loads(line) for line in out.getvalue().splitlines()]
        assert [o["type"] for o in lines] == ["note", "finding"]
        for line in lines:
            _check(line, name)
            _rejects({k: v for k, v in line.items() if k != "schema_version"}, name)


def test_quorum_outputs_validate_on_a_real_controller() -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["quorum", str(KRAFT), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    _check(doc, "quorum")
    _rejects({**doc, "committed": {"reason": "x"}}, "quorum")
    img = runner.invoke(cli, ["quorum", str(KRAFT), "--image-at", "end"])
    assert img.exit_code == 0, img.output
    doc = json.loads(img.stdout)
    _check(doc, "quorum-image")
    # the real snapshot's entities: 1 broker, 63 topics (the image Kafka wrote)
    assert len(doc["entities"]["topic"]) == 63
    _rejects({**doc, "entities": {"topic": [{"name": "no id"}]}}, "quorum-image")
    diff = runner.invoke(cli, ["quorum", str(KRAFT), "--image-at", "end", "--diff-from", "7752"])
    assert diff.exit_code == 0, diff.output
    doc = json.loads(diff.stdout)
    assert doc["changes"]
    _check(doc, "quorum-diff")
    _rejects({**doc, "changes": [{"kind": "broker"}]}, "quorum-diff")


def test_tier_json_validates(tmp_path: Path) -> None:
    from tests.tier.test_tier_audit import broker_dir, start, update

    md = [start(0, 0, 9, {0: 0}), update(0, 1), start(1, 10, 19, {0: 0}),            # never finished
          start(2, 20, 24, {0: 0}), update(2, 1), update(2, 2), update(0, 0)]       # illegal
    d = broker_dir(tmp_path, md, local_start=25, log_end=30, epochs={0: 0})
    res = CliRunner().invoke(cli, ["tier", str(d), "--json"])
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    assert {f["kind"] for f in doc["findings"]} == {"coverage_gap", "dangling_started", "illegal_transition",
                                                     "unfinished_delete"}
    _check(doc, "tier")
    seg = {**doc["segments"][0], "state": "FINISHED"}     # not one of Kafka's state names
    _rejects({**doc, "segments": [seg]}, "tier")


def test_salvage_manifest_marker_and_success_validate(damaged: Path, tmp_path: Path) -> None:
    out = tmp_path / "salvaged"
    res = CliRunner().invoke(cli, ["salvage", str(damaged), "--out", str(out)])
    assert res.exit_code in (0, 1), res.output
    manifest = json.loads((out / "manifest.json").read_text())
    _check(manifest, "salvage-manifest")
    assert any(s["dropped"] for s in manifest["segments"])
    marker = json.loads((out / damaged.name / "segtools-salvage.json").read_text())
    _check(marker, "salvage-marker")
    assert any(s["holes"] for s in marker["segments"].values())
    success = json.loads((out / "_SUCCESS").read_text())
    _check(success, "success")
    _rejects({k: v for k, v in manifest.items() if k != "kafka_recovery" and k != "segments"}, "salvage-manifest")
    _rejects({**success, "command": "segtools something"}, "success")
    name, seg = next(iter(marker["segments"].items()))                 # a hole without its extent
    _rejects({**marker, "segments": {name: {**seg, "holes": [{"reason": "crc"}]}}}, "salvage-marker")
    _rejects({k: v for k, v in success.items() if k != "dropped_ranges"}, "success")


def test_export_and_collect_success_validate(tmp_path: Path) -> None:
    out = tmp_path / "parquet"
    res = CliRunner().invoke(cli, ["export", str(ZK20), "--out", str(out), "-q"])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "_SUCCESS").read_text())
    _check(doc, "success")
    # the rows are the records kafka-python reads from the same segments, one Parquet file each
    from kafka.record.memory_records import MemoryRecords

    segments = sorted(ZK20.glob("*/*.log"))
    records = 0
    for seg in segments:
        batches = MemoryRecords(seg.read_bytes())
        while (batch := batches.next_batch()) is not None:
            records += sum(1 for _ in batch)
    assert doc["rows"] == records > 0 and len(doc["parquet_files"]) == doc["files"] == len(segments)
    _rejects({k: v for k, v in doc.items() if k != "parquet_files"}, "success")
    bundle = tmp_path / "bundle"
    res = CliRunner().invoke(cli, ["collect", str(ZK20), "--out", str(bundle)])
    assert res.exit_code == 0, res.output
    doc = json.loads((bundle / "_SUCCESS").read_text())
    _check(doc, "success")
    _rejects({**doc, "started": "yesterday"}, "success")


def test_lost_out_lines_and_success_validate(tmp_path: Path) -> None:
    from tests.forensics.test_acks_formats import DIVERGED
    from tests.forensics.test_answers import _simulate

    run = _simulate(tmp_path, DIVERGED, "div")
    lost = tmp_path / "lost"
    res = CliRunner().invoke(cli, ["compare", str(run / "broker-1"), str(run / "broker-2"), "--no-spark",
                                   "--lost-out", str(lost)])
    assert res.exit_code == 1, res.output
    lines = [json.loads(line) for line in (lost / "lost.ndjson").read_text().splitlines()]
    truth = json.loads((run / "truth.json").read_text())["t-0"]
    assert {(x["offset"], x["leader_epoch"]) for x in lines} == {(x["offset"], x["leader_epoch"])
                                                                 for x in truth["lost"]}
    for line in lines:
        _check(line, "lost-record")
    success = json.loads((lost / "_SUCCESS").read_text())
    _check(success, "success")
    assert success["records"] == len(lines)
    _rejects({**lines[0], "txn_state": "maybe"}, "lost-record")
    _rejects({k: v for k, v in success.items() if k != "files"}, "success")


SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "generated"


def test_simulate_truth_and_acks_validate(tmp_path: Path) -> None:
    """A fresh simulation, and every committed sample (test_simulate_samples proves they are what
    simulating gives today): each truth.json entry and each acks.jsonl line."""
    from tests.forensics.test_acks_formats import DIVERGED
    from tests.forensics.test_answers import _simulate

    runs = [_simulate(tmp_path, DIVERGED, "div"), *sorted(p for p in SAMPLES.iterdir() if p.is_dir())]
    causes = set()
    for run in runs:
        truth = json.loads((run / "truth.json").read_text())
        _check(truth, "truth")
        causes |= {x["cause"] for part in truth.values() for x in part["lost"]}
        for line in (run / "acks.jsonl").read_text().splitlines():
            _check(json.loads(line), "acks-line")
    assert {"UNCLEAN_ELECTION", "UNCOMMITTED", "POWER_LOSS"} <= causes   # the enum is exercised
    truth = json.loads((runs[0] / "truth.json").read_text())
    part = next(iter(truth.values()))
    _rejects({"t-0": {k: v for k, v in part.items() if k != "schema_version"}}, "truth")
    _rejects({"t-0": {**part, "lost": [{**part["lost"][0], "cause": "BAD_LUCK"}]}}, "truth")
    line = json.loads((runs[0] / "acks.jsonl").read_text().splitlines()[0])
    _rejects({**line, "acks": "-1"}, "acks-line")


def test_acks_lines_with_schema_version_are_still_read_by_acks() -> None:
    """--acks reads acks.jsonl: the added key is ignored, every acks=all answer is still one."""
    from segtools.forensics.loss import AckIndex

    path = SAMPLES / "S0-healthy-baseline" / "acks.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(x["schema_version"] == 1 for x in lines)
    index = AckIndex.load(str(path))
    for x in lines:
        assert index.acked(x["topic"], x["partition"], x["offset"], x["leader_epoch"]) is x["ok"]
    assert sum(len(index.committed_for_partition(*tp)) for tp in index.partitions()) == \
        sum(1 for x in lines if x["ok"] and x["acks"] == "all")


def test_docs_prints_each_shipped_schema_and_lists_every_output() -> None:
    runner = CliRunner()
    listing = runner.invoke(cli, ["docs", "--schema", "list"])
    assert listing.exit_code == 0
    assert [line.split(None, 1) for line in listing.output.splitlines()] == \
        [[schema, output] for output, schema in schemas.OUTPUTS.items()]
    for name in schemas.NAMES:
        shown = runner.invoke(cli, ["docs", "--schema", name])
        assert shown.exit_code == 0 and json.loads(shown.output) == schemas.load(name)
    unknown = runner.invoke(cli, ["docs", "--schema", "report"])
    assert unknown.exit_code == 2 and "compare-report" in unknown.output
