"""The story of a scenario run, per partition: the sequence of leaders, leader epochs, ISRs,
eligible leader replicas and election kinds the controller's metadata log tells, with the step
that wrote each change; and the comparison of the model's story with the real cluster's.

Both stories are replayed by one implementation, :func:`segtools.forensics.elections.replay`
(the election classes of ``segtools compare``): the model's from its controller's records, the
cluster's from its controller's ``__cluster_metadata-0`` decoded by the real kafka-dump-log.
Records that change none of leader, epoch, ISR or ELR (an unclean leader's recovery, a broker's
registration) are not part of the story. Which differences remain, and why, is in
docs/ENGINES.md."""

from __future__ import annotations

import glob
import json
import os
import re
from bisect import bisect_right
from collections.abc import Iterable
from typing import Any

#: a change of the story: (leader epoch, leader or None, ISR, ELR, election class or None)
Change = tuple[int, int | None, tuple[int, ...], tuple[int, ...], str | None]


def story_of(records: Iterable[tuple[Any, ...]], steps: list[int],
             step_kinds: list[str]) -> dict[str, list[dict[str, Any]]]:
    """``records``: ``(type, version, data, position)``; ``steps[i]``: the position the log had
    reached when step ``i - 1`` ended (``steps[0]``: after the topics were created). Returns
    ``{"topic-partition": [change, ...]}``, each change a dict (epoch, leader, isr, elr,
    election, step, kind)."""
    from segtools.forensics.elections import replay

    hist = replay((t, v, d, {"offset": pos}) for t, v, d, pos in records)
    out: dict[str, list[dict[str, Any]]] = {}
    for (topic, part), h in sorted(hist.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        changes: list[dict[str, Any]] = []
        elr: tuple[int, ...] = ()
        last: Change | None = None
        for c in h.changes:
            if c.get("elr") is not None:
                elr = tuple(sorted(c["elr"]))
            leader = c.get("leader")
            now: Change = (int(c["leader_epoch"]), None if leader is None or leader < 0 else int(leader),
                           tuple(sorted(c["isr"])), elr,
                           c.get("election_class") if "election" in c else None)
            if last is not None and now[:4] == last[:4]:
                continue
            last = now
            i = bisect_right(steps, int(c["offset"]))  # the first step whose end is past it
            step = i - 1
            changes.append({"epoch": now[0], "leader": now[1], "isr": list(now[2]), "elr": list(now[3]),
                            "election": now[4], "step": step,
                            "kind": "create" if step < 0 else step_kinds[step] if step < len(step_kinds) else "end"})
        out[f"{topic}-{part}"] = changes
    return out


def _key(change: dict[str, Any]) -> tuple[Any, ...]:
    return change["epoch"], change["leader"], tuple(change["isr"]), tuple(change["elr"]), change["election"]


def _show(change: dict[str, Any] | None) -> str:
    if change is None:
        return "nothing"
    text = (f"epoch {change['epoch']} leader {change['leader'] if change['leader'] is not None else 'none'} "
            f"isr {change['isr']} elr {change['elr']}")
    if change["election"]:
        text += f" ({change['election']} election)"
    where = "topic creation" if change["step"] < 0 else f"steps[{change['step']}] ({change['kind']})"
    return f"{text} at {where}"


def _joined_expansions(changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The changes without an ISR expansion followed, at the same step, by another that only
    adds members: when two followers rejoin in one step, which the leader adds first depends
    on when each fetches up to its log end, which the model does not time (real-durability-
    matrix on 4.3.1 and 4.4.0: the model [1] -> [1, 2] -> [1, 2, 3], the cluster [1] ->
    [1, 3] -> [1, 2, 3], both at steps[69]); what the step ends with is compared."""
    def grows(a: dict[str, Any], b: dict[str, Any]) -> bool:
        return (a["epoch"], a["leader"], a["elr"]) == (b["epoch"], b["leader"], b["elr"]) \
            and b["election"] is None and set(a["isr"]) < set(b["isr"])
    out: list[dict[str, Any]] = []
    for i, c in enumerate(changes):
        nxt = changes[i + 1] if i + 1 < len(changes) else None
        if out and nxt is not None and grows(out[-1], c) and grows(c, nxt) and nxt["step"] == c["step"]:
            continue
        out.append(c)
    return out


def compare_stories(model: dict[str, list[dict[str, Any]]],
                    real: dict[str, list[dict[str, Any]]]) -> list[str]:
    """One line per partition whose stories differ: the first change where they part (the step
    each engine made it at is named; a change made at another step is no difference)."""
    out = []
    for name in sorted(set(model) | set(real)):
        m, r = _joined_expansions(model.get(name, [])), _joined_expansions(real.get(name, []))
        for i in range(max(len(m), len(r))):
            a = m[i] if i < len(m) else None
            b = r[i] if i < len(r) else None
            if a is None or b is None or _key(a) != _key(b):
                out.append(f"{name}: change {i}: the model: {_show(a)}; the cluster: {_show(b)}")
                break
    return out


_BATCH = re.compile(r"^baseOffset: \d+ .*?position: (\d+)")
_RECORD = re.compile(r"^\| offset: (\d+) .*? payload: (\{.*\})\s*$")


def real_records(runner: Any) -> list[tuple[str, int, dict[str, Any], int]]:
    """The controller's metadata records, each with its batch's byte position in the log
    (segments after the first count from the end of the ones before), by kafka-dump-log."""
    from segtools.realcluster.dumplog import _run

    files = sorted(glob.glob(os.path.join(runner.cluster.controller_dir, "__cluster_metadata-0", "*.log")))
    out: list[tuple[str, int, dict[str, Any], int]] = []
    base = 0
    for f in files:
        text = _run(runner.cluster.runtime, [f], "--cluster-metadata-decoder")
        position = 0
        for line in text.splitlines():
            m = _BATCH.match(line)
            if m:
                position = int(m.group(1))
                continue
            m = _RECORD.match(line)
            if m:
                try:
                    rec = json.loads(m.group(2))
                except ValueError:
                    continue
                out.append((str(rec.get("type")), int(rec.get("version", 0)), rec.get("data", {}),
                            base + position))
        base += os.path.getsize(f)
    return out


def compare_engines(runner: Any) -> dict[str, Any]:
    """Both stories of a finished run (the controller stopped) and their differences."""
    kinds = [s.kind for s in runner.scenario.steps]
    marks_model = runner.model_marks
    model = story_of(((t, v, d, i) for i, (t, v, d, _time) in enumerate(runner.model.controller.events)),
                     marks_model, kinds)
    real = story_of(real_records(runner), runner.real_marks, kinds)
    topics = {t.name for t in runner.scenario.topics}
    model = {k: v for k, v in model.items() if k.rpartition("-")[0] in topics}
    real = {k: v for k, v in real.items() if k.rpartition("-")[0] in topics}
    # what the controller wrote after the last step (the final reads; a paused broker's
    # session running out meanwhile: seed 1004) is no part of the scenario, whose model
    # stops there: listed, not compared
    real, after = split_at_end(real, len(kinds))
    return {"model": model, "cluster": real, "differences": compare_stories(model, real),
            "after_the_last_step": after}


def split_at_end(story: dict[str, list[dict[str, Any]]], n_steps: int) -> tuple[
        dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """The changes made by a scenario's ``n_steps`` steps, and (only the partitions that
    have some) those written after its last step."""
    inside = {k: [c for c in v if c["step"] < n_steps] for k, v in story.items()}
    after = {k: [c for c in v if c["step"] >= n_steps] for k, v in story.items()}
    return inside, {k: v for k, v in after.items() if v}


def final_view(cluster_story: dict[str, list[dict[str, Any]]], scenario: Any) -> dict[tuple[str, int], Any]:
    """The partitions' last leader and ISR by the cluster's story (when no broker is left to
    answer the Admin API at the end of a run)."""
    from segtools.realcluster.cluster import PartitionView

    out: dict[tuple[str, int], Any] = {}
    for t in scenario.topics:
        for p in range(t.partitions):
            changes = cluster_story.get(f"{t.name}-{p}")
            if changes:
                last = changes[-1]
                out[(t.name, p)] = PartitionView(last["leader"], list(last["isr"]), list(t.assignment[p]))
    return out
