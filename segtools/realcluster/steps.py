"""Scenario steps as real actions on a :class:`RealCluster`.

The model runs in lockstep, for two things: it says which records a ``produce`` step sends
(same keys, values and round-robin partitions as ``--engine model``), and which state the step
implies: the leaders and ISRs (polled through the Admin API, never a blind sleep) and every
replica's log end (read from the broker's files, so a step that depends on replication --
a follower has fetched X before it is paused -- waits for it). Time runs as the scenario says:
an ``advance`` waits until the real clock has caught up with the scenario's clock, scaled by
``config.time_scale``. A step whose state the cluster does not reach stops the run with a
:class:`DriftError` naming the step and what the cluster did instead, unless the run allows
drift (``--allow-drift``): then it is recorded (OUT/kafka/run.json ``drift``) and the run goes on.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from typing import Any

from segtools.realcluster import config
from segtools.realcluster.cluster import ClusterError, RealCluster
from segtools.realcluster.producing import ProducerSteps
from segtools.simulate.controller import NO_LEADER
from segtools.simulate.scenario import Scenario, Step

#: how long a step waits for the followers' log ends the model says they reached
REPLICATION_WAIT_S = 8.0


class DriftError(ClusterError):
    """The real cluster did not reach the state a scenario step implies."""

    exit_code = 1

@dataclass
class StepObservation:
    """What the real cluster showed after one step (used for truth.json)."""

    index: int
    kind: str
    copy_dir: str | None
    leaders: dict[str, int | None]
    high_watermarks: dict[str, int]


#: what a wait while a broker is paused leaves of its session: the rest of the step, and the
#: heartbeat after the resume, must fit before the controller fences it
PAUSED_SESSION_MARGIN_S = 4.0


@dataclass
class RunLog:
    waits: list[dict[str, Any]] = field(default_factory=list)
    elections: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    timings: list[dict[str, Any]] = field(default_factory=list)
    #: per crash: how long the controller took to fence the broker at the engine's request
    fencings: list[dict[str, Any]] = field(default_factory=list)


class StepRunner(ProducerSteps):
    def __init__(self, scenario: Scenario, cluster: RealCluster, out_dir: str, *,
                 allow_drift: bool = False) -> None:
        from segtools.simulate.cluster import Cluster

        self.scenario = scenario
        self.cluster = cluster
        self.out = out_dir
        self.model = Cluster(scenario)
        self.acks: list[dict[str, Any]] = []
        self.observations: list[StepObservation] = []
        self.log = RunLog()
        self.steps_dir = os.path.join(out_dir, "kafka", "steps")
        self.final_alive: dict[int, bool] = {}
        # the scenario's idempotent/transactional producers: one librdkafka producer each for
        # the whole run (its producer id and sequences carry over from step to step)
        self.producers: dict[str, Any] = {}
        self.in_transaction: dict[str, bool] = {}
        # in_flight sends not answered yet, per producer (None: anonymous), oldest first; and
        # the copies a resend wrote (for truth.json's relocated_to)
        self.real_pending: dict[str | None, list[dict[str, Any]]] = {}
        self.resent: list[dict[str, Any]] = []
        self._pending_before: dict[str | None, int] = {}
        # per transactional producer: the last acked offset of its open transaction per partition
        self.txn_last_offsets: dict[str, dict[tuple[str, int], int]] = {}
        self.allow_drift = allow_drift
        #: one line per step whose state the cluster did not reach (only with allow_drift)
        self.drift: list[dict[str, Any]] = []
        self.scale = config.time_scale(scenario)
        self.wait_s = config.step_wait_s(scenario)
        #: the real and the scenario clock at the first step (advance aligns them again)
        self._clock0: tuple[float, int] = (0.0, 0)
        #: per step: the model's metadata record count after it (story.py maps records to steps)
        self.model_marks: list[int] = []
        #: per step: the controller's metadata log size after it (same, for the real records)
        self.real_marks: list[int] = []

    # ------------------------------------------------------------------ driving
    def _drive(self, step: Step, acks: Any) -> None:
        """One step on the cluster. A Kafka client error the step does not handle (seen:
        librdkafka's fatal idempotence state "Local: Erroneous state" after a paused leader)
        stops the run with one line naming the step, not a traceback; every JVM is stopped
        by run_on_kafka on the way out."""
        from confluent_kafka import KafkaException

        try:
            getattr(self, "_do_" + step.kind)(step, acks)
        except KafkaException as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ClusterError(f"steps[{step.index}] ({step.kind}): the Kafka client failed: {first} "
                               f"(the brokers' logs are under kafka/)") from None

    def run(self) -> None:
        self.observe(-1, "create")
        self._clock0 = (time.monotonic(), self.model.now)
        self.model_marks.append(len(self.model.controller.events))
        self.real_marks.append(self.cluster.metadata_log_size())
        for step in self.scenario.steps:
            t0 = time.monotonic()
            before = len(self.model.acks)
            self._pending_before = {k: len(p.pending) for k, p in self._model_producers().items()}
            self.model.apply(step)
            self._drive(step, self.model.acks[before:])
            for b in self.cluster.reap_stopping(self.wait_s):
                self.log.errors.append({"step": step.index, "error": f"broker {b} did not finish its "
                                        "controlled shutdown once no broker was paused: SIGKILLed"})
            self._settle(step)
            self._await_replication(step)
            self.model_marks.append(len(self.model.controller.events))
            self.real_marks.append(self.cluster.metadata_log_size())
            if any(p.paused for p in self.cluster.brokers.values()):
                # while a broker is paused every second counts (its ISR membership and
                # session run out): no copy now; nothing on a crashed or paused broker's
                # disk changes before the next step that has nobody paused is observed
                self.observations.append(StepObservation(step.index, step.kind, None, {}, {}))
            else:
                self.observe(step.index, step.kind)
            self.log.timings.append({"step": step.index, "kind": step.kind,
                                     "seconds": round(time.monotonic() - t0, 3)})
        self._settle_the_end()
        self.model.finish()
        for b in self.cluster.stopping():
            # a broker still paused holds the controller's grant back: the dir of ``b`` ends
            # without the clean-shutdown marker the model's stopped broker has
            self.log.errors.append({"step": None, "error": f"broker {b} was still in its controlled "
                                    "shutdown at the end (a broker paused to the end): SIGKILLed"})
        # sends still waiting for their answer when the scenario ends time out (as in the model)
        for key in self._model_producers():
            for entry in self.real_pending.pop(key, []):
                for k, v in entry["recs"]:
                    self.acks.append({"topic": entry["tp"][0], "partition": entry["tp"][1], "key": k,
                                      "value": v, "acks": entry["acks"], "ok": False, "offset": None,
                                      "leader_epoch": None, "error": "REQUEST_TIMED_OUT"})

    def _model_producers(self) -> dict[str | None, Any]:
        """The model's producer states, the anonymous one (key None) first, as its finish()."""
        out: dict[str | None, Any] = {None: self.model._anonymous}
        out.update(self.model.producers)
        return out

    def _expected(self) -> dict[tuple[str, int], tuple[int | None, list[int]]]:
        return {tp: (None if ps.leader == NO_LEADER else ps.leader, sorted(ps.isr))
                for tp, ps in self.model.partitions.items()}

    def _observed(self) -> dict[tuple[str, int], tuple[int | None, list[int]]]:
        return {tp: (v.leader, sorted(v.isr)) for tp, v in self.cluster.describe().items()}

    def _settle_the_end(self) -> None:
        """The last step's check was deferred (a broker paused) and no later step checks it:
        the cluster's answer to that step (a crash fenced, a restart's election) would be
        missing from the story (random seeds 1044 and 1049: the model's last changes, the
        cluster "nothing"). Waited for here as an advance waits, never into a paused
        broker's session; what the controller wrote meanwhile belongs to the last step."""
        if not self.scenario.steps:
            return
        last = self.scenario.steps[-1]
        if not any(w.get("step") == last.index and w.get("deferred") for w in self.log.waits):
            return
        self._settle(last, final=True)
        # the fencing shows in the controller's log before the partition changes it makes
        # reach the metadata log: the mark moves once that log stops growing (random seed
        # 1049: a crash's ISR changes landed after the mark, "after the last step")
        size, quiet_since, t_end = self.cluster.metadata_log_size(), time.monotonic(), time.monotonic() + 3.0
        while time.monotonic() < t_end and time.monotonic() - quiet_since < 0.5:
            time.sleep(0.1)
            now = self.cluster.metadata_log_size()
            if now != size:
                size, quiet_since = now, time.monotonic()
        self.real_marks[-1] = size

    def _paused_wait_left(self, timeout: float) -> float:
        """``timeout`` cut so that a wait never runs into the end of a paused broker's
        session (the probe of class 7 at load 21: a state not reached made an advance wait
        11 s of an 18.6 s session that the steps before had mostly spent, and the paused
        leader was fenced)."""
        since = min(p.paused_at for p in self.cluster.brokers.values() if p.paused)
        left = config.session_timeout_ms(self.scenario) / 1000 - (time.monotonic() - since) \
            - PAUSED_SESSION_MARGIN_S
        return max(0.0, min(timeout, left))

    def _wait_fenced(self, brokers: list[int], timeout: float) -> tuple[bool, float]:
        """Wait until the controller's log shows every one of ``brokers`` fenced since its
        crash (nobody answers the Admin API): whether it did, and the seconds waited."""
        t0 = time.monotonic()
        ok = self.cluster.wait_for(lambda: all(self.cluster.fenced_since_crash(b) for b in brokers),
                                   timeout, "the crashed brokers fenced", raise_on_timeout=False)
        return ok, round(time.monotonic() - t0, 3)

    def _settle(self, step: Step, final: bool = False) -> None:
        """Wait for the leaders and ISRs the step implies. While a broker is paused (SIGSTOP)
        a step other than ``advance`` only looks once: every second of a pause counts
        towards its ISR membership, so nothing is waited for that the model did not say.
        ``final``: the scenario's end, where an earlier look was deferred; waits as an
        advance does."""
        paused = any(p.paused for p in self.cluster.brokers.values())
        if not any(p.alive() for p in self.cluster.brokers.values()):
            # nobody to ask through the Admin API: the controller's own log tells when the
            # crashed brokers are fenced (their partitions then go offline, as in the model)
            ok, seconds = self._wait_fenced(list(self.cluster.brokers), self.wait_s)
            self.log.waits.append({"step": step.index, "kind": step.kind, "reached": ok,
                                   "seconds": seconds, "how": "controller log: broker fenced"})
            if not ok:
                self._drift(step, "every broker down, but the controller did not fence them all")
            return
        if final and paused and not any(p.alive() and not p.paused for p in self.cluster.brokers.values()):
            # nobody answers the Admin API, but the controller's log tells whether the
            # crashed brokers were fenced, as the model's crash step did at once
            crashed = [b for b, p in self.cluster.brokers.items() if not p.alive()]
            ok, seconds = self._wait_fenced(crashed, self._paused_wait_left(self.wait_s))
            self.log.waits.append({"step": step.index, "kind": step.kind, "reached": ok or None,
                                   "seconds": seconds, "final": True,
                                   "how": "controller log: broker fenced",
                                   **({} if ok else {"deferred": "the scenario's end: not fenced within "
                                                     "the paused broker's session; the story shows it"})})
            return
        if not any(p.alive() and not p.paused for p in self.cluster.brokers.values()):
            # every running broker paused: nobody answers the Admin API (the admin client then
            # knows the paused brokers too, so not even a coordinator's answer comes back), and
            # waiting for one only spends the pause (random seeds 1020 and 1025: advances waited
            # 15-21 s each and recorded misses the story comparison does not show)
            self.log.waits.append({"step": step.index, "kind": step.kind, "reached": None,
                                   "seconds": 0.0, "deferred": "every running broker is paused: "
                                   "checked again at the next step with one that answers"})
            return
        # while a broker is paused only an advance waits, and no longer than part of the
        # session: a longer wait would get the paused broker fenced, which a model pause never does
        waits = not paused or step.kind == "advance" or final
        # (a step that cannot wait looks once: every second it spent would count towards
        # the paused follower's lag, which the scenario's clock does not give it)
        timeout = self.wait_s if not paused else \
            config.session_timeout_ms(self.scenario) * 0.6 / 1000 if waits else 0.0
        if paused and waits:
            timeout = self._paused_wait_left(timeout)
        expected = self._expected()
        t0 = time.monotonic()
        # a follower the model has fetching may rejoin the ISR a fetch round (a step) earlier
        # on the real cluster: a larger ISR is accepted when every extra member is one (the
        # story comparison of story.py still sees the order of the changes). A paused or
        # stopped one is never accepted: that is an ISR shrink the cluster did not make.
        fetching = {b for b, st in self.model.brokers.items() if st.alive and not st.paused}

        def matches(exp: tuple[int | None, list[int]], obs: tuple[int | None, list[int]]) -> bool:
            return obs[0] == exp[0] and set(obs[1]) >= set(exp[1]) and set(obs[1]) - set(exp[1]) <= fetching

        def reached() -> bool:
            observed = self._observed()
            return observed.keys() == expected.keys() and all(
                matches(expected[tp], observed[tp]) for tp in expected)

        ok = self.cluster.wait_for(reached, timeout,
                                   "the step's leaders and ISRs", raise_on_timeout=False)
        entry: dict[str, Any] = {"step": step.index, "kind": step.kind, "reached": ok,
                                 "seconds": round(time.monotonic() - t0, 3)}
        if final:
            entry["final"] = True
        if not ok:
            try:
                observed = self._observed()
            except Exception:  # noqa: BLE001
                observed = {}
            entry["expected"] = {f"{t}-{p}": list(v) for (t, p), v in sorted(expected.items())}
            entry["observed"] = {f"{t}-{p}": list(v) for (t, p), v in sorted(observed.items())}
        if not ok and (not waits or final):
            # a state that comes later than the model says (a crash is noticed after the
            # session timeout, which a pause cannot wait for): the next step that can wait
            # checks the leaders and ISRs again, the story comparison the order of the changes
            entry["reached"] = None
            entry["deferred"] = ("the scenario's end: waited as long as the paused broker's session "
                                 "allows; the story comparison shows what differs") if final else \
                "a broker is paused: checked again at the next step that can wait"
            self.log.waits.append(entry)
            return
        self.log.waits.append(entry)
        if not ok:
            diffs = [f"{t}-{p}: leader {_show(observed.get((t, p)), 0)} isr "
                     f"{_show(observed.get((t, p)), 1)} (expected leader {_show(v, 0)} isr {_show(v, 1)})"
                     for (t, p), v in sorted(expected.items())
                     if observed.get((t, p)) is None or not matches(v, observed[(t, p)])]
            self._drift(step, "; ".join(diffs) or "the partitions did not answer")

    def _client_resends(self) -> dict[tuple[str, int], set[int]]:
        """Per partition, the record counts by which a log may run ahead of the model's while
        librdkafka holds idempotent in-flight batches (each a prefix of them, oldest first)."""
        ahead: dict[tuple[str, int], set[int]] = {}
        for entries in self.real_pending.values():
            total: dict[tuple[str, int], int] = {}
            for e in entries:
                if e.get("named"):
                    tp = (str(e["tp"][0]), int(e["tp"][1]))
                    total[tp] = total.get(tp, 0) + len(e["recs"])
                    ahead.setdefault(tp, set()).add(total[tp])
        return ahead

    def _drift(self, step: Step, what: str) -> None:
        """The cluster did not reach the step's state: stop the run, or record it."""
        line = f"steps[{step.index}] ({step.kind}): the cluster did not reach the scenario's state: {what}"
        if not self.allow_drift:
            raise DriftError(line + " (--allow-drift keeps going)")
        self.drift.append({"step": step.index, "kind": step.kind, "what": what})

    def _await_replication(self, step: Step) -> None:
        """Wait until every running, unpaused replica's log ends where the model's does: the
        next step (a pause, a crash) then finds the follower with the records the model says
        it fetched, not whatever a race left."""
        from segtools.realcluster.producing import log_end_offset

        want: dict[tuple[int, tuple[str, int]], int] = {}
        for tp, reps in self.model.replicas.items():
            for b, rep in reps.items():
                proc = self.cluster.brokers.get(b)
                if proc is not None and proc.alive() and not proc.paused and self.model.brokers[b].alive \
                        and not self.model.brokers[b].paused:
                    want[(b, tp)] = rep.log_end_offset
        if not want:
            return

        def have() -> dict[tuple[int, tuple[str, int]], int]:
            return {(b, tp): log_end_offset(os.path.join(self.cluster.broker_dir(b), f"{tp[0]}-{tp[1]}"))
                    for (b, tp) in want}

        # librdkafka resends an idempotent in-flight batch by itself as soon as a leader
        # answers (same producer id and sequence); the model writes it at the scenario's
        # `resend` step. Until then a log may hold it already (S10 on 4.4.0: broker 2, leader
        # once resumed, had i2 and i3 a step before the resend): accepted, and recorded
        early = self._client_resends()

        def fits() -> bool:
            got = have()
            return all(got[k] == n or got[k] - n in early.get(k[1], ()) for k, n in want.items())

        t0 = time.monotonic()
        paused = any(p.paused for p in self.cluster.brokers.values())
        ok = self.cluster.wait_for(fits, 0.0 if paused else REPLICATION_WAIT_S,
                                   "the replicas' log ends", raise_on_timeout=False)
        entry: dict[str, Any] = {"step": step.index, "kind": step.kind, "reached": ok,
                                 "seconds": round(time.monotonic() - t0, 3), "how": "replica log ends"}
        if ok and early:
            got = have()
            ahead = [f"{t}-{p} on broker {b}: log end {got[(b, (t, p))]} (model {n}): the client "
                     "resent an in-flight idempotent batch before the resend step"
                     for (b, (t, p)), n in sorted(want.items()) if got[(b, (t, p))] != n]
            if ahead:
                entry["client_resent_early"] = ahead
        if not ok and paused:
            entry["reached"] = None
            entry["deferred"] = "a broker is paused: checked again at the next step that can wait"
            self.log.waits.append(entry)
            return
        if not ok:
            got = have()
            diffs = [f"{t}-{p} on broker {b}: log end {got[(b, (t, p))]} (expected {n})"
                     for (b, (t, p)), n in sorted(want.items()) if got[(b, (t, p))] != n]
            entry["differences"] = diffs
            self.log.waits.append(entry)
            self._drift(step, "; ".join(diffs))
            return
        self.log.waits.append(entry)

    # ------------------------------------------------------------------ observation
    def observe(self, index: int, kind: str) -> None:
        """Leaders and HWs from the Admin API, and a copy of every broker's partition logs
        and epoch checkpoints (running brokers are frozen with SIGSTOP while copied)."""
        leaders: dict[str, int | None] = {}
        hws: dict[str, int] = {}
        try:
            view = self.cluster.describe()
            leaders = {f"{t}-{p}": v.leader for (t, p), v in view.items()}
            hws = {f"{t}-{p}": o for (t, p), o in self.cluster.high_watermarks().items()}
        except Exception:  # noqa: BLE001 - no broker answering: the copy still tells
            pass
        target = os.path.join(self.steps_dir, f"{len(self.observations):03d}")
        self.copy_brokers(target, logs_only=True)
        self.observations.append(StepObservation(index, kind, target, leaders, hws))

    def copy_brokers(self, target: str, *, logs_only: bool) -> None:
        topics = {t.name for t in self.scenario.topics}
        for b in self.scenario.cluster.brokers:
            src = self.cluster.broker_dir(b)
            if not os.path.isdir(src):
                continue
            proc = self.cluster.brokers.get(b)
            frozen = proc if proc is not None and proc.alive() and not proc.paused else None
            if frozen is not None:
                frozen.pause()
            try:
                _copy_dir(src, os.path.join(target, f"broker-{b}"), topics if logs_only else None)
            finally:
                if frozen is not None:
                    frozen.resume()

    # ------------------------------------------------------------------ steps
    def _do_flush(self, step: Step, _: Any) -> None:
        pass  # a documented no-op on a real broker: segtools.realcluster.support.FLUSH_IS_A_NO_OP

    def _do_pause(self, step: Step, _: Any) -> None:
        self.cluster.pause(step.args["broker"])
        # SIGSTOP is not a partition: a fetch the follower sent just before is still parked at
        # the leader and would carry the next records into its socket, to be appended on
        # resume. The leader answers it (empty) after replica.fetch.wait.max.ms; that expiry
        # is not visible through the Admin API, so this one wait is timed.
        time.sleep(3 * config.REPLICA_FETCH_WAIT_MAX_MS / 1000)

    def _do_resume(self, step: Step, _: Any) -> None:
        self.cluster.resume(step.args["broker"])

    def _do_crash(self, step: Step, _: Any) -> None:
        t0 = time.monotonic()
        failed = self.cluster.crash(step.args["broker"])
        self.log.fencings.append({"step": step.index, "broker": step.args["broker"],
                                  "seconds": round(time.monotonic() - t0, 3), "error": failed})
        if failed is not None:
            self.log.errors.append({"step": step.index, "error": failed})

    def _do_shutdown(self, step: Step, _: Any) -> None:
        b = step.args["broker"]
        if self.cluster.brokers[b].alive():
            if not self.cluster.shutdown(b):
                self.log.errors.append({"step": step.index, "error": f"broker {b} did not stop on SIGTERM"})

    def _do_restart(self, step: Step, _: Any) -> None:
        b = step.args["broker"]
        if self.cluster.brokers[b].stopping and not self.cluster.brokers[b].finish_terminate(self.wait_s):
            self.log.errors.append({"step": step.index, "error": f"broker {b} did not finish its "
                                    "controlled shutdown before its restart: SIGKILLed"})
        # a broker fenced at its crash (cluster.crash) keeps its heartbeat session until the
        # controller expires it, and a new incarnation cannot register before: up to the
        # session timeout after the crash (DuplicateBrokerRegistrationException meanwhile)
        self.cluster.restart(b, timeout=90.0 + 1.25 * config.session_timeout_ms(self.scenario) / 1000)

    def _do_advance(self, step: Step, _: Any) -> None:
        """Real time passes until the real clock is where the scenario's (scaled) is: steps
        that took real time (a produce, a crash noticed after the session timeout) count."""
        real0, virtual0 = self._clock0
        due = real0 + (self.model.now - virtual0) / self.scale / 1000
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)

    def _do_elect(self, step: Step, _: Any) -> None:
        a = step.args
        tps = None
        if a["topic"] is not None:
            parts = range(next(t.partitions for t in self.scenario.topics if t.name == a["topic"]))
            tps = [(a["topic"], p) for p in parts if a["partition"] is None or p == a["partition"]]
        errors = self.cluster.elect("preferred" if a["preferred"] else "unclean", tps)
        self.log.elections.append({"step": step.index, "errors": errors})

    def _do_delete_records(self, step: Step, _: Any) -> None:
        a = step.args
        err = self.cluster.delete_records(a["topic"], a["partition"], a["before_offset"])
        if err:
            self.log.errors.append({"step": step.index, "error": err})

    def _do_snapshot(self, step: Step, _: Any) -> None:
        target = os.path.join(self.out, "snapshots", step.args["name"])
        self.copy_brokers(target, logs_only=False)
        # the controller's metadata log as of this step too (ISR, ELR, assignment then), so
        # the snapshot is a folder `segtools compare`/`advise` read like OUT itself
        meta = os.path.join(self.cluster.controller_dir, "__cluster_metadata-0")
        if os.path.isdir(meta):
            _copy_dir(meta, os.path.join(target, "controller", "__cluster_metadata-0"), None)


def _show(view: tuple[int | None, list[int]] | None, i: int) -> str:
    if view is None:
        return "?"
    v = view[i]
    return "none" if v is None else str(v).replace(" ", "")


def _copy_dir(src: str, dst: str, topics: set[str] | None) -> None:
    """Copy a broker dir. ``topics``: only the scenario's partition dirs, their ``.log`` files
    and ``leader-epoch-checkpoint`` plus the root checkpoints (what truth.json needs)."""
    os.makedirs(dst, exist_ok=True)
    for entry in os.scandir(src):
        if entry.is_dir():
            if topics is not None and entry.name.rpartition("-")[0] not in topics:
                continue
            pdst = os.path.join(dst, entry.name)
            os.makedirs(pdst, exist_ok=True)
            for f in os.scandir(entry.path):
                if f.is_file() and (topics is None or f.name.endswith(".log")
                                    or f.name == "leader-epoch-checkpoint"):
                    try:
                        shutil.copy2(f.path, os.path.join(pdst, f.name))
                    except FileNotFoundError:  # a segment deleted meanwhile
                        pass
        elif entry.is_file():
            try:
                shutil.copy2(entry.path, os.path.join(dst, entry.name))
            except FileNotFoundError:
                pass
