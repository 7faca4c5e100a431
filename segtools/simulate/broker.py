"""Broker faults: pause/resume, flush, crash (optionally losing unflushed data), controlled
shutdown and restart with Kafka's log recovery.

:class:`BrokerFaults` is a component of :class:`segtools.simulate.cluster.Cluster`; it sees the
cluster only through :class:`BrokerHost`, the narrow interface it needs (so this module never
imports the cluster).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Protocol

from segtools.simulate.controller import NO_LEADER, Controller, Election, PartitionState
from segtools.simulate.replica import ReplicaLog, SimBatch

TP = tuple[str, int]

POWER_LOSS = "POWER_LOSS"


@dataclass
class BrokerState:
    broker_id: int
    alive: bool = True
    paused: bool = False
    clean_shutdown: bool = False
    broker_epoch: int = 0
    incarnation: int = 0
    directory_id: bytes = b""


class BrokerHost(Protocol):
    """What broker faults read and call on the cluster."""

    @property
    def brokers(self) -> dict[int, BrokerState]: ...
    @property
    def replicas(self) -> dict[TP, dict[int, ReplicaLog]]: ...
    @property
    def partitions(self) -> dict[TP, PartitionState]: ...
    @property
    def controller(self) -> Controller: ...
    @property
    def rng(self) -> random.Random: ...

    def flush_and_checkpoint(self, only: int | None = None) -> None: ...
    def note_removed(self, tp: TP, r: ReplicaLog, removed: list[SimBatch], reason: str) -> None: ...
    def elect_after_loss(self, broker: int, reason: str) -> None: ...
    def elect_offline(self, reason: str) -> None: ...
    def after_election(self, tp: TP, ps: PartitionState, election: Election | None,
                       old_leader: int) -> None: ...
    def become_follower(self, tp: TP, ps: PartitionState, r: ReplicaLog) -> None: ...
    def register_broker(self, b: int) -> None: ...


class BrokerFaults:
    """pause, resume, flush, crash, shutdown and restart steps."""

    def __init__(self, host: BrokerHost) -> None:
        self.host = host

    def pause(self, broker: int) -> None:
        self.host.brokers[broker].paused = True

    def resume(self, broker: int) -> None:
        self.host.brokers[broker].paused = False

    def flush(self, broker: int) -> None:
        if self.host.brokers[broker].alive:
            self.host.flush_and_checkpoint(only=broker)

    def crash(self, broker: int, lose_unflushed: bool, wipe_disk: bool = False) -> None:
        host = self.host
        st = host.brokers[broker]
        if not st.alive:
            return
        st.alive = False
        st.paused = False
        st.clean_shutdown = False
        for tp, reps in host.replicas.items():
            r = reps.get(broker)
            if r is None:
                continue
            if wipe_disk:
                # the disk is replaced: no log, no checkpoints (FORENSICS.md S12)
                host.note_removed(tp, r, r.truncate_fully_and_start_at(0), POWER_LOSS)
                r.epoch_file = []
                r.hw_checkpoint = r.recovery_checkpoint = r.log_start_checkpoint = None
                r.torn_tail = None
            elif lose_unflushed and r.flushed_offset < r.log_end_offset:
                removed = r.truncate_to(r.flushed_offset)
                if removed:
                    r.torn_tail = removed[0]  # half of it reached the disk
                host.note_removed(tp, r, removed, POWER_LOSS)
        if wipe_disk:
            st.directory_id = host.rng.randbytes(16)  # a freshly formatted log dir
        host.controller.events.append(("FenceBrokerRecord", 0, {"id": broker, "epoch": st.broker_epoch}))
        host.elect_after_loss(broker, "crash")

    def shutdown(self, broker: int) -> None:
        host = self.host
        st = host.brokers[broker]
        if not st.alive:
            return
        # controlled shutdown: leadership moves first, then the broker leaves the ISRs
        host.elect_after_loss(broker, "controlled_shutdown")
        self._checkpoint_for_shutdown(broker)
        st.alive = False
        st.paused = False
        st.clean_shutdown = True
        host.controller.events.append(("FenceBrokerRecord", 0, {"id": broker, "epoch": st.broker_epoch}))

    def _checkpoint_for_shutdown(self, broker: int) -> None:
        for reps in self.host.replicas.values():
            r = reps.get(broker)
            if r is None:
                continue
            r.flush()
            r.hw_checkpoint = r.high_watermark
            r.recovery_checkpoint = r.flushed_offset
            r.log_start_checkpoint = r.log_start_offset
            r.epoch_file = list(r.epochs)

    def restart(self, broker: int) -> None:
        """Start a stopped broker (log recovery, then follow or lead). Restarting a running broker
        is a bounce faster than the controller's session timeout: it reloads its state from disk
        but stays in its ISRs and keeps a pause; partitions it led elect a new leader."""
        host = self.host
        st = host.brokers[broker]
        bounce = st.alive
        if bounce:
            for tp, ps in host.partitions.items():
                if ps.leader == broker:
                    st.alive = False
                    host.after_election(tp, ps, host.controller.elect(ps, "restart", exclude=broker),
                                        broker)
                    st.alive = True
            self._page_cache_survives(broker)
        for _tp, reps in host.replicas.items():
            r = reps.get(broker)
            if r is None:
                continue
            # log recovery: the torn tail is dropped, stale epoch entries past the LEO removed,
            # and the HW comes back from the (possibly stale) checkpoint, clamped to the log
            r.torn_tail = None
            r.epochs = [(e, s) for e, s in r.epoch_file if s < r.log_end_offset]
            r.epoch_file = list(r.epochs)
            hw = r.hw_checkpoint if r.hw_checkpoint is not None else 0
            r.high_watermark = max(r.log_start_offset, min(hw, r.log_end_offset))
            # what survived the stop is on disk now (a process crash keeps the page cache)
            r.flushed_offset = r.log_end_offset
            r.needs_truncation = True
            r.fetch_offset = None
        was_clean = st.clean_shutdown and not bounce
        st.alive = True
        if not bounce:
            st.paused = False
        st.clean_shutdown = False
        if host.controller.elr_enabled and not was_clean:
            # KIP-966: no .kafka_cleanshutdown epoch -> the controller drops the broker from
            # every ISR and ELR before it registers (ReplicationControlManager
            # .handleBrokerUncleanShutdown); it does not count as alive for those elections
            st.alive = False
            for tp, ps in host.partitions.items():
                old = ps.leader
                host.after_election(tp, ps, host.controller.unclean_restart(ps, broker), old)
            st.alive = True
        host.register_broker(broker)
        host.elect_offline("restart")
        for tp, ps in host.partitions.items():
            r = host.replicas[tp].get(broker)
            if r is not None and ps.leader not in (broker, NO_LEADER):
                host.become_follower(tp, ps, r)

    def _page_cache_survives(self, broker: int) -> None:
        """A bounce is not a power loss: the page cache survives, only memory is gone."""
        for reps in self.host.replicas.values():
            r = reps.get(broker)
            if r is not None:
                r.flushed_offset = r.log_end_offset
