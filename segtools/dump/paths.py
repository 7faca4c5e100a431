"""Which files a `segtools dump` argument stands for, in a stable order, and what kind each is.

What a path stands for is decided by :mod:`segtools.files.sources`, as for every other command. A
file is dumped as given. A partition directory expands to its files ordered by base offset,
then kind. A broker log directory expands to its root files, then its partition directories
ordered by topic and partition; a folder of broker dirs (``broker-1/ broker-2/``) to each
broker dir. Segment files in a folder not named like a partition (``.``, a copy in
``evidence/``) are ordered by base offset and kind too.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from segtools.formats.names import KRAFT_SNAPSHOT_RE, stem_offset

if TYPE_CHECKING:
    from segtools.files.sources import Resolution, ResolvedInput

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
    from segtools.errors import InputError
    from segtools.files.sources import parse_partition_dir_name

    try:
        topic, partition, _state = parse_partition_dir_name(name)
    except InputError:
        return None
    return topic, partition


def _segment_sort_key(path: str) -> tuple[int, int, int, str]:
    """Files without a base offset first, then base offset, then kind. The offset is read from
    the name by Kafka's rules (formats.names): the stem of a segment, index or producer
    snapshot file, the end offset of a KRaft snapshot."""
    name = os.path.basename(path)
    kind = file_kind(name)
    offset = stem_offset(name)
    if offset is None and (snapshot := KRAFT_SNAPSHOT_RE.match(name)) is not None:
        offset = int(snapshot["end_offset"])
    if offset is not None:
        return (1, offset, _KIND_ORDER.get(kind, 9), name)
    return (0, 0, 0, name)


def files_of(item: ResolvedInput) -> list[str]:
    """The files one resolved input stands for, in dump order: a log dir's root files, then
    its partition dirs (topic, partition, state), each by base offset then kind."""
    files: list[str] = []
    for p in item.partitions:
        files += p.files if item.kind == "segment" else sorted(p.files, key=_segment_sort_key)
    for ld in item.log_dirs:
        files += sorted(ld.root_files, key=_segment_sort_key)
        for p in ld.partitions:
            files += sorted(p.files, key=_segment_sort_key)
    return files


def resolve_inputs(paths: list[str]) -> Resolution:
    """What the dump arguments stand for (:func:`segtools.files.sources.resolve`); an unusable
    argument becomes an input of kind ``error`` so the others are still dumped; a file named
    twice is dumped twice, as Kafka's tool does."""
    from segtools.files.sources import resolve

    return resolve(paths, errors="collect", keep_duplicate_files=True)


def expand(path: str) -> list[str]:
    """The files ``path`` stands for (itself when it is a file); InputError when unusable."""
    item = resolve_inputs([path]).inputs[0]
    if item.error is not None:
        raise item.error
    return files_of(item)
