"""Progress of a long compare on stderr: stage, segments done/total, bytes per second.

Only on a terminal: in a pipe or a log file nothing is written (the summary and the report are
the output; a progress line there would be noise)."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO


class Progress:
    """One status line, rewritten in place at most every ``interval`` seconds."""

    def __init__(self, stream: TextIO | None = None, *, interval: float = 0.5) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self._lock = threading.Lock()
        self._name = ""
        self._total = self._total_bytes = 0
        self._done = self._done_bytes = 0
        self._unit = "segments"
        self._started = self._shown = 0.0
        self._width = 0

    @staticmethod
    def for_terminal(stream: TextIO | None = None) -> Progress | None:
        """A Progress when ``stream`` (default stderr) is a terminal, else None."""
        stream = stream if stream is not None else sys.stderr
        try:
            tty = stream.isatty()
        except (AttributeError, ValueError):
            tty = False
        return Progress(stream) if tty else None

    def stage(self, name: str, total: int, total_bytes: int = 0, unit: str = "segments") -> None:
        with self._lock:
            self._name, self._total, self._total_bytes, self._unit = name, total, total_bytes, unit
            self._done = self._done_bytes = 0
            self._started = time.monotonic()
            self._shown = 0.0
        self._show(force=True)

    def advance(self, n: int = 1, nbytes: int = 0) -> None:
        with self._lock:
            self._done += n
            self._done_bytes += nbytes
        self._show()

    def set(self, done: int, total: int | None = None, done_bytes: int | None = None) -> None:
        """Absolute figures (the Spark runner polls task counts)."""
        with self._lock:
            self._done = done
            if total is not None:
                self._total = total
            if done_bytes is not None:
                self._done_bytes = done_bytes
        self._show()

    def line(self) -> str:
        elapsed = max(time.monotonic() - self._started, 1e-6)
        text = f"compare: {self._name}: {self._done}/{self._total} {self._unit}"
        if self._total_bytes:
            text += (f", {self._done_bytes / 2**20:,.0f}/{self._total_bytes / 2**20:,.0f} MiB, "
                     f"{self._done_bytes / 2**20 / elapsed:,.0f} MiB/s")
        return text

    def _show(self, force: bool = False) -> None:
        now = time.monotonic()
        with self._lock:
            if not force and now - self._shown < self.interval:
                return
            self._shown = now
            text = self.line()
            pad = max(0, self._width - len(text))
            self._width = len(text)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()

    def done(self) -> None:
        """Clear the line (the summary follows on stdout)."""
        with self._lock:
            width, self._width = self._width, 0
        if width:
            self.stream.write("\r" + " " * width + "\r")
            self.stream.flush()
