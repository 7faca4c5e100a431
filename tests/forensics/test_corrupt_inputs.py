"""Hostile and damaged replica dirs: findings name file, position and offset; only
SegtoolsError escapes; input files are never modified."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
from pathlib import Path

import pytest

import segtools
from segtools.errors import SegtoolsError

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "generated" / "S0-healthy-baseline"


def _batch_positions(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos + 12 <= len(data):
        out.append(pos)
        pos += int.from_bytes(data[pos + 8:pos + 12], "big") + 12
    return out


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "cluster"
    shutil.copytree(SAMPLE, dst)
    for p in dst.rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return dst


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


def corrupt_length(seg: Path, index: int) -> int:
    data = bytearray(seg.read_bytes())
    pos = _batch_positions(bytes(data))[index]
    data[pos + 8:pos + 12] = (5).to_bytes(4, "big")          # batchLength < 14 - 12: impossible
    seg.write_bytes(bytes(data))
    return pos


def test_corrupt_length_mid_log_and_torn_tail(tmp_path):
    root = _copy(tmp_path)
    seg2 = root / "broker-2" / "orders-0" / "00000000000000000000.log"
    (root / "broker-2" / ".kafka_cleanshutdown").write_text("")
    pos = corrupt_length(seg2, 3)
    seg3 = root / "broker-3" / "orders-0" / "00000000000000000000.log"
    with open(seg3, "ab") as fh:
        fh.write(b"\x00\x00\x00\x00\x00\x00\x00\x09garbage-bytes")   # half a batch header
    (root / "broker-3" / ".kafka_cleanshutdown").unlink(missing_ok=True)
    before = _digest(root)
    report = segtools.compare([str(root)], find_metadata_log=False)
    assert _digest(root) == before                                   # evidence untouched
    reps = {r.broker: r for p in report.partitions for r in p.verdict.replicas}
    assert reps[2].status == "CRC_INVALID"
    f = next(f for f in reps[2].findings if f.code == "CRC_INVALID")
    assert "00000000000000000000.log" in f.detail and f"position {pos}" in f.detail
    torn = next(f for f in reps[3].findings if f.code == "TORN_TAIL")
    assert torn.position == seg3.stat().st_size - 21 and reps[3].status == "CONSISTENT"
    assert report.exit_code == 1


@pytest.mark.parametrize("seed", range(12))
def test_random_damage_gives_a_report_or_a_segtools_error(tmp_path, seed):
    rng = random.Random(seed)
    root = _copy(tmp_path)
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != "truth.json")
    for _ in range(3):
        victim = rng.choice(files)
        data = bytearray(victim.read_bytes())
        action = rng.choice(["flip", "truncate", "garbage"])
        if action == "flip" and data:
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif action == "truncate":
            del data[rng.randrange(len(data) + 1):]
        else:
            data[rng.randrange(len(data) + 1):] = os.urandom(rng.randint(1, 64))
        victim.write_bytes(bytes(data))
    try:
        report = segtools.compare([str(root)], find_metadata_log=False)
    except SegtoolsError:
        return
    assert report.exit_code in (0, 1)
    assert report.to_json()["partitions"]
