"""How many cases a long fuzz test runs. CI runs the budget written at each test;
``SEGTOOLS_FUZZ_SCALE=N`` multiplies it for a deeper run by hand (e.g. 10 before a release)."""

from __future__ import annotations

import os

SCALE = float(os.environ.get("SEGTOOLS_FUZZ_SCALE", "1"))


def examples(n: int) -> int:
    """``n`` cases scaled by SEGTOOLS_FUZZ_SCALE (at least one)."""
    return max(1, round(n * SCALE))
