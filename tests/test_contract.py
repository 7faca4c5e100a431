"""CONTRACT.md section 1 across every command: inputs are evidence (nothing inside an input
directory is changed, created or deleted) and bad input gets exit code 1 or 2, never a
Python traceback."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli


def _fingerprint(root: Path) -> dict[str, tuple[str, int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.stat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            out[str(p.relative_to(root))] = (digest, st.st_mtime_ns, st.st_mode)
    return out


@pytest.fixture
def evidence(realdata, tmp_path) -> Path:
    """A writable copy of two real broker dirs, as an SRE would have on a laptop."""
    root = tmp_path / "evidence"
    shutil.copytree(realdata / "kafka-2.5-zk-first-topic" / "final", root / "broker-0")
    shutil.copytree(realdata / "kafka-2.0-zk-small" / "logdir", root / "broker-1")
    for dirpath, dirnames, filenames in os.walk(root):   # copies of read-only files: make writable
        for name in dirnames + filenames:
            os.chmod(Path(dirpath) / name, 0o755 if name in dirnames else 0o644)
    return root


def test_no_command_changes_its_inputs(evidence, tmp_path):
    before = _fingerprint(evidence)
    runner = CliRunner()
    b0 = evidence / "broker-0"
    seg = b0 / "__consumer_offsets-12" / "00000000000000000000.log"   # has .index and .timeindex
    commands = [
        ["dump", str(b0)],
        ["dump", "--files", f"{seg},{seg.with_suffix('.index')},{seg.with_suffix('.timeindex')}",
         "--deep-iteration", "--print-data-log", "--index-sanity-check"],
        ["dump", "--files", str(seg.with_suffix(".index")), "--verify-index-only"],
        ["dump", str(b0 / "__consumer_offsets-12"), "--offsets-decoder", "--output", "ndjson"],
        ["dump", str(b0 / "first_topic-0"), "--output", "json"],
        ["export", str(evidence), "--by-broker", "--out", str(tmp_path / "parquet")],
        ["export", str(b0), "--level", "batches", "--out", str(tmp_path / "parquet-b")],
        ["compare", str(b0), str(evidence / "broker-1"), "--no-spark",
         "--report", str(tmp_path / "report.json")],
    ]
    for args in commands:
        result = runner.invoke(cli, args)
        assert result.exit_code in (0, 1), (args, result.output)
        assert "Traceback" not in result.output
    import segtools

    for batch in segtools.read_batches(b0):
        list(batch.records())
    segtools.scan_batches(b0)
    segtools.read_records(evidence / "broker-1")
    assert _fingerprint(evidence) == before


def _hostile_dir(root: Path, seed: int) -> Path:
    rng = random.Random(seed)
    pdir = root / f"victim-{seed}" / "orders-0"
    pdir.mkdir(parents=True)
    noise = lambda n: bytes(rng.getrandbits(8) for _ in range(n))  # noqa: E731
    base = "00000000000000000000"
    (pdir / f"{base}.log").write_bytes(noise(rng.randint(0, 3000)))
    (pdir / f"{base}.index").write_bytes(noise(rng.choice([0, 7, 8, 64, 4096])))
    (pdir / f"{base}.timeindex").write_bytes(noise(rng.choice([0, 11, 12, 120])))
    (pdir / f"{base}.txnindex").write_bytes(noise(rng.choice([0, 33, 34, 68])))
    (pdir / f"{base}.snapshot").write_bytes(noise(rng.randint(0, 200)))
    (pdir / "leader-epoch-checkpoint").write_bytes(noise(rng.randint(0, 40)))
    (pdir / "partition.metadata").write_bytes(noise(rng.randint(0, 60)))
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint", "meta.properties"):
        (pdir.parent / name).write_bytes(noise(rng.randint(0, 60)))
    return pdir.parent


@pytest.mark.parametrize("seed", range(12))
def test_hostile_files_never_give_a_traceback(tmp_path, seed):
    log_dir = _hostile_dir(tmp_path, seed)
    runner = CliRunner()
    for args in (
        ["dump", str(log_dir), "--deep-iteration", "--print-data-log"],
        ["dump", str(log_dir), "--output", "json"],
        ["export", str(log_dir), "--out", str(tmp_path / f"out-{seed}")],
        ["compare", str(log_dir), "--no-spark"],
    ):
        result = runner.invoke(cli, args)
        assert result.exit_code in (0, 1, 2), (args, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            args, repr(result.exception), result.output)
        assert "Traceback" not in result.output


def test_missing_path_is_exit_2_for_every_command(tmp_path):
    missing = str(tmp_path / "nope")
    runner = CliRunner()
    for args in (["dump", missing], ["export", missing, "--out", str(tmp_path / "o")],
                 ["compare", missing], ["simulate", missing, "--out", str(tmp_path / "s")]):
        result = runner.invoke(cli, args)
        assert result.exit_code == 2, (args, result.output)
