"""Producers in the simulation: sends with acks 0/1/all, idempotent producer ids and sequences,
transactions ending in COMMIT/ABORT markers, in-flight sends and resends, and what each producer
saw (the acks.jsonl lines).

:class:`Producers` is a component of :class:`segtools.simulate.cluster.Cluster`; it sees the
cluster only through :class:`ProducerHost`, the narrow interface it needs (so this module never
imports the cluster).
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass, field
from typing import Any, Protocol

from segtools.simulate.controller import NO_LEADER, PartitionState
from segtools.simulate.replica import ReplicaLog, SimBatch, SimRecord
from segtools.simulate.scenario import ClusterSpec, ProducerSpec, TopicSpec

TP = tuple[str, int]

_ALNUM = (string.ascii_letters + string.digits).encode("ascii")
_VALUE_ALPHABET = bytes(_ALNUM[i % len(_ALNUM)] for i in range(256))

#: Short.MAX_VALUE: a v2 transaction ending at this epoch hands the producer a new id
MAX_PRODUCER_EPOCH = 32767

# errors a producer retries (Kafka's RetriableException subclasses)
_RETRIABLE = frozenset({"NOT_LEADER_OR_FOLLOWER", "NOT_ENOUGH_REPLICAS",
                        "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "REQUEST_TIMED_OUT"})


@dataclass
class ProducerState:
    name: str
    producer_id: int
    producer_epoch: int
    idempotent: bool
    transactional_id: str | None
    sequences: dict[TP, int] = field(default_factory=dict)
    in_transaction: bool = False
    txn_partitions: list[TP] = field(default_factory=list)
    txn_first_offsets: dict[TP, int] = field(default_factory=dict)
    # sends whose response never came back (``in_flight: true``): resent by a ``resend`` step
    pending: list[tuple[TP, list[tuple[str | None, str | None]], str,
                        tuple[tuple[str, str | None], ...], int, SimBatch | None]] = field(default_factory=list)


@dataclass
class AckLine:
    record: SimRecord | None
    topic: str
    partition: int
    key: str | None
    value: str | None
    acks: str
    ok: bool
    offset: int | None
    leader_epoch: int | None
    error: str | None

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "key": self.key,
                "value": self.value, "acks": self.acks, "ok": self.ok, "offset": self.offset,
                "leader_epoch": self.leader_epoch, "error": self.error}


class ProducerHost(Protocol):
    """What producers read and call on the cluster."""

    @property
    def now(self) -> int: ...
    @property
    def spec(self) -> ClusterSpec: ...
    @property
    def topics(self) -> dict[str, TopicSpec]: ...
    @property
    def partitions(self) -> dict[TP, PartitionState]: ...
    @property
    def replicas(self) -> dict[TP, dict[int, ReplicaLog]]: ...
    @property
    def transaction_version(self) -> int: ...

    def is_alive(self, broker: int) -> bool: ...
    def is_paused(self, broker: int) -> bool: ...
    def tick(self) -> None: ...
    def advance_clock(self, to_ms: int, *, stop_on_isr_change: bool = False) -> bool: ...
    def fetch_round(self, only: TP | None = None) -> None: ...
    def leader_append(self, leader: ReplicaLog, batch: SimBatch) -> None: ...
    def maybe_increment_hw(self, tp: TP, ps: PartitionState) -> None: ...


class Producers:
    """The scenario's producers and their produce, resend and transaction steps; ``acks`` and
    ``records`` are what they sent, in order."""

    def __init__(self, host: ProducerHost, specs: tuple[ProducerSpec, ...],
                 value_rng: random.Random) -> None:
        self.host = host
        self._value_rng = value_rng
        self.acks: list[AckLine] = []
        self.records: list[SimRecord] = []
        self.next_producer_id = 1000
        # sends of steps that name no producer (in_flight ones are kept here for a resend)
        self.anonymous = ProducerState("", -1, -1, False, None)
        self._round_robin: dict[str, int] = {}
        self._seq = 0
        #: per paused leader, the produce requests waiting unread in its socket (a paused
        #: broker -- a stopped JVM -- answers nothing): appended when it resumes, dropped
        #: when it crashes or stops (resume_leader, drop_parked)
        self.parked: dict[int, list[tuple[TP, list[tuple[str | None, str | None]], str,
                                          tuple[tuple[str, str | None], ...],
                                          ProducerState | None, int]]] = {}
        self._just_parked = False
        #: per partition, the transaction marker the coordinator has not yet had acknowledged
        #: (written with acks=-1: acknowledged once the leader's HW passes it), with the
        #: broker holding it; None: no leader took it yet. The coordinator retries a marker
        #: on the partition's next leader (TransactionMarkerRequestCompletionHandler retries
        #: NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, ...), see rewrite_pending_marker
        self.pending_markers: dict[TP, tuple[SimBatch, int | None]] = {}
        self.producers: dict[str, ProducerState] = {}
        for spec in specs:
            self.producers[spec.name] = ProducerState(
                spec.name, self.next_producer_id if spec.idempotent else -1, 0 if spec.idempotent else -1,
                spec.idempotent, spec.transactional_id)
            if spec.idempotent:
                self.next_producer_id += 1

    def _producer_for(self, name: str | None) -> ProducerState | None:
        return None if name is None else self.producers[name]

    def begin_transaction(self, producer: str) -> None:
        p = self.producers[producer]
        if not p.in_transaction:
            p.in_transaction = True
            p.txn_partitions = []
            p.txn_first_offsets = {}

    def _write_marker(self, tp: TP, template: SimBatch) -> None:
        """The coordinator's WriteTxnMarkers to ``tp``'s leader now."""
        ps = self.host.partitions[tp]
        leader = self.host.replicas[tp][ps.leader]
        self.host.tick()
        batch = SimBatch(leader.log_end_offset, leader.log_end_offset, ps.leader_epoch, [],
                         self.host.now, template.producer_id, template.producer_epoch, -1, True,
                         template.control_type)
        batch.extra["txn_first_offset"] = template.extra["txn_first_offset"]
        self.host.leader_append(leader, batch)
        self.pending_markers[tp] = (batch, ps.leader)
        self.host.maybe_increment_hw(tp, ps)

    def rewrite_pending_marker(self, tp: TP) -> None:
        """``tp`` has a new leader: a marker its old leader had not had acknowledged (the HW
        had not passed it, and the new leader had not fetched it) is written again by the
        coordinator, on the new leader. Kafka's rule for caught-up followers keeps a paused
        follower in the ISR, so a marker written just before the leader's crash is written
        again on the follower elected cleanly (S19 on the real engine, 4.3.1 and 4.4.0)."""
        entry = self.pending_markers.get(tp)
        if entry is None:
            return
        batch, holder = entry
        if holder is not None and batch.base_offset < self.host.replicas[tp][holder].high_watermark:
            del self.pending_markers[tp]  # acknowledged: the coordinator is done with it
            return
        ps = self.host.partitions[tp]
        if ps.leader == NO_LEADER or not self.host.is_alive(ps.leader) or ps.leader == holder:
            return
        if holder is not None and any(
                b.control_type == batch.control_type and b.producer_id == batch.producer_id
                and b.producer_epoch == batch.producer_epoch
                for b in self.host.replicas[tp][ps.leader].batches_from(batch.base_offset)):
            # the new leader had fetched it: its next fetch told the old leader, whose HW
            # passed it within a fetch round (a step of the model) -- acknowledged
            del self.pending_markers[tp]
            return
        self._write_marker(tp, batch)

    def commit_transaction(self, producer: str) -> None:
        self._end_transaction(self.producers[producer], "COMMIT")

    def abort_transaction(self, producer: str) -> None:
        self._end_transaction(self.producers[producer], "ABORT")

    def _end_transaction(self, p: ProducerState, control_type: str) -> None:
        if not p.in_transaction:
            return
        # Transactions v2 (KIP-890, transaction.version >= 2): the coordinator bumps the epoch
        # at every EndTxn and writes the markers with the new epoch, which the producer then
        # uses (sequences restart); at the last epoch the producer id rolls over
        # (core/src/main/scala/kafka/coordinator/transaction/TransactionMetadata.scala)
        v2 = self.host.transaction_version >= 2
        marker_epoch = p.producer_epoch + 1 if v2 else p.producer_epoch
        for tp in p.txn_partitions:
            ps = self.host.partitions[tp]
            marker = SimBatch(0, 0, 0, [], 0, p.producer_id, marker_epoch, -1, True, control_type)
            marker.extra["txn_first_offset"] = p.txn_first_offsets.get(tp, 0)
            self.pending_markers[tp] = (marker, None)
            if ps.leader == NO_LEADER or not self.host.is_alive(ps.leader):
                continue  # the coordinator retries on the next leader; missing meanwhile (S19)
            self._write_marker(tp, marker)
        p.in_transaction = False
        p.txn_partitions = []
        if v2:
            if marker_epoch >= MAX_PRODUCER_EPOCH:
                p.producer_id = self.next_producer_id
                self.next_producer_id += 1
                p.producer_epoch = 0
            else:
                p.producer_epoch = marker_epoch
            p.sequences = {}

    def produce(self, topic: str, partition: int | None, acks: str,
                      values: list[str | None] | None, keys: list[str | None] | None, count: int,
                      value_bytes: int, headers: tuple[tuple[str, str | None], ...],
                      producer: str | None, batch_size: int, retries: int,
                      in_flight: bool = False) -> None:
        n_parts = self.host.topics[topic].partitions
        planned: dict[int, list[tuple[str | None, str | None]]] = {}
        order: list[int] = []
        for i in range(count):
            value = values[i] if values is not None else self._random_value(value_bytes)
            key = keys[i] if keys is not None else None
            if partition is not None:
                p = partition
            else:
                p = self._round_robin.get(topic, 0) % n_parts
                self._round_robin[topic] = p + 1
            if p not in planned:
                planned[p] = []
                order.append(p)
            planned[p].append((key, value))
        prod = self._producer_for(producer)
        if in_flight and prod is None:
            prod = self.anonymous
        for p in order:
            recs = planned[p]
            for i in range(0, len(recs), batch_size):
                if in_flight:
                    self._send_in_flight((topic, p), recs[i:i + batch_size], acks, headers, prod)
                else:
                    self._send((topic, p), recs[i:i + batch_size], acks, headers, prod, retries)

    def _send_in_flight(self, tp: TP, recs: list[tuple[str | None, str | None]], acks: str,
                        headers: tuple[tuple[str, str | None], ...], prod: ProducerState | None) -> None:
        """The request reaches the leader (appended) but its response is lost: the producer
        will resend it (same sequence numbers when idempotent) at a ``resend`` step."""
        assert prod is not None
        base_seq = self._next_sequence(tp, prod, len(recs))
        ok, error, batch = self._send_once(tp, recs, acks, headers, prod, base_seq, wait=False)
        # the sequence stays taken even when no leader took the batch: the resend reuses it
        prod.pending.append((tp, recs, acks, headers, base_seq, batch))

    def resend(self, producer: str | None) -> None:
        prod = self.anonymous if producer is None else self.producers[producer]
        pending, prod.pending = prod.pending, []
        for tp, recs, acks, headers, base_seq, first in pending:
            batch = self._send(tp, recs, acks, headers, prod, 0, base_seq=base_seq)
            if first is not None and batch is not None and batch is not first:
                for old, new in zip(first.records, batch.records):
                    old.resent_as = new  # the same send written again (RELOCATED / DUPLICATE)

    def finish(self) -> None:
        """Sends still waiting for a response when the scenario ends time out."""
        for prod in [self.anonymous, *self.producers.values()]:
            for tp, recs, acks, _headers, _base_seq, _ in prod.pending:
                for key, value in recs:
                    self.acks.append(AckLine(None, tp[0], tp[1], key, value, acks, False, None,
                                             None, "REQUEST_TIMED_OUT"))
            prod.pending = []

    @staticmethod
    def _next_sequence(tp: TP, prod: ProducerState | None, n: int) -> int:
        if prod is None or not prod.idempotent:
            return -1
        base_seq = prod.sequences.get(tp, 0)
        prod.sequences[tp] = base_seq + n
        return base_seq

    def _random_value(self, n: int) -> str:
        # seeded bytes mapped onto letters and digits: printable, so acks.jsonl stays text
        return self._value_rng.randbytes(n).translate(_VALUE_ALPHABET).decode("ascii")

    def _send(self, tp: TP, recs: list[tuple[str | None, str | None]], acks: str,
              headers: tuple[tuple[str, str | None], ...], prod: ProducerState | None,
              retries: int, *, base_seq: int | None = None) -> SimBatch | None:
        resend = base_seq is not None
        if base_seq is None:
            base_seq = self._next_sequence(tp, prod, len(recs))
        attempt = 0
        appended = False
        while True:
            self._just_parked = False
            ok, error, batch = self._send_once(tp, recs, acks, headers, prod, base_seq)
            # a parked request keeps its sequence: it reaches the log when the leader resumes
            appended |= batch is not None or self._just_parked
            if ok or attempt >= retries or error not in _RETRIABLE:
                break
            attempt += 1
            self.host.fetch_round()  # the producer backs off; replication goes on meanwhile
        if prod is not None and prod.idempotent and not appended and not resend:
            prod.sequences[tp] = base_seq  # nothing reached a log: the sequence is reused
        for i, (key, value) in enumerate(recs):
            rec = batch.records[i] if (batch is not None and ok) else None
            if rec is not None and acks != "0":
                rec.acked = True
            show = ok and acks != "0" and rec is not None
            self.acks.append(AckLine(rec, tp[0], tp[1], key, value, acks, ok,
                                     rec.offset if show and rec else None,
                                     rec.leader_epoch if show and rec else None,
                                     None if ok else error))
        return batch

    def _send_once(self, tp: TP, recs: list[tuple[str | None, str | None]], acks: str,
                   headers: tuple[tuple[str, str | None], ...], prod: ProducerState | None,
                   base_seq: int, *, wait: bool = True) -> tuple[bool, str | None, SimBatch | None]:
        ps = self.host.partitions[tp]
        if ps.leader == NO_LEADER or not self.host.is_alive(ps.leader):
            return False, "NOT_LEADER_OR_FOLLOWER", None
        if acks == "all" and len(ps.isr) < ps.min_insync_replicas:
            return False, "NOT_ENOUGH_REPLICAS", None
        if self.host.is_paused(ps.leader):
            # a stopped leader reads no request (real Kafka under SIGSTOP): the request waits
            # in its socket; acks=0 does not wait for an answer, acks=1/all times out after
            # request_timeout_ms (the model's clock runs meanwhile: followers' lag counts)
            self.parked.setdefault(ps.leader, []).append((tp, recs, acks, headers, prod, base_seq))
            self._just_parked = True
            if acks == "0" or not wait:
                return True, None, None
            self.host.advance_clock(self.host.now + self.host.spec.request_timeout_ms)
            return False, "REQUEST_TIMED_OUT", None
        return self._append(tp, ps, recs, acks, headers, prod, base_seq, wait=wait)

    def resume_leader(self, broker: int) -> None:
        """``broker`` resumes: it reads the produce requests parked in its socket and appends
        those of partitions it still leads (their producers gave up on them: never acked)."""
        for tp, recs, acks, headers, prod, base_seq in self.parked.pop(broker, []):
            ps = self.host.partitions[tp]
            if ps.leader == broker and self.host.is_alive(broker):
                self._append(tp, ps, recs, acks, headers, prod, base_seq, wait=False)

    def drop_parked(self, broker: int) -> None:
        """``broker`` crashed or stopped: the requests in its socket are gone."""
        self.parked.pop(broker, None)

    def _append(self, tp: TP, ps: PartitionState, recs: list[tuple[str | None, str | None]], acks: str,
                headers: tuple[tuple[str, str | None], ...], prod: ProducerState | None,
                base_seq: int, *, wait: bool) -> tuple[bool, str | None, SimBatch | None]:
        leader = self.host.replicas[tp][ps.leader]
        batch = None
        if prod is not None and prod.idempotent:
            batch = self._find_duplicate(leader, prod, base_seq, len(recs))
        if batch is None:
            self.host.tick()
            base = leader.log_end_offset
            records = []
            for i, (key, value) in enumerate(recs):
                self._seq += 1
                records.append(SimRecord(tp[0], tp[1], base + i, ps.leader_epoch, key, value,
                                         headers, self.host.now, acks, seq=self._seq))
            batch = SimBatch(base, base + len(recs) - 1, ps.leader_epoch, records, self.host.now,
                             compression=self.host.topics[tp[0]].compression)
            if prod is not None and prod.idempotent:
                batch.producer_id = prod.producer_id
                batch.producer_epoch = prod.producer_epoch
                batch.base_sequence = base_seq
                if prod.transactional_id is not None:
                    if not prod.in_transaction:
                        self.begin_transaction(prod.name)
                    batch.is_transactional = True
                    if tp not in prod.txn_partitions:
                        prod.txn_partitions.append(tp)
                        prod.txn_first_offsets[tp] = base
            self.host.leader_append(leader, batch)
            self.records.extend(records)
            self.host.maybe_increment_hw(tp, ps)  # a leader alone in the ISR commits at once
        if acks != "all" or not wait:
            return True, None, batch
        return self._await_replication(tp, ps, batch)

    @staticmethod
    def _find_duplicate(leader: ReplicaLog, prod: ProducerState, base_seq: int,
                        count: int) -> SimBatch | None:
        """Idempotence: a retried batch the leader already holds is answered with its offsets
        (the broker remembers the last five batches of each producer)."""
        seen = 0
        for batch in reversed(leader.batches):
            if batch.producer_id == prod.producer_id and batch.control_type is None:
                if (batch.producer_epoch == prod.producer_epoch and batch.base_sequence == base_seq
                        and len(batch.records) == count):
                    return batch
                seen += 1
                if seen >= 5:
                    break
        return None

    def _await_replication(self, tp: TP, ps: PartitionState,
                           batch: SimBatch) -> tuple[bool, str | None, SimBatch | None]:
        """acks=all: wait until the HW passes the batch; lagging ISR members are dropped after
        replica_lag_time_max_ms; give up after request_timeout_ms."""
        leader_id = ps.leader
        leader = self.host.replicas[tp][leader_id]
        deadline = self.host.now + self.host.spec.request_timeout_ms
        while True:
            for _ in range(3):
                if leader.high_watermark > batch.last_offset:
                    break
                self.host.fetch_round(tp)
            if leader.high_watermark > batch.last_offset:
                if len(ps.isr) < ps.min_insync_replicas:
                    return False, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", batch
                return True, None, batch
            if ps.leader != leader_id or self.host.now >= deadline:
                return False, "REQUEST_TIMED_OUT", batch
            self.host.advance_clock(deadline, stop_on_isr_change=True)
