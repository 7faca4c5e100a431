"""What the compare report says of each lost record beyond its identity: its timestamp and the
state of its transaction (issue 26: the report's first screen and report.json's
``lost_records``). Both are read back from the replica that holds the record, with the same
readers `compare --lost-out` uses (segtools/forensics/lost_out.py), so the report and lost/
never disagree.

``txn_state``: ``none`` (not transactional), ``committed``, ``aborted``, ``open`` (no marker on
any replica) or ``unknown`` (a marker that cannot be read); see
:func:`segtools.forensics.transactions.lost_transaction_states`. A replica that cannot be read
again (moved, changed, unreadable) gives no details: the fields stay absent, never guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from segtools.errors import SegtoolsError

from .lost_out import _rows, _txn_states

#: the columns of a lost row the details are made from (lost_transaction_states reads the last four)
_KEEP = ("offset", "leader_epoch", "timestamp_ms", "producer_id", "producer_epoch", "is_transactional")

#: (topic, partition, broker, offset, leader epoch) -> (timestamp, txn_state, is_transactional):
#: tuples, not dicts, as a report can hold millions of lost records
Details = dict[tuple[str, int, int, int, int], tuple[int | None, str, bool]]


def lost_details(partitions: Sequence[Any], specs: Sequence[Any]) -> Details:
    """Details of every lost record of ``partitions`` (PartitionReports) read from ``specs``
    (the ReplicaSpecs compared); :func:`as_json` gives one's report.json fields."""
    out: Details = {}
    for part in partitions:
        if not part.lost:
            continue
        topic, partition = part.verdict.topic, part.verdict.partition
        mine = [s for s in specs if (s.topic, s.partition) == (topic, partition)]
        wanted: dict[tuple[int, str], set[tuple[int, int]]] = {}
        for x in part.lost:
            wanted.setdefault((x.broker, x.log_dir), set()).add((x.offset, x.leader_epoch))
        for (broker, log_dir), idents in sorted(wanted.items()):
            spec = next((s for s in mine if (s.broker, s.log_dir) == (broker, log_dir)), None) or \
                next((s for s in mine if s.broker == broker), None)
            if spec is None:
                continue
            try:
                # only what the details need: the keys and values are not held a second time
                rows = [{k: r[k] for k in _KEEP} for r in _rows(spec, {o for o, _e in idents})
                        if (r["offset"], r["leader_epoch"]) in idents]
                # where this replica leaves the surviving log: markers are looked for from there on
                states = _txn_states(rows, spec, specs, min(o for o, _e in idents)) if rows else {}
            except (SegtoolsError, OSError):
                continue
            for r in rows:
                out[(topic, partition, broker, r["offset"], r["leader_epoch"])] = (
                    r["timestamp_ms"], states.get(r["offset"], "unknown"), bool(r["is_transactional"]))
    return out


def as_json(detail: tuple[int | None, str, bool] | None) -> dict[str, Any]:
    """A lost record's report.json fields from its details (none when it has none)."""
    if detail is None:
        return {}
    return {"timestamp": detail[0], "txn_state": detail[1], "is_transactional": detail[2]}


def apply_transaction_states(partitions: Sequence[Any], details: Details) -> int:
    """Fold the transaction states into the verdicts (issue 21): a lost record whose transaction
    aborted (its ABORT marker on any replica, in the lost replica's own log or ``.txnindex``)
    was never delivered to read_committed consumers and is never replayed, so it is no
    committed loss, whatever a high-watermark checkpoint or an acks=all acknowledgement says
    of its offset. Clears its ``committed`` flag, lowers its replica's ``committed_records``
    (COMMITTED_LOSS becomes DIVERGED_UNCOMMITTED when nothing committed is left) and adds a
    TXN_ABORTED_LOST finding per replica. Records of open or unknown transactions keep their
    flag: nothing proves they were not committed. Returns the records cleared."""
    from segtools.forensics.findings import Finding, rank_status

    cleared_total = 0
    for part in partitions:
        v = part.verdict
        by_replica: dict[tuple[int, str], list[Any]] = {}
        for x in part.lost:
            detail = details.get((v.topic, v.partition, x.broker, x.offset, x.leader_epoch))
            if detail is None:
                continue
            x.txn_state = detail[1]
            if detail[1] == "aborted":
                by_replica.setdefault((x.broker, x.log_dir), []).append(x)
        for (broker, log_dir), recs in sorted(by_replica.items()):
            cleared = [x for x in recs if x.committed]
            for x in cleared:
                x.committed = False
            cleared_total += len(cleared)
            rv = next((r for r in v.replicas if (r.broker, r.log_dir) == (broker, log_dir)), None)
            if rv is None:
                continue
            div: dict[str, Any] = rv.divergent or {}
            if cleared and div.get("committed_records"):
                div["committed_records"] = max(0, div["committed_records"] - len(cleared))
            if rv.status == "COMMITTED_LOSS" and not div.get("committed_records") and not any(
                    x.committed for x in part.lost if (x.broker, x.log_dir) == (broker, log_dir)):
                # what else the replica has (a corrupt batch, a truncation) keeps its rank
                rv.status = rank_status({f.code for f in rv.findings} | {"DIVERGED_UNCOMMITTED"})
            offsets = sorted(x.offset for x in recs)
            producers = sorted({x.producer_id for x in recs})
            part.extra_findings.append(Finding(
                "TXN_ABORTED_LOST", f"broker {broker}: {len(recs)} lost record(s) (offsets {offsets[0]}.."
                f"{offsets[-1]}, producer(s) {producers[:5]}) belong to aborted transactions: never delivered "
                "to read_committed consumers and never replayed, so no loss for consumers",
                offset=offsets[0]))
    return cleared_total
