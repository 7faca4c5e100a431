"""segtools collect / verify: a bundle of a simulated incident answers compare exactly as the
originals do, every tampering is named, and the inputs are never written."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "generated" / "S3-kip101-divergent-logs"


def _tree_digest(root: Path) -> dict[str, tuple[str, int]]:
    """Every file below root: (sha256, mtime_ns): what 'nothing was written' means."""
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return out


@pytest.fixture
def incident(tmp_path: Path) -> Path:
    """A writable copy of a simulated incident (a folder of broker dirs + acks/truth)."""
    dest = tmp_path / "incident"
    shutil.copytree(SAMPLE, dest)
    return dest


def _brokers(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("broker-"))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "segtools", *args], capture_output=True, text=True,
                          timeout=600, check=False)


def test_collect_copies_every_file_byte_for_byte_and_writes_nothing_into_the_inputs(incident, tmp_path):
    before = _tree_digest(incident)
    bundle = tmp_path / "bundle"
    result = _run("collect", *map(str, _brokers(incident)), "--out", str(bundle))
    assert result.returncode == 0, result.stderr
    assert _tree_digest(incident) == before
    manifest = json.loads((bundle / "MANIFEST.json").read_text())
    assert manifest["schema_version"] == 1 and manifest["kind"] == "segtools-evidence-bundle"
    listed = {f["path"]: f for f in manifest["files"]}
    # every file of every broker dir is in the bundle under broker-<node.id>, same bytes
    for broker in _brokers(incident):
        for dirpath, _dirs, names in os.walk(broker):
            for name in names:
                src = Path(dirpath) / name
                rel = f"{broker.name}/{src.relative_to(broker).as_posix()}"
                assert rel in listed, rel
                data = src.read_bytes()
                assert (bundle / rel).read_bytes() == data
                assert listed[rel]["sha256"] == hashlib.sha256(data).hexdigest()
                assert (bundle / rel).stat().st_mtime_ns == src.stat().st_mtime_ns
    # SHA256SUMS checks with coreutils, independently of segtools
    check = subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=bundle,
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert (bundle / "_SUCCESS").is_file() and not (bundle / "_PARTIAL").exists()


def test_compare_on_the_bundle_equals_compare_on_the_originals(incident, tmp_path):
    bundle = tmp_path / "bundle"
    assert _run("collect", *map(str, _brokers(incident)), "--out", str(bundle)).returncode == 0
    acks = incident / "acks.jsonl"
    extra = ["--acks", str(acks)] if acks.is_file() else []
    a = _run("compare", *map(str, _brokers(incident)), "--no-spark", "--report", str(tmp_path / "a.json"), *extra)
    b = _run("compare", str(bundle), "--no-spark", "--report", str(tmp_path / "b.json"), *extra)
    assert a.returncode == b.returncode, (a.stderr, b.stderr)
    ra = json.loads((tmp_path / "a.json").read_text())
    rb = json.loads((tmp_path / "b.json").read_text())

    def answers(report: dict) -> list:
        # everything but the paths (the bundle's differ from the originals')
        return [(p["topic"], p["partition"], p["reference_broker"],
                 [(r["broker"], r["status"], r["fork_offset"], r["log_end_offset"], r["high_watermark"],
                   r["divergent"], sorted(f["code"] for f in r["findings"])) for r in p["replicas"]],
                 p["lost_records"], sorted(f["code"] for f in p["findings"]))
                for p in report["partitions"]]

    assert answers(ra) == answers(rb)
    assert any(p["lost_records"] for p in ra["partitions"])
    assert a.returncode == 1   # this sample loses records: the bundle must keep the bad news


def test_verify_names_every_changed_missing_and_extra_file(incident, tmp_path):
    bundle = tmp_path / "bundle"
    assert _run("collect", *map(str, _brokers(incident)), "--out", str(bundle)).returncode == 0
    ok = CliRunner().invoke(cli, ["verify", str(bundle)])
    assert ok.exit_code == 0, ok.output
    manifest = json.loads((bundle / "MANIFEST.json").read_text())
    logs = [f["path"] for f in manifest["files"] if f["path"].endswith(".log")]
    changed, missing = logs[0], logs[1]
    target = bundle / changed
    os.chmod(target, 0o644)
    data = bytearray(target.read_bytes())
    data[-1] ^= 0x01                     # one bit in the last record
    target.write_bytes(bytes(data))
    os.chmod(bundle / missing, 0o644)
    (bundle / missing).unlink()
    (bundle / "broker-1" / "planted.log").write_bytes(b"x")
    bad = CliRunner().invoke(cli, ["verify", str(bundle), "--output", "json"])
    assert bad.exit_code == 1
    problems = {(p["kind"], p["path"]) for p in json.loads(bad.output)["problems"]}
    assert problems == {("changed", changed), ("missing", missing), ("extra", "broker-1/planted.log")}


def test_not_a_bundle_and_unsafe_outputs_are_usage_errors(incident, tmp_path):
    brokers = _brokers(incident)
    assert CliRunner().invoke(cli, ["verify", str(incident)]).exit_code == 2
    inside = _run("collect", str(brokers[0]), "--out", str(brokers[0] / "bundle"))
    assert inside.returncode == 2 and "inside the input" in inside.stderr
    assert not (brokers[0] / "bundle").exists()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("keep")
    full = _run("collect", str(brokers[0]), "--out", str(tmp_path / "full"))
    assert full.returncode == 2 and (tmp_path / "full" / "x").read_text() == "keep"
    nothing = _run("collect", str(tmp_path / "full"), "--out", str(tmp_path / "b2"))
    assert nothing.returncode == 2 and "not a Kafka log dir" in nothing.stderr


def test_topic_selection_keeps_the_metadata_log_and_skipped_inputs_are_named(incident, tmp_path):
    broker = _brokers(incident)[0]
    partitions = sorted(p.name for p in broker.iterdir() if p.is_dir())
    topic = partitions[0].rsplit("-", 1)[0]
    (broker / "link.log").symlink_to(broker / "meta.properties")
    bundle = tmp_path / "bundle"
    result = _run("collect", str(broker), "--topic", topic, "--out", str(bundle))
    assert result.returncode == 0, result.stderr
    assert "skipped" in result.stderr and "link.log" in result.stderr
    got = sorted(p.name for p in (bundle / broker.name).iterdir() if p.is_dir())
    expected = sorted(n for n in partitions
                      if n.rsplit("-", 1)[0] in (topic, "__cluster_metadata"))
    assert got == expected
    manifest = json.loads((bundle / "MANIFEST.json").read_text())
    assert [s["path"].endswith("link.log") for s in manifest["skipped"]] == [True]


def test_a_file_that_grows_while_copied_is_flagged(incident, tmp_path, monkeypatch):
    """A broker still writing: the copy records what was read and says the source moved."""
    import segtools.bundle as bundle_mod

    broker = _brokers(incident)[0]
    victim = next(broker.rglob("*.log"))
    real_read = os.read
    original = victim.read_bytes()

    def read_then_append(fd, n):
        chunk = real_read(fd, n)
        if chunk and os.fstat(fd).st_ino == victim.stat().st_ino:
            with open(victim, "ab") as fh:   # the broker appends after every read
                fh.write(b"\0" * 3)
        return chunk

    monkeypatch.setattr(bundle_mod.os, "read", read_then_append)
    result = bundle_mod.collect([broker], tmp_path / "bundle")
    flagged = [f.path for f in result.changed]
    assert flagged == [f"{broker.name}/{victim.relative_to(broker).as_posix()}"]
    manifest = json.loads((tmp_path / "bundle" / "MANIFEST.json").read_text())
    assert [f["path"] for f in manifest["files"] if f["changed_while_copied"]] == flagged
    # the copy is the file as it was when the copy began, bounded, not chased forever
    assert (tmp_path / "bundle" / flagged[0]).read_bytes() == original
