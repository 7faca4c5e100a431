"""compare on Spark: both runners agree on odd inputs; Ctrl-C is one line, exit 130, and leaves
no JVM behind (issues 9 and 16)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import segtools

pytestmark = pytest.mark.spark

GENERATED = Path(__file__).resolve().parents[2] / "samples" / "generated"


def test_same_dir_twice_both_runners_agree(spark):
    sample = GENERATED / "S7-simple-unclean-election"
    dirs = [str(sample / "broker-1"), str(sample / "broker-2"), str(sample / "broker-1")]
    once = segtools.compare(dirs[:2], find_metadata_log=False).to_json()
    assert segtools.compare(dirs, find_metadata_log=False).to_json() == once
    assert segtools.compare(dirs, find_metadata_log=False, engine="spark", spark=spark).to_json() == once


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _is_java(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"java" in fh.read().split(b"\0")[0]
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_ctrl_c_on_spark_is_one_line_exit_130_and_no_jvm_left(tmp_path):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "segtools", "compare", str(GENERATED / "S0-healthy-baseline"),
                             "--spark", "--master", "local[1]"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    jvms: set[int] = set()
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not jvms and proc.poll() is None:
            jvms = {p for p in _descendants(proc.pid) if _is_java(p)}
            time.sleep(0.2)
        assert jvms, "Spark's JVM never started"
        time.sleep(3)                                   # inside the Spark start-up or the job
        os.killpg(proc.pid, signal.SIGINT)              # what a terminal's Ctrl-C does
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    text = err.decode("utf-8", "replace")
    assert proc.returncode == 130, text
    assert "Traceback" not in text and "py4j" not in text.lower(), text
    assert text.rstrip().splitlines()[-1] == "interrupted", text
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(p) for p in jvms):
        time.sleep(0.2)
    left = [p for p in jvms if _alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"JVM still running after Ctrl-C: {left}"
