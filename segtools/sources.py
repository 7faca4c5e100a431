"""Resolve user-given paths into the partition replicas they hold.

A user may name a segment file, a partition dir, a broker log dir, or a folder of broker
dirs (``broker-<id>/``, as `segtools simulate` writes). Commands that work per partition
(export, compare) see one :class:`PartitionSource` per (broker, topic, partition).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from segtools.errors import InputError

_SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
_BROKER_DIR_RE = re.compile(r"^broker-(\d+)$")


@dataclass(frozen=True)
class PartitionSource:
    """One replica of one partition: where its segments are and which broker holds it."""

    topic: str
    partition: int
    segments: tuple[str, ...]          # .log paths in base-offset order
    partition_dir: str | None = None   # None when the user named single segment files
    log_dir: str | None = None
    broker: int | None = None
    state: str = ""                    # "", "delete", "future", "stray"
    extra: dict = field(default_factory=dict, compare=False, hash=False)


def broker_id_of(log_dir: str | os.PathLike[str]) -> int | None:
    """broker.id / node.id from meta.properties, else the number in a `broker-<id>` name."""
    props_path = Path(log_dir) / "meta.properties"
    if props_path.is_file():
        from segtools.checkpoints import read_meta_properties

        try:
            props = read_meta_properties(props_path)
        except Exception:  # noqa: BLE001 - an unreadable meta.properties is reported elsewhere
            props = {}
        for key in ("node.id", "broker.id"):
            if key in props:
                try:
                    return int(props[key])
                except ValueError:
                    pass
    match = _BROKER_DIR_RE.match(Path(log_dir).name)
    return int(match.group(1)) if match else None


def _is_log_dir(path: Path) -> bool:
    markers = ("meta.properties", "replication-offset-checkpoint", "recovery-point-offset-checkpoint",
               "log-start-offset-checkpoint")
    return any((path / m).exists() for m in markers)


def _is_partition_dir(path: Path) -> bool:
    from segtools.logdir import parse_partition_dir_name

    try:
        parse_partition_dir_name(path.name)
    except Exception:  # noqa: BLE001 - not a partition dir name
        return False
    return any(p.suffix in (".log", ".index", ".timeindex") for p in path.iterdir())


def _from_partition_dir(pdir, log_dir: str | None, broker: int | None) -> PartitionSource:
    segments = tuple(str(s.log_path) for s in pdir.segments if s.log_path is not None)
    return PartitionSource(topic=pdir.topic, partition=pdir.partition, segments=segments,
                           partition_dir=str(pdir.path), log_dir=log_dir, broker=broker,
                           state=getattr(pdir, "state", ""))


def resolve_sources(paths: list[str | os.PathLike[str]]) -> list[PartitionSource]:
    """Every partition replica under ``paths``, sorted by (topic, partition, broker)."""
    from segtools.logdir import open_log_dir, open_partition_dir, parse_partition_dir_name

    found: list[PartitionSource] = []
    loose_segments: dict[tuple[str, int, str], list[str]] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InputError(f"{path}: no such file or directory")
        if not path.is_dir() and not path.is_file():
            raise InputError(f"{path}: not a regular file or directory")
        if path.is_file():
            if not _SEGMENT_RE.match(path.name):
                raise InputError(f"{path}: not a Kafka segment file (<20-digit offset>.log)")
            try:
                topic, partition, _ = parse_partition_dir_name(path.parent.name)
            except Exception:  # noqa: BLE001 - a segment copied out of its partition dir
                topic, partition = "", -1
            loose_segments.setdefault((topic, partition, str(path.parent)), []).append(str(path))
            continue
        broker_dirs = sorted(
            (p for p in path.iterdir() if p.is_dir() and _BROKER_DIR_RE.match(p.name)),
            key=lambda p: int(_BROKER_DIR_RE.match(p.name).group(1)),  # type: ignore[union-attr]
        )
        if broker_dirs and not _is_log_dir(path):
            candidates = broker_dirs
        elif _is_partition_dir(path):
            log_dir = path.parent
            pdir = open_partition_dir(path)
            found.append(_from_partition_dir(pdir, str(log_dir), broker_id_of(log_dir)))
            continue
        else:
            candidates = [path]
        for log_dir in candidates:
            broker = broker_id_of(log_dir)
            for pdir in open_log_dir(log_dir).partitions:
                found.append(_from_partition_dir(pdir, str(log_dir), broker))
    for (topic, partition, parent), segs in loose_segments.items():
        segs.sort()
        found.append(PartitionSource(topic=topic, partition=partition, segments=tuple(segs),
                                     partition_dir=parent, log_dir=None, broker=None))
    found.sort(key=lambda s: (s.topic, s.partition, -1 if s.broker is None else s.broker,
                              s.log_dir or ""))
    return found
