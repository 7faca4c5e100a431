"""Shared fixtures: the real broker data in tests/data/realdata and one Spark session."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from segtools.records import batches as _batches

REPO = Path(__file__).resolve().parent.parent
#: builders and helpers shared by several suites (tests/builders/), importable by name from any
#: test folder (pytest puts only each test file's own folder on sys.path)
sys.path.insert(0, str(Path(__file__).resolve().parent / "builders"))
# Copies of real brokers' files, kept in the repository (provenance: tests/data/realdata/README.md).
REALDATA = REPO / "tests" / "data" / "realdata"
SAMPLES = REPO / "samples"
_PRODUCTION_SETTLE = _batches._SETTLE_SECONDS


@pytest.fixture(scope="session")
def realdata() -> Path:
    if not REALDATA.is_dir():
        pytest.fail(f"real broker data not found at {REALDATA}")
    return REALDATA


@pytest.fixture(scope="session")
def samples() -> Path:
    return SAMPLES


@pytest.fixture(scope="session")
def spark():
    if shutil.which("java") is None:
        pytest.fail("Spark tests need Java 17 on PATH")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("segtools-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(autouse=True, scope="session")
def _no_settle_wait():
    """A read that looks damaged waits ~150 ms once per file for a writer in mid-rewrite to
    show (segtools.records.batches._SETTLE_*). No test file is written while read except in
    the race tests, which ask for ``real_settle_wait``; elsewhere the wait only slows the suite
    (the fuzz campaigns spent 95 % of their time in it)."""
    _batches._SETTLE_SECONDS = 0.0
    yield
    _batches._SETTLE_SECONDS = _PRODUCTION_SETTLE


@pytest.fixture
def real_settle_wait():
    """The production settle wait, for tests that change a file while it is read."""
    _batches._SETTLE_SECONDS = _PRODUCTION_SETTLE
    yield
    _batches._SETTLE_SECONDS = 0.0


# The fast tier, `pytest -m fast` (under 3 minutes on 2 cores, for everyday work): every test
# except those that start a JVM (real Kafka, Spark), an S3 server or a browser, and the long
# fuzz and memory campaigns. CI runs everything. New heavy tests belong in those folders or carry `slow`.
_NOT_FAST_DIRS = frozenset({"realkafka", "spark", "objectstore", "html"})
_NOT_FAST_MARKS = frozenset({"spark", "realkafka", "slow"})
_LONG_FUZZ = frozenset({
    "test_columnar.py::test_hypothesis_hostile_bytes_only_segtools_errors",
    "test_columnar.py::test_mutated_bytes_give_only_segtools_errors_and_engines_agree",
    "test_hostile_limits.py::test_every_reader_stops_every_bomb_with_the_same_error_under_a_memory_cap",
    # memory bounds measured over many batches (tracemalloc) and whole real-data walks: 10-20 s each
    "test_hostile_limits.py::test_legal_giant_batches_are_verified_with_memory_flat_in_batch_size",
    "test_hostile_one_offset.py::test_memory_is_bounded_over_many_batches_at_one_offset",
    "test_salvage_memory.py::test_salvage_traced_peak_grows_by_a_few_bytes_per_batch",
    "test_scale_compare_memory.py::test_stage2_traced_peak_grows_by_the_batches_only",
    "test_writer_realdata.py::test_offset_and_time_indexes_match_the_broker",
    "test_columnar_realdata.py::test_columnar_and_object_reader_agree",
    "test_docs.py::test_the_wheel_carries_the_docs",     # builds the wheel
    # the slowest of the fast tier on 2 cores (--durations, load 11-18: 18 min 45 s for 2,370
    # tests), each covered in CI: whole-command runs over bundles (70, 33-51 s), the salvage
    # race campaigns (42 s each), the peak-RSS scale campaign (24-37 s a command), every real
    # log through kafka-python and both engines (39 s; the one-reader mutants cover the engines)
    "test_bundle_redact.py::test_compare_advise_and_report_answer_the_same_on_the_redacted_bundle",
    "test_bundle_redact.py::test_the_report_of_a_redacted_bundle_sends_lost_out_to_the_originals",
    "test_bundle_inputs.py::test_every_command_reads_a_bundle_as_it_reads_the_originals",
    "test_bundle.py::test_compare_on_the_bundle_equals_compare_on_the_originals",
    "test_salvage_race.py::test_salvage_with_the_segment_truncated_mid_read_20_times",
    "test_salvage_race.py::test_salvage_cli_in_a_subprocess_never_dies_of_a_signal",
    "test_scale_memory.py::test_peak_rss_grows_little_with_segment_count",
    "test_columnar_realdata.py::test_every_real_log_matches_kafka_python_and_engines_agree",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # `long`: runs that repeat what the suite already covers on another release, or an open
    # problem's known failure; they stay out of the 20-minute CI suite and run when asked for
    # (`pytest -m long`, or the long-run scripts). Deselected, never skipped-as-passed.
    if "long" not in (config.getoption("markexpr") or ""):
        kept = [i for i in items if not i.get_closest_marker("long")]
        if len(kept) != len(items):
            config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("long")])
            items[:] = kept
    heavy: list[pytest.Item] = []
    for item in items:
        path = Path(str(item.fspath))
        in_heavy_dir = bool(_NOT_FAST_DIRS.intersection(path.relative_to(REPO).parts[1:-1]))
        marked_heavy = any(item.get_closest_marker(m) for m in _NOT_FAST_MARKS)
        name = f"{path.name}::{item.originalname}"
        if not (in_heavy_dir or marked_heavy or name in _LONG_FUZZ):
            item.add_marker(pytest.mark.fast)
        elif item.get_closest_marker("fast"):
            heavy.append(item)   # a module's own `pytestmark = pytest.mark.fast` does not win
    if heavy and "fast" in (config.getoption("markexpr") or ""):
        config.hook.pytest_deselected(items=heavy)
        dropped = set(heavy)
        items[:] = [i for i in items if i not in dropped]
