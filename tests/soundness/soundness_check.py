"""The differential soundness checker (issue 21): ``compare`` and ``advise`` on degraded evidence
against the simulator's ground truth.

For every evidence set (soundness_degrade.py) it runs ``segtools.compare`` (the public API) and,
for each partition truth says is offline, ``segtools advise`` (the CLI, for its exit code and
``--json``), and counts:

- ``false_loss``: a record reported lost that truth says survived (compare: a lost record that
  is not in truth.json's ``lost``; advise: a record a candidate is said to lose although that
  candidate's log holds it);
- ``false_all_clear``: "safe" / exit 0 where truth has an acked or committed record lost
  (compare), or where the recommended candidate's log lacks an acked or committed record some
  replica still holds (advise); records of an aborted transaction are no loss to consumers and
  not counted. ``..._traced`` counts those whose evidence set still held a trace of the loss
  (the record on a given broker dir, or acked in the given acks.jsonl);
- ``unjustified_cannot_tell``: "cannot tell" naming evidence the set does have (or naming
  nothing);
- ``unjudged_cannot_tell``: "cannot tell" naming a kind of evidence no rule of ``justified``
  judges (every kind compare and advise emit has one).

The answer is read by the two adapters ``compare_answer`` / ``advise_answer``: the intended
contract is a verdict ``lost`` / ``safe`` / ``cannot_tell`` (with the missing evidence named),
exit 0 only for ``safe``, exit 1 for the others. Today's report has ``summary.verdict`` CLEAN /
PROBLEMS / COMMITTED_LOSS and advise has no verdict: they are mapped (exit 0 = safe).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from soundness_degrade import LOG_START_CKPT, EvidenceSet, _partition_dirs, _segment_bases

import segtools
from segtools.errors import SegtoolsError
from segtools.files.checkpoints import read_offset_checkpoint

VIOLATIONS = ("false_loss", "false_all_clear", "unjustified_cannot_tell", "unjudged_cannot_tell", "crash")


# -- the adapters: the only code that reads verdicts --------------------------------------------

@dataclass
class Answer:
    verdict: str                      # lost | safe | cannot_tell | problems | error
    missing: list[Any] = field(default_factory=list)   # the evidence named as missing


_OLD_VERDICTS = {"CLEAN": "safe", "COMMITTED_LOSS": "lost", "PROBLEMS": "problems"}


def _verdict_value(raw: Any) -> tuple[str | None, list[Any]]:
    """A verdict given as a string, or as an object with a value and the missing evidence."""
    if isinstance(raw, str):
        return raw, []
    if isinstance(raw, dict):
        value = raw.get("value") or raw.get("verdict") or raw.get("answer")
        missing = raw.get("missing") or raw.get("missing_evidence") or []
        return (value if isinstance(value, str) else None), list(missing)
    return None, []


def _normalise(value: str | None) -> str | None:
    if value is None:
        return None
    v = value.strip()
    if v in _OLD_VERDICTS:
        return _OLD_VERDICTS[v]
    v = v.lower().replace("-", "_").replace(" ", "_")
    return {"cannot_tell": "cannot_tell", "cannottell": "cannot_tell", "unknown": "cannot_tell",
            "lost": "lost", "safe": "safe", "nothing_lost": "safe", "clean": "safe"}.get(v, v)


def compare_answer(report: dict[str, Any], exit_code: int) -> Answer:
    summary = report.get("summary", {})
    # compare's report (schema_version 2): summary.answer, partitions[].answer = {value, missing}
    # the three-valued answer first: summary.verdict is the older CLEAN/PROBLEMS/COMMITTED_LOSS,
    # still written beside it (reading it first counted every answered 'lost' as 'problems')
    value, missing = _verdict_value(summary.get("answer") or summary.get("verdict"))
    listed = {(p.get("topic"), p.get("partition")) for p in report.get("partitions", [])}
    for item in summary.get("missing_evidence") or []:
        # per partition: {topic, partition, missing: [...]}; those of listed partitions are read
        # below, a partition no given dir holds (the metadata log names it) only here
        if not (isinstance(item, dict) and "missing" in item):
            missing.append(item)
        elif (item.get("topic"), item.get("partition")) not in listed:
            missing += list(item["missing"])
    for p in report.get("partitions", []):
        _v, m = _verdict_value(p.get("answer") or p.get("verdict"))
        missing += m + list(p.get("missing_evidence") or [])
    verdict = _normalise(value) or ("safe" if exit_code == 0 else "problems")
    if exit_code == 0:
        verdict = "safe"                # exit 0 is the all-clear, whatever the text says
    return Answer(verdict, missing)


def advise_answer(entry: dict[str, Any], exit_code: int) -> Answer:
    value, missing = _verdict_value(entry.get("verdict"))
    # advise --json: verdict (a string) and missing: [{broker, role, decides, text}]
    missing += list(entry.get("missing_evidence") or entry.get("missing") or [])
    verdict = _normalise(value)
    if verdict is None:
        best = entry["candidates"][0] if entry.get("candidates") else None
        verdict = "safe" if best is not None and best["lost"]["total"] == 0 else "lost"
    if exit_code == 0:
        verdict = "safe"
    return Answer(verdict, missing)


#: every missing-evidence kind compare emits (segtools/forensics/answers.py, report.py) -> the
#: rule ``justified`` judges it by
_COMPARE_KINDS = {
    "log_dir": "log_dir", "metadata_log": "metadata_log", "acks": "acks", "untruncated_log": "untruncated_log",
    "unflushed_tail": "unflushed_tail", "segments_below_log_start": "segments", "intact_copy": "intact_copy",
    "ack_leader_epoch": "ack_leader_epoch", "raft_voters": "raft_voters", "transaction_state": "transaction_state",
}


def _evidence_kind(item: Any) -> tuple[str, int | None]:
    """What one named piece of missing evidence is: log_dir (with its broker), metadata_log,
    acks, checkpoint, segments, or other. A dict is read by its kind field when it has one."""
    broker = None
    if isinstance(item, dict) and item.get("evidence") in _COMPARE_KINDS:
        # compare names the kind: read it, not the prose
        b = item.get("broker")
        return _COMPARE_KINDS[item["evidence"]], (b if isinstance(b, int) else None)
    if isinstance(item, dict) and item.get("role") == "ack leader epochs":
        return "ack_leader_epoch", None
    if isinstance(item, dict) and item.get("role") == "replica set":
        return "metadata_log", None       # advise without the metadata log: the replica set
    if isinstance(item, dict) and item.get("role") == "given dir behind the metadata log":
        # an early copy or a broker that lost its last epoch's records (power loss)
        return "checkpoint", item.get("broker")
    if isinstance(item, dict):
        b = item.get("broker", item.get("log_dir"))
        broker = b if isinstance(b, int) else None
        named = next((item[k] for k in ("kind", "evidence", "what", "type") if isinstance(item.get(k), str)), None)
        text = (named if named is not None else json.dumps(item, sort_keys=True)).lower()
    else:
        text = str(item).lower()
    if broker is None:
        m = re.search(r"broker[-_ ]?(\d+)", text)
        broker = int(m.group(1)) if m else None
    if "unflushed" in text:
        return "unflushed_tail", broker
    if "untruncated" in text or "intact_copy" in text:
        return "untruncated_log", broker
    if any(w in text for w in ("log dir", "log_dir", "logdir", "disk")):
        return "log_dir", broker
    if "ack" in text:
        return "acks", None
    if "metadata" in text:
        return "metadata_log", None
    if "checkpoint" in text or "high watermark" in text or "high_watermark" in text:
        return "checkpoint", broker
    if "log start" in text or "log_start" in text or "segment" in text or "retention" in text:
        return "segments", broker
    if "replica" in text or broker is not None:
        return "log_dir", broker
    return "other", None


# -- facts of an evidence set ---------------------------------------------------------------------

def log_starts(ev: EvidenceSet) -> dict[tuple[str, int, int], int]:
    """(topic, partition, broker) -> log start offset of that replica in the set."""
    out: dict[tuple[str, int, int], int] = {}
    for b, bdir in zip(ev.brokers, ev.broker_dirs):
        ck = os.path.join(bdir, LOG_START_CKPT)
        entries = read_offset_checkpoint(ck).entries if os.path.exists(ck) else {}
        for pdir in _partition_dirs(bdir):
            topic, _, part = os.path.basename(pdir).rpartition("-")
            if not part.isdigit():
                continue
            bases = _segment_bases(pdir)
            out[(topic, int(part), b)] = max(bases[0] if bases else 0, entries.get((topic, int(part)), 0))
    return out


def _has_files(ev: EvidenceSet, name: str, per_partition: bool) -> bool:
    for bdir in ev.broker_dirs:
        dirs = list(_partition_dirs(bdir)) if per_partition else [bdir]
        if any(not os.path.exists(os.path.join(d, name)) for d in dirs):
            return False
    return True


def justified(ev: EvidenceSet, item: Any, starts: dict[tuple[str, int, int], int]) -> bool | None:
    """Is evidence named as missing really missing (None: cannot be checked)?"""
    kind, broker = _evidence_kind(item)
    if kind == "acks":
        return ev.acks is None
    if kind == "metadata_log":
        return ev.metadata_log is None
    if kind == "log_dir":
        if broker is not None:
            return broker not in ev.brokers
        return any(int(b) not in ev.brokers for p in ev.truth.values() for b in p["assignment"])
    if kind == "checkpoint":
        # checkpoints are exact only when every broker in the set stopped cleanly
        return (not _has_files(ev, "replication-offset-checkpoint", False)
                or not _has_files(ev, "leader-epoch-checkpoint", True)
                or "stale_checkpoints" in ev.kind.split("+") or not set(ev.brokers) <= ev.clean_stops)
    if kind == "untruncated_log":
        # a copy of that broker from before the unclean election: missing when the broker's dir
        # is not given, or when its given dir already knows a later epoch (it followed the new
        # leader, which is what truncates)
        epoch = item.get("epoch") if isinstance(item, dict) else None
        if broker is None or broker not in ev.brokers or epoch is None:
            return broker is not None and broker not in ev.brokers or None
        return _latest_epoch(ev, broker) >= epoch
    if kind == "unflushed_tail":
        # what a power loss of that broker took is on no file: justified for a given broker
        # the run really crashed, or one whose stops no file can prove clean: restarted (Kafka
        # deletes .kafka_cleanshutdown at startup, and without ELR the metadata log does not
        # record how a broker stopped) or without .kafka_cleanshutdown in its given dir
        if broker is None or broker not in ev.brokers:
            return False
        bdir = ev.broker_dirs[ev.brokers.index(broker)]
        return broker in ev.crashed or broker in ev.restarted \
            or not os.path.exists(os.path.join(bdir, ".kafka_cleanshutdown"))
    if kind == "segments":
        return any(v > 0 for (_t, _p, b), v in starts.items() if broker is None or b == broker)
    if kind == "ack_leader_epoch":
        # acknowledgements without a leader epoch: missing only when the given acks.jsonl has such
        return ev.acks is not None and _acks_without_epoch(ev.acks)
    if kind == "transaction_state":
        # the coordinator's __transaction_state log: missing when no given dir holds a partition of it
        return not any(next(Path(d).glob("__transaction_state-*"), None) for d in ev.broker_dirs)
    if kind == "intact_copy":
        # another copy of a damaged or diverged range: missing only when a replica of the run is
        # not among the given dirs (with every replica given, nothing else could hold one)
        return any(int(b) not in ev.brokers for p in ev.truth.values() for b in p["assignment"])
    if kind == "raft_voters":
        # the controller quorum: which nodes are its voters is in their configs
        # (controller.quorum.voters, a static quorum), not in any log dir. Missing when the set
        # gives compare no metadata log, or no file it is given names the voters (both engines
        # run one controller, but no given dir says so; the real engine's config files sit
        # beside the dirs, and compare is not given them)
        given = [*ev.broker_dirs, *([ev.metadata_log] if ev.metadata_log else [])]
        return ev.metadata_log is None or not any(
            "controller.quorum.voters" in f.read_text(errors="replace")
            for d in given for f in Path(d).rglob("*.properties"))
    return None


def _acks_without_epoch(path: str) -> bool:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            rec = json.loads(line) if line.startswith("{") else {}
            if rec.get("ok", True) and rec.get("offset") is not None and rec.get("leader_epoch") is None:
                return True
    return False


def _latest_epoch(ev: EvidenceSet, broker: int) -> int:
    """The newest leader epoch ``broker``'s given dir knows: named by a leader-epoch-checkpoint,
    or stamped on a batch of its segments (partitionLeaderEpoch, bytes 12-16 of a v2 batch
    header). The batches count too: a copy whose checkpoints were deleted or cut still holds
    the records it fetched from a later leader (the harness judged those sets wrongly before)."""
    bdir = ev.broker_dirs[ev.brokers.index(broker)]
    latest = -1
    for ckpt in Path(bdir).glob("*/leader-epoch-checkpoint"):
        for line in ckpt.read_text().splitlines()[2:]:
            parts = line.split()
            if len(parts) == 2 and parts[0].lstrip("-").isdigit():
                latest = max(latest, int(parts[0]))
    for seg in Path(bdir).glob("*/*.log"):
        data, pos = seg.read_bytes(), 0
        while pos + 17 <= len(data):
            length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
            if length < 14 or data[pos + 16] != 2:
                break
            latest = max(latest, int.from_bytes(data[pos + 12:pos + 16], "big", signed=True))
            pos += 12 + length
    return latest


# -- the checks -----------------------------------------------------------------------------------

@dataclass
class Outcome:
    kind: str
    scenario: str
    answers: Counter[str] = field(default_factory=Counter)
    violations: Counter[str] = field(default_factory=Counter)
    details: list[str] = field(default_factory=list)
    cases: int = 0          # compare runs + advise runs

    def flag(self, tool: str, what: str, detail: str) -> None:
        self.violations[what] += 1
        self.violations[f"{tool}:{what}"] += 1
        if len(self.details) < 50:
            self.details.append(f"{self.scenario}/{self.kind}: {what}: {detail}")


def _final_broker(p: dict[str, Any]) -> int | None:
    b = p["leader"] if p["leader"] is not None else p["last_leader"]
    return int(b) if b is not None else None


def check_compare(ev: EvidenceSet, out: Outcome, starts: dict[tuple[str, int, int], int]) -> None:
    out.cases += 1
    try:
        report_obj = segtools.compare(ev.broker_dirs, acks=ev.acks, metadata_log=ev.metadata_log,
                                      find_metadata_log=False, progress=False)
        report, code = report_obj.report_json(), report_obj.exit_code
    except SegtoolsError as exc:            # unusable input: exit 2, not an all-clear
        out.answers["compare:error"] += 1
        out.details.append(f"{ev.scenario}/{ev.kind}: compare refused: {exc}")
        return
    except Exception as exc:  # noqa: BLE001 - a traceback is itself a finding
        out.flag("compare", "crash", f"compare: {type(exc).__name__}: {exc}")
        return
    answer = compare_answer(report, code)
    out.answers[f"compare:{answer.verdict}"] += 1
    truth_lost = {(p["topic"], p["partition"], r["offset"], r["leader_epoch"])
                  for p in ev.truth.values() for r in p["lost"]}
    # (a) every record reported lost is lost in truth
    at_risk = set()
    for part in report.get("partitions", []):
        ans = part.get("answer")
        if isinstance(ans, dict) and ans.get("value") == "cannot_tell" and ans.get("at_risk"):
            # a partition whose surviving log is missing: its lost_records are reported as at
            # risk (answer cannot_tell naming that log), not as lost
            at_risk.add((part["topic"], part["partition"]))
            continue
        for rec in part.get("lost_records", []):
            if rec.get("relocated_to") is not None:
                continue
            key = (part["topic"], part["partition"], rec["offset"], rec["leader_epoch"])
            if key not in truth_lost:
                out.flag("compare", "false_loss", f"compare: {key[0]}-{key[1]} offset {key[2]} epoch {key[3]} "
                                       f"(on broker {rec.get('broker')}) survived")
    for rng in report.get("summary", {}).get("offsets_lost", {}).get("partitions", []):
        if (rng["topic"], rng["partition"]) in at_risk:
            continue
        p = ev.truth.get(f"{rng['topic']}-{rng['partition']}")
        fb = _final_broker(p) if p else None
        if p is None or fb is None:
            continue
        leo = p["replicas"][str(fb)]["log_end_offset"]
        lost_offsets = {r["offset"] for r in p["lost"]}
        if leo >= rng["end_offset"] and not lost_offsets & set(range(rng["first_offset"], rng["end_offset"])):
            out.flag("compare", "false_loss", f"compare: offsets [{rng['first_offset']}, {rng['end_offset']}) of "
                                   f"{rng['topic']}-{rng['partition']} survive on broker {fb}")
    # (b) no all-clear over acked or committed loss
    if answer.verdict == "safe":
        serious = []
        for p in ev.truth.values():
            fb = _final_broker(p)
            floor = starts.get((p["topic"], p["partition"], fb), 0) if fb is not None else 0
            for r in p["lost"]:
                if (r["acked"] or r["committed"]) and r["relocated_to"] is None and r["offset"] >= floor \
                        and (p["topic"], str(r["value"])) not in ev.aborted:
                    serious.append((p, r))
        if serious:
            traced = any(set(r["on_brokers"]) & set(ev.brokers) or (ev.acks is not None and r["acked"])
                         for _p, r in serious)
            p, r = serious[0]
            what = "false_all_clear_traced" if traced else "false_all_clear_untraced"
            out.answers[f"compare:{what}"] += 1
            out.flag("compare", "false_all_clear", f"compare exit {code} ({what[16:]}): {len(serious)} acked/committed "
                                        f"lost, e.g. {p['topic']}-{p['partition']} offset {r['offset']} "
                                        f"epoch {r['leader_epoch']} acks={r['acks']} cause {r['cause']}")
    _check_cannot_tell(ev, out, answer, starts, "compare")


def _check_cannot_tell(ev: EvidenceSet, out: Outcome, answer: Answer,
                       starts: dict[tuple[str, int, int], int], tool: str) -> None:
    if answer.verdict != "cannot_tell":
        return
    if not answer.missing:
        out.flag(tool, "unjustified_cannot_tell", f"{tool}: cannot tell, naming no missing evidence")
    for item in answer.missing:
        ok = justified(ev, item, starts)
        if ok is None:
            # a kind no rule judges: a new kind of missing evidence needs its rule here
            out.flag(tool, "unjudged_cannot_tell", f"{tool}: names {item!r}, a kind no rule judges")
        elif not ok:
            out.flag(tool, "unjustified_cannot_tell", f"{tool}: names {item!r} as missing, the set has it")


def _relocated_in(rec: Any, replica: Any) -> bool:
    nxt, seen = rec.resent_as, 0
    while nxt is not None and seen < 100:
        if replica.has_record(nxt.offset, nxt.leader_epoch):
            return True
        nxt, seen = nxt.resent_as, seen + 1
    return False


def _precious_missing(ev: EvidenceSet, tp: tuple[str, int], broker: int,
                      starts: dict[tuple[str, int, int], int]) -> list[Any]:
    """Acked or committed records some replica of the model still holds that ``broker``'s log
    lacks (above its log start in the set): what electing it loses."""
    reps = ev.cluster.replicas[tp]
    mine = reps.get(broker)
    if mine is None:
        return []
    floor = max(starts.get((tp[0], tp[1], broker), 0), mine.log_start_offset)
    out = []
    for rec in ev.cluster.records:
        if (rec.topic, rec.partition) != tp or not (rec.acked or rec.committed) or rec.offset < floor \
                or (rec.topic, str(rec.value)) in ev.aborted:
            continue
        if mine.has_record(rec.offset, rec.leader_epoch) or _relocated_in(rec, mine):
            continue
        if any(r.has_record(rec.offset, rec.leader_epoch) for r in reps.values()):
            out.append(rec)
    return out


def check_advise(ev: EvidenceSet, out: Outcome, starts: dict[tuple[str, int, int], int],
                 all_partitions: bool = False) -> None:
    """advise on each partition truth says is offline (``all_partitions``: on every partition;
    the advice then is which replica to elect were its leader lost now, judged the same way)."""
    from click.testing import CliRunner

    from segtools.cli.advise import advise as advise_cli

    for p in ev.truth.values():
        if p["leader"] is not None and not all_partitions:
            continue
        tp = (p["topic"], p["partition"])
        if not any((tp[0], tp[1], b) in starts for b in ev.brokers):
            continue                        # no replica of it in the set
        out.cases += 1
        with tempfile.TemporaryDirectory(prefix="soundness-advise-") as tmp:
            jpath = os.path.join(tmp, "advice.json")
            args = [*ev.broker_dirs, "--topic", tp[0], "--partition", str(tp[1]), "--json", jpath]
            args += ["--acks", ev.acks] if ev.acks else []
            args += ["--metadata-log", ev.metadata_log] if ev.metadata_log else ["--no-metadata-log"]
            res = CliRunner().invoke(advise_cli, args, catch_exceptions=True)
            if res.exception is not None and not isinstance(res.exception, SystemExit):
                out.flag("advise", "crash", f"advise {tp}: {type(res.exception).__name__}: {res.exception}")
                continue
            code = res.exit_code
            if code == 2 or not os.path.exists(jpath):
                out.answers["advise:error"] += 1
                continue
            with open(jpath, encoding="utf-8") as fh:
                entries = json.load(fh)
        entry = next((e for e in entries if (e["topic"], e["partition"]) == tp), None)
        if entry is None:
            out.answers["advise:error"] += 1
            continue
        answer = advise_answer(entry, code)
        out.answers[f"advise:{answer.verdict}"] += 1
        # (a) a candidate never "loses" a record its own log holds
        for cand in entry.get("candidates", []):
            rep = ev.cluster.replicas[tp].get(cand["broker"])
            for r in cand.get("lost_records", []):
                if rep is not None and rep.has_record(r["offset"], r["leader_epoch"]):
                    out.flag("advise", "false_loss", f"advise {tp[0]}-{tp[1]}: electing {cand['broker']} said to lose "
                                           f"offset {r['offset']} epoch {r['leader_epoch']}, which it holds")
        # (b) "loses nothing" only when the recommended candidate holds every acked/committed record
        if answer.verdict == "safe" and entry.get("recommended") is not None:
            best = int(entry["recommended"])
            lacking = _precious_missing(ev, tp, best, starts)
            if lacking:
                r = lacking[0]
                holders = [b for b, rep in ev.cluster.replicas[tp].items() if rep.has_record(r.offset, r.leader_epoch)]
                traced = bool(set(holders) & set(ev.brokers)) or (ev.acks is not None and r.acked)
                what = "false_all_clear_traced" if traced else "false_all_clear_untraced"
                out.answers[f"advise:{what}"] += 1
                out.flag("advise", "false_all_clear",
                         f"advise {tp[0]}-{tp[1]} exit {code}: elect {best} 'loses 0' but lacks {len(lacking)} "
                         f"acked/committed, e.g. offset {r.offset} epoch {r.leader_epoch} acks={r.acks} "
                         f"held by {holders}")
        _check_cannot_tell(ev, out, answer, starts, "advise")


def check(ev: EvidenceSet, *, advise_all: bool = False) -> Outcome:
    """compare on the set, advise on its offline partitions (``advise_all``: on every one)."""
    out = Outcome(ev.kind, ev.scenario)
    starts = log_starts(ev)
    check_compare(ev, out, starts)
    check_advise(ev, out, starts, advise_all)
    return out


# -- running and counting -------------------------------------------------------------------------

def run_scenario(name: str, scenario: dict[str, Any], workdir: str,
                 kinds: tuple[str, ...] | None = None, engine: str = "model") -> list[Outcome]:
    """Every degradation of one scenario, checked. A scenario the engine refuses (or, on the
    real engine, whose story drifted from the model's) is one ``scenario_error`` outcome (not
    a case)."""
    from soundness_degrade import KINDS, degrade

    outs: list[Outcome] = []
    try:
        for ev in degrade(name, scenario, workdir, kinds or KINDS, engine):
            outs.append(check(ev))
    except SegtoolsError as exc:
        bad = Outcome("scenario_error", name)
        bad.details.append(f"{name}: {exc}")
        outs.append(bad)
    return outs


def table(outcomes: list[Outcome]) -> str:
    """Counts per degradation kind: evidence sets, compare and advise runs and their answers
    (cmp_/adv_ columns), violations (``..._all``: both tools; a false all-clear split into
    ``traced``, the set still held a trace of the loss, and ``untraced``)."""
    kinds: dict[str, list[Outcome]] = {}
    for o in outcomes:
        kinds.setdefault(o.kind, []).append(o)
    verdicts = ["safe", "lost", "cannot_tell", "problems", "error"]
    cols = ["sets", "cases", *[f"cmp_{v}" for v in verdicts], *[f"adv_{v}" for v in verdicts if v != "problems"],
            *[f"{v}_all" for v in VIOLATIONS], "fac_cmp", "fac_adv", "fac_traced", "fac_untraced", "false_loss_adv"]
    lines = ["| kind | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    total: Counter[str] = Counter()
    for kind in sorted(kinds):
        c: Counter[str] = Counter()
        for o in kinds[kind]:
            c["sets"] += 1
            c["cases"] += o.cases
            for k, v in o.answers.items():
                tool, _, what = k.partition(":")
                short = "cmp" if tool == "compare" else "adv"
                if what.startswith("false_all_clear_"):
                    c["fac_" + what[16:]] += v
                elif what != "cannot_tell_unchecked_item":
                    c[f"{short}_{what}"] += v
            for k, v in o.violations.items():
                if ":" not in k:
                    c[f"{k}_all"] += v
            c["fac_cmp"] += o.violations["compare:false_all_clear"]
            c["fac_adv"] += o.violations["advise:false_all_clear"]
            c["false_loss_adv"] += o.violations["advise:false_loss"]
        total.update(c)
        lines.append(f"| {kind} | " + " | ".join(str(c[k]) for k in cols) + " |")
    lines.append("| **all** | " + " | ".join(str(total[k]) for k in cols) + " |")
    return "\n".join(lines)
