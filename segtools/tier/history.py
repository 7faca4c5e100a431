"""A partition's history across the tiers: the remote segments of a LocalTieredStorage folder
given as an input (files/tiered_storage.py) in front of a local replica's segments, as Kafka
serves them (below the replica's first local offset from the remote tier, then locally)."""

from __future__ import annotations

import dataclasses

from segtools.errors import InputError
from segtools.files.sources import PartitionSource
from segtools.files.tiered_storage import remote_start_offset
from segtools.formats.names import stem_offset
from segtools.records.batches import iter_batches


def is_remote(src: PartitionSource) -> bool:
    return src.extra.get("tier") == "remote"


def _start(path: str) -> int:
    start = remote_start_offset(path)
    if start is None:   # remote_partitions lists only objects named so
        raise InputError(f"{path}: not a LocalTieredStorage object name")
    return start


def _last_offset(path: str) -> int | None:
    last = None
    for batch in iter_batches(path):
        last = batch.last_offset
    return last


def _below(remote: PartitionSource, local: PartitionSource) -> tuple[list[str], list[int]]:
    """The remote segments wholly below the local replica's first offset (and their sizes);
    an InputError when one straddles it (the two tiers hold the same offsets)."""
    first_local = stem_offset(local.segments[0]) if local.segments else None
    starts = [_start(s) for s in remote.segments]
    kept: list[str] = []
    sizes: list[int] = []
    for i, seg in enumerate(remote.segments):
        if first_local is not None and starts[i] >= first_local:
            break
        end = starts[i + 1] - 1 if i + 1 < len(starts) else _last_offset(seg)
        if first_local is not None and end is not None and end >= first_local:
            raise InputError(
                f"{seg}: offsets {starts[i]}..{end} of {remote.topic}-{remote.partition} are both "
                f"remote and local in {local.partition_dir} (from {first_local}); give the "
                "remote folder alone, or export each apart with --by-broker")
        kept.append(seg)
        sizes.append(remote.segment_sizes[i] if i < len(remote.segment_sizes) else 0)
    return kept, sizes


def across_tiers(sources: list[PartitionSource], *, every_replica: bool = False
                 ) -> list[PartitionSource]:
    """``sources`` with each remote partition folder merged into the local replica of the same
    partition, when there is exactly one (more replicas: each stays as it is, the remote folder
    too, so the caller's own rule about repeated partitions applies). ``every_replica``
    (compare): merged into each local replica, the history each would serve as leader."""
    remote = {(s.topic, s.partition): s for s in sources if is_remote(s)}
    if not remote:
        return sources
    local: dict[tuple[str, int], list[PartitionSource]] = {}
    for s in sources:
        if not is_remote(s) and s.state == "":
            local.setdefault((s.topic, s.partition), []).append(s)
    out = []
    for s in sources:
        key = (s.topic, s.partition)
        reps = local.get(key, [])
        merge = len(reps) >= 1 if every_replica else len(reps) == 1
        if is_remote(s) and merge:
            continue                                   # merged into the replicas below
        if not is_remote(s) and key in remote and s in reps and merge:
            segs, sizes = _below(remote[key], s)
            s = dataclasses.replace(
                s, segments=(*segs, *s.segments), segment_sizes=(*sizes, *s.segment_sizes),
                files=(*segs, *s.files), extra={**s.extra, "remote_segments": len(segs)})
        out.append(s)
    return out
