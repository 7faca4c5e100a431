"""Consumer groups that read records later lost (FORENSICS.md S21, KIP-320).

A group's last commit for a partition is (offset o, leader epoch e) in ``__consumer_offsets``.
Looked up in the surviving lineage with Kafka's own rule (the one a consumer runs to detect
truncation): the end of epoch e there is T; when T < o, the group consumed [T, o) from a
lineage that no longer exists. Commits without an epoch (older clients, -1) can only be
checked against the log end.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from segtools.errors import SegtoolsError
from segtools.forensics.epochs import UNDEFINED_EPOCH, EpochMap
from segtools.forensics.findings import Finding

OFFSET_COMMIT_KEY = 1
CONSUMER_OFFSETS = "__consumer_offsets"

#: (group, topic, partition) -> (position in __consumer_offsets, committed offset, epoch)
Commits = dict[tuple[str, str, int], tuple[int, int, int]]


def commits_from_records(rows: Iterable[tuple[int, bytes | None, bytes | None]]) -> Commits:
    """Latest offset commit per (group, topic, partition) from __consumer_offsets records given
    as (offset, key, value) of data records; tombstones delete. Records that do not decode are
    skipped: dump reports them, they prove nothing about consumption."""
    from segtools.internal_topics.consumer_offsets import decode_key, decode_value

    out: Commits = {}
    for pos, key, value in rows:
        if key is None:
            continue
        try:
            k = decode_key(bytes(key))
            if k["type"] != OFFSET_COMMIT_KEY:
                continue
            data = k["data"]
            ident = (str(data["group"]), str(data["topic"]), int(data["partition"]))
            if ident in out and out[ident][0] > pos:
                continue
            if value is None:
                out.pop(ident, None)
                continue
            v = decode_value(bytes(value), key=bytes(key))
            if v is None:
                continue
            vd = v["data"]
            out[ident] = (pos, int(vd["offset"]), int(vd.get("leaderEpoch", UNDEFINED_EPOCH)))
        except (SegtoolsError, KeyError, TypeError, ValueError):
            continue
    return out


def consumed_divergence(offset: int, epoch: int, lineage: EpochMap) -> int | None:
    """T when a group that committed (offset, epoch) consumed records [T, offset) that the
    surviving lineage does not hold; None when its position is consistent with the lineage."""
    if epoch < 0 or not lineage.entries:
        return lineage.log_end_offset if offset > lineage.log_end_offset else None
    ref_epoch, end = lineage.end_offset_for(epoch)
    if ref_epoch == epoch and offset <= end:
        return None
    t = min(end, offset)
    return t if t < offset else None


def group_findings(commits: Commits, topic: str, partition: int, lineage: EpochMap) -> list[Finding]:
    out = []
    for (group, t, p), (_pos, offset, epoch) in sorted(commits.items()):
        if (t, p) != (topic, partition):
            continue
        fork = consumed_divergence(offset, epoch, lineage)
        if fork is not None:
            out.append(Finding("GROUP_CONSUMED_DIVERGENT",
                               f"group {group!r} committed offset {offset} (leader epoch {epoch}): "
                               f"records [{fork}, {offset}) it consumed are not in the surviving "
                               "lineage", offset=fork))
    return out


def merge_commits(parts: Iterable[Commits]) -> Commits:
    """Commits decoded per __consumer_offsets partition, merged (a key lives in one partition)."""
    out: Commits = {}
    for part in parts:
        for ident, c in part.items():
            if ident not in out or out[ident][0] < c[0]:
                out[ident] = c
    return out


def attach_group_findings(reports: Iterable[Any], commits: Commits) -> None:
    """Add GROUP_CONSUMED_DIVERGENT findings to each partition report (S21)."""
    if not commits:
        return
    by_tp: dict[tuple[str, int], Commits] = {}
    for ident, c in commits.items():
        by_tp.setdefault((ident[1], ident[2]), {})[ident] = c
    for rep in reports:
        v = rep.verdict
        mine = by_tp.get((v.topic, v.partition))
        if not mine:
            continue
        ref = next((r for r in v.replicas if r.is_reference), None)
        if ref is None:
            continue
        lineage = EpochMap(entries=list(v.reference_epochs), log_end_offset=ref.log_end_offset)
        rep.extra_findings.extend(group_findings(mine, v.topic, v.partition, lineage))
