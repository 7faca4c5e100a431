"""A partition's history across the tiers: the remote segments of a LocalTieredStorage folder
given as an input (files/tiered_storage.py) in front of a local replica's segments, as Kafka
serves them (below the replica's first local offset from the remote tier, then locally)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from segtools.errors import InputError
from segtools.files.sources import PartitionSource
from segtools.files.tiered_storage import remote_segment_id, remote_start_offset
from segtools.formats.names import stem_offset
from segtools.records.batches import iter_batches
from segtools.tier import states
from segtools.tier.audit import audit


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


def _below(remote: PartitionSource, local: PartitionSource, served: set[str] | None
           ) -> tuple[list[str], list[int]]:
    """The remote segments that continue the local replica downwards without a hole: from
    the one ending right below its first offset, down to the first that is not served (or
    leaves a hole). An InputError when one straddles the first local offset (both tiers hold
    those offsets)."""
    first_local = stem_offset(local.segments[0]) if local.segments else None
    starts = [_start(s) for s in remote.segments]
    ends: list[int | None] = [starts[i + 1] - 1 if i + 1 < len(starts) else None
                              for i in range(len(starts))]
    below = [i for i in range(len(starts)) if first_local is None or starts[i] < first_local]
    if below and ends[below[-1]] is None:
        ends[below[-1]] = _last_offset(remote.segments[below[-1]])
    kept: list[int] = []
    reach = first_local
    for i in reversed(below):
        end = ends[i]
        if reach is not None and end is not None and end >= reach:
            raise InputError(
                f"{remote.segments[i]}: offsets {starts[i]}..{end} of {remote.topic}-"
                f"{remote.partition} are both remote and local in {local.partition_dir} (from "
                f"{first_local}); give the remote folder alone, or export each apart with "
                "--by-broker")
        if served is not None and remote_segment_id(remote.segments[i]) not in served:
            break
        if reach is not None and end is not None and end != reach - 1:
            break   # a hole: what is below it does not continue this history
        kept.insert(0, i)
        reach = starts[i]
    sizes = [remote.segment_sizes[i] if i < len(remote.segment_sizes) else 0 for i in kept]
    return [remote.segments[i] for i in kept], sizes


def served_segments(paths: Sequence[str | os.PathLike[str]], sources: list[PartitionSource],
                    warnings: list[str] | None = None) -> set[str] | None:
    """The remote segments Kafka would serve, by the ``__remote_log_metadata`` on the evidence:
    FINISHED and in lineage with every replica (the tier audit). None when no remote tier is
    among the inputs; empty (nothing proven served) when no metadata is."""
    if not any(s.remote_tier for s in sources):
        return None
    try:
        report = audit([os.fspath(p) for p in paths])
    except InputError as e:
        if warnings is not None:
            warnings.append(f"the remote tier is not read: nothing on the evidence says which of "
                            f"its objects Kafka serves ({e})")
        return set()
    refused = {f.segment_id for f in report.findings if f.kind == "out_of_lineage"}
    served = {s.segment_id for s in report.segments if s.state == states.FINISHED} - refused
    if warnings is not None and refused:
        warnings.append(f"{len(refused)} remote segment(s) out of lineage are not read "
                        "(segtools tier names them)")
    return served


def across_tiers(sources: list[PartitionSource], *, every_replica: bool = False,
                 served: set[str] | None = None) -> list[PartitionSource]:
    """``sources`` with each remote partition folder merged into the local replica of the same
    partition, when there is exactly one (more replicas: each stays as it is, the remote folder
    too, so the caller's own rule about repeated partitions applies). ``every_replica``
    (compare): merged into each local replica, the history each would serve as leader.
    ``served``: the remote segment ids to read (others are left out), all when None."""
    remote = {(s.topic, s.partition): s for s in sources if s.remote_tier}
    if not remote:
        return sources
    local: dict[tuple[str, int], list[PartitionSource]] = {}
    for s in sources:
        if not s.remote_tier and s.state == "":
            local.setdefault((s.topic, s.partition), []).append(s)
    out = []
    for s in sources:
        key = (s.topic, s.partition)
        reps = local.get(key, [])
        merge = len(reps) >= 1 if every_replica else len(reps) == 1
        if s.remote_tier and merge:
            continue                                   # merged into the replicas below
        if not s.remote_tier and key in remote and s in reps and merge:
            segs, sizes = _below(remote[key], s, served)
            s = dataclasses.replace(
                s, segments=(*segs, *s.segments), segment_sizes=(*sizes, *s.segment_sizes),
                files=(*segs, *s.files), extra={**s.extra, "remote_segments": len(segs)})
        out.append(s)
    return out
