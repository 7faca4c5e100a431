"""The package installs under the segtools namespace only, and every folder is packaged."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MAPPED = {"segtools": "segtools", "segtools.formats": "formats", "segtools.spark": "spark",
          "segtools.cli": "cli"}


def _declared_packages() -> set[str]:
    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    return set(data["tool"]["setuptools"]["packages"])


def test_every_source_folder_is_a_declared_package():
    declared = _declared_packages()
    for package, folder in MAPPED.items():
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(REPO / folder)
            name = ".".join([package, *rel.parts]) if rel.parts else package
            assert name in declared, f"{init.parent} is not listed in pyproject packages"


@pytest.mark.parametrize("generic", ["formats", "spark", "cli"])
def test_no_generic_top_level_module_is_importable(tmp_path, generic):
    # run outside the repo so the source folders are not on sys.path by accident
    proc = subprocess.run([sys.executable, "-c", f"import {generic}"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr


def test_namespaced_imports_resolve_to_the_user_layout(tmp_path):
    code = ("import segtools.formats, segtools.cli, segtools.spark;"
            "print(segtools.formats.__file__); print(segtools.cli.__file__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, check=True).stdout.split()
    assert Path(out[0]).parent.name == "formats"
    assert Path(out[1]).parent.name == "cli"


def test_python_dash_m_runs_the_cli(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "segtools", "--help"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0
    for command in ("dump", "compare", "export", "simulate", "demo"):
        assert command in proc.stdout


def test_pinned_kafka_version_matches_pom() -> None:
    """segtools.realcluster.kafka_runtime.KAFKA_VERSION names the version jvm/pom.xml resolves."""
    import re
    from importlib import resources

    from segtools.realcluster.kafka_runtime import KAFKA_VERSION

    pom = resources.files("segtools.jvm").joinpath("pom.xml").read_text()
    match = re.search(r"<kafka.version>([^<]+)</kafka.version>", pom)
    assert match is not None and match.group(1) == KAFKA_VERSION
