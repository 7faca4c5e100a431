"""Issue 23: `dump` of batches whose every record claims one offset (a broken producer, or a
hostile segment). Each record after the first is a "Non-consecutive offsets" pair; the run
must not keep one Python object per pair (Kafka 4.x's per-key map kept them all in a list:
1.8 GB of RSS for 12 batches of 2,000,000 records) nor make a Python call per pair in the
end-of-run tally (68 k records/s).

Oracles: the batches are built here from raw bytes (FORMATS.md 1) with a known record count;
the tally's per-pair implementation (``RunTally.deferred``, the path the JSON outputs still
take) is the reference for the counted one."""

from __future__ import annotations

import io
import json
import random
import tracemalloc
from pathlib import Path

import pytest
from test_dump_bombs import record_bomb

from segtools.dump import log_dump, pairs
from segtools.dump.options import DumpOptions
from segtools.dump.pairs import PairStore
from segtools.dump.runner import run_dump
from segtools.dump.tally import RunTally


class _Null(io.TextIOBase):
    def write(self, text: str) -> int:
        return len(text)


def _batches_at_one_offset(path: Path, n_batches: int, n_records: int) -> Path:
    one = record_bomb(path.with_suffix(".one"), n_records).read_bytes()
    path.with_suffix(".one").unlink()
    path.write_bytes(one * n_batches)   # every batch's base offset is 0 as well
    return path


@pytest.mark.parametrize("kafka_version", ["4.4", "3.9"])
def test_every_record_at_one_offset_is_counted_once_each(tmp_path: Path, kafka_version: str) -> None:
    n_batches, n_records = 6, 5000
    log = _batches_at_one_offset(tmp_path / f"{0:020d}.log", n_batches, n_records)
    out, err = io.StringIO(), io.StringIO()
    status = run_dump([str(log)], DumpOptions(deep_iteration=True, kafka_version=kafka_version,
                                                        summary=True),
                      out=out, err=err)
    pairs_expected = n_batches * n_records - 1
    assert status == 1
    assert out.getvalue().count("| offset: 0 ") == n_batches * n_records
    text = err.getvalue()
    # the Java tool (4.3+) keeps one pair per previous offset (a TreeMap), Scala's every pair
    shown = 1 if kafka_version == "4.4" else pairs_expected
    assert text.count("  0 is followed by 0\n") == shown
    assert (f"{pairs_expected} offsets that do not increase (offsets 0 -> 0, 0 -> 0, 0 -> 0, "
            f"0 -> 0, 0 -> 0, ...)") in text
    assert f"1 file, {pairs_expected} errors," in text

    # the JSON outputs list every pair as a finding (one per pair, the per-pair path)
    nd = io.StringIO()
    assert run_dump([str(log)], DumpOptions(deep_iteration=True, output="ndjson"), out=nd,
                    err=_Null()) == 1
    findings = [json.loads(line) for line in nd.getvalue().splitlines()
                if '"non_consecutive_offsets"' in line]
    assert len(findings) == pairs_expected


def _per_pair(store: PairStore) -> RunTally:
    tally = RunTally()
    for a, b in store.newest_first():
        tally.deferred("f", "non_consecutive_offsets", {"previous_offset": a, "offset": b},
                       is_problem=b <= a)
    return tally


@pytest.mark.parametrize("seed", range(6))
def test_the_counted_tally_says_what_the_per_pair_tally_says(monkeypatch: pytest.MonkeyPatch,
                                                             seed: int) -> None:
    """Gaps and offsets going backwards, mixed, across spilled blocks of pairs."""
    monkeypatch.setattr(pairs, "_IN_MEMORY", 7)
    monkeypatch.setattr(pairs, "_READ_PAIRS", 5)
    rng = random.Random(seed)
    store = PairStore()
    n = rng.choice([1, 3, 40, 300])
    mode = seed % 3   # only gaps, only backwards, mixed
    for _ in range(n):
        a = rng.randrange(1000)
        b = (a + rng.randrange(2, 9) if mode == 0 else a - rng.randrange(0, 3) if mode == 1
             else a + rng.randrange(-2, 5))
        store.append(a, b)
    counted = RunTally()
    problems = counted.gap_pairs("f", store)
    reference = _per_pair(store)
    assert problems == reference.errors
    assert counted.lines(1) == reference.lines(1)
    assert (counted.errors, counted.benign) == (reference.errors, reference.benign)
    store.close()


def _peak(log: Path) -> int:
    tracemalloc.start()
    try:
        status = run_dump([str(log)], DumpOptions(deep_iteration=True, kafka_version="4.4"),
                          out=_Null(), err=_Null())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert status == 1
    return peak


def test_memory_is_bounded_over_many_batches_at_one_offset(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Peak Python allocations of a text dump of 10 batches of 15,000 records at one offset
    (150,000 pairs): under 8 MiB (about 5 MiB measured). Before, the list Kafka 4.x's map was
    built from held a tuple per pair (about 100 bytes each: ~15 MiB here; 1.8 GB of RSS for 12
    batches of 2,000,000)."""
    monkeypatch.setattr(log_dump, "FAST_PATH", False)   # what a small file takes
    many = _batches_at_one_offset(tmp_path / f"{0:020d}.log", 10, 15000)
    peak = _peak(many)
    assert peak < 8 * 1024 * 1024, f"peak {peak / 1024:.0f} KiB"


def test_the_tally_is_not_called_per_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    original = RunTally.deferred

    def counting(self: RunTally, *args: object, **kwargs: object) -> None:
        nonlocal calls
        calls += 1
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(RunTally, "deferred", counting)
    log = _batches_at_one_offset(tmp_path / f"{0:020d}.log", 3, 4000)
    assert run_dump([str(log)], DumpOptions(deep_iteration=True), out=_Null(), err=_Null()) == 1
    assert calls == 0
