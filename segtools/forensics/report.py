"""The compare report: JSON per CONTRACT.md section 4 and the terminal summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from segtools.forensics.classify import PartitionVerdict
from segtools.forensics.findings import PROBLEM_STATUSES, STATUS_ORDER
from segtools.forensics.loss import LostRecord


@dataclass(slots=True)
class PartitionReport:
    verdict: PartitionVerdict
    lost: list[LostRecord] = field(default_factory=list)
    extra_findings: list[Any] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        v = self.verdict
        return {
            "topic": v.topic, "partition": v.partition, "topic_id": v.topic_id,
            "reference_broker": v.reference_broker,
            "replicas": [r.to_json() for r in sorted(v.replicas, key=lambda r: (r.broker, r.log_dir))],
            "lost_records": [x.to_json() for x in self.lost],
            "findings": [f.to_json() for f in [*v.findings, *self.extra_findings]],
            **({"metadata_changes": v.metadata_changes} if v.metadata_changes else {}),
        }


@dataclass(slots=True)
class CompareReport:
    partitions: list[PartitionReport]
    broker_events: list[dict[str, Any]] = field(default_factory=list)   # Histories.brokers

    def to_json(self) -> dict[str, Any]:
        parts = sorted(self.partitions, key=lambda p: (p.verdict.topic, p.verdict.partition))
        out: dict[str, Any] = {"partitions": [p.to_json() for p in parts]}
        if self.broker_events:
            out["metadata"] = {"brokers": self.broker_events}
        return out

    @property
    def exit_code(self) -> int:
        """1 when anything is lost, diverged or corrupt (a checkpoint or metadata file that
        does not parse included); 0 when clean (CONTRACT.md section 1)."""
        bad = any(r.status in PROBLEM_STATUSES or any(f.code == "READ_ERROR" for f in r.findings)
                  for p in self.partitions for r in p.verdict.replicas)
        return 1 if bad or any(p.lost for p in self.partitions) else 0


def render_summary(report: CompareReport, *, max_rows: int | None = 200) -> str:
    """One row per partition and replica, problems first."""
    rank = {s: i for i, s in enumerate(STATUS_ORDER)}
    rows = []
    for p in report.partitions:
        v = p.verdict
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
                         r.cause or ("undetermined" if r.status == "COMMITTED_LOSS" else "")))
    rows.sort(key=lambda x: (x[0], x[1], x[2]))
    header = ("partition", "broker", "ref", "status", "start", "LEO", "HWC", "fork", "divergent",
              "committed", "lost", "acked", "cause")
    shown = [tuple(str(c) for c in row[1:]) for row in (rows if max_rows is None else rows[:max_rows])]
    widths = [max([len(h)] + [len(r[i]) for r in shown]) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in shown]
    if max_rows is not None and len(rows) > max_rows:
        lines.append(f"... {len(rows) - max_rows} more replica rows (all in --report)")
    problems = sum(1 for r in rows if STATUS_ORDER[r[0]] in PROBLEM_STATUSES)
    # a record lost from two replicas is one record: count distinct (partition, offset, epoch)
    distinct: dict[tuple, bool] = {}
    for p in report.partitions:
        for x in p.lost:
            key = (p.verdict.topic, p.verdict.partition, x.offset, x.leader_epoch)
            distinct[key] = distinct.get(key, False) or bool(x.committed)
    entries = sum(len(p.lost) for p in report.partitions)
    held = f" (on {entries} replica copies)" if entries != len(distinct) else ""
    lines.append(f"{len(report.partitions)} partition(s), {len(rows)} replica(s), {problems} with problems; "
                 f"{len(distinct)} lost record(s){held}, {sum(distinct.values())} committed")
    return "\n".join(lines)
