"""Replicas whose batches differ below the high watermark only because one side's log cleaner
rewrote old message formats as v2 batches (KIP-724: Kafka 3.0 deprecated message formats v0
and v1, and the cleaner writes what it keeps in the current format; core/src/main/scala/kafka/
log/LogCleaner.scala cleanInto/buildRecords). Batch boundaries and CRCs then differ while the
records are the same: those ranges are compared record by record (offset, key, value) and,
when equal, reported as BENIGN_FORMAT_CONVERTED instead of a log-matching violation."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from segtools.forensics.model import BatchFacts

#: at most this many records per replica are decoded to prove a range benign
MAX_RECORDS = 200_000


def _covering(batches: Sequence[BatchFacts], lo: int, hi: int) -> list[BatchFacts]:
    return [b for b in batches if b.last_offset >= lo and b.base_offset <= hi]


def format_differs(ref_batches: Sequence[BatchFacts], b: BatchFacts) -> bool:
    """Does ``b`` and what the reference holds at its offsets mix magic < 2 and magic 2?"""
    mags = {x.magic for x in _covering(ref_batches, b.base_offset, b.last_offset)} | {b.magic}
    return len(mags) > 1 and min(mags) < 2


def _records(log_dir: str, topic: str, partition: int, batches: Sequence[BatchFacts],
             lo: int, hi: int) -> dict[int, tuple[Any, Any]] | None:
    from segtools.errors import SegtoolsError
    from segtools.records import columnar

    pdir = os.path.join(log_dir, f"{topic}-{partition}")
    segments = sorted({b.segment for b in _covering(batches, lo, hi)})
    out: dict[int, tuple[Any, Any]] = {}
    try:
        for seg in segments:
            for rb in columnar.iter_record_batches(os.path.join(pdir, seg), topic=topic, partition=partition,
                                                   start_offset=lo, end_offset=hi + 1, include_control=False):
                for off, key, value in zip(*(rb.column(c).to_pylist() for c in ("offset", "key", "value"))):
                    out[off] = (key, value)
                if len(out) > MAX_RECORDS:
                    return None
    except (SegtoolsError, OSError):
        return None
    return out


def benign_conversions(ref: Any, rep: Any, bad: Sequence[BatchFacts],
                       high_watermark: int | None) -> tuple[list[BatchFacts], list[tuple[int, int]]]:
    """Split ``bad`` (replica batches below the fork that the reference does not hold
    identically) into those still bad and the offset ranges proven benign: below the high
    watermark, a format mix, the same records on both sides."""
    if not bad or high_watermark is None or not ref.facts.log_dir or not rep.facts.log_dir \
            or not os.path.isdir(ref.facts.log_dir) or not os.path.isdir(rep.facts.log_dir):
        return list(bad), []
    still: list[BatchFacts] = []
    ranges: list[tuple[int, int]] = []
    topic, partition = rep.facts.topic, rep.facts.partition
    for b in bad:
        if b.last_offset >= high_watermark or not format_differs(ref.batches, b):
            still.append(b)
            continue
        mine = _records(rep.facts.log_dir, topic, partition, rep.batches, b.base_offset, b.last_offset)
        theirs = _records(ref.facts.log_dir, topic, partition, ref.batches, b.base_offset, b.last_offset)
        if mine is None or theirs is None or not mine or mine != theirs:
            still.append(b)
            continue
        if ranges and ranges[-1][1] + 1 >= b.base_offset:
            ranges[-1] = (ranges[-1][0], b.last_offset)
        else:
            ranges.append((b.base_offset, b.last_offset))
    return still, ranges
