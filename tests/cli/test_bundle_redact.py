"""segtools collect --redact: a redacted bundle of a simulated incident gives compare, advise
and report the same verdicts and lost offsets as the originals, holds none of the payload
strings planted in keys, values and header values (also inside compressed batches), keeps
control batches, and keeps an invalid CRC invalid."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from segtools import schemas
from segtools.primitives.crc import crc32c
from segtools.simulate import run as simulate
from segtools.writer.batch_header import parse_batch_header

PLANTED = ("PLANTVAL", "PLANTKEY", "PLANTHDR")


def _scenario() -> dict[str, Any]:
    """S7 (unclean election loses acked records) on three topics of different codecs, with a
    transaction (COMMIT markers); every key, value and header value holds a planted string."""
    def produce(topic: str, n: int, tag: str, **kw: Any) -> dict[str, Any]:
        return {"produce": {"topic": topic, "partition": 0, "acks": "all",
                            "keys": [f"PLANTKEY-{tag}-{i}" for i in range(n)],
                            "values": [f"PLANTVAL-{tag}-{i}-" + "x" * 40 for i in range(n)],
                            "headers": {"trace": f"PLANTHDR-{tag}"}, **kw}}

    topics = [("plain", "none"), ("gz", "gzip"), ("zs", "zstd")]
    steps: list[dict[str, Any]] = []
    for name, _ in topics:
        steps.append(produce(name, 6, f"{name}a", batch_size=3))
    steps += [{"begin_transaction": {"producer": "tx"}},
              produce("plain", 2, "txn", producer="tx"),
              {"commit_transaction": {"producer": "tx"}},
              {"pause": {"broker": 3}}, {"pause": {"broker": 2}}, {"advance": {"ms": 20000}}]
    for name, _ in topics:
        steps.append(produce(name, 8, f"{name}lost", batch_size=4))
    steps += [{"advance": {"ms": 5000}}, {"crash": {"broker": 1}},
              {"resume": {"broker": 2}}, {"resume": {"broker": 3}}]
    for name, _ in topics:
        steps.append(produce(name, 4, f"{name}new", batch_size=2))
    steps.append({"advance": {"ms": 5000}})
    return {
        "name": "redact-planted", "seed": 26,
        "cluster": {"brokers": [1, 2, 3], "segment_index_bytes": 1024,
                    "replica_lag_time_max_ms": 10000, "metadata_log": True},
        "topics": [{"name": n, "replication_factor": 3, "min_insync_replicas": 1,
                    "unclean_leader_election": True, "assignment": {0: [1, 2, 3]},
                    "compression": c} for n, c in topics],
        "producers": [{"name": "tx", "transactional_id": "PLANTTXN-id"}],
        "steps": steps,
    }


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "segtools", *args], capture_output=True, text=True,
                          timeout=600, check=False)


def _brokers(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("broker-"))


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("incident") / "run"
    simulate(_scenario(), out)
    return out


@pytest.fixture(scope="module")
def bundle(incident: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "b"
    result = _run("collect", *map(str, _brokers(incident)), "--redact", "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def _grep(root: Path, needle: str) -> list[str]:
    """grep -r, the independent oracle for 'no payload left'."""
    found = subprocess.run(["grep", "-rla", needle, str(root)], capture_output=True, text=True,
                           check=False)
    return found.stdout.split()


def test_the_originals_hold_the_planted_strings_and_the_redacted_bundle_none(incident, bundle):
    for needle in PLANTED:
        assert _grep(incident, needle), needle          # the test plants what it looks for
        assert _grep(bundle, needle) == [], needle
    manifest = json.loads((bundle / "MANIFEST.json").read_text())
    # the shipped schema describes the redacted manifest (its optional branches included)
    jsonschema.Draft202012Validator(schemas.load("bundle-manifest")).validate(manifest)
    assert any(f.get("redacted") for f in manifest["files"])
    red = manifest["redaction"]
    assert red["redacted"] is True and red["batches_redacted"] > 0
    assert red["control_batches_kept"] > 0            # the COMMIT markers
    # nothing zero-filled: only batches whose keys got narrower pseudonyms to keep their size
    assert all("pseudonym" in n["note"] for n in red["notes"]), red["notes"]
    # sizes kept file by file; the manifest names the source's digest of each redacted file
    for f in manifest["files"]:
        src = Path(f["source"]) if os.path.isabs(f["source"]) else None
        if f.get("redacted"):
            assert f["source_sha256"] != f["sha256"]
        if src is not None and src.exists():
            assert src.stat().st_size == f["size"]
    verify = _run("verify", str(bundle))
    assert verify.returncode == 0, verify.stdout


def _headers(path: Path) -> list[Any]:
    data = path.read_bytes()
    out, pos = [], 0
    while pos < len(data):
        h = parse_batch_header(data, pos)
        out.append((h.position, h.size, h.base_offset, h.last_offset, h.max_timestamp, h.producer_id,
                    h.producer_epoch, h.base_sequence, h.partition_leader_epoch, h.is_control,
                    h.control_type, h.crc_valid))
        pos += h.size
    return out


def test_batch_headers_control_markers_and_crc_validity_are_kept(incident, bundle):
    logs = sorted(p for b in _brokers(incident) for p in b.rglob("*.log"))
    assert logs
    for src in logs:
        rel = src.relative_to(incident)
        copy = bundle / rel
        assert _headers(copy) == _headers(src), rel
        # indexes and every other file come over byte for byte
        for sib in src.parent.iterdir():
            if not sib.name.endswith(".log"):
                assert (bundle / sib.relative_to(incident)).read_bytes() == sib.read_bytes()


def test_the_dump_of_the_redacted_bundle_reads_every_record(bundle):
    log = next(p for p in bundle.rglob("gz-0/*.log") if p.stat().st_size)
    dump = _run("dump", "--print-data-log", str(log))
    assert dump.returncode == 0, dump.stderr
    assert "payload:" in dump.stdout or "key:" in dump.stdout or "offset:" in dump.stdout


def _compare(inputs: list[str], out: Path, acks: Path) -> tuple[int, dict[str, Any]]:
    result = _run("compare", *inputs, "--no-spark", "--acks", str(acks), "--report", str(out))
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(out.read_text())


def _answers(report: dict[str, Any]) -> list[Any]:
    return [(p["topic"], p["partition"], p["reference_broker"],
             [(r["broker"], r["status"], r["fork_offset"], r["log_end_offset"], r["high_watermark"],
               r["divergent"], sorted(f["code"] for f in r["findings"])) for r in p["replicas"]],
             [(x.get("offset"), x.get("broker")) for x in p["lost_records"]],
             sorted(f["code"] for f in p["findings"]))
            for p in report["partitions"]]


def test_compare_advise_and_report_answer_the_same_on_the_redacted_bundle(incident, bundle, tmp_path):
    acks = incident / "acks.jsonl"
    code_a, a = _compare([str(b) for b in _brokers(incident)], tmp_path / "a.json", acks)
    code_b, b = _compare([str(bundle)], tmp_path / "b.json", acks)
    assert code_a == code_b == 1
    assert _answers(a) == _answers(b)
    lost = {p["topic"]: len(p["lost_records"]) for p in a["partitions"]}
    assert all(lost.get(t) for t in ("plain", "gz", "zs")), lost
    # lost offsets match the simulator's ground truth, on the bundle too
    truth = json.loads((incident / "truth.json").read_text())
    for p in b["partitions"]:
        expected = sorted(x["offset"] for x in truth[f"{p['topic']}-{p['partition']}"]["lost"])
        assert sorted({x["offset"] for x in p["lost_records"]}) == expected, p["topic"]
    adv_a = _run("advise", *map(str, _brokers(incident)), "--acks", str(acks), "--json", "-")
    adv_b = _run("advise", str(bundle), "--acks", str(acks), "--json", "-")
    assert adv_a.returncode == adv_b.returncode, (adv_a.stderr, adv_b.stderr)
    assert _strip(json.loads(adv_a.stdout)) == _strip(json.loads(adv_b.stdout))
    # the HTML report of the bundle (rendered from its compare report) shows no payload
    page = tmp_path / "b.html"
    rep = _run("report", str(tmp_path / "b.json"), "--html", str(page))
    assert rep.returncode == 0, rep.stderr
    html = page.read_text()
    assert "COMMITTED_LOSS" in html or "lost" in html
    assert not [n for n in PLANTED if n in html]


def _strip(obj: Any) -> Any:
    """The JSON without paths (the bundle's differ from the originals') and times of the run."""
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items()
                if not any(s in k for s in ("path", "dir", "generated", "input", "created", "command",
                                                  "metadata_log"))}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def test_an_invalid_crc_stays_invalid_and_a_valid_one_valid(incident, tmp_path):
    broker = _brokers(incident)[0]
    work = tmp_path / "corrupt"
    shutil.copytree(broker, work / broker.name)
    log = next(p for p in (work / broker.name).rglob("gz-0/*.log") if p.stat().st_size)
    data = bytearray(log.read_bytes())
    first = parse_batch_header(data, 0)
    second = parse_batch_header(data, first.size)
    # flip a bit inside the second batch's compressed records: its CRC no longer matches
    data[first.size + second.size - 3] ^= 0x10
    (stored,) = struct.unpack_from(">I", data, first.size + 17)
    computed = crc32c(bytes(data[first.size + 21:first.size + second.size]))
    log.write_bytes(bytes(data))
    assert not parse_batch_header(data, first.size).crc_valid
    out = tmp_path / "b"
    result = _run("collect", str(work / broker.name), "--redact", "--out", str(out))
    assert result.returncode == 0, result.stderr
    red = (out / log.relative_to(work)).read_bytes()
    assert len(red) == len(data)
    assert parse_batch_header(red, 0).crc_valid
    assert not parse_batch_header(red, first.size).crc_valid
    # ... by exactly the same difference between stored and computed CRC as in the original
    (stored_red,) = struct.unpack_from(">I", red, first.size + 17)
    computed_red = crc32c(red[first.size + 21:first.size + second.size])
    assert stored_red ^ computed_red == stored ^ computed != 0
    notes = json.loads((out / "MANIFEST.json").read_text())["redaction"]["notes"]
    # the corrupt batch is named (its stream may still decode: then it is redacted as usual)
    corrupt = [n for n in notes if n["path"].endswith(log.name) and "gz-0" in n["path"]
               and n["base_offset"] == second.base_offset and "pseudonym" not in n["note"]]
    assert len(corrupt) <= 1


def test_lost_records_of_a_redacted_bundle_are_not_offered_for_replay(bundle, tmp_path):
    """Its keys and values are pseudonyms: --lost-out (replay's input) refuses it, exit 2."""
    out = tmp_path / "lost"
    refused = _run("compare", str(bundle), "--no-spark", "--lost-out", str(out))
    assert refused.returncode == 2 and "redacted bundle" in refused.stderr
    assert not out.exists()


def test_the_report_of_a_redacted_bundle_sends_lost_out_to_the_originals(incident, bundle, tmp_path):
    """The page's next commands must not offer `--lost-out` on the bundle (refused above): they
    name the original dirs instead and say why; a report of the originals keeps the command."""
    from segtools.forensics.report_html import next_commands

    acks = incident / "acks.jsonl"
    _, on_bundle = _compare([str(bundle)], tmp_path / "b.json", acks)
    commands = next_commands(on_bundle)
    lost_out = [(cmd, why) for cmd, why in commands if "--lost-out" in cmd]
    # the broker dirs to read are the originals; the bundle's metadata log (never redacted) may stay
    assert lost_out and all(str(bundle) not in cmd.split(" --metadata-log")[0] for cmd, _ in lost_out), commands
    assert "redacted bundle" in lost_out[0][1]
    assert not [cmd for cmd, _ in commands if cmd.startswith("segtools replay")]
    originals = [str(b) for b in _brokers(incident)]
    _, on_originals = _compare(originals, tmp_path / "a.json", acks)
    lost_out = [cmd for cmd, _ in next_commands(on_originals) if "--lost-out" in cmd]
    assert lost_out and all(o in lost_out[0] for o in originals)
