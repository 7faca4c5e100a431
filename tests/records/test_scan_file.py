"""The fused header scan (``jit_kernel.scan_file``) against the general walk.

``read_batch_table`` reads a file's plain v2 batches in one compiled call per table and hands
over to the general walk (``_iter_headers``) at the first batch that is not plain. Its tables
must be the general walk's (``engine="python"``: no kernel, so no fused scan), row for row and
error for error, wherever the hand-over falls: at a window's end (small windows here, so
batches straddle them), at a full table (``max_rows``), at a damaged, legacy or CRC-invalid
batch, at a torn tail, and when the file shrinks between two reads.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_one_reader import OPS, _kp_many, mutate

from segtools.errors import FileChangedError, FormatError
from segtools.records import batches as batches_module
from segtools.records import columnar, jit_kernel
from segtools.records.columnar import batch_table
from segtools.records.schema import BATCH_SCHEMA


@pytest.fixture(autouse=True)
def _no_settle_wait(monkeypatch):
    monkeypatch.setattr(batches_module, "_SETTLE_SECONDS", 0.0)


@pytest.fixture
def fused_calls(monkeypatch):
    """Counts the fused scan's calls: a test whose file never reaches it proves nothing."""
    calls = []
    real = jit_kernel.scan_file

    def counting(*args):
        calls.append(args[1])
        return real(*args)

    monkeypatch.setattr(jit_kernel, "scan_file", counting)
    return calls


def _outcome(path: Path, engine: str, rows: int) -> tuple[str, object]:
    tables = []
    try:
        for t in columnar.iter_batch_batches(path, engine=engine, max_rows=rows):
            assert t.num_rows <= rows
            tables.append(t)
        err = None
    except FormatError as exc:
        err = (type(exc).__name__, exc.position, exc.base_offset, str(exc))
    got = pa.Table.from_batches(tables, schema=BATCH_SCHEMA) if tables else None
    return (got.to_pylist() if got is not None else []), err


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("window", [64, 100, 333, 4096, 1 << 20])
@pytest.mark.parametrize("rows", [1, 7, 65536])
def test_plain_files_equal_the_general_walk(tmp_path, monkeypatch, fused_calls, window, rows):
    monkeypatch.setattr(batch_table, "_HEADER_WINDOW", window)
    path = _write(tmp_path, b"".join(_kp_many(seed) for seed in range(3)))
    fused = _outcome(path, "numba", rows)
    assert fused == _outcome(path, "python", rows)
    assert fused[1] is None and len(fused[0]) > 100
    assert fused_calls, "the fused scan was not used"


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), op=OPS, a=st.integers(0, 1 << 20), b=st.integers(0, 255),
       refix=st.booleans(), window=st.sampled_from([80, 500, 4096, 1 << 20]),
       rows=st.sampled_from([3, 65536]))
def test_mutants_equal_the_general_walk(tmp_path, monkeypatch, seed, op, a, b, refix, window, rows):
    monkeypatch.setattr(batch_table, "_HEADER_WINDOW", window)
    path = _write(tmp_path, mutate(_kp_many(seed), op, a, b, refix))
    assert _outcome(path, "numba", rows) == _outcome(path, "python", rows)


def test_a_legacy_batch_is_handed_over(tmp_path, fused_calls):
    """A v2 file with a magic-1 entry after its first batches: the fused scan stops there and
    the general walk reads the entry (rows equal, both magics present)."""
    from test_columnar_realdata import _legacy_set

    data = _kp_many(5) + _legacy_set(1, 0, 10_000, [b"legacy", b"two"]) + _kp_many(6)
    path = _write(tmp_path, data)
    fused = _outcome(path, "numba", 65536)
    assert fused == _outcome(path, "python", 65536)
    assert {r["magic"] for r in fused[0]} == {1, 2}
    assert fused_calls == [0]


def test_a_file_that_shrinks_between_reads_is_a_changed_file(tmp_path, monkeypatch):
    """The fused scan's short read hands over; the general walk names the change."""
    monkeypatch.setattr(batch_table, "_HEADER_WINDOW", 4096)
    data = b"".join(_kp_many(seed) for seed in range(4))
    path = _write(tmp_path, data)
    tables = columnar.iter_batch_batches(path, engine="numba", max_rows=5)
    first = next(tables)
    assert first.num_rows == 5
    os.truncate(path, len(data) // 2)
    with pytest.raises(FileChangedError, match="shrank"):
        for _ in tables:
            pass
