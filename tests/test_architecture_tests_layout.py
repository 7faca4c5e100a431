"""The test tree mirrors the package tree (issue 24: "tests mirror the packages with shared
builders in one place").

Every folder under ``tests/`` is named for what it tests: a package or module of segtools
(``tests/records/`` for ``segtools/records/``, ``tests/salvage/`` for ``segtools/salvage.py``,
``tests/cli/`` for ``cli/``), or one of the cross-cutting suites listed below with the reason
it stands apart. Builders and helpers that several suites use live in ``tests/builders/``
(on sys.path through ``tests/conftest.py``). Before: 38 test files of records, files,
primitives, salvage, filters, advise and redact in one grab-bag folder ``tests/segtools/``,
and ``tests/internal/`` for ``internal_topics``; shared helpers in three places.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"

#: folders that are no package's mirror -> why
CROSS_CUTTING = {
    "builders": "builders and helpers shared by several suites",
    "data": "real brokers' files and other inputs (not tests)",
    "realkafka": "parity and engine runs against real Kafka JVMs, across packages",
    "soundness": "the forensic answers on degraded evidence, across commands",
    "html": "the HTML report through headless Chromium",
    "objectstore": "every command on s3:// inputs through a real S3-compatible server",
}
#: the top-level packages that sit beside segtools/ and import as segtools.cli, ...
TOP_LEVEL = {"cli", "spark", "formats"}


def _mirrored_names() -> set[str]:
    pkg = REPO / "segtools"
    names = {p.name for p in pkg.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    names |= {p.stem for p in pkg.glob("*.py") if not p.stem.startswith("_")}
    return names | TOP_LEVEL


def _test_folders() -> list[str]:
    return sorted(p.name for p in TESTS.iterdir()
                  if p.is_dir() and not p.name.startswith((".", "__")))


def test_every_test_folder_mirrors_a_package_or_says_why_not() -> None:
    unknown = [d for d in _test_folders() if d not in _mirrored_names() and d not in CROSS_CUTTING]
    assert unknown == [], f"tests/ folders that mirror no package and are not listed: {unknown}"


def test_the_listed_exceptions_exist_and_builders_hold_no_tests() -> None:
    assert set(CROSS_CUTTING) <= set(_test_folders())
    assert not list((TESTS / "builders").glob("test_*.py"))


def test_the_check_sees_a_grab_bag(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "segtools").mkdir()
    (tmp_path / "misc").mkdir()
    monkeypatch.setattr(__import__(__name__), "TESTS", tmp_path)
    assert "misc" not in _mirrored_names() and "misc" in _test_folders()
