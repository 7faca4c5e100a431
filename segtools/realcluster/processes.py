"""Supervision of the JVMs of a real cluster: each runs in its own process group, is known to a
registry, and is killed when segtools exits, whatever the way out (normal end, exception,
Ctrl-C, SIGTERM) and, on Linux, even when segtools itself is SIGKILLed (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import threading
import time
from typing import IO, Any

_LIVE: dict[int, JvmProcess] = {}
_LOCK = threading.Lock()
_HANDLERS_INSTALLED = False


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG: killed when segtools dies
    except OSError:
        pass


class JvmProcess:
    """One Kafka JVM (broker, controller or tool) in a new process group."""

    def __init__(self, name: str, argv: list[str], log_path: str, *, cwd: str | None = None) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self._log: IO[bytes] = open(log_path, "ab")
        self.paused = False
        self.paused_at = 0.0  # time.monotonic() of the last pause
        #: SIGTERM sent, the JVM still in Kafka's controlled shutdown (begin_terminate)
        self.stopping = False
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
            cwd=cwd, start_new_session=True,
            preexec_fn=_die_with_parent if os.name == "posix" else None)
        with _LOCK:
            _LIVE[self.proc.pid] = self

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        """Running, and not a broker the engine has told to stop (``begin_terminate``): one
        still waiting for the controller's grant is stopped for the scenario."""
        return self.proc.poll() is None and not self.stopping

    def process_alive(self) -> bool:
        return self.proc.poll() is None

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def pause(self) -> None:
        self._signal(signal.SIGSTOP)
        self.paused = True
        self.paused_at = time.monotonic()

    def resume(self) -> None:
        self._signal(signal.SIGCONT)
        self.paused = False

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, files stay as the kernel has them."""
        self._signal(signal.SIGKILL)
        self._reap(10.0)
        # a paused broker that crashes is no longer paused: the steps after its crash wait
        # for the state they imply instead of looking once (as while a pause runs)
        self.paused = False
        self.stopping = False

    def terminate(self, timeout: float = 30.0) -> bool:
        """SIGTERM (Kafka's controlled shutdown); SIGKILL after ``timeout``. True when the
        JVM exited by itself."""
        self.begin_terminate()
        return self.finish_terminate(timeout)

    def begin_terminate(self) -> None:
        """SIGTERM without waiting: the JVM exits when the controller grants its controlled
        shutdown (``finish_terminate`` waits for that)."""
        if self.paused:
            self.resume()
        self._signal(signal.SIGTERM)
        self.stopping = True

    def exited(self, timeout: float) -> bool:
        """Did the JVM exit within ``timeout`` seconds (reaped if so)?"""
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        self._reap(1.0)
        self.stopping = False
        return True

    def finish_terminate(self, timeout: float) -> bool:
        """Wait ``timeout`` seconds for the exit a ``begin_terminate`` asked for; SIGKILL
        after it. True when the JVM exited by itself."""
        clean = self.exited(timeout)
        if not clean:
            self._signal(signal.SIGKILL)
            self._reap(10.0)
            self.stopping = False
        return clean

    def _reap(self, timeout: float) -> None:
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL always ends a process
            pass
        with _LOCK:
            _LIVE.pop(self.proc.pid, None)
        try:
            self._log.close()
        except OSError:
            pass


def run_tool(argv: list[str], *, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """Run a short-lived Kafka tool (storage format, kafka-dump-log), supervised like the rest."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_die_with_parent if os.name == "posix" else None)
    holder = _ToolHandle(proc)
    with _LOCK:
        _LIVE[proc.pid] = holder  # type: ignore[assignment]
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        holder.kill()
        out, err = proc.communicate()
    finally:
        with _LOCK:
            _LIVE.pop(proc.pid, None)
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


class _ToolHandle:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.name = "tool"

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def kill_all() -> None:
    """Kill every JVM still running (resumed first so a stopped one cannot linger)."""
    with _LOCK:
        procs = list(_LIVE.values())
    for p in procs:
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.killpg(p.proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
    deadline = time.monotonic() + 10
    for p in procs:
        try:
            p.proc.wait(max(0.1, deadline - time.monotonic()))
        except Exception:  # noqa: BLE001 - best effort while exiting
            pass
    with _LOCK:
        for p in procs:
            _LIVE.pop(p.proc.pid, None)


def live_pids() -> list[int]:
    with _LOCK:
        return sorted(_LIVE)


def _on_signal(signum: int, frame: Any) -> None:
    kill_all()
    # the default behaviour next: Ctrl-C -> KeyboardInterrupt, SIGTERM -> exit 143
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


def install_handlers(*, signals: bool) -> None:
    """An atexit hook that stops every JVM; with ``signals`` (the CLI) also SIGINT/SIGTERM
    handlers (main thread only) that kill them before the usual exit."""
    global _HANDLERS_INSTALLED
    if not _HANDLERS_INSTALLED:
        atexit.register(kill_all)
        _HANDLERS_INSTALLED = True
    if signals and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, _on_signal)
