"""The compare report: JSON per CONTRACT.md section 4 and the terminal summary."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from segtools.forensics.classify import PartitionVerdict
from segtools.forensics.findings import PROBLEM_STATUSES, STATUS_ORDER
from segtools.forensics.loss import (
    AckIndex,
    AckReconciliation,
    LostOffsets,
    LostRecord,
    committed_offsets_lost,
    reconcile_acks,
)

#: report.json's top-level ``schema_version`` (docs/REPORT.md); 2 added the three-valued
#: ``answer`` and ``acked_offsets_lost``
SCHEMA_VERSION = 2

#: report.json "summary.verdict" values (docs/REPORT.md)
VERDICT_CLEAN = "CLEAN"            # exit 0: every replica consistent or a lagging prefix
VERDICT_LOSS = "COMMITTED_LOSS"    # committed records or committed offsets lost
VERDICT_PROBLEMS = "PROBLEMS"      # divergence, corruption or unreadable input, nothing committed lost
VERDICT_CANNOT_TELL = "CANNOT_TELL"   # not proven either way: evidence is missing (exit 1)


def replica_problem(verdict: PartitionVerdict, replica: Any) -> bool:
    """The one test of "this replica has a problem", shared by the table and the exit code:
    a problem status, a file that did not parse (READ_ERROR), or a replica of another topic
    with the same name (a different topic id: not comparable, and not fine either)."""
    if replica.status in PROBLEM_STATUSES or any(f.code == "READ_ERROR" for f in replica.findings):
        return True
    return bool(replica.status == "NOT_COMPARABLE" and verdict.topic_id and replica.topic_id
                and replica.topic_id != verdict.topic_id)


@dataclass(slots=True)
class PartitionReport:
    verdict: PartitionVerdict
    lost: list[LostRecord] = field(default_factory=list)
    extra_findings: list[Any] = field(default_factory=list)
    lost_offsets: LostOffsets | None = None
    #: acks.jsonl checked against the replicas' lineages (None without --acks)
    acked_lost: AckReconciliation | None = None
    #: segtools.forensics.answers.partition_answer: {"value", "lost", "missing"}
    answer: dict[str, Any] | None = None

    def to_json(self, details: Mapping[tuple[str, int, int, int, int], tuple[int | None, str, bool]] | None = None
                ) -> dict[str, Any]:
        """``details``: timestamp and transaction state per lost record (lost_details.py)."""
        from segtools.forensics.lost_details import as_json

        v = self.verdict
        acked = self.acked_lost.finding() if self.acked_lost is not None else None
        details = details or {}
        return {
            "topic": v.topic, "partition": v.partition, "topic_id": v.topic_id,
            "reference_broker": v.reference_broker,
            "replicas": [r.to_json() for r in sorted(v.replicas, key=lambda r: (r.broker, r.log_dir))],
            "lost_records": [{**x.to_json(), **as_json(details.get((v.topic, v.partition, x.broker, x.offset,
                                                                    x.leader_epoch)))} for x in self.lost],
            "findings": [f.to_json() for f in [*v.findings, *self.extra_findings,
                                                *([self.lost_offsets.finding()] if self.lost_offsets else []),
                                                *([acked] if acked else [])]],
            "answer": self.answer,
            **({"acked_offsets_lost": [x.to_json() for x in self.acked_lost.lost]}
               if self.acked_lost is not None else {}),
            **({"metadata_changes": v.metadata_changes} if v.metadata_changes else {}),
            **({"transactions": v.transactions} if getattr(v, "transactions", None) else {}),
        }


@dataclass(slots=True)
class CompareReport:
    partitions: list[PartitionReport]
    broker_events: list[dict[str, Any]] = field(default_factory=list)   # Histories.brokers
    # what segtools.compare() knew of the run (report.json's summary; the legend lines)
    inputs: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    runner: str | None = None
    legend: list[str] = field(default_factory=list)
    generated_at: str | None = None
    # the replicas compared (collect.ReplicaSpec); not in report.json (compare --lost-out reads them)
    replicas: list[Any] = field(default_factory=list, repr=False)
    acks_given: bool = False
    #: partitions of compared topics the metadata log knows but no given dir holds (cannot tell)
    unseen: list[dict[str, Any]] = field(default_factory=list)
    #: the tier audit of the evidence (segtools/tier/compare_section.py), None: nothing tiered
    tier: dict[str, Any] | None = None
    #: lost records' timestamps and transaction states, read once from ``replicas`` (lost_details.py)
    _lost_details: dict[tuple[str, int, int, int, int], tuple[int | None, str, bool]] | None = field(
        default=None, repr=False)
    #: attach_replicas folded the transaction states in
    _txn_settled: bool = field(default=False, repr=False)

    def describe(self, *, inputs: dict[str, Any] | None, warnings: list[str], runner: str,
                 legend: list[str]) -> None:
        """Record the run's inputs, warnings and runner, stamped now (report.json's summary)."""
        import datetime

        self.inputs, self.warnings, self.runner, self.legend = inputs, list(warnings), runner, list(legend)
        stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        self.generated_at = stamp.replace("+00:00", "Z")

    def to_json(self) -> dict[str, Any]:
        parts = sorted(self.partitions, key=lambda p: (p.verdict.topic, p.verdict.partition))
        out: dict[str, Any] = {"partitions": [p.to_json(self.lost_details()) for p in parts]}
        if self.broker_events:
            out["metadata"] = {"brokers": self.broker_events}
        if self.tier is not None:
            out["tier"] = self.tier
        return out

    def attach_replicas(self, specs: Any) -> None:
        """Record the replicas compared and read the lost records' transaction states from them:
        records of an aborted transaction stop counting as committed losses (verdicts, counts
        and answers; lost_details.apply_transaction_states). Once per report."""
        self.replicas = list(specs)
        if self._txn_settled or not self.replicas:
            return
        self._txn_settled = True
        # only a producer's records can be transactional: reports without any read nothing more
        if not any(x.producer_id >= 0 for p in self.partitions for x in p.lost):
            return
        from segtools.forensics.lost_details import apply_transaction_states

        apply_transaction_states(self.partitions, self.lost_details())
        self._answer_all()      # aborted records leave the answer's losses, open ones are flagged

    def lost_details(self) -> dict[tuple[str, int, int, int, int], tuple[int | None, str, bool]]:
        """Timestamp and transaction state of each lost record, from the replicas compared
        (empty for a report without them, e.g. one read back from JSON)."""
        if self._lost_details is None:
            from segtools.forensics.lost_details import lost_details

            self._lost_details = lost_details(self.partitions, self.replicas) if self.replicas else {}
        return self._lost_details

    @property
    def exit_code(self) -> int:
        """1 when anything is lost, diverged or corrupt (a checkpoint or metadata file that
        does not parse included); 0 when clean (CONTRACT.md section 1)."""
        bad = any(replica_problem(p.verdict, r) for p in self.partitions for r in p.verdict.replicas)
        if bad or any(p.lost or p.lost_offsets for p in self.partitions):
            return 1
        # exit 0 only when "nothing lost" is proven: "cannot tell" and acked losses exit 1
        return 0 if self.answer() == "safe" else 1

    def attach_lost_offsets(self, acks: AckIndex | None = None) -> None:
        """Committed offsets that survive on no replica, acknowledged offsets no lineage holds,
        and each partition's three-valued answer (both runners end here)."""
        self.acks_given = acks is not None
        for p in self.partitions:
            p.lost_offsets = committed_offsets_lost(p.verdict, acks)
            p.acked_lost = reconcile_acks(p.verdict, acks)
        self._answer_all()

    def _answer_all(self) -> None:
        from segtools.forensics.answers import partition_answer

        for p in self.partitions:
            problems = sorted({f"broker {r.broker}: {r.status}" for r in p.verdict.replicas
                               if replica_problem(p.verdict, r)})
            p.answer = partition_answer(p, acks_given=self.acks_given, problems=problems)

    def note_unseen_partitions(self, histories: Any) -> None:
        """Partitions of the compared topics that the metadata log lists and no input holds."""
        topics = {p.verdict.topic for p in self.partitions}
        seen = {(p.verdict.topic, p.verdict.partition) for p in self.partitions}
        self.unseen = []
        for (topic, partition), h in sorted(histories.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
            if topic in topics and (topic, partition) not in seen:
                self.unseen.append({"topic": topic, "partition": partition, "missing": [{
                    "evidence": "log_dir", "brokers": sorted(set(h.isr) | set(h.elr) | set(h.replicas)),
                    "detail": "no given log dir holds this partition of a compared topic (the metadata log "
                              f"lists it; assignment {list(h.replicas)}, ISR {list(h.isr)})",
                    "decides": "whether this partition lost records"}]})

    def answer(self) -> str:
        """The report's answer: ``lost`` when any partition lost records, else ``cannot_tell``
        when any partition's evidence falls short, else ``safe`` (an empty input proves nothing)."""
        from segtools.forensics.answers import CANNOT_TELL, worst

        if not self.partitions:
            return CANNOT_TELL
        values = [(p.answer or {}).get("value", CANNOT_TELL) for p in self.partitions]
        return worst(values + [CANNOT_TELL] * bool(self.unseen or self._tier_gaps()))

    def _tier_gaps(self) -> list[dict[str, Any]]:
        from segtools.tier.compare_section import missing_evidence

        return missing_evidence(self.tier)

    def cannot_tell(self) -> list[dict[str, Any]]:
        """Per partition whose answer is not proven: the missing evidence (report.json)."""
        out = [{"topic": p.verdict.topic, "partition": p.verdict.partition, "missing": p.answer["missing"]}
               for p in self.partitions if p.answer and p.answer["missing"]]
        return sorted(out + list(self.unseen) + self._tier_gaps(),
                      key=lambda g: (g["topic"], g["partition"]))

    def totals(self) -> dict[str, Any]:
        """Counts for the summary line and report.json's summary block (docs/REPORT.md)."""
        by_status: dict[str, int] = {}
        problems = 0
        for p in self.partitions:
            for r in p.verdict.replicas:
                by_status[r.status] = by_status.get(r.status, 0) + 1
                problems += replica_problem(p.verdict, r)
        # a record lost from two replicas is one record: count distinct (partition, offset, epoch)
        distinct: dict[tuple, tuple[bool, bool]] = {}
        for p in self.partitions:
            for x in p.lost:
                key = (p.verdict.topic, p.verdict.partition, x.offset, x.leader_epoch)
                c, a = distinct.get(key, (False, False))
                distinct[key] = (c or bool(x.committed), a or bool(x.acked))
        aborted = {(p.verdict.topic, p.verdict.partition, x.offset, x.leader_epoch)
                   for p in self.partitions for x in p.lost if x.txn_state == "aborted"}
        acks_known = any(x.acked is not None for p in self.partitions for x in p.lost)
        ranges = [p.lost_offsets for p in self.partitions if p.lost_offsets]
        offsets_acked_known = any(r.acked is not None for r in ranges)
        acked_lost = [(p, x) for p in self.partitions if p.acked_lost is not None for x in p.acked_lost.lost]
        return {
            "partitions": len(self.partitions),
            "replicas": sum(by_status.values()),
            "replicas_with_problems": problems,
            "by_status": {s: by_status[s] for s in STATUS_ORDER if s in by_status},
            "records_lost": {
                "total": len(distinct),
                "committed": sum(c for c, _ in distinct.values()),
                "acked": sum(a for _, a in distinct.values()) if acks_known else None,
                "replica_copies": sum(len(p.lost) for p in self.partitions),
                # of an aborted transaction: never delivered to read_committed consumers, no loss
                "aborted": len(aborted),
            },
            "offsets_lost": {
                "total": sum(r.count for r in ranges),
                "committed": sum(r.count for r in ranges),   # below a high-watermark checkpoint
                "acked": sum(r.acked or 0 for r in ranges) if offsets_acked_known else None,
                "partitions": [{"topic": p.verdict.topic, "partition": p.verdict.partition,
                                "first_offset": p.lost_offsets.first_offset,
                                "end_offset": p.lost_offsets.end_offset}
                               for p in self.partitions if p.lost_offsets],
            },
            "acked_offsets_lost": None if not self.acks_given else {
                "total": len(acked_lost), "committed": sum(x.committed for _p, x in acked_lost),
                "partitions": sorted({(p.verdict.topic, p.verdict.partition) for p, _x in acked_lost}),
            },
        }

    def verdict(self) -> str:
        t = self.totals()
        acked = t["acked_offsets_lost"] or {}
        if t["records_lost"]["committed"] or t["offsets_lost"]["committed"] or acked.get("committed"):
            return VERDICT_LOSS
        if t["records_lost"]["total"] or acked.get("total") or t["replicas_with_problems"]:
            return VERDICT_PROBLEMS
        return VERDICT_CANNOT_TELL if self.exit_code else VERDICT_CLEAN

    def summary(self, *, inputs: dict[str, Any] | None = None, warnings: list[str] | None = None,
                runner: str | None = None, generated_at: str | None = None) -> dict[str, Any]:
        """report.json's "summary" block (docs/REPORT.md)."""
        import datetime

        from segtools.version import __version__

        if generated_at is None:
            generated_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            generated_at = generated_at.replace("+00:00", "Z")
        return {
            "tool": "segtools compare", "version": __version__, "generated_at": generated_at,
            "runner": runner, "inputs": inputs, "warnings": list(warnings or []),
            **_nest_totals(self.totals()), "verdict": self.verdict(), "exit_code": self.exit_code,
            "answer": self.answer(), "missing_evidence": self.cannot_tell(),
        }

    def report_json(self, **summary_kw: Any) -> dict[str, Any]:
        """The whole report.json: {"summary": ..., "partitions": [...]}; the summary's inputs,
        warnings, runner and time are the ones :meth:`describe` recorded unless given."""
        kw = {"inputs": self.inputs, "warnings": self.warnings, "runner": self.runner,
              "generated_at": self.generated_at, **summary_kw}
        return {"schema_version": SCHEMA_VERSION, "summary": self.summary(**kw), **self.to_json()}

    def json_text(self) -> str:
        """Exactly the bytes `segtools compare --report FILE` writes (as text)."""
        import json

        return json.dumps(self.report_json(), indent=1) + "\n"


def _nest_totals(t: dict[str, Any]) -> dict[str, Any]:
    counts = {k: t[k] for k in ("partitions", "replicas", "replicas_with_problems", "by_status")}
    acked = t["acked_offsets_lost"]
    if acked is not None:
        acked = {**acked, "partitions": [{"topic": tp, "partition": n} for tp, n in acked["partitions"]]}
    return {"totals": counts, "records_lost": t["records_lost"], "offsets_lost": t["offsets_lost"],
            "acked_offsets_lost": acked}


def _cause_text(r: Any) -> str:
    """The table's cause column: the cause code, and the class of the election it comes from
    (docs/REPORT.md "Election classes") when the metadata log gave one."""
    if not r.cause:
        return "undetermined" if r.status == "COMMITTED_LOSS" else ""
    el = getattr(r, "cause_election", None)
    if el and el.get("class"):
        return f"{r.cause} ({el['class'].replace('_', '-')} election, epoch {el.get('epoch')})"
    return str(r.cause)


def _quiet(p: Any) -> bool:
    """A partition with nothing to look at: no replica with a problem status, no lost record
    or offset, an answer other than lost. Not a claim of safety: missing evidence is still
    named by :func:`answer_lines`, which says what is proven."""
    if p.lost or (p.answer or {}).get("value") == "lost" or p.lost_offsets is not None:
        return False
    if p.acked_lost is not None and p.acked_lost.finding() is not None:
        return False
    return not any(r.status in PROBLEM_STATUSES or replica_problem(p.verdict, r) for r in p.verdict.replicas)


def render_summary(report: CompareReport, *, max_rows: int | None = 200, all_rows: bool = False) -> str:
    """One row per partition and replica, problems first. Unless ``all_rows``, partitions with
    nothing to look at (:func:`_quiet`) are summarised in one line after the table."""
    rank = {s: i for i, s in enumerate(STATUS_ORDER)}
    rows = []
    quiet: dict[str, int] = {}
    quiet_parts = 0
    for p in report.partitions:
        v = p.verdict
        if not all_rows and _quiet(p):
            quiet_parts += 1
            for r in v.replicas:
                quiet[r.status] = quiet.get(r.status, 0) + 1
            continue
        lost_by: dict[int, int] = {}
        acked_by: dict[int, int] = {}
        for x in p.lost:
            lost_by[x.broker] = lost_by.get(x.broker, 0) + 1
            acked_by[x.broker] = acked_by.get(x.broker, 0) + bool(x.acked)
        acks_known = any(x.acked is not None for x in p.lost)
        for r in v.replicas:
            d = r.divergent or {}
            rows.append((rank.get(r.status, 0), f"{v.topic}-{v.partition}", r.broker,
                         "*" if r.is_reference else "", r.status, r.log_start_offset, r.log_end_offset,
                         "-" if r.high_watermark is None else r.high_watermark,
                         "-" if r.fork_offset is None else r.fork_offset,
                         d.get("records", 0), d.get("committed_records", 0), lost_by.get(r.broker, 0),
                         acked_by.get(r.broker, 0) if acks_known else "-",
                         _cause_text(r)))
    rows.sort(key=lambda x: (x[0], x[1], x[2]))
    header = ("partition", "broker", "ref", "status", "start", "LEO", "HWC", "fork", "divergent",
              "committed", "lost", "acked", "cause")
    shown = [tuple(str(c) for c in row[1:]) for row in (rows if max_rows is None else rows[:max_rows])]
    widths = [max([len(h)] + [len(r[i]) for r in shown]) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in shown]
    if max_rows is not None and len(rows) > max_rows:
        lines.append(f"... {len(rows) - max_rows} more replica rows (all in --report)")
    if quiet_parts:
        by_rank = sorted(quiet.items(), key=lambda kv: (rank.get(kv[0], 99), kv[0]))
        counts = ", ".join(f"{n} {status}" for status, n in by_rank)
        lines.append(f"{quiet_parts} partition(s) with no findings not listed ({sum(quiet.values())} replica(s): "
                     f"{counts}; answer below); --all prints every row")
    t = report.totals()
    rec, off = t["records_lost"], t["offsets_lost"]
    held = f" (on {rec['replica_copies']} replica copies)" if rec["replica_copies"] != rec["total"] else ""
    line = (f"{t['partitions']} partition(s), {t['replicas']} replica(s), {t['replicas_with_problems']} "
            f"with problems; {rec['total']} lost record(s){held}, {rec['committed']} committed")
    if rec.get("aborted"):
        line += (f" ({rec['aborted']} of aborted transactions: not delivered to read_committed consumers, "
                 "no loss)")
    if off["total"]:
        where = ", ".join(f"{x['topic']}-{x['partition']} {x['first_offset']}..{x['end_offset'] - 1}"
                          for x in off["partitions"][:3])
        more = f" and {len(off['partitions']) - 3} more" if len(off["partitions"]) > 3 else ""
        acked = "" if off["acked"] is None else f", {off['acked']} acked"
        line += (f"; {off['total']} committed offset(s) lost with no copy on any replica{acked} "
                 f"({where}{more})")
    ack = t["acked_offsets_lost"]
    if ack and ack["total"]:
        where = ", ".join(f"{tp}-{n}" for tp, n in ack["partitions"][:3])
        line += (f"; {ack['total']} acknowledged offset(s) held by no replica in their epoch, "
                 f"{ack['committed']} committed ({where})")
    lines.append(line)
    lines.extend(answer_lines(report))
    return "\n".join(lines)


def answer_lines(report: CompareReport, *, max_partitions: int = 5) -> list[str]:
    """The answer in words: lost, nothing lost (proven), or cannot tell and what is missing."""
    answer = report.answer()
    if answer == "safe":
        return ["answer: safe - nothing lost, proven from the evidence (metadata log, every last ISR/ELR "
                "member's log dir" + (", acks" if report.acks_given else "") + ")"]
    if answer == "lost":
        head = "answer: LOST - records were lost (above)"
    elif report.totals()["records_lost"]["total"]:
        # records are listed above (e.g. of a transaction whose outcome no evidence holds):
        # "nothing seen lost" would read as an all-clear next to them
        head = ("answer: CANNOT TELL - the records listed above may be lost; the evidence cannot "
                "decide (exit 1)")
    else:
        head = "answer: CANNOT TELL - nothing seen lost, but the evidence cannot prove nothing was (exit 1)"
    out = [head]
    gaps = report.cannot_tell()
    for g in gaps[:max_partitions]:
        for m in g["missing"]:
            out.append(f"  {g['topic']}-{g['partition']}: missing {m['evidence']}: {m['detail']}; "
                       f"would decide {m['decides']}")
    if len(gaps) > max_partitions:
        out.append(f"  ... {len(gaps) - max_partitions} more partition(s) with missing evidence (all in --report)")
    return out

