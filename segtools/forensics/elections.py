"""Election history from the KRaft metadata log (FORENSICS.md A.9).

Replaying ``PartitionRecord`` / ``PartitionChangeRecord`` gives, per leader epoch, the leader,
its ISR and the election's class (KIP-966, docs/REPORT.md "Election classes"): ``isr`` (the
new leader was in the ISR), ``elr`` (ISR empty, leader taken from the eligible leader
replicas: clean), ``last_known_leader`` (ISR and ELR empty, the one last known leader
elected: unclean) or ``unclean`` (anyone else: LeaderRecoveryState = 1 = RECOVERING, or the
ISR forced to the new leader alone while the old ISR did not contain it). Input is what
``segtools.internal_topics.metadata.decode_record`` returns: ``(type_name, version, data)``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from segtools.formats.names import KRAFT_SNAPSHOT_RE, offset_from_filename

NO_LEADER_CHANGE = -2
RECOVERING = 1


#: election classes (docs/REPORT.md "Election classes"); the first two are clean
CLASS_ISR, CLASS_ELR = "isr", "elr"
CLASS_LAST_KNOWN_LEADER, CLASS_UNCLEAN = "last_known_leader", "unclean"
CLASS_INITIAL, CLASS_OFFLINE = "initial", "offline"
UNCLEAN_CLASSES = (CLASS_LAST_KNOWN_LEADER, CLASS_UNCLEAN)

#: metadata.version feature level of Kafka 4.0-IV0 (server-common MetadataVersion)
METADATA_VERSION_4_0 = 22

#: ConfigRecord resource types (org.apache.kafka.common.config.ConfigResource.Type)
_TOPIC_RESOURCE, _BROKER_RESOURCE = 2, 4


@dataclass(slots=True)
class Election:
    epoch: int
    leader: int
    isr: tuple[int, ...]
    unclean: bool
    election_class: str = ""
    offset: int | None = None          # of the metadata record that made it


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
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    #: the current assignment (PartitionRecord/PartitionChangeRecord ``replicas``), in order
    replicas: tuple[int, ...] = ()
    #: spans (metadata offset, timestamp ms, end offset, end ms, isr) where ELR was on and
    #: the ISR was below min.insync.replicas: the leader's high watermark stayed put
    hw_frozen: list[dict[str, Any]] = field(default_factory=list)
    #: FeatureLevelRecord transaction.version (None: no record, i.e. 0 / transactions v1)
    transaction_version: int | None = None
    #: Histories.unclean_shutdowns and Histories.brokers (every broker), for causes
    unclean_shutdowns: list[dict[str, Any]] = field(default_factory=list)
    broker_events: list[dict[str, Any]] = field(default_factory=list)
    #: per leader epoch, min.insync.replicas as ConfigRecords set it at each of its changes
    #: (None when one change had no such record: the broker's static default is not in the log)
    known_min_isr: dict[int, int | None] = field(default_factory=dict)

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

    def election_class(self, epoch: int) -> str | None:
        el = self.elections.get(epoch)
        return el.election_class or ("unclean" if el.unclean else None) if el is not None else None

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
        #: FeatureLevelRecord levels at the end of the log (``transaction.version``,
        #: ``eligible.leader.replicas.version``, ``metadata.version``)
        self.features: dict[str, int] = {}
        #: unclean restarts per broker (segtools.forensics.shutdowns)
        self.unclean_shutdowns: list[dict[str, Any]] = []
        #: (kind, broker, info) in log order: broker events and the brokers a partition change
        #: dropped from ISR/ELR without electing, what shutdowns.py reads
        self.timeline: list[tuple[str, int, dict[str, Any]]] = []


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


def classify_election(leader: int, old_isr: tuple[int, ...], old_elr: tuple[int, ...],
                      old_last_known: tuple[int, ...], new_isr: tuple[int, ...],
                      recovering: bool) -> str:
    """The KIP-966 class of a leader change, from the partition state before the record and
    the record itself. Kafka's PartitionChangeBuilder.electAnyLeader (metadata/src/main/java/
    org/apache/kafka/controller/PartitionChangeBuilder.java) tries, in order: a live ISR member;
    with an empty ISR, an ELR member (isValidNewLeader; tryElection then sets the ISR to it,
    clean); with ISR and ELR empty and one LastKnownElr member, that last known leader
    (canElectLastKnownLeader, an *unclean* result: ISR forced to it, RECOVERING); then, with
    unclean.leader.election.enable, any live replica (unclean)."""
    if leader < 0:
        return CLASS_OFFLINE
    if leader in old_isr:
        return CLASS_ISR
    if not old_isr and leader in old_elr:
        return CLASS_ELR
    forced = new_isr == (leader,)
    if recovering or forced:
        if not old_isr and not old_elr and old_last_known == (leader,):
            return CLASS_LAST_KNOWN_LEADER
        return CLASS_UNCLEAN
    # a reassignment or an ISR that grew in the same record: the leader is in the new ISR
    return CLASS_ISR


def _coarse(election_class: str) -> str:
    """The report's older ``election`` value (what the HTML report draws)."""
    if election_class in UNCLEAN_CLASSES:
        return "unclean"
    return {CLASS_OFFLINE: "offline", CLASS_INITIAL: "initial"}.get(election_class, "clean")


class _Configs:
    """min.insync.replicas per topic and the cluster default (ConfigRecord), for when the
    high watermark freezes (ISR below min ISR)."""

    def __init__(self) -> None:
        self.topic: dict[str, int] = {}
        self.default = 1       # Kafka's min.insync.replicas default
        self.default_set = False   # a dynamic cluster-wide value was recorded

    def apply(self, data: dict[str, Any]) -> None:
        if _get(data, "name") != "min.insync.replicas":
            return
        value = _get(data, "value")
        rtype, rname = _get(data, "resourceType"), str(_get(data, "resourceName", default=""))
        try:
            level = int(value) if value is not None else None
        except (TypeError, ValueError):
            return
        if rtype == _TOPIC_RESOURCE:
            if level is None:
                self.topic.pop(rname, None)
            else:
                self.topic[rname] = level
        elif rtype == _BROKER_RESOURCE and rname == "" and level is not None:
            self.default, self.default_set = level, True

    def min_isr(self, topic: str | None) -> int:
        return self.topic.get(topic or "", self.default)

    def known(self, topic: str | None) -> int | None:
        """min.insync.replicas when the log itself sets it (a topic or dynamic cluster config)."""
        if (topic or "") in self.topic:
            return self.topic[topic or ""]
        return self.default if self.default_set else None


def replay(records: Iterable[tuple[Any, ...]]) -> Histories:
    """Histories keyed by (topic name, partition). Topic ids are resolved with TopicRecord.
    Each item is ``(type_name, version, data)``, optionally followed by a dict of where the
    record is (``offset``, ``timestamp_ms``, ``file``, batch ``position``) that the recorded
    changes carry."""
    names: dict[str, str] = {}
    by_id: dict[tuple[str, int], PartitionHistory] = {}
    out = Histories()
    configs = _Configs()
    for item in records:
        type_name, _version, data = item[0], item[1], item[2]
        meta = item[3] if len(item) > 3 else None
        tname = _short_name(type_name)
        if tname in _BROKER_EVENTS:
            ev = _broker_event(tname, data, meta)
            out.brokers.append(ev)
            if ev["broker"] is not None:
                out.timeline.append((ev["event"], int(ev["broker"]), ev))
        elif tname == "Topic":
            names[str(_get(data, "topicId", "topic_id"))] = str(_get(data, "name"))
        elif tname == "FeatureLevel":
            out.features[str(_get(data, "name"))] = int(_get(data, "featureLevel", "feature_level", default=0))
        elif tname == "Config":
            configs.apply(data)
        elif tname in ("Partition", "PartitionChange"):
            topic_id = str(_get(data, "topicId", "topic_id"))
            pid = int(_get(data, "partitionId", "partition_id", default=0))
            hist = by_id.get((topic_id, pid))
            if hist is None:
                hist = by_id[(topic_id, pid)] = PartitionHistory(None, topic_id, pid)
            removed = _apply_partition(hist, tname, data, meta, out.features,
                                       configs.min_isr(names.get(topic_id)))
            known = configs.known(names.get(topic_id))
            seen = hist.known_min_isr.get(hist.leader_epoch, known)
            hist.known_min_isr[hist.leader_epoch] = (None if known is None or seen is None
                                                     else max(known, seen))
            # only with ELR on does the controller answer an unclean restart with removals
            # (ReplicationControlManager.handleBrokerShutdown)
            for b in removed if elr_enabled(out.features) else ():
                out.timeline.append(("removed", b, {**_where(meta), "topic_id": topic_id,
                                                    "partition": pid}))
    for (topic_id, pid), hist in by_id.items():
        hist.topic = names.get(topic_id, topic_id)
        out[(hist.topic, pid)] = hist
    from segtools.forensics.shutdowns import unclean_shutdowns_from_history

    out.unclean_shutdowns = unclean_shutdowns_from_history(out)
    out.brokers.extend(out.unclean_shutdowns)
    out.brokers.sort(key=lambda e: (e.get("offset") is None, e.get("offset") or 0))
    for hist in out.values():
        hist.unclean_shutdowns = out.unclean_shutdowns
        hist.broker_events = out.brokers
        hist.transaction_version = out.features.get("transaction.version")
    return out


def _ints(value: Any) -> tuple[int, ...] | None:
    return None if value is None else tuple(int(x) for x in value)


def _apply_partition(hist: PartitionHistory, tname: str, data: dict[str, Any],
                     meta: dict[str, Any] | None, features: dict[str, int], min_isr: int) -> list[int]:
    """Apply one partition record; returns the brokers a change without an election dropped
    from ISR and ELR together (how the controller answers an unclean restart)."""
    isr = _ints(_get(data, "isr"))
    leader = int(_get(data, "leader", default=NO_LEADER_CHANGE))
    recovery = int(_get(data, "leaderRecoveryState", "leader_recovery_state", default=-1))
    new_isr = isr if isr is not None else hist.isr
    elr = _ints(_get(data, "eligibleLeaderReplicas", "eligible_leader_replicas"))
    lke = _ints(_get(data, "lastKnownElr", "last_known_elr"))
    change: dict[str, Any] = {**_where(meta), "record": tname}
    replicas = _ints(_get(data, "replicas"))
    if replicas is not None:     # a reassignment (or the creation) sets the assignment
        hist.replicas = replicas
    old_isr, old_elr, old_lke = hist.isr, hist.elr, hist.last_known_elr
    if tname == "Partition":
        epoch = int(_get(data, "leaderEpoch", "leader_epoch", default=0))
        hist.leader, hist.leader_epoch, hist.isr = leader, epoch, new_isr
        hist.elr, hist.last_known_elr = elr or (), lke or ()
        if leader >= 0:
            hist.last_leader = leader
        cls = CLASS_UNCLEAN if recovery == RECOVERING else CLASS_INITIAL
        hist.elections[epoch] = Election(epoch, leader, new_isr, recovery == RECOVERING, cls,
                                         (meta or {}).get("offset"))
        change.update({"leader_epoch": epoch, "leader": leader, "isr": list(new_isr),
                       "elr": None if elr is None else list(elr),
                       "election": _coarse(cls), "election_class": cls})
        if lke:
            change["last_known_elr"] = list(lke)
        hist.changes.append(change)
        _track_frozen(hist, change, features, min_isr)
        return []
    # A PartitionChangeRecord that sets a leader (even -1) raises the epoch by one;
    # in KRaft before MV 3.6 an ISR change also did. We only know the leader changed.
    if leader != NO_LEADER_CHANGE:
        epoch = hist.leader_epoch + 1
        cls = classify_election(leader, old_isr, old_elr, old_lke, new_isr, recovery == RECOVERING)
        if leader == hist.leader and leader >= 0 and cls == CLASS_ISR:
            change["epoch_bump"] = True       # same leader, new epoch (ISR shrink before MV 3.6)
        hist.leader, hist.leader_epoch = leader, epoch
        if leader >= 0:
            hist.last_leader = leader
        hist.elections[epoch] = Election(epoch, leader, new_isr, cls in UNCLEAN_CLASSES, cls,
                                         (meta or {}).get("offset"))
        change["election"] = _coarse(cls)
        change["election_class"] = cls
    elif recovery == RECOVERING and hist.leader_epoch in hist.elections:
        el = hist.elections[hist.leader_epoch]
        el.unclean = True
        el.election_class = el.election_class if el.election_class in UNCLEAN_CLASSES else CLASS_UNCLEAN
        change["election"] = "unclean"
        change["election_class"] = el.election_class
    if recovery == 0:
        change["recovered"] = True       # LeaderRecoveryState back to RECOVERED
    if elr is not None:
        hist.elr = elr
    if lke is not None:
        hist.last_known_elr = lke
    hist.isr = new_isr
    change.update({"leader_epoch": hist.leader_epoch, "leader": hist.leader,
                   "isr": list(new_isr), "elr": None if elr is None else list(elr)})
    if lke is not None:
        change["last_known_elr"] = list(lke)
    hist.changes.append(change)
    _track_frozen(hist, change, features, min_isr)
    if leader != NO_LEADER_CHANGE:
        return []
    return sorted((set(old_isr) | set(old_elr)) - (set(hist.isr) | set(hist.elr)))


def elr_enabled(features: dict[str, int]) -> bool:
    """KIP-966's eligible.leader.replicas.version feature (Kafka 4.x FeatureLevelRecord)."""
    return features.get("eligible.leader.replicas.version", 0) >= 1


def _track_frozen(hist: PartitionHistory, change: dict[str, Any], features: dict[str, int],
                  min_isr: int) -> None:
    """A leader does not advance its high watermark while the ISR is below
    min.insync.replicas (KIP-966, KAFKA-15583): core/src/main/scala/kafka/cluster/Partition.scala
    maybeIncrementLeaderHW returns early when isUnderMinIsr -- in Kafka 4.x with ELR on or off
    (seen on a real 4.3.1 cluster). Tracked when ELR is on or metadata.version is 4.0+ (level
    22); older logs keep no spans. Record each such span on the partition."""
    frozen = (elr_enabled(features) or features.get("metadata.version", 0) >= METADATA_VERSION_4_0) \
        and len(hist.isr) < min_isr
    open_span = hist.hw_frozen[-1] if hist.hw_frozen and hist.hw_frozen[-1]["open"] else None
    if frozen:
        change["hw_frozen"] = True
        if open_span is None:
            hist.hw_frozen.append({"from_offset": change.get("offset"),
                                   "from_timestamp_ms": change.get("timestamp_ms"),
                                   "to_offset": None, "to_timestamp_ms": None,
                                   "isr": list(hist.isr), "min_isr": min_isr, "open": True})
    elif open_span is not None:
        open_span["open"] = False
        open_span["to_offset"] = change.get("offset")
        open_span["to_timestamp_ms"] = change.get("timestamp_ms")


def load_histories(path: str | os.PathLike[str]) -> Histories:
    """Replay a KRaft metadata log: ``path`` is ``__cluster_metadata-0`` or a dir holding it
    (a controller's or a combined broker's log dir). Control batches are skipped; a record
    that does not decode is an error naming its offset.

    When the log no longer starts at offset 0 (KRaft deletes segments a snapshot covers), the
    state before it comes from the ``<end offset>-<epoch>.checkpoint`` snapshot the log
    continues from (the earliest one at or past the first segment), as KRaft itself loads it;
    the log is then replayed from the snapshot's end offset on."""

    from segtools.errors import InputError, SegtoolsError
    from segtools.files.sources import resolve
    from segtools.internal_topics.metadata import decode_record
    from segtools.records import columnar

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
                   if (m := KRAFT_SNAPSHOT_RE.match(os.path.basename(f)))
                   and not m["extra"] and not m["random"])
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
