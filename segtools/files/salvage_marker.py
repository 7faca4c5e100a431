"""The ``segtools-salvage.json`` marker that `segtools salvage` leaves in a rebuilt partition
dir: the byte ranges of each original segment that are not in the rebuilt one. One reader
for every command (dump, export), so a salvaged dir never reads as complete."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from segtools.files.sources import SALVAGE_MARKER

__all__ = ["hole_findings", "partition_holes", "salvage_holes"]


def salvage_holes(log_path: str) -> list[dict[str, Any]] | None:
    """The holes ``segtools salvage`` left in the segment ``log_path`` (from the
    ``segtools-salvage.json`` beside it), or None when it is not a salvaged segment. An
    unreadable marker is one hole of unknown extent: the segment cannot be said complete."""
    marker = os.path.join(os.path.dirname(os.path.abspath(log_path)), SALVAGE_MARKER)
    if not os.path.isfile(marker):
        return None
    try:
        with open(marker, "rb") as fh:
            data = json.loads(fh.read(16 << 20))
        entry = data["segments"].get(os.path.basename(log_path))
        if entry is None:
            return None
        holes = [dict(h) for h in entry["holes"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return [{"reason": "unreadable_marker", "detail": f"{SALVAGE_MARKER}: {exc}",
                 "after_offset": None, "before_offset": None}]
    return holes


def partition_holes(partition_dir: str) -> list[tuple[str | None, dict[str, Any]]]:
    """Every hole the marker of a rebuilt partition dir lists, as (segment name, hole), in
    segment order; [] when the dir holds no marker. Compare reads them all, also those of a
    segment no longer in the dir (its records are then missing too). An unreadable marker is
    one hole of unknown extent and segment (None)."""
    marker = os.path.join(partition_dir, SALVAGE_MARKER)
    if not partition_dir or not os.path.isfile(marker):
        return []
    try:
        with open(marker, "rb") as fh:
            data = json.loads(fh.read(16 << 20))
        return [(str(name), dict(h)) for name, entry in sorted(data["segments"].items())
                for h in entry["holes"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return [(None, {"reason": "unreadable_marker", "detail": f"{SALVAGE_MARKER}: {exc}",
                        "after_offset": None, "before_offset": None})]


def hole_findings(log_paths: Iterable[str], *, unmarked: Iterable[str] = ()) -> list[str]:
    """One finding line per salvage hole of these segments (records of the original may be
    missing there: a problem, never benign). ``unmarked``: folders already listed without a
    marker (a resolved partition dir whose ``salvage_marker`` is False), not looked at again."""
    out = []
    # folders without a marker: one stat a folder, not a segment (none for those listed)
    known = {os.path.abspath(f) for f in unmarked}
    for path in log_paths:
        if not path.endswith(".log"):
            continue
        folder = os.path.dirname(os.path.abspath(path))
        if folder in known:
            continue
        if not os.path.isfile(os.path.join(folder, SALVAGE_MARKER)):
            known.add(folder)
            continue
        for h in salvage_holes(path) or ():
            where = (f"bytes {h.get('original_start')}-{h.get('original_end')} of the original"
                     if h.get("original_start") is not None else h.get("detail", "extent unknown"))
            out.append(f"{path}: hole left by segtools salvage after offset "
                       f"{'?' if h.get('after_offset') is None else h['after_offset']}, before "
                       f"{'?' if h.get('before_offset') is None else h['before_offset']}: {where} "
                       f"({h.get('reason')}); records of the original may be missing")
    return out
