"""Broker faults: pause/resume, flush, crash (optionally losing unflushed data), controlled
shutdown and restart with Kafka's log recovery. A mixin of
:class:`segtools.simulate.cluster.Cluster`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from segtools.simulate.controller import NO_LEADER

if TYPE_CHECKING:
    from segtools.simulate.cluster import Cluster as _Base
else:
    _Base = object

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


class BrokerSteps(_Base):
    """pause, resume, flush, crash, shutdown and restart steps."""

    def _step_pause(self, broker: int) -> None:
        self.brokers[broker].paused = True

    def _step_resume(self, broker: int) -> None:
        self.brokers[broker].paused = False

    def _step_flush(self, broker: int) -> None:
        if self.brokers[broker].alive:
            self._flush_and_checkpoint(only=broker)

    def _step_crash(self, broker: int, lose_unflushed: bool, wipe_disk: bool = False) -> None:
        st = self.brokers[broker]
        if not st.alive:
            return
        st.alive = False
        st.paused = False
        st.clean_shutdown = False
        for tp, reps in self.replicas.items():
            r = reps.get(broker)
            if r is None:
                continue
            if wipe_disk:
                # the disk is replaced: no log, no checkpoints (FORENSICS.md S12)
                self._remove(tp, r, r.truncate_fully_and_start_at(0), POWER_LOSS)
                r.epoch_file = []
                r.hw_checkpoint = r.recovery_checkpoint = r.log_start_checkpoint = None
                r.torn_tail = None
            elif lose_unflushed and r.flushed_offset < r.log_end_offset:
                removed = r.truncate_to(r.flushed_offset)
                if removed:
                    r.torn_tail = removed[0]  # half of it reached the disk
                self._remove(tp, r, removed, POWER_LOSS)
        if wipe_disk:
            st.directory_id = self.rng.randbytes(16)  # a freshly formatted log dir
        self.controller.events.append(("FenceBrokerRecord", 0, {"id": broker, "epoch": st.broker_epoch}))
        self._elect_after_loss(broker, "crash")

    def _step_shutdown(self, broker: int) -> None:
        st = self.brokers[broker]
        if not st.alive:
            return
        # controlled shutdown: leadership moves first, then the broker leaves the ISRs
        self._elect_after_loss(broker, "controlled_shutdown")
        self._checkpoint_broker_for_shutdown(broker)
        st.alive = False
        st.paused = False
        st.clean_shutdown = True
        self.controller.events.append(("FenceBrokerRecord", 0, {"id": broker, "epoch": st.broker_epoch}))

    def _checkpoint_broker_for_shutdown(self, broker: int) -> None:
        for reps in self.replicas.values():
            r = reps.get(broker)
            if r is None:
                continue
            r.flush()
            r.hw_checkpoint = r.high_watermark
            r.recovery_checkpoint = r.flushed_offset
            r.log_start_checkpoint = r.log_start_offset
            r.epoch_file = list(r.epochs)

    def _step_restart(self, broker: int) -> None:
        """Start a stopped broker (log recovery, then follow or lead). Restarting a running broker
        is a bounce faster than the controller's session timeout: it reloads its state from disk
        but stays in its ISRs and keeps a pause; partitions it led elect a new leader."""
        st = self.brokers[broker]
        bounce = st.alive
        if bounce:
            for tp, ps in self.partitions.items():
                if ps.leader == broker:
                    st.alive = False
                    self._after_election(tp, ps, self.controller.elect(ps, "restart", exclude=broker),
                                         broker)
                    st.alive = True
            self._page_cache_survives(broker)
        for _tp, reps in self.replicas.items():
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
        if self.controller.elr_enabled and not was_clean:
            # KIP-966: no .kafka_cleanshutdown epoch -> the controller drops the broker from
            # every ISR and ELR before it registers (ReplicationControlManager
            # .handleBrokerUncleanShutdown); it does not count as alive for those elections
            st.alive = False
            for tp, ps in self.partitions.items():
                old = ps.leader
                self._after_election(tp, ps, self.controller.unclean_restart(ps, broker), old)
            st.alive = True
        self._register_broker(broker)
        self._elect_offline("restart")
        for tp, ps in self.partitions.items():
            r = self.replicas[tp].get(broker)
            if r is not None and ps.leader not in (broker, NO_LEADER):
                self._become_follower(tp, ps, r)

    def _page_cache_survives(self, broker: int) -> None:
        """A bounce is not a power loss: the page cache survives, only memory is gone."""
        for reps in self.replicas.values():
            r = reps.get(broker)
            if r is not None:
                r.flushed_offset = r.log_end_offset
