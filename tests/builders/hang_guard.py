"""A guard against hangs that is not a timing assertion: the block fails only if it runs for
minutes (a quadratic or backtracking path on the test's input would run for hours), so a
loaded CI machine never fails it (no timed assertions in unit tests)."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

import pytest


@contextmanager
def no_hang(seconds: float = 300.0) -> Iterator[None]:
    """Fail the test if the block is still running after ``seconds`` (main thread only)."""
    def expired(_signum: int, _frame: FrameType | None) -> None:
        pytest.fail(f"still running after {seconds:.0f} s: a hang, not a slow machine", pytrace=False)

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
