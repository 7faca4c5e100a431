"""A FIFO named like a Kafka file must be refused at once, never block the reader."""

from __future__ import annotations

import os
import threading

import pytest

from segtools.errors import SegtoolsError
from segtools.files.indexes import read_offset_index, read_time_index, read_txn_index
from segtools.records import columnar


def _within(seconds: float, fn) -> BaseException | None:
    """Run fn in a thread; fail the test if it has not returned after ``seconds``."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        # unblock the reader so the daemon thread can end
        fd = os.open(fn.path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        pytest.fail(f"reading {fn.path} blocked")
    return outcome[0]


@pytest.mark.parametrize("name, reader", [
    ("00000000000000000000.log", lambda p: columnar.read_batch_table(p)),
    ("00000000000000000000.log", lambda p: columnar.read_records(p)),
    ("00000000000000000000.index", read_offset_index),
    ("00000000000000000000.timeindex", read_time_index),
    ("00000000000000000000.txnindex", read_txn_index),
])
def test_fifo_is_refused_without_blocking(tmp_path, name, reader):
    path = tmp_path / name
    os.mkfifo(path)
    call = lambda: reader(path)  # noqa: E731
    call.path = str(path)
    exc = _within(10, call)
    assert isinstance(exc, SegtoolsError) and "not a regular file" in str(exc)
