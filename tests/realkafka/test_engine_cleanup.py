"""Every JVM of a `simulate --engine kafka` run is stopped when the run is interrupted half
way: Ctrl-C (SIGINT), SIGTERM, and even SIGKILL of segtools itself (PR_SET_PDEATHSIG)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from cluster_fixtures import REPO, SCENARIOS, java_processes_of, require_real_kafka

pytestmark = pytest.mark.realkafka


# SIGTERM goes through the same handler as SIGINT (realcluster/processes._on_signal): `long`
# keeps the suite in budget; SIGKILL is the other path (the JVMs' PR_SET_PDEATHSIG)
@pytest.mark.parametrize("sig", [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.long),
                                 signal.SIGKILL], ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_interrupted_run_leaves_no_jvm(tmp_path, sig):
    require_real_kafka()
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "segtools", "simulate",
                             str(SCENARIOS / "a-preferred-leader-return.yaml"), "--engine", "kafka",
                             "--out", str(out)], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180
        # half way: the controller and both brokers run and the steps have begun
        while not (out / "kafka" / "steps").is_dir():
            assert proc.poll() is None, proc.stdout.read().decode()
            assert time.monotonic() < deadline, "the run did not reach its steps"
            time.sleep(0.2)
        assert len(java_processes_of(out)) >= 3
        proc.send_signal(sig)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if sig == signal.SIGINT:
        assert proc.returncode == 130
    elif sig == signal.SIGTERM:
        assert proc.returncode == 128 + signal.SIGTERM
    deadline = time.monotonic() + 20
    while java_processes_of(out) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert java_processes_of(out) == []
    assert not (out / "truth.json").exists()  # an interrupted run is visibly partial
