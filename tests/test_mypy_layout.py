"""mypy sees the installed layout through .mypy_layout/segtools (pyproject [tool.mypy] mypy_path).

setuptools installs formats/, cli/, spark/ and jvm/ as segtools.formats and so on (package-dir),
which mypy cannot follow; the committed symlinks rebuild that layout. A module added to segtools/
without a link there would silently escape the type check, so this test keeps the two in step.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYOUT = ROOT / ".mypy_layout" / "segtools"


def _expected() -> dict[str, Path]:
    want = {e.name: ROOT / "segtools" / e.name for e in (ROOT / "segtools").iterdir()
            if e.name != "__pycache__" and (e.suffix in (".py", ".typed") or (e / "__init__.py").exists())}
    package_dir = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    for package, folder in package_dir.items():
        if package.count(".") == 1:
            want[package.split(".", 1)[1]] = ROOT / folder
    return want


def test_every_installed_module_has_a_link_for_mypy() -> None:
    have = {e.name: e for e in LAYOUT.iterdir()}
    want = _expected()
    assert sorted(set(want) - set(have)) == [], "add symlinks in .mypy_layout/segtools"
    assert sorted(set(have) - set(want)) == [], "remove stale symlinks in .mypy_layout/segtools"
    for name, target in want.items():
        assert have[name].is_symlink() and not os.path.isabs(os.readlink(have[name])), name
        assert have[name].resolve() == target.resolve(), name


def test_mypy_config_points_at_the_layout() -> None:
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert mypy["mypy_path"] == ".mypy_layout" and mypy["packages"] == ["segtools"]
