"""The column-wise text path of `segtools dump` (segtools/dump/fast_text.py) against the real
kafka-dump-log (Kafka 4.3.1): a segment mixing every healthy batch kind (plain batches with
headers and null keys/values, one-record batches, producer and transactional batches, COMMIT
and ABORT markers, the four codecs, keys, values and header keys that are not UTF-8,
LogAppendTime, delete horizons, offset gaps, legacy message sets), built with kafka-python's
builders, dumped with the fast path forced on and small windows so batches straddle them.
Stdout must be identical; the fast path must have printed a third of the batches or more."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import parity_harness as h
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dump"))

from test_dump_fast_path import HEALTHY_KINDS, varied_batches  # noqa: E402

from segtools.dump import fast_text, log_dump  # noqa: E402

SEG = "00000000000000000000"


@pytest.mark.realkafka
def test_fast_path_matches_the_real_tool(kafka_dump_log: h.KafkaDumpLog, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    part = tmp_path / "mixed-0"
    part.mkdir()
    batches: list[bytes] = []
    for seed in (21, 22, 23):
        batches += varied_batches(random.Random(seed), HEALTHY_KINDS, count=80)
    (part / f"{SEG}.log").write_bytes(b"".join(batches))

    monkeypatch.setattr(log_dump, "FAST_MIN_BYTES", 0)
    monkeypatch.setattr(fast_text, "WINDOW", 8192)
    printed: list[int] = []
    emit = fast_text.FastLogText._emit

    def counting(self: fast_text.FastLogText, cols: dict, starts, *rest) -> None:  # type: ignore[no-untyped-def]
        printed.append(len(starts))
        emit(self, cols, starts, *rest)

    monkeypatch.setattr(fast_text.FastLogText, "_emit", counting)
    jobs = [["--print-data-log", "--files", f"mixed-0/{SEG}.log"],
            ["--deep-iteration", "--files", f"mixed-0/{SEG}.log"]]
    ours = [h.run_ours(args, tmp_path) for args in jobs]
    # codecs, markers and legacy sets (and the batch after each) go the object path
    assert sum(printed) > len(batches) // 3, (sum(printed), len(batches))
    kafka = kafka_dump_log.run_jobs(jobs, tmp_path)
    for args, k, o in zip(jobs, kafka, ours):
        verdict = h.compare(k, o)
        assert verdict.kind == h.IDENTICAL, (args, verdict.reason)
    # the oracle did read what the fast path skips: markers, replacement characters
    assert "endTxnMarker: COMMIT" in kafka[0].stdout or "endTxnMarker: ABORT" in kafka[0].stdout
    assert "\ufffd" in kafka[0].stdout
