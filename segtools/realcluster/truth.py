"""truth.json of the real engine, from what the cluster itself shows (never from compare):

* the producer's delivery callbacks (acks.jsonl);
* every broker's logs after every step, in the final dirs and in user snapshots, read by the
  real kafka-dump-log (a record "appended to some replica" is one seen in any of them);
* the leaders' high watermarks after every step (Admin API ListOffsets) for ``committed``;
* a read_committed and a read_uncommitted consumer of each final leader (``consumed``);
* the controller's ``__cluster_metadata-0``, decoded by kafka-dump-log, for elections
  (a PartitionChangeRecord that sets a leader; unclean when it sets leaderRecoveryState=1),
  and the brokers' leader-epoch-checkpoint files for each epoch's start offset.

Same layout and keys as the model's truth.json (CONTRACT.md section 3); differences are in
the README ("the real engine").
"""

from __future__ import annotations

import glob
import os
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from segtools.realcluster.dumplog import DumpedRecord, dump_records
from segtools.realcluster.steps import StepRunner
from segtools.realcluster.story import real_records

UNCLEAN_ELECTION = "UNCLEAN_ELECTION"
LEADER_CRASH_ACKS_1 = "LEADER_CRASH_ACKS_1"
UNCOMMITTED = "UNCOMMITTED"
TRUNCATED = "TRUNCATED"


def read_checkpoint(path: str) -> dict[tuple[str, int], int]:
    """A broker-root offset checkpoint (version 0): ``topic partition offset`` lines."""
    out: dict[tuple[str, int], int] = {}
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return out
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 3:
            out[(parts[0], int(parts[1]))] = int(parts[2])
    return out


def read_epochs(path: str) -> list[tuple[int, int]]:
    """leader-epoch-checkpoint: (epoch, start offset) entries."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 2:
            out.append((int(parts[0]), int(parts[1])))
    return out


@dataclass
class _Election:
    epoch: int
    leader: int | None
    unclean: bool
    reason: str
    isr: list[int]
    start_offset: int | None = None
    held: set[tuple[int, int]] = field(default_factory=set)
    step: int | None = None   # the step during which the controller wrote it (-1: creation)

    def to_json(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "leader": self.leader, "unclean": self.unclean,
                "reason": self.reason, "isr": list(self.isr), "start_offset": self.start_offset}


def _logs_of(root: str, topic: str, partition: int) -> list[str]:
    return sorted(glob.glob(os.path.join(root, f"{topic}-{partition}", "*.log")))


def build_truth(runner: StepRunner, final_view: dict[tuple[str, int], Any],
                final_hw: dict[tuple[str, int], int],
                consumed: dict[str, Any] | None = None) -> dict[str, Any]:
    cluster = runner.cluster
    scenario = runner.scenario
    runtime = cluster.runtime
    brokers = scenario.cluster.brokers
    tps = [(t.name, p) for t in scenario.topics for p in range(t.partitions)]
    assignment = {(t.name, p): list(t.assignment[p]) for t in scenario.topics for p in range(t.partitions)}  # type: ignore[index]

    # --- every log the run left behind, read by one kafka-dump-log
    roots: list[tuple[str, str]] = [(f"step{i}", obs.copy_dir) for i, obs in enumerate(runner.observations)
                                    if obs.copy_dir]
    roots.append(("final", cluster.out))
    snaps = os.path.join(cluster.out, "snapshots")
    if os.path.isdir(snaps):
        roots += [(f"snap:{n}", os.path.join(snaps, n)) for n in sorted(os.listdir(snaps))]
    files: list[str] = []
    where: dict[str, tuple[str, int, tuple[str, int]]] = {}
    for tag, root in roots:
        for b in brokers:
            for tp in tps:
                for f in _logs_of(os.path.join(root, f"broker-{b}"), *tp):
                    files.append(f)
                    where[f] = (tag, b, tp)
    dumped = dump_records(runtime, files)
    logs: dict[tuple[str, int, tuple[str, int]], list[DumpedRecord]] = {}
    for f, recs in dumped.items():
        key = where.get(f)
        if key is not None:
            logs.setdefault(key, []).extend(recs)

    def data(tag: str, b: int, tp: tuple[str, int]) -> list[DumpedRecord]:
        return [r for r in logs.get((tag, b, tp), []) if not r.control]

    # --- the controller's log: topic ids and elections
    topic_ids: dict[str, str] = {}
    names: dict[str, str] = {}
    elections: dict[tuple[str, int], list[_Election]] = {tp: [] for tp in tps}
    state: dict[tuple[str, int], dict[str, Any]] = {}
    # each record with its batch's byte position: the step that wrote it (the marks are the
    # log's size after each step, story.py's rule)
    for kind, _version, d, position in real_records(runner):
        step = bisect_right(runner.real_marks, position) - 1
        if kind == "TOPIC_RECORD":
            topic_ids[d["name"]] = d["topicId"]
            names[d["topicId"]] = d["name"]
        elif kind in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
            name = names.get(d.get("topicId", ""))
            if name is None:
                continue
            tp = (name, d["partitionId"])
            if tp not in elections:
                continue
            st = state.setdefault(tp, {"leader": -1, "isr": [], "epoch": -1, "elr": []})
            before_isr, before_elr = list(st["isr"]), list(st["elr"])
            if "isr" in d:
                st["isr"] = d["isr"]
            if "eligibleLeaderReplicas" in d:
                st["elr"] = d["eligibleLeaderReplicas"]
            if kind == "PARTITION_RECORD":
                st.update(leader=d["leader"], epoch=d.get("leaderEpoch", 0))
                elections[tp].append(_Election(st["epoch"], None if d["leader"] < 0 else d["leader"],
                                               False, "create", list(st["isr"]), step=step))
            elif "leader" in d:
                st["leader"] = d["leader"]
                st["epoch"] += 1
                # unclean: the controller marks it RECOVERING, or the new leader was neither
                # in the ISR nor in the ELR before this record (Kafka's only clean choices; the
                # ISR may empty in the very record that elects from the ELR)
                new = d["leader"]
                unclean = d.get("leaderRecoveryState") == 1 or (
                    new >= 0 and new not in before_isr and new not in before_elr)
                elections[tp].append(_Election(st["epoch"], None if d["leader"] < 0 else d["leader"],
                                               unclean, "", list(st["isr"]), step=step))
    _attach_reasons_and_holdings(runner, elections, data)

    # --- committed: a record the leader held below its HW after some step
    committed: dict[tuple[str, int], set[tuple[int, int]]] = {tp: set() for tp in tps}
    for i, obs in enumerate(runner.observations):
        for tp in tps:
            tp_name = f"{tp[0]}-{tp[1]}"
            leader, hw = obs.leaders.get(tp_name), obs.high_watermarks.get(tp_name)
            if leader is None or hw is None:
                continue
            for r in data(f"step{i}", leader, tp):
                if r.offset < hw:
                    committed[tp].add((r.offset, r.leader_epoch))

    _fill_ack_epochs(runner.acks, logs, {tp: v.leader for tp, v in final_view.items()})
    acks_by_tp: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for a in runner.acks:
        acks_by_tp.setdefault((a["topic"], a["partition"]), []).append(a)

    out: dict[str, Any] = {}
    final_leader_of: dict[tuple[str, int], int | None] = {}
    for tp in tps:
        tp_name = f"{tp[0]}-{tp[1]}"
        view = final_view.get(tp)
        leader = view.leader if view is not None else None
        past = [e.leader for e in elections[tp] if e.leader is not None]
        last_leader = leader if leader is not None else (past[-1] if past else None)
        final_leader_of[tp] = leader
        ref = last_leader
        ref_records = {(r.offset, r.leader_epoch) for r in data("final", ref, tp)} if ref is not None else set()
        lso = {b: read_checkpoint(os.path.join(cluster.broker_dir(b), "log-start-offset-checkpoint")).get(tp)
               for b in assignment[tp]}
        ref_start = (lso.get(ref) or 0) if ref is not None else 0
        # every record seen anywhere: (offset, epoch) -> (key, value)
        seen: dict[tuple[int, int], tuple[str | None, str | None]] = {}
        for (_tag, _b, t), recs in logs.items():
            if t != tp:
                continue
            for r in recs:
                if not r.control:
                    seen.setdefault((r.offset, r.leader_epoch), (r.key, r.value))
        for a in acks_by_tp.get(tp, []):
            if a["ok"] and a["offset"] is not None and a["leader_epoch"] is not None:
                seen.setdefault((a["offset"], a["leader_epoch"]), (a["key"], a["value"]))
        final_holders = {b: {(r.offset, r.leader_epoch) for r in data("final", b, tp)} for b in assignment[tp]}
        lost = []
        used: set[int] = set()
        for (off, ep), (k, v) in sorted(seen.items()):
            if (off, ep) in ref_records or off < ref_start:
                continue
            ack = _match_ack(acks_by_tp.get(tp, []), off, ep, k, v, used)
            acks = ack["acks"] if ack else "all"
            if ack is None:
                # no answer of its own (a copy a resend replaced): the send's acks setting
                ack_of_copy = next((a for a in acks_by_tp.get(tp, []) if (a["key"], a["value"]) == (k, v)), None)
                acks = ack_of_copy["acks"] if ack_of_copy else "all"
            acked = bool(ack and ack["ok"] and acks != "0")
            is_committed = (off, ep) in committed[tp] or (acked and acks == "all")
            lost.append({"offset": off, "leader_epoch": ep, "key": k, "value": v, "acks": acks,
                         "acked": acked, "committed": is_committed,
                         "cause": _cause(off, ep, acks, acked, is_committed, elections[tp]),
                         "relocated_to": _relocated_to(runner.resent, tp, k, v, ref_records),
                         "on_brokers": sorted(b for b, held in final_holders.items() if (off, ep) in held)})
        replicas = {}
        for b in assignment[tp]:
            bdir = cluster.broker_dir(b)
            recs_all = logs.get(("final", b, tp), [])
            leo = max((r.offset for r in recs_all), default=-1) + 1
            start = lso.get(b) or 0
            hw_ckpt = read_checkpoint(os.path.join(bdir, "replication-offset-checkpoint")).get(tp, 0)
            epochs = read_epochs(os.path.join(bdir, f"{tp[0]}-{tp[1]}", "leader-epoch-checkpoint"))
            proc = cluster.brokers.get(b)
            replicas[str(b)] = {
                "log_end_offset": max(leo, start), "log_start_offset": start,
                "high_watermark": hw_ckpt, "high_watermark_checkpoint": hw_ckpt,
                "latest_epoch": epochs[-1][0] if epochs else -1,
                "alive": bool(proc is not None and runner.final_alive.get(b, False)),
                "clean_shutdown": os.path.exists(os.path.join(bdir, ".kafka_cleanshutdown")),
            }
        ep_list = elections[tp]
        out[tp_name] = {
            "topic": tp[0], "partition": tp[1], "topic_id": topic_ids.get(tp[0]),
            "leader": leader, "last_leader": last_leader,
            "leader_epoch": ep_list[-1].epoch if ep_list else 0,
            "isr": sorted(view.isr) if view is not None else [],
            "assignment": assignment[tp],
            "high_watermark": final_hw.get(tp, replicas[str(ref)]["high_watermark"] if ref is not None else 0),
            "replicas": replicas,
            "elections": [e.to_json() for e in ep_list],
            "lost": lost,
            # real engine only: what consumers of the final leader read (consume.py)
            "consumed": (consumed or {}).get(tp_name),
        }
    return out


def _fill_ack_epochs(acks: list[dict[str, Any]],
                     logs: dict[tuple[str, int, tuple[str, int]], list[DumpedRecord]],
                     leaders: dict[tuple[str, int], int | None]) -> None:
    """librdkafka's delivery report has the offset but no leader epoch: the epoch is that of
    the batch that holds the record (same offset, key and value) in a log copied right after
    the produce step."""
    where: dict[tuple[str, int, int, str | None, str | None], int] = {}
    # a resend can write the same record at the same offset in a later epoch: the copy in a
    # final leader's final log (the survivor, which the producer was told about) comes first
    def rank(key: tuple[str, int, tuple[str, int]]) -> tuple[bool, bool]:
        return key[0] != "final", key[1] != leaders.get(key[2])

    for (_tag, _b, tp), recs in sorted(logs.items(), key=lambda kv: rank(kv[0])):
        for r in recs:
            where.setdefault((tp[0], tp[1], r.offset, r.key, r.value), r.leader_epoch)
    for a in acks:
        if a["ok"] and a["offset"] is not None and a["leader_epoch"] is None:
            a["leader_epoch"] = where.get((a["topic"], a["partition"], a["offset"], a["key"], a["value"]))


def _match_ack(acks: list[dict[str, Any]], off: int, ep: int, key: str | None, value: str | None,
               used: set[int]) -> dict[str, Any] | None:
    for i, a in enumerate(acks):
        if i not in used and a["offset"] == off and a["leader_epoch"] == ep:
            used.add(i)
            return a
    for i, a in enumerate(acks):
        # (an ack that names another offset and epoch is another copy's: a resend's)
        other = a["offset"] is not None and a["leader_epoch"] is not None \
            and (a["offset"], a["leader_epoch"]) != (off, ep)
        if i not in used and a["key"] == key and a["value"] == value and not other:
            used.add(i)
            return a
    return None


def _relocated_to(resent: list[dict[str, Any]], tp: tuple[str, int], key: str | None,
                  value: str | None, final: set[tuple[int, int]]) -> int | None:
    """The offset in the final leader's log of a resent copy of the same send, if any."""
    for a in resent:
        if (a["topic"], a["partition"], a["key"], a["value"]) == (*tp, key, value) \
                and (a["offset"], a["leader_epoch"]) in final:
            return int(a["offset"])
    return None


def _attach_reasons_and_holdings(runner: StepRunner, elections: dict[tuple[str, int], list[_Election]],
                                 data: Any) -> None:
    """For each election: the step during which it happened (its ``reason``: the step kind, as
    in the model), the new leader's start offset (its leader-epoch-checkpoint), and the records
    it held then (its log in the first step copy that knows the epoch)."""
    for tp, els in elections.items():
        for e in els:
            if e.leader is None:
                e.reason = e.reason or "offline"
                continue
            for i, obs in enumerate(runner.observations):
                if obs.copy_dir is None:
                    continue
                path = os.path.join(obs.copy_dir, f"broker-{e.leader}", f"{tp[0]}-{tp[1]}",
                                    "leader-epoch-checkpoint")
                epochs = dict(read_epochs(path))
                if e.epoch in epochs:
                    e.start_offset = epochs[e.epoch]
                    e.held = {(r.offset, r.leader_epoch) for r in data(f"step{i}", e.leader, tp)
                              if r.offset < epochs[e.epoch]}
                    if not e.reason:
                        # the fault that made it: the last crash/shutdown/restart/elect so far
                        kinds = [o.kind for o in runner.observations[:i + 1]]
                        faults = [k for k in kinds if k in ("crash", "shutdown", "restart", "elect", "create")]
                        e.reason = _reason(faults[-1] if faults else obs.kind)
                    break
            else:
                # no copy shows the epoch (its leader paused or down at every later step): the
                # fault of the step during which the controller elected it, as the model's
                e.reason = e.reason or _reason_at(runner, e.step)


def _reason_at(runner: StepRunner, step: int | None) -> str:
    if step is None:
        return "unknown"
    kinds = ["create"] + [s.kind for s in runner.scenario.steps[:step + 1]]
    faults = [k for k in kinds if k in ("crash", "shutdown", "restart", "elect", "create")]
    return _reason(faults[-1])


def _reason(kind: str) -> str:
    return {"crash": "crash", "shutdown": "shutdown", "restart": "restart",
            "elect": "requested", "create": "create"}.get(kind, kind)


def _cause(off: int, ep: int, acks: str, acked: bool, committed: bool, elections: list[_Election]) -> str:
    """The model's rule (segtools.simulate.truth._cause) on the real elections."""
    fork = next((e for e in elections if e.epoch > ep and e.leader is not None
                 and (off, ep) not in e.held), None)
    if fork is None:
        return TRUNCATED
    if fork.unclean:
        return UNCLEAN_ELECTION
    if committed:
        return TRUNCATED
    if acks == "1" and acked and fork.reason in ("crash", "restart"):
        return LEADER_CRASH_ACKS_1
    return UNCOMMITTED
