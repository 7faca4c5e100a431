"""Kafka's test plugin ``LocalTieredStorage``: under its ``dir``, a ``kafka-tiered-storage/``
folder with one folder per partition, ``<topic>-<partition>-<topicId>/``, holding
``<startOffset, 20 digits>-<segmentId>.<suffix>`` per remote segment (suffixes of
``RemoteLogSegmentFileset``; the .txnindex is optional). Seen so on a real 4.3.1 cluster."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

_DIR = re.compile(r"^(.+)-(\d+)-([A-Za-z0-9_-]{22})$")
_FILE = re.compile(r"^(\d+)-([A-Za-z0-9_-]{22})(\.[a-z_]+)$")
REQUIRED = (".log", ".index", ".timeindex", ".leader_epoch_checkpoint", ".snapshot")
OPTIONAL = (".txnindex",)


@dataclass
class RemoteObjects:
    """The files of one remote segment under a LocalTieredStorage root."""

    topic: str
    partition: int
    topic_id: str
    segment_id: str
    start_offset: int
    files: dict[str, str] = field(default_factory=dict)  # suffix -> path

    @property
    def log_path(self) -> str | None:
        return self.files.get(".log")


def scan(root: str) -> dict[str, RemoteObjects]:
    """segment id -> its objects, for every partition folder under ``root`` (read only)."""
    out: dict[str, RemoteObjects] = {}
    inner = os.path.join(root, "kafka-tiered-storage")
    if os.path.isdir(inner):  # the plugin's ``dir`` was given, not its storage folder
        root = inner
    for entry in sorted(os.scandir(root), key=lambda e: e.name):
        m = _DIR.match(entry.name)
        if not entry.is_dir() or m is None:
            continue
        for f in sorted(os.scandir(entry.path), key=lambda e: e.name):
            fm = _FILE.match(f.name)
            if fm is None or not f.is_file():
                continue
            seg = out.setdefault(fm.group(2), RemoteObjects(
                m.group(1), int(m.group(2)), m.group(3), fm.group(2), int(fm.group(1))))
            seg.files[fm.group(3)] = f.path
    return out
