"""Production source for the architecture tests that count who does what with ``ast``."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCE_DIRS = ("segtools", "cli", "spark", "formats")


def scan_production(finder: Callable[[ast.AST], set[str]], *, words: tuple[str, ...],
                    aside: frozenset[str] = frozenset()) -> dict[str, set[str]]:
    """``{module: what finder found}`` for every production module (repository-relative path)
    whose text names one of ``words`` (only those are parsed), ``aside`` skipped."""
    out: dict[str, set[str]] = {}
    for d in SOURCE_DIRS:
        for path in sorted((REPO / d).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel in aside:
                continue
            text = path.read_text(encoding="utf-8")
            if not any(w in text.lower() for w in words):
                continue
            found = finder(ast.parse(text))
            if found:
                out[rel] = found
    return out
