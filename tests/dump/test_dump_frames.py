"""The two walks of records' length prefixes in segtools/dump/fast_text.py (the Python loop,
the numba kernel segtools.records.jit_kernel.record_frames) agree on every window: the same
record bounds, or the same first batch refused, on batches built by kafka-python's builder
(their record count checked against the builder's) and on the same bytes damaged."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
import test_dump_fast_path as fast_path_tests
from kafka.record.default_records import DefaultRecordBatchBuilder
from test_dump_fast_path import fast_batches, small_windows  # noqa: F401 - fixtures

from segtools.dump import fast_text

V2_OVERHEAD = 61


def _batch(rng: random.Random, n: int) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 30)
    for i in range(n):
        size = rng.choice((0, 5, 100, 200, 20_000))
        b.append(i, timestamp=1_700_000_000_000 + i, key=None if i % 3 else b"k",
                 value=bytes(rng.randrange(256) for _ in range(size)), headers=[])
    return bytes(b.build())


def _window(rng: random.Random, counts: list[int]) -> tuple[bytearray, np.ndarray, np.ndarray, np.ndarray]:
    parts, starts, ends = [], [], []
    at = 0
    for n in counts:
        raw = _batch(rng, n)
        starts.append(at + V2_OVERHEAD)
        ends.append(at + len(raw))
        parts.append(raw)
        at += len(raw)
    buf = bytearray(b"".join(parts) + bytes(16))
    return buf, np.array(starts), np.array(ends), np.array(counts, dtype=np.int64)


def _walk(fn, *args):  # type: ignore[no-untyped-def]
    try:
        got = fn(*args)
        assert got is not None, "numba is a dependency: the kernel must load"
        rs, re_ = got
        return ("ok", rs.tolist(), re_.tolist())
    except fast_text._Unusual as exc:
        return ("unusual", exc.args)


@pytest.mark.parametrize("seed", range(40))
def test_kernel_walk_matches_the_loop(seed: int) -> None:
    rng = random.Random(seed)
    counts = [rng.choice((0, 1, 1, 3, 40)) for _ in range(rng.randrange(1, 30))]
    buf, starts, ends, cnt = _window(rng, counts)
    if seed % 2:  # damage: a flipped byte, a wrong count, a cut batch
        kind = seed % 3
        b = rng.randrange(len(counts))
        if kind == 0 and ends[b] > starts[b]:
            buf[rng.randrange(int(starts[b]), int(ends[b]))] ^= 0xFF
        elif kind == 1:
            cnt[b] += rng.choice((-1, 1, 1 << 30))
        else:
            ends[b] = max(int(starts[b]), int(ends[b]) - rng.randrange(1, 50))
    w = np.frombuffer(buf, dtype=np.uint8)
    loop = _walk(fast_text._frames_python, buf, starts, ends, cnt)
    kernel = _walk(fast_text._frames_kernel, w, starts, ends, cnt)
    assert kernel == loop
    if not seed % 2:
        assert loop[0] == "ok" and len(loop[1]) == sum(counts)


@pytest.mark.parametrize("seed", [1, 2])
def test_dump_through_the_kernel_prints_what_the_object_path_prints(
        tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch,
        fast_batches: list[int], small_windows: None) -> None:  # noqa: F811 - the fixtures
    """End to end with the kernel forced on (it is used from KERNEL_MIN_BYTES only)."""
    monkeypatch.setattr(fast_text, "KERNEL_MIN_BYTES", 0)
    framed: list[int] = []
    walk = fast_text._frames_kernel

    def counting(*args):  # type: ignore[no-untyped-def]
        got = walk(*args)
        framed.append(got is not None)
        return got

    monkeypatch.setattr(fast_text, "_frames_kernel", counting)
    fast_path_tests.test_fast_path_prints_what_the_object_path_prints(
        tmp_path, seed, monkeypatch, fast_batches, small_windows)
    assert framed and all(framed)
