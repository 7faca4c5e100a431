"""JSON Schemas (draft 2020-12) of segtools' JSON outputs, shipped in the wheel. ``OUTPUTS`` maps
each JSON output to the schema it follows (docs/CONTRACT.md, "JSON outputs and their schemas");
``load(name)`` reads one. Every output carries ``schema_version``: fields are only added within a
version, a rename or a removal raises it."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

#: every JSON document or line segtools writes -> its schema (tests/test_schemas_coverage.py
#: fails when a json.dump/dumps site of the product is not one of these, nor listed as Kafka's
#: own format or an internal value)
OUTPUTS: dict[str, str] = {
    "compare --report": "compare-report",
    "advise --json": "advise",
    "collect: MANIFEST.json": "bundle-manifest",
    "verify --output json": "verify",
    "replay --plan-out": "replay-plan",
    "dump --output json": "dump-json",
    "dump --output ndjson": "dump-ndjson",
    "quorum --json": "quorum",
    "quorum --image-at": "quorum-image",
    "quorum --image-at --diff-from": "quorum-diff",
    "tier --json": "tier",
    "salvage: OUT/manifest.json": "salvage-manifest",
    "salvage: segtools-salvage.json": "salvage-marker",
    "_SUCCESS (export, salvage, collect, compare --lost-out)": "success",
    "compare --lost-out: lost.ndjson": "lost-record",
    "simulate: truth.json": "truth",
    "simulate: acks.jsonl": "acks-line",
    "simulate --engine kafka: kafka/run.json": "run",
}

NAMES = tuple(sorted(set(OUTPUTS.values())))


def load(name: str) -> dict[str, Any]:
    """The schema ``name`` (one of NAMES) as a dict."""
    if name not in NAMES:
        raise KeyError(f"no schema {name!r}; shipped: {', '.join(NAMES)}")
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema
