"""The controller: partition leadership, leader epochs and ISR changes (FORENSICS.md A.1, A.4, A.6).

It only decides; the cluster applies the consequences to replicas. Every change is also kept as a
KRaft metadata record (``events``) so the metadata log can be written when asked for.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from segtools.simulate.replica import SimBatch

NO_LEADER = -1
RECOVERED, RECOVERING = 0, 1


@dataclass
class Election:
    """One leadership change (every one raises the leader epoch, "no leader" included)."""

    epoch: int
    leader: int
    unclean: bool
    reason: str
    isr: list[int]
    start_offset: int | None = None  # the new leader's LEO when elected
    # the new leader's batches and log start at election, to know which records it held
    leader_batches: list[SimBatch] = field(default_factory=list)
    leader_log_start: int = 0

    def leader_had(self, offset: int, epoch: int) -> bool:
        """Did the elected leader's log hold ``offset`` written in ``epoch``? (Looked up in the
        batches themselves: after old divergence bugs the epoch cache can disagree with them.)"""
        if self.start_offset is None or not (self.leader_log_start <= offset < self.start_offset):
            return False
        i = bisect.bisect_right(self.leader_batches, offset, key=lambda b: b.base_offset) - 1
        if i < 0:
            return False
        batch = self.leader_batches[i]
        return batch.last_offset >= offset and batch.epoch == epoch

    def to_json(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "leader": None if self.leader == NO_LEADER else self.leader,
                "unclean": self.unclean, "reason": self.reason, "isr": list(self.isr),
                "start_offset": self.start_offset}


#: one KRaft metadata record: (type name, version, data, virtual time)
MetadataEvent = tuple[str, int, dict[str, Any], int]


class EventLog:
    """KRaft metadata records in order, each stamped with the virtual time it was appended at."""

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock
        self._events: list[MetadataEvent] = []

    def append(self, item: tuple[str, int, dict[str, Any]]) -> None:
        self._events.append((*item, self._clock()))

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[MetadataEvent]:
        return iter(self._events)

    def __getitem__(self, index: int) -> MetadataEvent:
        return self._events[index]


@dataclass
class PartitionState:
    topic: str
    partition: int
    topic_id_bytes: bytes
    replicas: tuple[int, ...]
    min_insync_replicas: int
    unclean_leader_election: bool
    leader: int = NO_LEADER
    leader_epoch: int = 0
    partition_epoch: int = 0
    isr: list[int] = field(default_factory=list)
    leader_recovery_state: int = RECOVERED
    last_leader: int = NO_LEADER
    elections: list[Election] = field(default_factory=list)
    # KIP-966 (only with cluster.kafka_features.eligible_leader_replicas)
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)


class Controller:
    """Leader election and ISR bookkeeping for every partition."""

    def __init__(self, is_alive: Callable[[int], bool], clock: Callable[[], int], *,
                 elr_enabled: bool = False) -> None:
        self.is_alive = is_alive
        self.clock = clock
        self.events = EventLog(clock)
        self.elr_enabled = elr_enabled

    def _record_change(self, ps: PartitionState, *, leader_changed: bool, isr_changed: bool,
                       lrs_changed: bool, elr: list[int] | None = None,
                       last_known_elr: list[int] | None = None) -> None:
        data: dict[str, Any] = {"partitionId": ps.partition, "topicId": ps.topic_id_bytes}
        if isr_changed:
            data["isr"] = list(ps.isr)
        if leader_changed:
            data["leader"] = ps.leader
        if lrs_changed:
            data["leaderRecoveryState"] = ps.leader_recovery_state
        if elr is not None:
            data["eligibleLeaderReplicas"] = list(elr)
        if last_known_elr is not None:
            data["lastKnownElr"] = list(last_known_elr)
        # version 2 carries the KIP-966 fields (as MV 3.7+ writes it)
        self.events.append(("PartitionChangeRecord", 2 if self.elr_enabled else 0, data))

    def create_partition(self, ps: PartitionState) -> None:
        live = [b for b in ps.replicas if self.is_alive(b)]
        ps.isr = live or [ps.replicas[0]]
        ps.leader = live[0] if live else NO_LEADER
        ps.leader_epoch = 0
        ps.partition_epoch = 0
        ps.elections.append(Election(0, ps.leader, False, "create", list(ps.isr)))
        if ps.leader != NO_LEADER:
            ps.last_leader = ps.leader
        self.events.append(("PartitionRecord", 0, {
            "partitionId": ps.partition, "topicId": ps.topic_id_bytes,
            "replicas": list(ps.replicas), "isr": list(ps.isr), "removingReplicas": [],
            "addingReplicas": [], "leader": ps.leader, "leaderRecoveryState": RECOVERED,
            "leaderEpoch": ps.leader_epoch, "partitionEpoch": ps.partition_epoch}))

    def _set_leader(self, ps: PartitionState, leader: int, isr: list[int], *, unclean: bool,
                    reason: str) -> Election:
        isr_changed = isr != ps.isr
        ps.isr = isr
        return self._new_leader(ps, leader, unclean=unclean, reason=reason, isr_changed=isr_changed)

    def _new_leader(self, ps: PartitionState, leader: int, *, unclean: bool, reason: str,
                    isr_changed: bool, elr: list[int] | None = None,
                    last_known_elr: list[int] | None = None) -> Election:
        """A leader change on ``ps`` (its ISR already set): epochs, recovery state, the
        election and its PartitionChangeRecord."""
        ps.leader = leader
        ps.leader_epoch += 1
        ps.partition_epoch += 1
        lrs_changed = False
        if unclean and ps.leader_recovery_state != RECOVERING:
            ps.leader_recovery_state = RECOVERING
            lrs_changed = True
        if leader != NO_LEADER:
            ps.last_leader = leader
        election = Election(ps.leader_epoch, leader, unclean, reason, list(ps.isr))
        ps.elections.append(election)
        self._record_change(ps, leader_changed=True, isr_changed=isr_changed, lrs_changed=lrs_changed,
                            elr=elr, last_known_elr=last_known_elr)
        return election

    def recovered(self, ps: PartitionState) -> None:
        """The unclean leader finished recovering (AlterPartition: LeaderRecoveryState=RECOVERED)."""
        if ps.leader_recovery_state == RECOVERING and ps.leader != NO_LEADER:
            ps.leader_recovery_state = RECOVERED
            ps.partition_epoch += 1
            self._record_change(ps, leader_changed=False, isr_changed=False, lrs_changed=True)

    def elect(self, ps: PartitionState, reason: str, *, exclude: int | None = None,
              allow_unclean: bool | None = None) -> Election | None:
        """Elect the first live ISR member in assignment order (never ``exclude``); when none is
        left and unclean election is allowed, the first live replica, with the ISR forced to it.
        Returns the election, or None when nothing changed (the partition may go offline)."""
        if self.elr_enabled:
            return self.change(ps, [b for b in ps.isr if b != exclude], reason=reason, exclude=exclude,
                               allow_unclean=allow_unclean)
        isr = [b for b in ps.isr if b != exclude] or list(ps.isr)
        for b in ps.replicas:
            if b in isr and b != exclude and self.is_alive(b):
                if b == ps.leader and isr == ps.isr:
                    return None
                return self._set_leader(ps, b, isr, unclean=False, reason=reason)
        unclean = ps.unclean_leader_election if allow_unclean is None else allow_unclean
        if unclean:
            for b in ps.replicas:
                if b != exclude and self.is_alive(b):
                    return self._set_leader(ps, b, [b], unclean=True, reason=reason)
        if ps.leader != NO_LEADER:
            return self._set_leader(ps, NO_LEADER, isr, unclean=False, reason=reason)
        if isr != ps.isr:
            ps.isr = isr
            ps.partition_epoch += 1
            self._record_change(ps, leader_changed=False, isr_changed=True, lrs_changed=False)
        return None

    def elect_leader(self, ps: PartitionState, leader: int, *, unclean: bool, reason: str) -> Election | None:
        """A requested election of a given broker: clean when it is a live ISR member, unclean
        (ISR forced to it) only when asked for; otherwise refused (None)."""
        if not self.is_alive(leader) or leader == ps.leader:
            return None
        if leader in ps.isr:
            return self._set_leader(ps, leader, list(ps.isr), unclean=False, reason=reason)
        if unclean:
            return self._set_leader(ps, leader, [leader], unclean=True, reason=reason)
        return None

    def remove_from_isr(self, ps: PartitionState, broker: int) -> bool:
        """Shrink (lagging follower, fenced or shutting-down broker); the ISR never gets empty."""
        if self.elr_enabled:
            if broker not in ps.isr or broker == ps.leader:
                return False
            self.change(ps, [b for b in ps.isr if b != broker], reason="isr_shrink")
            return True
        if broker not in ps.isr or len(ps.isr) == 1:
            return False
        ps.isr = [b for b in ps.isr if b != broker]
        ps.partition_epoch += 1
        self._record_change(ps, leader_changed=False, isr_changed=True, lrs_changed=False)
        return True

    def remove_many_from_isr(self, ps: PartitionState, brokers: list[int]) -> bool:
        """One shrink dropping several followers (never the leader; the ISR never gets empty)."""
        drop = {b for b in brokers if b in ps.isr and b != ps.leader}
        target = [b for b in ps.isr if b not in drop]
        if not drop or not target:
            return False
        if self.elr_enabled:
            self.change(ps, target, reason="isr_shrink")
            return True
        ps.isr = target
        ps.partition_epoch += 1
        self._record_change(ps, leader_changed=False, isr_changed=True, lrs_changed=False)
        return True

    def add_to_isr(self, ps: PartitionState, broker: int) -> None:
        if broker in ps.isr:
            return
        if self.elr_enabled:
            self.change(ps, [b for b in ps.replicas if b in ps.isr or b == broker], reason="isr_expand",
                        elect=False)
            return
        ps.isr = [b for b in ps.replicas if b in ps.isr or b == broker]
        ps.partition_epoch += 1
        self._record_change(ps, leader_changed=False, isr_changed=True, lrs_changed=False)

    # ------------------------------------------------------------------ KIP-966 (ELR on)
    def unclean_restart(self, ps: PartitionState, broker: int) -> Election | None:
        """A broker registers again without proof of a clean stop: out of ISR and ELR
        (ReplicationControlManager.handleBrokerUncleanShutdown), before its registration."""
        if broker not in ps.isr and broker not in ps.elr:
            return None
        return self.change(ps, [b for b in ps.isr if b != broker], reason="unclean_shutdown",
                           unclean_shutdown=(broker,))

    def change(self, ps: PartitionState, target_isr: list[int], *, reason: str,
               exclude: int | None = None, allow_unclean: bool | None = None, elect: bool = True,
               unclean_shutdown: tuple[int, ...] = ()) -> Election | None:
        """One PartitionChangeBuilder.build with ELR on (metadata/src/main/java/org/apache/kafka/
        controller/PartitionChangeBuilder.java): maybePopulateTargetElr, tryElection (ISR, then
        ELR with an empty ISR, then the one last known leader, then unclean), the ELR/ISR
        fields, maybeUpdateLastKnownLeader. Returns the election when the leader changed."""
        old_leader, old_isr = ps.leader, list(ps.isr)
        old_elr, old_lke = list(ps.elr), list(ps.last_known_elr)
        # maybePopulateTargetElr
        if len(target_isr) >= ps.min_insync_replicas:
            target_elr: list[int] = []
        else:
            cand = set(ps.elr) | set(ps.isr)
            target_elr = sorted(b for b in cand if b not in target_isr and b not in unclean_shutdown)

        def valid(b: int) -> bool:
            return (b in target_isr or (not target_isr and b in target_elr)) and b != exclude \
                and self.is_alive(b)

        new_leader, unclean = old_leader, False
        if elect and not (old_leader != NO_LEADER and valid(old_leader)):
            new_leader = next((b for b in ps.replicas if valid(b)), NO_LEADER)
            if new_leader == NO_LEADER and not target_isr and not target_elr \
                    and len(ps.last_known_elr) == 1 and self.is_alive(ps.last_known_elr[0]) \
                    and ps.last_known_elr[0] != exclude:
                new_leader, unclean = ps.last_known_elr[0], True        # canElectLastKnownLeader
            allowed = ps.unclean_leader_election if allow_unclean is None else allow_unclean
            if new_leader == NO_LEADER and allowed:
                new_leader = next((b for b in ps.replicas if b != exclude and self.is_alive(b)), NO_LEADER)
                unclean = new_leader != NO_LEADER
        new_isr = list(target_isr)
        if new_leader != old_leader and new_leader != NO_LEADER:
            if new_leader in target_elr:                                # tryElection: ELR
                new_isr = [new_leader]
                target_elr = [b for b in target_elr if b != new_leader]
            if unclean:
                new_isr = [new_leader]
        if unclean:                                                     # maybeUpdateRecordElr
            target_elr = []
        new_lke = list(ps.last_known_elr)
        if not new_isr and old_isr and (ps.last_known_elr != [old_leader]) and old_leader != NO_LEADER:
            new_lke = [old_leader]                                      # maybeUpdateLastKnownLeader
        elif (new_leader != old_leader and new_leader >= 0) or (old_leader != NO_LEADER and new_leader != NO_LEADER):
            if ps.last_known_elr:
                new_lke = []
        leader_changed = new_leader != old_leader
        if not leader_changed and new_isr == old_isr and target_elr == old_elr and new_lke == old_lke:
            return None
        ps.isr, ps.elr, ps.last_known_elr = new_isr, target_elr, new_lke
        elr_field = target_elr if target_elr != old_elr else None
        lke_field = new_lke if new_lke != old_lke else None
        if not leader_changed:
            ps.partition_epoch += 1
            self._record_change(ps, leader_changed=False, isr_changed=new_isr != old_isr,
                                lrs_changed=False, elr=elr_field, last_known_elr=lke_field)
            return None
        return self._new_leader(ps, new_leader, unclean=unclean, reason=reason,
                                isr_changed=new_isr != old_isr, elr=elr_field, last_known_elr=lke_field)
