"""A broker's ``remote-log-index-cache/``: Kafka's RemoteIndexCache keeps there the offset, time
and transaction indexes of the remote segments the broker served reads from, as
``<startOffset>_<segmentId>.{index,timeindex,txnindex}`` (the start offset not padded; names
from RemoteIndexCache of Kafka 4.3.1's kafka-storage jar), with ``.tmp`` while one is fetched
and ``.deleted`` once evicted and waiting for removal.

These files are the broker's copies of remote objects: what a broker used to find offsets in a
remote segment, still there when the remote objects are gone.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

DIR_NAME = "remote-log-index-cache"
_NAME = re.compile(r"^(\d+)_([A-Za-z0-9_-]{22})\.(index|timeindex|txnindex)(\.tmp|\.deleted)?$")


@dataclass
class CacheEntry:
    """The cached indexes of one remote segment in one log dir."""

    log_dir: str
    broker: int | None
    segment_id: str
    start_offset: int
    #: ``.index``/``.timeindex``/``.txnindex`` -> path, live files only
    files: dict[str, str] = field(default_factory=dict)
    #: names of ``.tmp`` (being fetched) and ``.deleted`` (evicted) files
    pending: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"broker": self.broker, "segment_id": self.segment_id,
                "start_offset": self.start_offset, "files": sorted(self.files),
                "pending": sorted(self.pending)}


def scan(log_dir: str, broker: int | None) -> list[CacheEntry]:
    """The entries of ``log_dir``'s index cache (none when it has no cache folder)."""
    folder = os.path.join(log_dir, DIR_NAME)
    if not os.path.isdir(folder):
        return []
    out: dict[tuple[str, int], CacheEntry] = {}
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        m = _NAME.match(entry.name)
        if m is None or not entry.is_file():
            continue
        e = out.setdefault((m.group(2), int(m.group(1))),
                           CacheEntry(log_dir, broker, m.group(2), int(m.group(1))))
        if m.group(4):
            e.pending.append(entry.name)
        else:
            e.files["." + m.group(3)] = entry.path
    return sorted(out.values(), key=lambda e: (e.start_offset, e.segment_id))
