"""The real engine's wait for a long-lived producer's answers (producing._await_answers): a
step waits for its own records only, and no longer than its deadline (class 7 of
docs/ENGINES.md). A stand-in producer answers through ``poll`` as librdkafka does."""

from __future__ import annotations

import time

from segtools.realcluster.producing import _await_answers


class _Producer:
    """Answers record i at its ``answer_at[i]``-th poll (None: never, like a paused leader)."""

    def __init__(self, results: list, answer_at: list[int | None]) -> None:
        self.results, self.answer_at, self.polls = results, answer_at, 0

    def poll(self, timeout: float) -> int:
        self.polls += 1
        for i, at in enumerate(self.answer_at):
            if at is not None and at <= self.polls and self.results[i] is None:
                self.results[i] = {"ok": True}
        time.sleep(min(timeout, 0.001))
        return 0

    def flush(self, timeout: float) -> int:  # pragma: no cover - must not be called
        raise AssertionError("flush waits for every queued record, earlier steps' too")


def test_answers_that_come_end_the_wait_early():
    results: list = [None, None]
    p = _Producer(results, [2, 3])
    assert _await_answers(p, results, 2, time.monotonic() + 60) == 0
    assert p.polls == 3


def test_a_record_never_answered_counts_at_the_deadline():
    results: list = [None, None, None]
    p = _Producer(results, [1, None, 1])
    t0 = time.monotonic()
    assert _await_answers(p, results, 3, t0 + 0.3) == 1
    assert 0.3 <= time.monotonic() - t0 < 30


def test_only_the_first_n_records_are_waited_for():
    # a batch cut: records after the n-th are not waited for, however long they take
    results: list = [None, None, None]
    p = _Producer(results, [1, None, None])
    assert _await_answers(p, results, 1, time.monotonic() + 60) == 0
