"""Fixtures for the HTML report tests: reports of generated samples compared in process, and
one headless Chromium per module (stopped with all its processes, also on failure)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
from cdp_chromium import CHROMIUM_MISSING, Chromium, chromium_path

REPO = Path(__file__).resolve().parents[2]
GENERATED = REPO / "samples" / "generated"


def compare_sample(name: str, *, acks: bool = True) -> dict[str, Any]:
    """``segtools compare SAMPLE --no-spark [--acks]`` in process, as report.json's dict
    (with the controller's metadata log, as the CLI finds it). A fresh copy per call."""
    return json.loads(_compare_sample(name, acks))


@functools.cache
def _compare_sample(name: str, acks: bool) -> str:
    import segtools

    folder = GENERATED / name
    ack_file = folder / "acks.jsonl"
    # segtools.compare finds the controller's metadata log next to the broker dirs, as the CLI
    report = segtools.compare([str(folder)], acks=ack_file if acks and ack_file.exists() else None)
    # with compare's summary block when this version of compare writes one (docs/REPORT.md)
    doc = report.report_json(runner="in-process") if hasattr(report, "report_json") else report.to_json()
    return json.dumps(doc)


def truth(name: str) -> dict[str, Any]:
    """What the simulator says happened (independent of compare)."""
    return json.loads((GENERATED / name / "truth.json").read_text())


@pytest.fixture(scope="module")
def browser():
    if chromium_path() is None:
        pytest.fail(CHROMIUM_MISSING)
    b = Chromium()
    try:
        yield b
    finally:
        b.close()
