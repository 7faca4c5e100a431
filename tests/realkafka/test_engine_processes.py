"""The real engine's shutdown that does not block (processes.JvmProcess.begin_terminate): a
broker in Kafka's controlled shutdown is stopped for the scenario at once and exits later.
Plain processes stand in for the JVM (no Kafka needed)."""

from __future__ import annotations

import signal
import time

from segtools.realcluster.processes import JvmProcess


def _proc(tmp_path, script: str) -> JvmProcess:
    return JvmProcess("stand-in", ["sh", "-c", script], str(tmp_path / "out.log"))


def test_a_process_that_ignores_sigterm_is_stopped_for_the_scenario_then_killed(tmp_path):
    # (the trap is set before the file appears: no SIGTERM reaches the shell before it)
    p = _proc(tmp_path, f"trap '' TERM; touch {tmp_path}/ready; sleep 30")
    try:
        while not (tmp_path / "ready").exists():
            assert p.process_alive()
            time.sleep(0.02)
        assert p.alive()
        p.begin_terminate()
        assert p.stopping and not p.alive() and p.process_alive()
        assert not p.exited(0.3)  # still waiting for its grant
        assert not p.finish_terminate(0.1)  # SIGKILLed: not a clean exit
        assert not p.process_alive() and not p.stopping
        assert p.proc.returncode == -signal.SIGKILL
    finally:
        p.kill()


def test_a_process_that_exits_on_sigterm_finishes_cleanly(tmp_path):
    p = _proc(tmp_path, "sleep 30")
    try:
        p.begin_terminate()
        assert p.finish_terminate(10.0)
        assert not p.process_alive() and not p.stopping and not p.alive()
    finally:
        p.kill()
