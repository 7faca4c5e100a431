"""Which files a `segtools dump` argument stands for, in a stable order, and what kind each is.

A file is dumped as given. A partition directory expands to its files ordered by base offset,
then kind. A broker log directory expands to its root files, then its partition directories
ordered by topic and partition (a folder of log dirs, e.g. ``broker-1/ broker-2/``, recurses).
Segment files in a folder not named like a partition (``.``, a copy in ``evidence/``) are
ordered by base offset and kind too.
"""

from __future__ import annotations

import os

OFFSET_CHECKPOINTS = frozenset({
    "replication-offset-checkpoint", "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint", "cleaner-offset-checkpoint",
})

#: exact file names dumped in segtools' own format (Kafka's tool does not know them)
NAMED_KINDS = {
    **{name: "offset_checkpoint" for name in OFFSET_CHECKPOINTS},
    "leader-epoch-checkpoint": "leader_epoch_checkpoint",
    "partition.metadata": "partition_metadata",
    "meta.properties": "meta_properties",
    "quorum-state": "quorum_state",
    ".kafka_cleanshutdown": "clean_shutdown",
}

#: Kafka's dispatch on the text after the last '.' (DUMP_LOG.md section 2)
SUFFIX_KINDS = {
    ".log": "log",
    ".checkpoint": "kraft_snapshot",
    ".index": "index",
    ".timeindex": "time_index",
    ".snapshot": "producer_snapshot",
    ".txnindex": "txn_index",
}

_KIND_ORDER = {"log": 0, "index": 1, "time_index": 2, "txn_index": 3, "producer_snapshot": 4,
               "kraft_snapshot": 5}
_MAX_DEPTH = 3


def file_kind(name: str) -> str:
    """The dump kind of a file name; "unknown" for what Kafka would ignore."""
    named = NAMED_KINDS.get(name)
    if named is not None:
        return named
    dot = name.rfind(".")
    if dot < 0:
        return "unknown"
    return SUFFIX_KINDS.get(name[dot:], "unknown")


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """``<topic>-<partition>`` (also ``...-delete``/``-future``/``-stray`` forms), else None."""
    try:
        from segtools.logdir import parse_partition_dir_name
        topic, partition, _state = parse_partition_dir_name(name)
        return str(topic), int(partition)
    except Exception:  # logdir not there yet or a name it rejects: fall back to the plain form
        pass
    topic, sep, partition = name.rpartition("-")
    if sep and topic and partition.isdigit():
        return topic, int(partition)
    return None


def _segment_sort_key(name: str) -> tuple[int, int, int, str]:
    """Files without a base offset first, then base offset, then kind."""
    prefix = name.split(".")[0].split("-")[0]
    kind = file_kind(name)
    if prefix.isdigit() and len(prefix) >= 20:
        return (1, int(prefix), _KIND_ORDER.get(kind, 9), name)
    return (0, 0, 0, name)


def _is_partition_dir(path: str) -> bool:
    if parse_partition_dir(os.path.basename(os.path.normpath(path))) is None:
        return False
    with os.scandir(path) as it:
        return not any(e.is_dir() and parse_partition_dir(e.name) is not None for e in it)


def expand(path: str, depth: int = 0, *, _seen: set[str] | None = None) -> list[str]:
    """The files ``path`` stands for (itself when it is not a directory). A directory reached
    twice (a symlink loop or a second link to the same folder) is expanded once."""
    if not os.path.isdir(path):
        return [path]
    seen = set() if _seen is None else _seen
    real = os.path.realpath(path)
    if real in seen:
        return []
    seen.add(real)
    join = (lambda n: path + n) if path.endswith("/") else (lambda n: path + "/" + n)
    with os.scandir(path) as it:
        entries = sorted(it, key=lambda e: e.name)
    files = [e.name for e in entries if not e.is_dir()]
    dirs = [e.name for e in entries if e.is_dir()]
    if _is_partition_dir(path):
        return [join(n) for n in sorted(files, key=_segment_sort_key)]
    result = [join(n) for n in sorted(files, key=_segment_sort_key)]
    partitions = []
    others = []
    for d in dirs:
        parsed = parse_partition_dir(d)
        if parsed is not None:
            partitions.append((parsed[0], parsed[1], d))
        else:
            others.append(d)
    for _, _, d in sorted(partitions):
        result += expand(join(d), depth + 1, _seen=seen)
    if depth < _MAX_DEPTH:
        for d in others:
            result += expand(join(d), depth + 1, _seen=seen)
    return result
