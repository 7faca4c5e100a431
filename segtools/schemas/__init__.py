"""JSON Schemas (draft 2020-12) of segtools' JSON outputs, shipped in the wheel:
``compare-report``, ``advise``, ``bundle-manifest``, ``verify``, ``replay-plan``. ``load(name)`` reads one."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

NAMES = ("compare-report", "advise", "bundle-manifest", "verify", "replay-plan")


def load(name: str) -> dict[str, Any]:
    """The schema ``name`` (one of NAMES) as a dict."""
    if name not in NAMES:
        raise KeyError(f"no schema {name!r}; shipped: {', '.join(NAMES)}")
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
