"""Election history from the KRaft metadata log (FORENSICS.md A.9).

Replaying ``PartitionRecord`` / ``PartitionChangeRecord`` gives, per leader epoch, the leader,
its ISR and whether the election was unclean (LeaderRecoveryState = 1 = RECOVERING, or the ISR
forced to the new leader alone while the old ISR did not contain it). Input is what
``segtools.internal.metadata.decode_record`` returns: ``(type_name, version, data)``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from segtools.formats.names import offset_from_filename

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
    #: every PartitionRecord / PartitionChangeRecord, in log order, as the report's
    #: ``metadata_changes`` (CONTRACT.md section 4): what the HTML report draws
    changes: list[dict[str, Any]] = field(default_factory=list)

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


class Histories(dict):
    """``{(topic, partition): PartitionHistory}`` plus the cluster's broker events
    (registrations, fencing, controlled shutdown) in log order, for the report's
    ``metadata.brokers`` (CONTRACT.md section 4)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.brokers: list[dict[str, Any]] = []


_BROKER_EVENTS = {"RegisterBroker": "registered", "UnregisterBroker": "unregistered",
                  "FenceBroker": "fenced", "UnfenceBroker": "unfenced",
                  "BrokerRegistrationChange": "registration changed"}


def _where(meta: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (meta or {}).items() if v is not None}


def _broker_event(tname: str, data: dict[str, Any], meta: dict[str, Any] | None) -> dict[str, Any]:
    ev: dict[str, Any] = {**_where(meta), "event": _BROKER_EVENTS[tname],
                          "broker": _get(data, "brokerId", "id", "broker_id")}
    epoch = _get(data, "brokerEpoch", "epoch", "broker_epoch")
    if epoch is not None:
        ev["broker_epoch"] = int(epoch)
    fenced = _get(data, "fenced")
    if tname == "BrokerRegistrationChange":
        # int8 tri-state: -1 unchanged, 0 false, 1 true (BrokerRegistrationFencingChange)
        if fenced in (0, 1):
            ev["fenced"] = bool(fenced)
        shutdown = _get(data, "inControlledShutdown")
        if shutdown in (0, 1):
            ev["in_controlled_shutdown"] = bool(shutdown)
    elif fenced is not None:
        ev["fenced"] = bool(fenced)
    return ev


def replay(records: Iterable[tuple[Any, ...]]) -> Histories:
    """Histories keyed by (topic name, partition). Topic ids are resolved with TopicRecord.
    Each item is ``(type_name, version, data)``, optionally followed by a dict of where the
    record is (``offset``, ``timestamp_ms``, ``file``, batch ``position``) that the recorded
    changes carry."""
    names: dict[str, str] = {}
    by_id: dict[tuple[str, int], PartitionHistory] = {}
    out = Histories()
    for item in records:
        type_name, _version, data = item[0], item[1], item[2]
        meta = item[3] if len(item) > 3 else None
        tname = _short_name(type_name)
        if tname in _BROKER_EVENTS:
            out.brokers.append(_broker_event(tname, data, meta))
        elif tname == "Topic":
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
            elr = _get(data, "eligibleLeaderReplicas", "eligible_leader_replicas")
            change: dict[str, Any] = {**_where(meta), "record": tname}
            if tname == "Partition":
                epoch = int(_get(data, "leaderEpoch", "leader_epoch", default=0))
                hist.leader, hist.leader_epoch, hist.isr = leader, epoch, new_isr
                if leader >= 0:
                    hist.last_leader = leader
                hist.elections[epoch] = Election(epoch, leader, new_isr, recovery == RECOVERING)
                hist.changes.append({**change, "leader_epoch": epoch, "leader": leader,
                                     "isr": list(new_isr), "elr": None if elr is None else list(elr),
                                     "election": "unclean" if recovery == RECOVERING else "initial"})
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
                change["election"] = ("unclean" if recovery == RECOVERING or forced
                                      else "offline" if leader < 0 else "clean")
            elif recovery == RECOVERING and hist.leader_epoch in hist.elections:
                hist.elections[hist.leader_epoch].unclean = True
                change["election"] = "unclean"
            if recovery == 0:
                change["recovered"] = True       # LeaderRecoveryState back to RECOVERED
            hist.changes.append({**change, "leader_epoch": hist.leader_epoch, "leader": hist.leader,
                                 "isr": list(new_isr), "elr": None if elr is None else list(elr)})
            hist.isr = new_isr
    for (topic_id, pid), hist in by_id.items():
        hist.topic = names.get(topic_id, topic_id)
        out[(hist.topic, pid)] = hist
    return out


def load_histories(path: str | os.PathLike[str]) -> Histories:
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
    first = offset_from_filename(segs[0]) if segs else None
    snapshot = None
    if snaps and (first is None or first > 0):
        if first is None:
            snapshot = snaps[-1]          # no log left: the latest state there is
        else:                             # a snapshot ending before the log starts leaves a gap
            snapshot = next((f for f in snaps if offset_from_filename(f) >= first), None)
    decoded = []

    def read(file: str, min_offset: int) -> None:
        path = file
        for rb in columnar.iter_record_batches(path, topic="__cluster_metadata", partition=0):
            cols = [rb.column(c).to_pylist() for c in ("offset", "value", "is_control", "timestamp_ms",
                                                       "batch_position")]
            for off, value, control, ts, pos in zip(*cols):
                if control or value is None or off < min_offset:
                    continue
                try:
                    decoded.append((*decode_record(value), {"offset": off, "timestamp_ms": ts, "file": path,
                                                       "position": pos}))
                except SegtoolsError as exc:
                    raise InputError(f"{file}: metadata record at offset {off}: {exc}") from None

    start = 0
    if snapshot is not None:
        read(snapshot, 0)
        start = offset_from_filename(snapshot)
    for seg in segs:
        read(seg, start)
    return replay(decoded)
