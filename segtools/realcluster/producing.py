"""The producing steps of the real engine (a mixin of :class:`~segtools.realcluster.steps.StepRunner`):
``produce`` (acks 0/1/all, a librdkafka producer per step, or the long-lived producer of an
idempotent/transactional ``producers:`` entry), ``in_flight`` sends and ``resend``, and
``begin_transaction``/``commit_transaction``/``abort_transaction``."""

from __future__ import annotations

import os
import time
from typing import Any

from segtools.realcluster import config
from segtools.realcluster.cluster import ClusterError, RealCluster
from segtools.simulate.controller import NO_LEADER
from segtools.simulate.scenario import ProducerSpec, Scenario, Step

WAIT_S = config.STEP_WAIT_S
#: with a broker paused: how long a commit/abort waits for the coordinator to complete once
#: its markers are in the leaders' logs (every second of a pause counts)
MARKER_GRACE_S = 2.0

# librdkafka's names of Kafka error codes that differ from Kafka's, and its local errors
_ERROR_NAMES = {"NOT_LEADER_FOR_PARTITION": "NOT_LEADER_OR_FOLLOWER",
                "_MSG_TIMED_OUT": "REQUEST_TIMED_OUT", "_TIMED_OUT": "REQUEST_TIMED_OUT",
                "REQUEST_TIMED_OUT": "REQUEST_TIMED_OUT"}


def error_name(err: Any) -> str:
    name = err.name() if hasattr(err, "name") else str(err)
    return _ERROR_NAMES.get(name, name.lstrip("_"))


def _await_answers(producer: Any, results: list[Any], n: int, deadline: float) -> int:
    """Serve ``producer``'s delivery callbacks until the first ``n`` of ``results`` are
    answered or ``deadline`` (monotonic) passes; how many are still unanswered. Unlike
    ``flush`` it does not wait for records of earlier steps still queued."""
    while True:
        left = sum(r is None for r in results[:n])
        if not left or time.monotonic() >= deadline:
            return left
        producer.poll(min(0.05, max(0.0, deadline - time.monotonic())))


def log_bytes(pdir: str) -> int:
    """The total size of a partition dir's segments (0 when it is not there)."""
    try:
        return sum(e.stat().st_size for e in os.scandir(pdir) if e.name.endswith(".log"))
    except OSError:
        return 0


def log_end_offset(pdir: str) -> int:
    """A partition dir's log end offset from its newest segment's batch headers: the last
    offset + 1 of the last batch the one batch walk (Kafka's ``FileLogInputStream``) steps
    over, else the segment's base offset; -1 when there is no segment or it cannot be read
    (it is asked again at the next poll). The walk ends where a batch is still being written
    (a torn tail), and at a size field below 14 or a v2 batch shorter than its header, which
    Kafka's recovery would truncate: no offset after those counts."""
    from segtools.errors import SegtoolsError
    from segtools.formats.record_batch import LAST_OFFSET_DELTA_OFFSET, RECORD_BATCH_OVERHEAD
    from segtools.records.segment_file import SegmentFile

    try:
        names = sorted(e.name for e in os.scandir(pdir) if e.name.endswith(".log"))
    except OSError:
        return -1
    if not names:
        return -1
    newest = names[-1]
    end = int(newest[:-len(".log")])
    try:
        with SegmentFile(os.path.join(pdir, newest)) as sf:
            for step in sf.batches_from(0):
                if step.magic < 2:
                    end = step.base_offset + 1   # a legacy entry's offset is its last
                    continue
                if step.size < RECORD_BATCH_OVERHEAD:
                    break
                buf, rel = sf.batch_bytes(step)
                delta = int.from_bytes(buf[rel + LAST_OFFSET_DELTA_OFFSET:
                                           rel + LAST_OFFSET_DELTA_OFFSET + 4], "big", signed=True)
                end = step.base_offset + delta + 1
    except SegtoolsError:
        return -1   # a follower truncating it under us: the next poll reads it again
    return end


class ProducerSteps:
    """Producing steps; the attributes are StepRunner's."""

    scenario: Scenario
    cluster: RealCluster
    model: Any
    acks: list[dict[str, Any]]
    log: Any
    producers: dict[str, Any]
    in_transaction: dict[str, bool]
    txn_last_offsets: dict[str, dict[tuple[str, int], int]]
    real_pending: dict[str | None, list[dict[str, Any]]]
    resent: list[dict[str, Any]]
    _pending_before: dict[str | None, int]

    def _model_producers(self) -> dict[str | None, Any]:
        raise NotImplementedError

    def _spec(self, name: str) -> ProducerSpec:
        return next(p for p in self.scenario.producers if p.name == name)

    def _named_producer(self, name: str | None) -> Any:
        """The long-lived producer of an idempotent or transactional ``producers:`` entry
        (None for a plain one: it sends like an anonymous producer)."""
        from confluent_kafka import Producer

        if name is None:
            return None
        spec = self._spec(name)
        if not spec.idempotent:
            return None
        if name not in self.producers:
            conf: dict[str, Any] = {
                "bootstrap.servers": self.cluster.bootstrap(self._answering()),
                # a little linger: records enqueued together (produce_batch) leave as one
                # batch; a flush after each batch_size chunk does not wait for it
                "acks": "all", "enable.idempotence": True, "linger.ms": 20,
                "max.in.flight.requests.per.connection": 1,
                "request.timeout.ms": 8000, "log_level": 0,
                # long enough for an unanswered batch to reach the next leader (a crashed
                # leader is fenced after the 10 s session timeout)
                "message.timeout.ms": 30000}
            if spec.transactional_id is not None:
                conf["transactional.id"] = spec.transactional_id
                conf["transaction.timeout.ms"] = 60000
            producer = Producer(conf)
            if spec.transactional_id is not None:
                producer.init_transactions(30)
            self.producers[name] = producer
            self.in_transaction[name] = False
        return self.producers[name]

    def _do_begin_transaction(self, step: Step, _: Any) -> None:
        self._begin(step.args["producer"])

    def _begin(self, name: str) -> None:
        # the model opens the transaction at the first send too: begin is idempotent there
        if not self.in_transaction.get(name):
            self._named_producer(name).begin_transaction()
            self.in_transaction[name] = True

    def _do_commit_transaction(self, step: Step, _: Any) -> None:
        self._end(step, commit=True)

    def _do_abort_transaction(self, step: Step, _: Any) -> None:
        self._end(step, commit=False)

    def _end(self, step: Step, *, commit: bool) -> None:
        """EndTxn through librdkafka. The coordinator answers once its PREPARE_* is in
        __transaction_state and writes the markers to the partition leaders afterwards
        (kafka.coordinator.transaction.TransactionCoordinator, core module)."""
        name = step.args["producer"]
        if not self.in_transaction.get(name):
            return
        producer = self._named_producer(name)
        last = self.txn_last_offsets.pop(name, {})
        view = self._view()
        # the leaders that answer now, and the size of their logs before the marker
        leaders = {tp: v.leader for tp, v in view.items()
                   if tp in last and v.leader is not None and self.cluster._answering(v.leader)}
        sizes = {tp: log_bytes(self._partition_dir(b, tp)) for tp, b in leaders.items()}
        states = self.cluster.coordinator_batches()
        try:
            if commit:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)
        except Exception as exc:  # noqa: BLE001 - recorded in run.json, the run goes on
            self.log.errors.append({"step": step.index, "error": f"{step.kind}: {exc}"})
        self.in_transaction[name] = False
        self._await_markers(step, last, leaders, sizes, states)

    def _partition_dir(self, b: int, tp: tuple[str, int]) -> str:
        return os.path.join(self.cluster.broker_dir(b), f"{tp[0]}-{tp[1]}")

    def _await_markers(self, step: Step, last: dict[tuple[str, int], int],
                       leaders: dict[tuple[str, int], int], sizes: dict[tuple[str, int], int],
                       states: int) -> None:
        """The model writes the markers at the commit/abort step itself; the coordinator
        answers EndTxn once PrepareCommit/PrepareAbort is in __transaction_state and writes
        the markers after (kafka.coordinator.transaction.TransactionCoordinator, core module).
        Wait for its CompleteCommit/CompleteAbort: every marker written and acknowledged (a
        crash right after the step must not make the coordinator write one again). While a
        broker is paused a marker cannot pass a paused ISR follower, so there the wait ends
        once each leader that answered before the step has it in its log. A leader that is
        down or paused gets its marker later (the coordinator retries; the model does not:
        README, "real-Kafka behaviours")."""
        if not last:
            return  # nothing was sent in the transaction: the coordinator writes no marker
        t0 = time.monotonic()

        def in_logs() -> bool:
            lso = self.cluster.high_watermarks(committed=True)
            return all(lso.get(tp, -1) > last[tp] or log_bytes(self._partition_dir(b, tp)) > sizes[tp]
                       for tp, b in leaders.items())

        logged_at: list[float] = []

        def written() -> bool:
            if self.cluster.coordinator_batches() >= states + 2:
                return True  # Prepare* and Complete* since the step began
            if not any(p.paused for p in self.cluster.brokers.values()):
                return False
            if not logged_at and in_logs():
                logged_at.append(time.monotonic())
            # the coordinator completes within milliseconds when the markers commit (ISR of
            # the leader alone); a paused follower in the ISR holds it back: stop waiting
            return bool(logged_at) and time.monotonic() - logged_at[0] >= MARKER_GRACE_S

        ok = self.cluster.wait_for(written, WAIT_S, "the transaction markers", raise_on_timeout=False)
        self.log.waits.append({"step": step.index, "kind": step.kind, "reached": ok,
                               "seconds": round(time.monotonic() - t0, 3),
                               "how": "coordinator's Complete* state (or, a broker paused, "
                                      "the markers in the leaders' logs)"})

    def _model_offline(self, topic: str, partition: int) -> bool:
        from segtools.simulate.controller import NO_LEADER

        ps = self.model.partitions.get((topic, partition))
        return ps is not None and ps.leader == NO_LEADER

    def _model_leader_paused(self, topic: str, partition: int) -> bool:
        from segtools.simulate.controller import NO_LEADER

        ps = self.model.partitions.get((topic, partition))
        return ps is not None and ps.leader != NO_LEADER and self.model.brokers[ps.leader].paused

    def close_producers(self) -> None:
        """Drop the producers without ending an open transaction (a transaction still open
        when the scenario ends stays open in the logs, as in the model)."""
        self.producers.clear()

    def _do_produce(self, step: Step, planned: list[Any]) -> None:
        from confluent_kafka import Producer

        a = step.args
        if a["in_flight"]:
            self._produce_in_flight(step)
            return
        view = self._view()
        # (or offline in the model while the real controller has not yet fenced the crashed
        # leader: the send fails in both, and a real one waiting for that fencing ran out a
        # paused broker's session -- random seed 1006, 30 s for an acks=0 send)
        offline = any(view.get((line.topic, line.partition)) is None
                      or view[(line.topic, line.partition)].leader is None
                      or self._model_offline(line.topic, line.partition) for line in planned)
        # the scenario's request_timeout_ms, scaled, when the model says the sends time out
        # (a request that expires before the lag drops the follower: the ISR stays, as the
        # scenario says); otherwise config.produce_request_ms (8 s or more), so an ISR
        # shrink the model waits for is waited for too
        timed_out = any(getattr(line, "error", None) == "REQUEST_TIMED_OUT" for line in planned)
        # a paused (stopped) leader reads no request: the model's producer waits its whole
        # request_timeout_ms for it, and so does the real one (scaled, not capped: the
        # paused followers' lag and the session run meanwhile on both)
        to_paused = any(self._model_leader_paused(line.topic, line.partition) for line in planned)
        normal_ms = config.produce_request_ms(self.scenario)
        request_ms = normal_ms
        if timed_out and (a["acks"] == "all" or to_paused):
            request_ms = max(200, round(self.scenario.cluster.request_timeout_ms / config.time_scale(self.scenario)))
            if not to_paused:
                # (no longer than a send the model acks: c-durability-acks-all's second
                # send was appended before the shrink when the first gave up at 8 s)
                request_ms = min(request_ms, normal_ms)
        conf = {"bootstrap.servers": self.cluster.bootstrap(self._answering()),
                "acks": "all" if a["acks"] == "all" else a["acks"],
                "enable.idempotence": False,
                "retries": a["retries"],
                "linger.ms": 0,
                "max.in.flight.requests.per.connection": 1,
                "batch.num.messages": a["batch_size"],
                "request.timeout.ms": request_ms,
                # a partition without a leader fails fast (the model fails it at once)
                "message.timeout.ms": 1000 if offline else max(10000 if request_ms == normal_ms else 0,
                                                               request_ms + 100),
                "log_level": 0}
        named = self._named_producer(a["producer"])
        if named is not None and self._spec(a["producer"]).transactional_id is not None:
            self._begin(a["producer"])
        producer = named if named is not None else Producer(conf)
        results: list[dict[str, Any] | None] = [None] * len(planned)

        def callback(i: int) -> Any:
            def cb(err: Any, msg: Any) -> None:
                if err is None:
                    off = msg.offset()
                    epoch = msg.leader_epoch()
                    results[i] = {"ok": True, "offset": off if off is not None and off >= 0 else None,
                                  "leader_epoch": epoch if epoch is not None and epoch >= 0 else None,
                                  "error": None}
                else:
                    results[i] = {"ok": False, "offset": None, "leader_epoch": None,
                                  "error": error_name(err)}
            return cb

        # acks=0: the producer reports success before the leader has appended anything; the
        # leader's log file is watched so that a crash in the next step does not race it
        watched = {}
        if a["acks"] == "0":
            for line in planned:
                v = view.get((line.topic, line.partition))
                # (a paused leader appends nothing before it resumes: nothing to wait for)
                if v is not None and v.leader is not None \
                        and not self._model_leader_paused(line.topic, line.partition):
                    pdir = os.path.join(self.cluster.broker_dir(v.leader), f"{line.topic}-{line.partition}")
                    watched[pdir] = log_bytes(pdir)
        headers = [(k, None if v is None else v.encode()) for k, v in a["headers"]] or None
        # a long-lived idempotent producer has one request.timeout.ms and retries a batch
        # until its message timeout: a send the model times out (a paused leader, or an
        # acks=all send outlasted by the lag) waits as long as the model's send (its request
        # timeout, scaled), not longer (a 60 s flush outlasted the session sized for the
        # model's time and the paused broker was fenced). What is still unanswered then
        # counts as timed out, as in the model, and stays queued in librdkafka: it reaches
        # the leader's log when the leader resumes, never acked (the model's parked
        # request); later steps wait for their own records only, not for it. (0.2 s: no
        # answer can come from a paused leader, and every second runs its followers' lag)
        deadline = time.monotonic() + (config.real_step_s(self.scenario, step) + 0.2
                                       if named is not None and (to_paused or timed_out) else 60.0)
        for i, line in enumerate(planned):
            producer.produce(line.topic, partition=line.partition,
                             key=None if line.key is None else line.key.encode(),
                             value=None if line.value is None else line.value.encode(),
                             headers=headers, on_delivery=callback(i))
            producer.poll(0)
            if named is not None and (i + 1) % a["batch_size"] == 0:
                # one long-lived producer cannot take the step's batch.num.messages: its
                # batches are cut here instead (one request in flight, no linger)
                _await_answers(producer, results, i + 1, deadline)
        left = (_await_answers(producer, results, len(results), deadline) if named is not None
                else producer.flush(60))
        if watched:
            grown = self.cluster.wait_for(lambda: all(log_bytes(d) > n for d, n in watched.items()),
                                          5, "acks=0 records appended", raise_on_timeout=False)
            last = {d: log_bytes(d) for d in watched}
            while grown:  # then until the file stops growing (the records may span requests)
                time.sleep(0.2)
                now = {d: log_bytes(d) for d in watched}
                if now == last:
                    break
                last = now
        if named is not None and a["producer"] in self.in_transaction:
            txn_last = self.txn_last_offsets.setdefault(a["producer"], {})
            for line, res in zip(planned, results):
                if res is not None and res["ok"] and res["offset"] is not None:
                    tp = (line.topic, line.partition)
                    txn_last[tp] = max(txn_last.get(tp, -1), res["offset"])
        for i, line in enumerate(planned):
            res = results[i] or {"ok": False, "offset": None, "leader_epoch": None,
                                 "error": "REQUEST_TIMED_OUT" if left else "UNKNOWN"}
            if a["acks"] == "0":
                res = {**res, "offset": None, "leader_epoch": None}
            self.acks.append({"topic": line.topic, "partition": line.partition, "key": line.key,
                              "value": line.value, "acks": a["acks"], **res})

    def _produce_in_flight(self, step: Step) -> None:
        """Sends whose answer is lost: each batch the model sent reaches the leader's log and
        the answer is never read. An idempotent producer's batch goes through its librdkafka
        producer, left undelivered until the ``resend`` step (librdkafka itself resends it,
        same sequence, to whichever broker leads by then); a plain one is a hand-written
        ProduceRequest (raw_produce.py) whose connection is closed once the leader has
        appended it."""
        from segtools.realcluster import raw_produce

        key = step.args["producer"]
        model_prod = self._model_producers()[key]
        new = model_prod.pending[self._pending_before.get(key, 0):]
        named = self._named_producer(key)
        view = self._view()
        touched = set()
        for i, (tp, recs, acks, headers, _base_seq, _batch) in enumerate(new):
            entry: dict[str, Any] = {"tp": tp, "recs": list(recs), "acks": acks, "headers": headers,
                                     "named": named is not None, "results": [None] * len(recs)}
            self.real_pending.setdefault(key, []).append(entry)
            v = view.get(tp)
            if v is None or v.leader is None or not self.cluster._answering(v.leader):
                continue  # no leader to take it now: the resend sends it
            pdir = self._partition_dir(v.leader, tp)
            size = log_bytes(pdir)
            sock = None
            if named is not None and not headers:
                # enqueued at once, so that librdkafka sends the model's batch as one request
                # (one produce() at a time, linger 0, would send the first record alone and
                # hold the rest behind its unanswered request)
                named.produce_batch(tp[0], [
                    {"key": None if k is None else k.encode(), "value": None if val is None else val.encode(),
                     "callback": self._store(entry["results"], j)} for j, (k, val) in enumerate(recs)],
                    partition=tp[1])
                named.poll(0)
            elif named is not None:
                for j, (k, val) in enumerate(recs):
                    named.produce(tp[0], partition=tp[1], key=None if k is None else k.encode(),
                                  value=None if val is None else val.encode(),
                                  headers=[(hk, None if hv is None else hv.encode()) for hk, hv in headers],
                                  on_delivery=self._store(entry["results"], j))
                named.poll(0)
            else:
                request = raw_produce.produce_request(tp[0], tp[1], recs, headers,
                                                      -1 if acks == "all" else int(acks), 8000,
                                                      step.index * 1000 + i)
                sock = raw_produce.send(self.cluster.ports.brokers[v.leader], request)
            self.cluster.wait_for(lambda d=pdir, n=size: log_bytes(d) > n, 5, "the in-flight batch appended",  # type: ignore[misc]
                                  raise_on_timeout=False)
            if sock is not None:
                sock.close()  # the answer is never read
            touched.add(tp)
        self._await_model_hws(step, touched)

    @staticmethod
    def _store(results: list[Any], j: int) -> Any:
        def cb(err: Any, msg: Any) -> None:
            if err is None:
                off = msg.offset()
                results[j] = {"ok": True, "offset": off if off is not None and off >= 0 else None,
                              "leader_epoch": None, "error": None}
            else:
                results[j] = {"ok": False, "offset": None, "leader_epoch": None,
                              "error": error_name(err)}
        return cb

    def _await_model_hws(self, step: Step, tps: set[tuple[str, int]]) -> None:
        """After the step the model's followers fetch: wait until the real leaders' HWs reach
        the model's (the in-flight batch replicated where the model replicated it)."""
        target = {}
        for tp in tps:
            ps = self.model.partitions[tp]
            if ps.leader != NO_LEADER:
                target[tp] = self.model.replicas[tp][ps.leader].high_watermark
        if not target:
            return
        t0 = time.monotonic()
        ok = self.cluster.wait_for(lambda: all(self.cluster.high_watermarks().get(tp, -1) >= hw
                                               for tp, hw in target.items()),
                                   5, "the in-flight batch replicated", raise_on_timeout=False)
        self.log.waits.append({"step": step.index, "kind": step.kind, "reached": ok,
                               "seconds": round(time.monotonic() - t0, 3),
                               "how": "ListOffsets: the model's HW after an in-flight send"})

    def _do_resend(self, step: Step, _: Any) -> None:
        """The producer sends its unanswered batches again, oldest first: librdkafka delivers
        an idempotent producer's (same producer id and sequence: the broker answers a batch
        it already holds with its offsets); a plain batch is sent again as it was."""
        from segtools.realcluster import raw_produce

        key = step.args["producer"]
        entries = self.real_pending.pop(key, [])
        named = self._named_producer(key)
        if named is not None and any(e["named"] for e in entries):
            named.flush(60)
        for i, e in enumerate(entries):
            tp = e["tp"]
            results = e["results"]
            if not e["named"]:
                results = [None] * len(e["recs"])
                v = self._view().get(tp)
                err: str | None = "NOT_LEADER_OR_FOLLOWER"
                base = -1
                if v is not None and v.leader is not None and self.cluster._answering(v.leader):
                    request = raw_produce.produce_request(tp[0], tp[1], e["recs"], e["headers"],
                                                          -1 if e["acks"] == "all" else int(e["acks"]),
                                                          8000, step.index * 1000 + i)
                    try:
                        sock = raw_produce.send(self.cluster.ports.brokers[v.leader], request)
                        try:
                            if e["acks"] == "0":
                                err, base = None, -1
                            else:
                                err, base = raw_produce.read_response(sock)
                        finally:
                            sock.close()
                    except OSError:
                        err = "REQUEST_TIMED_OUT"
                for j in range(len(e["recs"])):
                    results[j] = {"ok": err is None, "leader_epoch": None, "error": err,
                                  "offset": base + j if err is None and base >= 0 else None}
            for (k, val), res in zip(e["recs"], results):
                res = res or {"ok": False, "offset": None, "leader_epoch": None, "error": "REQUEST_TIMED_OUT"}
                if e["acks"] == "0":
                    res = {**res, "offset": None, "leader_epoch": None}
                line = {"topic": tp[0], "partition": tp[1], "key": k, "value": val, "acks": e["acks"], **res}
                self.acks.append(line)
                if res["ok"] and res["offset"] is not None:
                    self.resent.append(line)

    def _view(self) -> dict[tuple[str, int], Any]:
        """The partitions' leaders and ISRs; none when every broker is crashed or paused
        (nobody to send to: the sends time out, as a client's would)."""
        try:
            return self.cluster.describe()
        except ClusterError:
            return {}

    def _answering(self) -> list[int]:
        return [b for b, p in self.cluster.brokers.items() if p.alive() and not p.paused] or \
            sorted(self.cluster.ports.brokers)
