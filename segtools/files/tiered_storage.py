"""The folder layout of Kafka's test plugin ``LocalTieredStorage`` (kafka-storage's test jar):
under its ``dir``, a ``kafka-tiered-storage/`` folder with one folder per partition,
``<topic>-<partition>-<topicId>/``, holding ``<startOffset, 20 digits>-<segmentId>.<suffix>``
per remote segment (suffixes of ``RemoteLogSegmentFileset``; the .txnindex is optional).
Seen so on a real 4.3.1 cluster. A remote ``.log`` object is a segment byte for byte.

Read only: :func:`scan` for the tier audit (every object of every segment),
:func:`remote_partitions` for the readers (a remote folder given as an input)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

STORAGE_DIR = "kafka-tiered-storage"
_DIR = re.compile(r"^(.+)-(\d+)-([A-Za-z0-9_-]{22})$")
_FILE = re.compile(r"^(\d{20})-([A-Za-z0-9_-]{22})(\.[a-z_]+)$")
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


@dataclass
class RemotePartition:
    """One partition's folder: its remote ``.log`` objects in start-offset order."""

    topic: str
    partition: int
    topic_id: str
    path: str
    logs: list[tuple[int, str]]      # (start offset, path)
    files: list[str]                 # every object file, by name


def remote_start_offset(path: str) -> int | None:
    """The start offset a remote object's name spells, or None for another name."""
    m = _FILE.match(os.path.basename(path))
    return None if m is None else int(m.group(1))


def remote_segment_id(path: str) -> str | None:
    """The segment id a remote object's name carries, or None for another name."""
    m = _FILE.match(os.path.basename(path))
    return None if m is None else m.group(2)


def _partition_dirs(root: str) -> list[tuple[re.Match[str], str]]:
    """The partition folders ``root`` stands for (the plugin's dir, its storage folder, a
    copy of it under another name, or one partition folder)."""
    name = os.path.basename(os.path.normpath(root))
    m = _DIR.match(name)
    if m is not None:
        return [(m, root)]
    inner = os.path.join(root, STORAGE_DIR)
    if os.path.isdir(inner):  # the plugin's ``dir`` was given, not its storage folder
        root = inner
    return [(m, e.path) for e in sorted(os.scandir(root), key=lambda e: e.name)
            if e.is_dir() and (m := _DIR.match(e.name)) is not None]


def _objects(path: str) -> list[tuple[re.Match[str], str]]:
    return [(fm, f.path) for f in sorted(os.scandir(path), key=lambda e: e.name)
            if f.is_file() and (fm := _FILE.match(f.name)) is not None]


def scan(root: str) -> dict[str, RemoteObjects]:
    """segment id -> its objects, for every partition folder under ``root`` (read only)."""
    out: dict[str, RemoteObjects] = {}
    for m, path in _partition_dirs(root):
        for fm, fpath in _objects(path):
            seg = out.setdefault(fm.group(2), RemoteObjects(
                m.group(1), int(m.group(2)), m.group(3), fm.group(2), int(fm.group(1))))
            seg.files[fm.group(3)] = fpath
    return out


def remote_partitions(root: str) -> list[RemotePartition] | None:
    """The partitions of a LocalTieredStorage folder given as an input, or None when ``root``
    is not one (neither the plugin's dir, nor its storage folder, nor a partition folder
    holding remote objects)."""
    dirs = _partition_dirs(root)
    if not dirs:
        return None
    out = []
    for m, path in dirs:
        objs = _objects(path)
        logs = sorted((int(fm.group(1)), p) for fm, p in objs if fm.group(3) == ".log")
        out.append(RemotePartition(m.group(1), int(m.group(2)), m.group(3), path, logs,
                                   [p for _, p in objs]))
    return out if any(p.files for p in out) else None
