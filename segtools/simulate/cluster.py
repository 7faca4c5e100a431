"""The simulated cluster: replicas, the virtual clock, fetching, HW/ISR and leadership.
Broker faults live in ``broker.py``, producing in ``producer.py``: components the cluster holds,
each seeing it through the narrow interface it declares (``BrokerHost``, ``ProducerHost``), so
neither imports this module.

Replication follows FORENSICS.md Part A: leaders stamp their epoch into every batch, followers
copy batches unchanged, the leader's HW is the smallest LEO over the ISR and reaches followers one
fetch later, ISR shrinks after ``replica_lag_time_max_ms`` of virtual time without catching up and
grows back once a follower has reached the HW (and, with leader-epoch truncation, the start of
the current epoch, KAFKA-7128). Follower truncation is either the leader-epoch walk (KIP-101 with
the KIP-279 fix) or the pre-0.11 rule "truncate to your own HW", so the historical divergence
bugs can be replayed.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from segtools.formats.primitives import uuid_to_base64url
from segtools.simulate.batch_encoding import batch_bytes
from segtools.simulate.broker import POWER_LOSS, BrokerFaults, BrokerState
from segtools.simulate.controller import NO_LEADER, Controller, Election, PartitionState
from segtools.simulate.producer import AckLine, Producers, ProducerState
from segtools.simulate.replica import ReplicaLog, SimBatch, SimRecord
from segtools.simulate.scenario import Scenario, Step, TopicSpec

__all__ = ["Cluster", "BrokerState", "ProducerState", "AckLine", "POWER_LOSS", "TRUNCATED"]

TP = tuple[str, int]

# why a batch left a replica's log (power loss: see broker.py)
TRUNCATED = "TRUNCATED"


#: metadata.version feature level of Kafka 4.3 (what its kafka-storage format writes)
METADATA_VERSION_4_3 = 30


def feature_levels(features: dict[str, int]) -> list[tuple[str, int]]:
    """The FeatureLevelRecords of a scenario's cluster.kafka_features, metadata.version first.
    Kafka 4.x defaults a new cluster to transaction.version 2 (KIP-890)."""
    out = {"metadata.version": METADATA_VERSION_4_3, "transaction.version": 2, **features}
    return [("metadata.version", out.pop("metadata.version"))] + sorted(out.items())


def _next_after(t: int, limit: int, interval: int) -> int:
    """The first time of a periodic task (now due at ``t``) that is after ``limit``."""
    if t > limit:
        return t
    return t + ((limit - t) // interval + 1) * interval


class Cluster:
    """Runs a scenario's steps against an in-memory model of every replica."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        spec = scenario.cluster
        self.spec = spec
        self.rng = random.Random(scenario.seed)
        self.now = spec.start_time_ms
        self.cluster_id = spec.cluster_id or uuid_to_base64url(self.rng.randbytes(16))
        self.brokers: dict[int, BrokerState] = {}
        for b in spec.brokers:
            self.brokers[b] = BrokerState(b, directory_id=self.rng.randbytes(16))
        features = dict(spec.kafka_features)
        self.controller = Controller(self.is_alive, lambda: self.now,
                                     elr_enabled=bool(features.get("eligible.leader.replicas.version")))
        #: transactions v2 (KIP-890) in a cluster that names Kafka features (Kafka 4.x defaults
        #: to it), v1 otherwise
        self.transaction_version = features.get(
            "transaction.version", 0 if features == {"eligible.leader.replicas.version": 0} else 2)
        if features != {"eligible.leader.replicas.version": 0}:
            # a scenario that names Kafka features is a Kafka 4.3 cluster: the metadata log
            # starts with its feature levels, as kafka-storage format bootstraps them
            for name, level in feature_levels(features):
                self.controller.events.append(("FeatureLevelRecord", 0, {"name": name, "featureLevel": level}))
        self.topics: dict[str, TopicSpec] = {t.name: t for t in scenario.topics}
        self.topic_ids: dict[str, bytes] = {}
        self.partitions: dict[TP, PartitionState] = {}
        self.replicas: dict[TP, dict[int, ReplicaLog]] = {}
        self.removals: dict[tuple[int, int], set[str]] = {}  # (id(record), broker) -> reasons
        self.snapshots: list[str] = []
        self._next_hw_ckpt = self.now + spec.high_watermark_checkpoint_interval_ms
        self._next_flush_ckpt = self.now + spec.flush_offset_checkpoint_interval_ms
        self._isr_check_interval = max(1, spec.replica_lag_time_max_ms // 2)
        self._next_isr_check = self.now + self._isr_check_interval
        #: called with (cluster, name) at a ``snapshot`` step (``run`` writes the files there)
        self.snapshot_hook: Callable[[Cluster, str], None] | None = None
        for b in spec.brokers:
            self.register_broker(b)
        for t in scenario.topics:
            tid = self.rng.randbytes(16)
            self.topic_ids[t.name] = tid
            self.controller.events.append(("TopicRecord", 0, {"name": t.name, "topicId": tid}))
            if features != {"eligible.leader.replicas.version": 0}:
                # the topic's configs, as CreateTopics records them (what min ISR is known by)
                for name, value in (("min.insync.replicas", str(t.min_insync_replicas)),
                                    ("unclean.leader.election.enable",
                                     str(t.unclean_leader_election).lower())):
                    self.controller.events.append(("ConfigRecord", 0, {
                        "resourceType": 2, "resourceName": t.name, "name": name, "value": value}))
            for p in range(t.partitions):
                tp = (t.name, p)
                assert t.assignment is not None
                ps = PartitionState(t.name, p, tid, t.assignment[p], t.min_insync_replicas,
                                    t.unclean_leader_election)
                self.partitions[tp] = ps
                self.replicas[tp] = {b: ReplicaLog(b) for b in ps.replicas}
                for r in self.replicas[tp].values():
                    r.last_caught_up_ms = r.last_fetch_ms = self.now
                self.controller.create_partition(ps)
                if ps.leader != NO_LEADER:
                    self.replicas[tp][ps.leader].assign_epoch(0, 0)
                    ps.elections[-1].start_offset = 0
        self.broker_faults = BrokerFaults(self)
        self.producing = Producers(self, scenario.producers, random.Random(scenario.seed ^ 0x5E6))
        self._step_handlers: dict[str, Callable[..., None]] = {
            "advance": self._step_advance, "elect": self._step_elect,
            "delete_records": self._step_delete_records, "snapshot": self._step_snapshot,
            "pause": self.broker_faults.pause, "resume": self._step_resume,
            "flush": self.broker_faults.flush, "crash": self._step_crash,
            "shutdown": self._step_shutdown, "restart": self._step_restart,
            "produce": self.producing.produce, "resend": self.producing.resend,
            "begin_transaction": self.producing.begin_transaction,
            "commit_transaction": self.producing.commit_transaction,
            "abort_transaction": self.producing.abort_transaction,
        }

    # ------------------------------------------------------------------ what the producers saw
    @property
    def acks(self) -> list[AckLine]:
        return self.producing.acks

    @property
    def records(self) -> list[SimRecord]:
        """Every record a producer appended to a leader, in production order."""
        return self.producing.records

    @property
    def producers(self) -> dict[str, ProducerState]:
        return self.producing.producers

    @property
    def _anonymous(self) -> ProducerState:
        return self.producing.anonymous

    # ------------------------------------------------------------------ basics
    def is_alive(self, broker: int) -> bool:
        return self.brokers[broker].alive

    def is_paused(self, broker: int) -> bool:
        return self.brokers[broker].paused

    def _fetching(self, broker: int) -> bool:
        st = self.brokers[broker]
        return st.alive and not st.paused

    def register_broker(self, b: int) -> None:
        st = self.brokers[b]
        st.incarnation += 1
        # KRaft: the broker epoch is the offset of the registration record in the metadata log
        st.broker_epoch = len(self.controller.events)
        self.controller.events.append(("RegisterBrokerRecord", 0, {
            "brokerId": b, "incarnationId": self.rng.randbytes(16), "brokerEpoch": st.broker_epoch,
            "endPoints": [{"name": "PLAINTEXT", "host": f"broker-{b}", "port": 9092,
                           "securityProtocol": 0}],
            "features": [], "rack": None, "fenced": True}))
        self.controller.events.append(("UnfenceBrokerRecord", 0, {"id": b, "epoch": st.broker_epoch}))

    def run(self) -> None:
        for step in self.scenario.steps:
            self.apply(step)
        self.finish()

    def apply(self, step: Step) -> None:
        self._step_handlers[step.kind](**step.args)
        if step.kind not in ("advance", "snapshot"):
            self.fetch_round()

    def finish(self) -> None:
        """The scenario ended: sends still waiting for a response time out."""
        self.producing.finish()

    # ------------------------------------------------------------------ clock
    def advance_clock(self, to_ms: int, *, stop_on_isr_change: bool = False) -> bool:
        """Move virtual time, running the periodic tasks whose time has come, in order.

        Returns True when it stopped early because an ISR shrank (``stop_on_isr_change``).
        Once a checkpoint of each kind ran with nothing left that could change (no follower
        waiting to be dropped from an ISR), the remaining periodic runs would only rewrite the
        same values, so time jumps straight to ``to_ms``: long advances stay cheap."""
        quiet_hw = quiet_flush = False
        while True:
            nxt = min(self._next_hw_ckpt, self._next_flush_ckpt, self._next_isr_check)
            if nxt > to_ms:
                break
            if quiet_hw and quiet_flush and not self._stuck_isr_members():
                self._next_hw_ckpt = _next_after(self._next_hw_ckpt, to_ms,
                                                 self.spec.high_watermark_checkpoint_interval_ms)
                self._next_flush_ckpt = _next_after(self._next_flush_ckpt, to_ms,
                                                    self.spec.flush_offset_checkpoint_interval_ms)
                self._next_isr_check = _next_after(self._next_isr_check, to_ms,
                                                   self._isr_check_interval)
                break
            self.now = nxt
            shrunk = False
            if nxt == self._next_isr_check:
                self._next_isr_check += self._isr_check_interval
                shrunk = self._isr_expiration()
                if shrunk:
                    quiet_hw = quiet_flush = False
            if nxt == self._next_hw_ckpt:
                self._next_hw_ckpt += self.spec.high_watermark_checkpoint_interval_ms
                self._checkpoint_high_watermarks()
                quiet_hw = True
            if nxt == self._next_flush_ckpt:
                self._next_flush_ckpt += self.spec.flush_offset_checkpoint_interval_ms
                self.flush_and_checkpoint()
                quiet_flush = True
            if shrunk and stop_on_isr_change:
                return True
        self.now = to_ms
        return False

    def _stuck_isr_members(self) -> bool:
        """Is some ISR follower of a running leader not fetching (so a later ISR check may drop
        it)?"""
        for ps in self.partitions.values():
            if ps.leader != NO_LEADER and self._fetching(ps.leader):
                for b in ps.isr:
                    if b != ps.leader and not self._fetching(b):
                        return True
        return False

    def tick(self) -> None:
        self.advance_clock(self.now + 1)

    def _checkpoint_high_watermarks(self) -> None:
        for _tp, reps in self.replicas.items():
            for b, r in reps.items():
                if self.brokers[b].alive:
                    r.hw_checkpoint = r.high_watermark
                    r.epoch_file = list(r.epochs)  # the asynchronous epoch-cache flush lands too

    def flush_and_checkpoint(self, only: int | None = None) -> None:
        for _tp, reps in self.replicas.items():
            for b, r in reps.items():
                if self.brokers[b].alive and (only is None or b == only):
                    r.flush()
                    r.recovery_checkpoint = r.flushed_offset
                    r.log_start_checkpoint = r.log_start_offset

    def _isr_expiration(self) -> bool:
        """Kafka's isr-expiration task: drop followers that have not caught up for too long.
        Followers that are alive and not paused fetch continuously, so they never lag here.
        A paused leader runs no task (a SIGSTOPped JVM: docs/ENGINES.md class 10)."""
        lag = self.spec.replica_lag_time_max_ms
        shrunk = False
        for tp, ps in self.partitions.items():
            if ps.leader == NO_LEADER or not self._fetching(ps.leader):
                continue
            changed = False
            out_of_sync = []
            for b in list(ps.isr):
                if b == ps.leader or self._fetching(b):
                    continue
                # Kafka's Replica.isCaughtUp: a follower at the leader's log end is in sync
                # however long ago it fetched (a paused follower stays until records arrive).
                # Only the real engine's lockstep model has it: docs/ENGINES.md
                if self.spec.caught_up_stays_in_isr and \
                        self.replicas[tp][b].log_end_offset == self.replicas[tp][ps.leader].log_end_offset:
                    continue
                if self.now - self.replicas[tp][b].last_caught_up_ms > lag:
                    out_of_sync.append(b)
            if self.spec.caught_up_stays_in_isr and len(out_of_sync) > 1:
                # Kafka's leader drops every out-of-sync follower in one AlterPartition
                # (Partition.maybeShrinkIsr), so the controller writes one record
                changed = self.controller.remove_many_from_isr(ps, out_of_sync)
            else:
                for b in out_of_sync:
                    changed |= self.controller.remove_from_isr(ps, b)
            if changed:
                shrunk = True
                self.maybe_increment_hw(tp, ps)
        return shrunk

    # ------------------------------------------------------------------ replication
    def fetch_round(self, only: TP | None = None) -> None:
        items = [(only, self.partitions[only])] if only is not None else self.partitions.items()
        for tp, ps in items:
            # a paused leader serves no fetch and finishes no recovery (class 10)
            if ps.leader == NO_LEADER or not self._fetching(ps.leader):
                continue
            if ps.leader_recovery_state != 0:
                self.controller.recovered(ps)  # the unclean leader has finished its recovery
            leader = self.replicas[tp][ps.leader]
            for b in ps.replicas:
                if b != ps.leader and self._fetching(b):
                    self._follower_fetch(tp, ps, leader, self.replicas[tp][b])

    def fetch_until_quiet(self, max_rounds: int = 6, only: TP | None = None) -> None:
        for _ in range(max_rounds):
            before = self._fingerprint()
            self.fetch_round(only)
            if self._fingerprint() == before:
                return

    def _fingerprint(self) -> tuple[Any, ...]:
        return tuple((tp, b, r.log_end_offset, r.high_watermark, len(self.partitions[tp].isr))
                     for tp, reps in self.replicas.items() for b, r in reps.items())

    def _follower_fetch(self, tp: TP, ps: PartitionState, leader: ReplicaLog, f: ReplicaLog) -> None:
        if self._must_truncate(ps, f):
            self._truncate_follower(tp, f, leader)
        f.needs_truncation = False
        f.known_leader = ps.leader
        f.known_epoch = ps.leader_epoch
        if f.log_end_offset > leader.log_end_offset:  # OFFSET_OUT_OF_RANGE: the pre-0.11 fallback
            self.note_removed(tp, f, f.truncate_to(leader.log_end_offset), TRUNCATED)
        if f.log_end_offset < leader.log_start_offset:
            self.note_removed(tp, f, f.truncate_fully_and_start_at(leader.log_start_offset), TRUNCATED)
        fetch_offset = f.log_end_offset
        # leader side: follower state, read (HW captured before the update), then ISR/HW
        if fetch_offset >= leader.log_end_offset:
            f.last_caught_up_ms = self.now
        elif fetch_offset >= f.last_fetch_leader_leo:
            f.last_caught_up_ms = f.last_fetch_ms
        f.last_fetch_leader_leo = leader.log_end_offset
        f.last_fetch_ms = self.now
        f.fetch_offset = fetch_offset
        hw_in_response = leader.high_watermark
        data = leader.batches_from(fetch_offset)
        self._maybe_expand_isr(tp, ps, leader, f)
        self.maybe_increment_hw(tp, ps)
        if data and data[0].base_offset < fetch_offset:
            # our copy ends inside a leader batch (only after a divergent history): refetch it whole
            self.note_removed(tp, f, f.truncate_to(data[0].base_offset), TRUNCATED)
        for batch in data:
            f.append(batch, batch.extra["size"], self.spec.segment_bytes)
        f.high_watermark = max(min(hw_in_response, f.log_end_offset), f.log_start_offset)
        if leader.log_start_offset > f.log_start_offset:
            f.set_log_start(min(leader.log_start_offset, f.log_end_offset))

    def _maybe_expand_isr(self, tp: TP, ps: PartitionState, leader: ReplicaLog, f: ReplicaLog) -> None:
        if f.broker in ps.isr or f.fetch_offset is None:
            return
        if f.fetch_offset < leader.high_watermark:
            return
        if self.spec.truncation == "leader-epoch":
            epoch_start = next((s for e, s in leader.epochs if e == ps.leader_epoch), 0)
            if f.fetch_offset < epoch_start:
                return
        self.controller.add_to_isr(ps, f.broker)

    def maybe_increment_hw(self, tp: TP, ps: PartitionState) -> None:
        if ps.leader == NO_LEADER:
            return
        leader = self.replicas[tp][ps.leader]
        if self.spec.truncation == "leader-epoch" and len(ps.isr) < ps.min_insync_replicas:
            return  # KAFKA-15583: the HW does not move while the ISR is below min.insync.replicas
        new_hw = leader.log_end_offset
        for b in ps.isr:
            if b == ps.leader:
                continue
            fo = self.replicas[tp][b].fetch_offset
            if fo is None:
                return
            new_hw = min(new_hw, fo)
        if new_hw > leader.high_watermark:
            old = leader.high_watermark
            leader.high_watermark = new_hw
            for batch in leader.batches_from(old):
                if batch.base_offset >= new_hw:
                    break
                for r in batch.records:
                    if old <= r.offset < new_hw:
                        r.committed = True

    def become_follower(self, tp: TP, ps: PartitionState, r: ReplicaLog) -> None:
        """LeaderAndIsr reached a live follower. Before 0.11 it truncated to its own HW right
        away, without asking the leader; the epoch-based modes truncate on the first fetch."""
        if self.spec.truncation != "high-watermark" or not self.brokers[r.broker].alive:
            return
        if self._must_truncate(ps, r):
            self.note_removed(tp, r, r.truncate_to(r.high_watermark), TRUNCATED)
            r.needs_truncation = False
            r.known_leader = ps.leader
            r.known_epoch = ps.leader_epoch

    def _must_truncate(self, ps: PartitionState, f: ReplicaLog) -> bool:
        """Restarts always truncate. Since KAFKA-7164 (2.1) every epoch change does; before, only
        a change of leader broker as this follower saw it (it can miss epochs while away)."""
        if f.needs_truncation:
            return True
        if self.spec.truncation == "leader-epoch":
            return f.known_epoch != ps.leader_epoch
        return f.known_leader != ps.leader

    def _truncate_follower(self, tp: TP, f: ReplicaLog, leader: ReplicaLog) -> None:
        mode = self.spec.truncation
        if mode == "high-watermark" or not f.epochs:
            target = f.high_watermark
        elif mode == "leader-epoch-kip101":
            # 0.11-1.x: one OffsetsForLeaderEpoch round, no check that the epochs match (KIP-279);
            # an undefined answer (the leader has no epoch yet) falls back to the follower's HW
            end = leader.end_offset_for(f.latest_epoch())[1]
            target = f.high_watermark if end < 0 else min(end, f.log_end_offset)
        else:
            target = self._epoch_truncation_offset(f, leader)
        self.note_removed(tp, f, f.truncate_to(target), TRUNCATED)

    @staticmethod
    def _epoch_truncation_offset(f: ReplicaLog, leader: ReplicaLog) -> int:
        """KIP-101 + KIP-279: ask the leader for the end of our latest epoch; when the leader
        answers with an epoch we do not have, step down to our largest epoch below it."""
        epoch = f.latest_epoch()
        while True:
            leader_epoch, leader_end = leader.end_offset_for(epoch)
            if leader_epoch < 0:
                return f.high_watermark if leader_end < 0 else min(leader_end, f.log_end_offset)
            if f.has_epoch(leader_epoch):
                own_end = f.end_offset_for(leader_epoch)[1]
                return min(leader_end, own_end, f.log_end_offset)
            lower = [e for e, _ in f.epochs if e < leader_epoch]
            if not lower:
                return min(leader_end, f.log_end_offset)
            epoch = lower[-1]

    def leader_append(self, leader: ReplicaLog, batch: SimBatch) -> None:
        leader.append(batch, len(batch_bytes(batch)), self.spec.segment_bytes)

    def note_removed(self, tp: TP, r: ReplicaLog, removed: list[SimBatch], reason: str) -> None:
        for batch in removed:
            for rec in batch.records:
                self.removals.setdefault((id(rec), r.broker), set()).add(reason)

    # ------------------------------------------------------------------ leadership
    def after_election(self, tp: TP, ps: PartitionState, election: Election | None,
                        old_leader: int) -> None:
        if election is None:
            return
        reps = self.replicas[tp]
        if election.leader != NO_LEADER:
            new = reps[election.leader]
            if self.spec.truncation == "leader-epoch":
                new.assign_epoch(election.epoch, new.log_end_offset)  # KAFKA-7415 (2.1)
            election.start_offset = new.log_end_offset
            election.leader_batches = list(new.batches)
            election.leader_log_start = new.log_start_offset
            new.needs_truncation = False
            new.known_leader = election.leader
            new.known_epoch = election.epoch
            for _b, r in reps.items():
                r.fetch_offset = None
                r.last_caught_up_ms = self.now
                r.last_fetch_leader_leo = 0
                r.last_fetch_ms = self.now
            for b, r in reps.items():
                if b != election.leader:
                    self.become_follower(tp, ps, r)
            self.maybe_increment_hw(tp, ps)  # a leader alone in the ISR commits its log at once
            self.producing.rewrite_pending_marker(tp)

    def elect_after_loss(self, broker: int, reason: str) -> None:
        """A broker left (crash or controlled shutdown): move its leaderships, shrink ISRs."""
        for tp, ps in self.partitions.items():
            if broker not in ps.replicas:
                continue
            if ps.leader == broker:
                old = ps.leader
                self.after_election(tp, ps, self.controller.elect(ps, reason, exclude=broker), old)
            elif broker in ps.isr:
                self.controller.remove_from_isr(ps, broker)
                self.maybe_increment_hw(tp, ps)

    def elect_offline(self, reason: str) -> None:
        for tp, ps in self.partitions.items():
            if ps.leader == NO_LEADER:
                self.after_election(tp, ps, self.controller.elect(ps, reason), NO_LEADER)

    # ------------------------------------------------------------------ steps: time, elections, records
    def _step_resume(self, broker: int) -> None:
        self.broker_faults.resume(broker)
        self.producing.resume_leader(broker)

    def _step_crash(self, broker: int, lose_unflushed: bool, wipe_disk: bool = False) -> None:
        self.producing.drop_parked(broker)
        self.broker_faults.crash(broker, lose_unflushed, wipe_disk)

    def _step_shutdown(self, broker: int) -> None:
        # (the real engine's SIGTERM of a paused JVM resumes it first; what it then reads
        # from its socket before it stops is a race: the model drops it)
        self.producing.drop_parked(broker)
        self.broker_faults.shutdown(broker)

    def _step_restart(self, broker: int) -> None:
        self.broker_faults.restart(broker)
        # Followers fetch back to back: a restarted follower of a running leader, or the
        # followers of a restarted broker that was elected, reach the leader's log end and are
        # back in the ISR within the restart step, as on a real cluster (one fetch round, as
        # after other steps, left them out until the next step: docs/ENGINES.md class 9)
        for tp, ps in self.partitions.items():
            if broker in ps.replicas and ps.leader != NO_LEADER and self._fetching(ps.leader):
                self.fetch_until_quiet(only=tp)

    def _step_advance(self, ms: int) -> None:
        """Time passes; live, unpaused followers fetch all along (after every ISR change too)."""
        self.fetch_until_quiet()
        target = self.now + ms
        while self.now < target:
            self.advance_clock(target, stop_on_isr_change=True)
            self.fetch_until_quiet()

    def _step_elect(self, topic: str | None, partition: int | None, leader: int | None,
                    unclean: bool, preferred: bool) -> None:
        for tp, ps in self.partitions.items():
            if topic is not None and tp[0] != topic:
                continue
            if partition is not None and tp[1] != partition:
                continue
            old = ps.leader
            if preferred:
                pref = ps.replicas[0]
                if ps.leader != pref and pref in ps.isr and self.is_alive(pref):
                    self.after_election(tp, ps, self.controller.elect_leader(
                        ps, pref, unclean=False, reason="preferred"), old)
            elif leader is not None:
                if leader in ps.replicas:
                    self.after_election(tp, ps, self.controller.elect_leader(
                        ps, leader, unclean=unclean, reason="requested"), old)
            elif unclean and (ps.leader == NO_LEADER or not self.is_alive(ps.leader)):
                self.after_election(tp, ps, self.controller.elect(
                    ps, "requested_unclean", allow_unclean=True), old)

    def _step_delete_records(self, topic: str, partition: int, before_offset: int) -> None:
        tp = (topic, partition)
        ps = self.partitions[tp]
        if ps.leader == NO_LEADER or not self.is_alive(ps.leader):
            return
        leader = self.replicas[tp][ps.leader]
        # DeleteRecords past the high watermark fails (OFFSET_OUT_OF_RANGE) and deletes nothing
        if before_offset <= leader.high_watermark:
            leader.set_log_start(before_offset)

    def _step_snapshot(self, name: str) -> None:
        self.snapshots.append(name)
        if self.snapshot_hook is not None:
            self.snapshot_hook(self, name)
