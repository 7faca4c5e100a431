"""Election history from the KRaft metadata log (FORENSICS.md A.9).

Replaying ``PartitionRecord`` / ``PartitionChangeRecord`` gives, per leader epoch, the leader,
its ISR and whether the election was unclean (LeaderRecoveryState = 1 = RECOVERING, or the ISR
forced to the new leader alone while the old ISR did not contain it). Input is what
``segtools.internal.metadata.decode_record`` returns: ``(type_name, version, data)``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable

NO_LEADER_CHANGE = -2
RECOVERING = 1


@dataclass(slots=True)
class Election:
    epoch: int
    leader: int
    isr: tuple[int, ...]
    unclean: bool


@dataclass(slots=True)
class PartitionHistory:
    topic: str | None
    topic_id: str | None
    partition: int
    elections: dict[int, Election] = field(default_factory=dict)
    leader: int | None = None
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    last_leader: int | None = None

    @property
    def expected_leader(self) -> int | None:
        """The current leader; for an offline partition (leader -1) the last leader when it is
        still in the ISR (it is the only broker a clean election can pick), else the first ISR
        member."""
        if self.leader is not None and self.leader >= 0:
            return self.leader
        if self.last_leader is not None and (not self.isr or self.last_leader in self.isr):
            return self.last_leader
        return self.isr[0] if self.isr else None

    def unclean_epochs_after(self, epoch: int, up_to: int | None = None) -> list[int]:
        return sorted(e for e, el in self.elections.items()
                      if el.unclean and e > epoch and (up_to is None or e <= up_to))


def _get(data: dict[str, Any], *names: str, default: Any = None) -> Any:
    for n in names:
        if n in data:
            return data[n]
    return default


def _short_name(type_name: str) -> str:
    """"PARTITION_CHANGE_RECORD" or "PartitionChangeRecord" -> "PartitionChange"."""
    if "_" in type_name or type_name.isupper():
        words = type_name.lower().split("_")
        name = "".join(w.capitalize() for w in words)
    else:
        name = type_name
    return name.removesuffix("Record")


def replay(records: Iterable[tuple[str, int, dict[str, Any]]]) -> dict[tuple[str, int], PartitionHistory]:
    """Histories keyed by (topic name, partition). Topic ids are resolved with TopicRecord."""
    names: dict[str, str] = {}
    by_id: dict[tuple[str, int], PartitionHistory] = {}
    for type_name, _version, data in records:
        tname = _short_name(type_name)
        if tname == "Topic":
            names[str(_get(data, "topicId", "topic_id"))] = str(_get(data, "name"))
        elif tname in ("Partition", "PartitionChange"):
            topic_id = str(_get(data, "topicId", "topic_id"))
            pid = int(_get(data, "partitionId", "partition_id", default=0))
            hist = by_id.get((topic_id, pid))
            if hist is None:
                hist = by_id[(topic_id, pid)] = PartitionHistory(None, topic_id, pid)
            isr = _get(data, "isr")
            leader = int(_get(data, "leader", default=NO_LEADER_CHANGE))
            recovery = int(_get(data, "leaderRecoveryState", "leader_recovery_state", default=-1))
            new_isr = tuple(int(x) for x in isr) if isr is not None else hist.isr
            if tname == "Partition":
                epoch = int(_get(data, "leaderEpoch", "leader_epoch", default=0))
                hist.leader, hist.leader_epoch, hist.isr = leader, epoch, new_isr
                if leader >= 0:
                    hist.last_leader = leader
                hist.elections[epoch] = Election(epoch, leader, new_isr, recovery == RECOVERING)
                continue
            # A PartitionChangeRecord that sets a leader (even -1) raises the epoch by one;
            # in KRaft before MV 3.6 an ISR change also did. We only know the leader changed.
            if leader != NO_LEADER_CHANGE:
                old_isr = hist.isr
                epoch = hist.leader_epoch + 1
                forced = (leader >= 0 and new_isr == (leader,) and leader not in old_isr)
                hist.leader, hist.leader_epoch = leader, epoch
                if leader >= 0:
                    hist.last_leader = leader
                hist.elections[epoch] = Election(epoch, leader, new_isr,
                                                 recovery == RECOVERING or forced)
            elif recovery == RECOVERING and hist.leader_epoch in hist.elections:
                hist.elections[hist.leader_epoch].unclean = True
            hist.isr = new_isr
    out: dict[tuple[str, int], PartitionHistory] = {}
    for (topic_id, pid), hist in by_id.items():
        hist.topic = names.get(topic_id, topic_id)
        out[(hist.topic, pid)] = hist
    return out


def load_histories(path: str | os.PathLike[str]) -> dict[tuple[str, int], PartitionHistory]:
    """Replay a KRaft metadata log: ``path`` is ``__cluster_metadata-0`` or a dir holding it
    (a controller's or a combined broker's log dir). Control batches are skipped; a record
    that does not decode is an error naming its offset.

    When the log no longer starts at offset 0 (KRaft deletes segments a snapshot covers), the
    state before it comes from the ``<end offset>-<epoch>.checkpoint`` snapshot the log
    continues from (the earliest one at or past the first segment), as KRaft itself loads it;
    the log is then replayed from the snapshot's end offset on."""
    import re

    from segtools import columnar
    from segtools.errors import InputError, SegtoolsError
    from segtools.internal.metadata import decode_record
    from segtools.sources import resolve

    found = resolve([path], check_copies=False)
    item = found.inputs[0]
    if item.kind == "segment" or (item.kind == "nothing" and not found.metadata_logs):
        raise InputError(f"{path}: not a KRaft metadata log dir (__cluster_metadata-0)")
    metadata = [s for s in (*item.all_partitions, *found.metadata_logs)
                if s.topic == "__cluster_metadata" and s.state == ""]
    if not metadata:
        raise InputError(f"{path}: no KRaft metadata log (__cluster_metadata-0) here")
    log = metadata[0]
    segs = list(log.segments)
    snaps = sorted(f for f in log.files
                   if re.fullmatch(r"\d{20}-\d{10}\.checkpoint", os.path.basename(f)))
    first = int(os.path.basename(segs[0])[:20]) if segs else None
    snapshot = None
    if snaps and (first is None or first > 0):
        if first is None:
            snapshot = snaps[-1]          # no log left: the latest state there is
        else:                             # a snapshot ending before the log starts leaves a gap
            snapshot = next((f for f in snaps if int(os.path.basename(f)[:20]) >= first), None)
    decoded = []

    def read(file: str, min_offset: int) -> None:
        for rb in columnar.iter_record_batches(file, topic="__cluster_metadata",
                                               partition=0):
            for off, value, control in zip(rb.column("offset").to_pylist(), rb.column("value").to_pylist(),
                                           rb.column("is_control").to_pylist()):
                if control or value is None or off < min_offset:
                    continue
                try:
                    decoded.append(decode_record(value))
                except SegtoolsError as exc:
                    raise InputError(f"{file}: metadata record at offset {off}: {exc}") from None

    start = 0
    if snapshot is not None:
        read(snapshot, 0)
        start = int(os.path.basename(snapshot)[:20])
    for seg in segs:
        read(seg, start)
    return replay(decoded)
