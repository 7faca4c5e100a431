"""Stage 2 of compare, per partition: choose the reference lineage, find each replica's fork
point with Kafka's truncation rule, confirm it with (offset, epoch, CRC), classify with the
codes of FORENSICS.md Part B and attribute the cause.

Only batch headers are needed here; records are decoded later, and only inside the ranges
this stage marks as divergent (``DivergentRange``).
"""

from __future__ import annotations

import bisect
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from segtools.forensics.batch_columns import BatchColumns
from segtools.forensics.elections import PartitionHistory
from segtools.forensics.findings import Finding, rank_status
from segtools.forensics.model import BatchFacts, ReplicaFacts
from segtools.forensics.replica_view import ReplicaView, build_view
from segtools.forensics.truncation import fork_offset

SPECIAL_STATES = ("delete", "future", "stray")


@dataclass(slots=True)
class DivergentRange:
    """Offsets [first_offset, last_offset] of one replica that the reference does not hold
    (same offset and epoch). ``committed_bounds`` lists (base, last, bound) per run of adjacent
    batches: records of that run below ``bound`` were committed on the replica's lineage."""

    broker: int
    log_dir: str
    first_offset: int
    last_offset: int
    committed_bounds: list[tuple[int, int, int]] = field(default_factory=list)
    cause_if_committed: str | None = None    # the cause should stage 3 prove a record committed

    def is_committed(self, offset: int) -> bool:
        # bounds are in offset order (LMV batches below the fork, then the suffix)
        bounds = self.committed_bounds
        i = bisect.bisect_right(bounds, (offset, float("inf"), float("inf"))) - 1
        if i >= 0 and bounds[i][0] <= offset <= bounds[i][1]:
            return offset < bounds[i][2]
        return False


@dataclass(slots=True)
class ReplicaVerdict:
    broker: int
    log_dir: str
    topic_id: str | None
    state: str
    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None
    status: str
    fork_offset: int | None
    cause: str | None
    reconciled: bool
    is_reference: bool
    divergent: dict[str, int] | None
    findings: list[Finding]
    epochs: list[tuple[int, int]] = field(default_factory=list)   # (epoch, start offset) runs
    clean_shutdown: bool | None = None
    epoch_times: list[tuple[int, int, int]] = field(default_factory=list)  # (epoch, first, last ms)
    #: the election the cause comes from (docs/REPORT.md "Election classes")
    cause_election: dict[str, Any] | None = None
    #: .kafka_cleanshutdown and the metadata log on this broker's last stop (shutdowns.py)
    shutdown: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "broker": self.broker, "log_dir": self.log_dir,
            "log_start_offset": self.log_start_offset, "log_end_offset": self.log_end_offset,
            "high_watermark": self.high_watermark, "status": self.status,
            "fork_offset": self.fork_offset, "cause": self.cause,
            "divergent": self.divergent, "reference": self.is_reference,
            "reconciled": self.reconciled,
            "findings": [f.to_json() for f in self.findings],
            "epochs": [[e, start] for e, start in self.epochs],
            "clean_shutdown": self.clean_shutdown,
            "epoch_times": [list(t) for t in self.epoch_times],
        }
        if self.state:
            out["state"] = self.state
        if self.cause_election is not None:
            out["cause_election"] = self.cause_election
        if self.shutdown is not None:
            out["shutdown"] = self.shutdown
        if self.topic_id is not None:
            out["topic_id"] = self.topic_id
        return out


@dataclass(slots=True)
class PartitionVerdict:
    topic: str
    partition: int
    topic_id: str | None
    reference_broker: int | None
    replicas: list[ReplicaVerdict]
    divergent_ranges: list[DivergentRange]
    findings: list[Finding]
    reference_log_dir: str = ""
    reference_epochs: list[tuple[int, int]] = field(default_factory=list)   # the surviving lineage
    metadata_changes: list[dict[str, Any]] = field(default_factory=list)   # PartitionHistory.changes
    #: per-partition transactions on the reference (segtools.forensics.transactions)
    transactions: dict[str, Any] | None = None
    #: what the metadata log says of the partition at its end (None without one): the
    #: evidence segtools.forensics.answers needs to prove "nothing lost" (:func:`metadata_evidence`)
    evidence: dict[str, Any] | None = None

    @property
    def problem(self) -> bool:
        from segtools.forensics.findings import PROBLEM_STATUSES
        return any(r.status in PROBLEM_STATUSES for r in self.replicas)


# ---------------------------------------------------------------------------- reference


def _latest_epoch(v: ReplicaView) -> int:
    """Part B: max(last batch epoch, last checkpoint epoch). The checkpoint counts even past
    the log end: a leader records its epoch before writing, and a leader that lost its
    unflushed tail still led that epoch."""
    e = v.epoch_map.latest_epoch()
    ckpt = v.facts.epoch_checkpoint
    c = max((ep for ep, _ in ckpt), default=-1) if ckpt else -1
    return max(-1 if e is None else e, c)


def choose_reference(views: Sequence[ReplicaView], *, leader: int | None = None) -> ReplicaView | None:
    """The metadata leader's replica when known, else the highest latest epoch, then the
    largest log end offset, then the higher HW checkpoint, then the lowest broker id.
    Deleted, moving and stray copies are never the reference (S22)."""
    candidates = [v for v in views if v.facts.state not in SPECIAL_STATES]
    if not candidates:
        return None
    if leader is not None:
        led = [v for v in candidates if v.broker == leader]
        if led:
            return max(led, key=lambda v: (_latest_epoch(v), v.log_end_offset))
    # Same latest epoch starting at different offsets: the later start is the spliced copy
    # (S3, S6), so the earlier start wins before log end offsets are compared.
    # Starts below the highest log start are clipped to it: retention rewrites the first epoch
    # entry (S14, S15), which is no splice.
    floor = max(v.log_start_offset for v in candidates)
    return max(candidates, key=lambda v: (_latest_epoch(v), -max(_latest_start(v), floor), v.log_end_offset,
                                          -1 if v.high_watermark is None else v.high_watermark,
                                          -v.broker))


def _latest_start(v: ReplicaView) -> int:
    epoch = _latest_epoch(v)
    start = v.epoch_map.start_of(epoch)
    if start is None:
        start = next((s for e, s in v.facts.epoch_checkpoint or () if e == epoch), v.log_end_offset)
    return start


def _pick_topic_id(views: Sequence[ReplicaView], hint: str | None) -> str | None:
    ids = [v.facts.topic_id for v in views if v.facts.topic_id and v.facts.state not in SPECIAL_STATES]
    if hint:
        return hint
    if not ids:
        return None
    counts = Counter(ids)
    best = max(counts.values())
    tied = {i for i, c in counts.items() if c == best}
    if len(tied) == 1:
        return tied.pop()
    top = max((v for v in views if v.facts.topic_id in tied), key=lambda v: (_latest_epoch(v), v.log_end_offset))
    return top.facts.topic_id


# ---------------------------------------------------------------------------- comparison


def _covering(batches: Sequence[BatchFacts], offset: int) -> BatchFacts | None:
    lo, hi = 0, len(batches)
    while lo < hi:
        mid = (lo + hi) // 2
        if batches[mid].last_offset < offset:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(batches) and batches[lo].base_offset <= offset:
        return batches[lo]
    return None


def _ident(b: BatchFacts) -> tuple[str, int, int, int, int, int]:
    """One batch of one replica: where it is and what it holds."""
    return (b.segment, b.position, b.base_offset, b.last_offset, b.partition_leader_epoch, b.crc)


def _by_base(batches: Sequence[BatchFacts]) -> Callable[[int], BatchFacts | None]:
    """base offset -> the (last) batch of ``batches`` starting there. Columns with strictly
    increasing base offsets (the common case) are searched in place; anything else is indexed
    in a dict."""
    if isinstance(batches, BatchColumns):
        bases = batches.column("base_offset")
        arr = np.frombuffer(bases, dtype=np.int64)
        if arr.size < 2 or bool(np.all(arr[1:] > arr[:-1])):
            del arr

            def find(base: int) -> BatchFacts | None:
                i = bisect.bisect_left(bases, base)
                return batches[i] if i < len(bases) and bases[i] == base else None
            return find
        del arr
    index = {b.base_offset: b for b in batches}
    return index.get


def _compacted(view: ReplicaView, offset: int) -> bool:
    c = view.facts.cleaner_checkpoint
    return c is not None and offset < c


def mismatches_below(ref: ReplicaView, rep: ReplicaView, fork: int) -> list[BatchFacts]:
    """Replica batches below ``fork`` that the reference does not hold identically
    (base, last, epoch, crc), on the range both replicas hold. Compacted ranges (below either
    side's cleaner checkpoint) compare (base, last, epoch) only and tolerate missing batches."""
    if not ref.batches or not rep.batches:
        return []
    lo = max(ref.batches[0].base_offset, rep.batches[0].base_offset)
    ref_by_base = _by_base(ref.batches)
    bad: list[BatchFacts] = []
    for b in rep.batches:
        if b.base_offset >= fork:
            break
        if b.last_offset < lo or (ref.holes and ref.in_hole(b)):
            # (a salvage hole of the reference: what it held there is unknown, SALVAGE_HOLE)
            continue
        compacted = _compacted(ref, b.last_offset) or _compacted(rep, b.last_offset)
        m = ref_by_base(b.base_offset)
        if m is None:
            if compacted and _covering(ref.batches, b.base_offset) is None:
                continue
            if b.base_offset < lo and _covering(ref.batches, lo) is not None:
                # straddles the other side's log start: compare from the next batch on
                continue
            bad.append(b)
        elif (m.last_offset, m.partition_leader_epoch) != (b.last_offset, b.partition_leader_epoch):
            bad.append(b)
        elif m.crc != b.crc and not compacted:
            bad.append(b)
    return bad


def _merge_bounds(bounds: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Sorted (first, last, bound) per batch, with adjacent batches of the same bound joined:
    the verdict (sent to the Spark driver) stays small however many batches diverge, and
    ``DivergentRange.is_committed`` answers the same for every offset a batch holds."""
    out: list[tuple[int, int, int]] = []
    for first, last, bound in sorted(bounds):
        if out and out[-1][2] == bound and out[-1][1] + 1 == first:
            out[-1] = (out[-1][0], last, bound)
        else:
            out.append((first, last, bound))
    return out


def _records_in(b: BatchFacts, first: int) -> int:
    """Records of ``b`` at offsets >= first (uncompacted batches are dense)."""
    if b.base_offset >= first:
        return b.records_count
    return max(0, b.last_offset - first + 1)


class _Holders:
    """Which replicas hold a batch identically (by ``BatchFacts.key``), indexed on the first
    question: only a partition with divergent batches asks, so the index of every batch of
    every replica is not built (nor held through classification) for the others."""

    __slots__ = ("_index", "_views")

    def __init__(self, views: Sequence[ReplicaView]) -> None:
        self._views = views
        self._index: dict[tuple[int, int, int, int], list[ReplicaView]] | None = None

    def get(self, key: tuple[int, int, int, int], default: list[ReplicaView]) -> list[ReplicaView]:
        if self._index is None:
            index: dict[tuple[int, int, int, int], list[ReplicaView]] = defaultdict(list)
            for v in self._views:
                for b in v.batches:
                    index[b.key].append(v)
            self._index = index
        return self._index.get(key, default)


def classify_partition(replicas: Sequence[ReplicaFacts], *, history: PartitionHistory | None = None,
                       topic_id_hint: str | None = None) -> PartitionVerdict:
    """Stage 2 for one partition: every replica's status, fork offset, divergent ranges."""
    if not replicas:
        raise ValueError("classify_partition needs at least one replica")
    views = [build_view(r) for r in replicas]
    topic, partition = replicas[0].topic, replicas[0].partition
    topic_id = _pick_topic_id(views, topic_id_hint or (history.topic_id if history else None))
    comparable = [v for v in views if not (topic_id and v.facts.topic_id and v.facts.topic_id != topic_id)]
    leader = history.expected_leader if history is not None else None
    ref = choose_reference(comparable, leader=leader)
    part_findings: list[Finding] = []
    verdicts: list[ReplicaVerdict] = []
    ranges: list[DivergentRange] = []
    if ref is None:
        ref = choose_reference([v for v in views if v.facts.state not in SPECIAL_STATES] or views) or views[0]

    # Which replicas hold a given batch identically (for the committed bound, S7 / A.3).
    holders = _Holders(views)

    ref_latest = ref.epoch_map.latest_epoch()
    tails: list[tuple[ReplicaView, list[BatchFacts]]] = []
    for v in views:
        codes = {f.code for f in v.findings}
        findings = list(v.findings)
        fork: int | None = None
        cause: str | None = None
        cause_el: dict[str, Any] | None = None
        divergent: dict[str, int] | None = None
        reconciled = v is ref or (ref_latest is not None and v.epoch_map.has_epoch(ref_latest))
        if v.facts.state in SPECIAL_STATES:
            findings.append(Finding("SPECIAL_DIR", f"-{v.facts.state} directory, never the reference"))
        if v is ref:
            pass
        elif topic_id and v.facts.topic_id and v.facts.topic_id != topic_id:
            codes.add("NOT_COMPARABLE")
            findings.append(Finding("NOT_COMPARABLE", f"topic id {v.facts.topic_id} != {topic_id}"))
        elif (v.batches and ref.batches and
              (v.batches[0].base_offset >= ref.log_end_offset or
               ref.batches[0].base_offset >= v.log_end_offset)):
            codes.add("NOT_COMPARABLE")
            findings.append(Finding("NOT_COMPARABLE", f"offset ranges do not overlap: "
                                    f"[{v.log_start_offset}, {v.log_end_offset}) vs "
                                    f"[{ref.log_start_offset}, {ref.log_end_offset})"))
        else:
            t = fork_offset(ref.epoch_map, v.epoch_map)
            bad = mismatches_below(ref, v, t)
            if bad:
                from segtools.forensics.format_conversion import benign_conversions

                hw = max((x for x in (ref.high_watermark, v.high_watermark) if x is not None), default=None)
                bad, converted = benign_conversions(ref, v, bad, hw)
                for lo, hi in converted:
                    findings.append(Finding("BENIGN_FORMAT_CONVERTED", f"offsets {lo}..{hi}: batches differ from "
                                            f"reference broker {ref.broker} (old message format rewritten as v2 "
                                            "by the log cleaner, KIP-724) but the records are the same",
                                            offset=lo))
            # offsets of a salvage hole in the reference are not compared: cannot tell (SALVAGE_HOLE)
            suffix = [b for b in v.batches if b.last_offset >= t and not (ref.holes and ref.in_hole(b))]
            if bad:
                codes.add("LOG_MATCHING_VIOLATION")
                first_bad = bad[0]
                findings.append(Finding("LOG_MATCHING_VIOLATION", f"offset {first_bad.base_offset}: "
                                        f"epoch {first_bad.partition_leader_epoch} crc 0x{first_bad.crc:08x} "
                                        f"differs from reference broker {ref.broker} below fork {t}",
                                        offset=first_bad.base_offset, segment=first_bad.segment,
                                        position=first_bad.position))
            # by what the batch is, not by object: columns make a new object per read
            bad_ids = {_ident(b) for b in bad}
            div_batches = bad + [b for b in suffix if _ident(b) not in bad_ids]
            if div_batches:
                fork = min(t, bad[0].base_offset) if bad else t
                bounds = []
                records = committed = control = 0
                for b in div_batches:
                    first = b.base_offset if _ident(b) in bad_ids else max(b.base_offset, t)
                    hws = [x.high_watermark for x in holders.get(b.key, [v]) if x.high_watermark is not None]
                    # Below the fork a reconciled replica's HW checkpoint speaks for the lineage
                    # it follows now, not for its spliced batch (S6): committed is unknown there.
                    bound = -1 if _ident(b) in bad_ids else (max(hws) if hws else -1)
                    bounds.append((first, b.last_offset, bound))
                    n = _records_in(b, first)
                    if b.is_control:
                        control += n
                        continue
                    records += n
                    if bound > first:
                        committed += min(n, min(b.last_offset + 1, bound) - first)
                divergent = {"first_offset": fork, "last_offset": div_batches[-1].last_offset
                             if not suffix else v.log_end_offset - 1,
                             "records": records, "committed_records": committed}
                if control:
                    divergent["control_records"] = control
                tails.append((v, div_batches))
                ranges.append(DivergentRange(v.broker, v.facts.log_dir, fork,
                                             divergent["last_offset"], _merge_bounds(bounds)))
                if suffix:
                    codes.add("COMMITTED_LOSS" if committed else "DIVERGED_UNCOMMITTED")
                elif committed:
                    codes.add("COMMITTED_LOSS")
                first_div = div_batches[0]
                holder_brokers = {x.broker for x in holders.get(first_div.key, [v])}
                cause, cause_el = _cause_election(ref, v, fork, history, committed > 0, holder_brokers)
                ranges[-1].cause_if_committed = _cause(ref, v, fork, history, True, holder_brokers)
                if cause_el is None and history is not None:
                    # uncommitted divergence: still name the election that cut the tail off
                    cause_el = _cause_election(ref, v, fork, history, True, holder_brokers)[1]
            elif v.log_end_offset < ref.log_end_offset:
                codes.add("LAGGING_PREFIX")
            hw = v.high_watermark
            if ("TRUNCATED_BELOW_HW" in codes and not div_batches and hw is not None
                    and ref.log_end_offset >= hw):
                # The offsets this replica lost locally (or had not yet copied, for a copy of a
                # running broker) are held by the reference lineage: nothing is lost (S11a).
                codes.discard("TRUNCATED_BELOW_HW")
                findings = [Finding("HW_ABOVE_LEO_COVERED", f.detail + f"; reference broker "
                                    f"{ref.broker} holds them", offset=f.offset)
                            if f.code == "TRUNCATED_BELOW_HW" else f for f in findings]
        if v.holes:
            codes.add("SALVAGE_HOLE")
        status = rank_status(codes & {"LOG_MATCHING_VIOLATION", "COMMITTED_LOSS", "CRC_INVALID", "SALVAGE_HOLE",
                                      "NON_MONOTONIC_OFFSETS", "EPOCH_REGRESSION",
                                      "TRUNCATED_BELOW_HW", "DIVERGED_UNCOMMITTED",
                                      "NOT_COMPARABLE", "LAGGING_PREFIX"})
        verdicts.append(ReplicaVerdict(
            broker=v.broker, log_dir=v.facts.log_dir, topic_id=v.facts.topic_id,
            state=v.facts.state, log_start_offset=v.log_start_offset,
            log_end_offset=v.log_end_offset, high_watermark=v.high_watermark, status=status,
            fork_offset=fork, cause=cause, reconciled=reconciled, is_reference=v is ref,
            divergent=divergent, findings=findings, epochs=list(v.epoch_map.entries),
            clean_shutdown=v.facts.clean_shutdown, epoch_times=_epoch_times(v.batches),
            cause_election=cause_el,
            shutdown=_shutdown_info(v, history)))

    part_findings.extend(_restarted_from_empty(ref, views, verdicts))
    part_findings.extend(_benign_notes(views, ref))
    part_findings.extend(_crc_replication(views))
    part_findings.extend(_producer_duplicates(ref))
    part_findings.extend(_lost_txn_markers(ref, tails))
    part_findings.extend(_hw_frozen(history))
    part_findings.extend(_unclean_shutdown_findings(verdicts, history))
    from segtools.forensics.transactions import (
        marker_reader,
        partition_transactions,
        producers_from_transaction_log,
        transaction_findings,
    )

    has_txn = any(b.is_transactional for b in ref.batches)
    local_dirs = [v.facts.log_dir for v in views if v.facts.log_dir and os.path.isdir(v.facts.log_dir)]
    txns = partition_transactions(ref.batches, high_watermark=ref.high_watermark,
                                  log_end_offset=ref.log_end_offset, topic=topic, partition=partition,
                                  transaction_version=history.transaction_version if history else None,
                                  marker_type=marker_reader(ref.facts.log_dir, topic, partition,
                                                            ref.facts.partition_dir)
                                  if ref.facts.log_dir and os.path.isdir(ref.facts.log_dir) else None,
                                  producers=producers_from_transaction_log(local_dirs) if has_txn else None)
    part_findings.extend(transaction_findings(txns))
    return PartitionVerdict(topic=topic, partition=partition, topic_id=topic_id,
                            reference_broker=ref.broker, replicas=verdicts,
                            divergent_ranges=ranges, findings=part_findings,
                            reference_log_dir=ref.facts.log_dir,
                            reference_epochs=list(ref.epoch_map.entries),
                            metadata_changes=list(history.changes) if history is not None else [],
                            transactions=txns if txns.get("transactions") else None,
                            evidence=metadata_evidence(history))


def _overlaps(span: tuple[Any, Any], frozen: dict[str, Any]) -> bool:
    """Does a frozen-HW stretch of the metadata log (``from_offset``..``to_offset``, open
    when None) overlap an epoch's stretch [first change, next epoch's first change)?"""
    lo, hi = span
    f_lo, f_hi = frozen.get("from_offset"), frozen.get("to_offset")
    if f_lo is None:
        return True
    return (hi is None or f_lo < hi) and (f_hi is None or f_hi > lo)


def metadata_evidence(history: PartitionHistory | None) -> dict[str, Any] | None:
    """The metadata log's last word on a partition: leader, ISR, ELR, assignment, and every
    election after the first (any of them may have truncated records acknowledged with acks=1);
    and the epochs that ended with their leader the ISR alone (no HW freeze), every record of
    which was committed: appended while it was alone, or before and covered by the HW moving
    to its log end at the shrink."""
    if history is None:
        return None
    before: dict[int, list[int]] = {}        # epoch -> ISR and ELR just before its election
    prev: set[int] = set()
    for c in history.changes:
        e = c.get("leader_epoch")
        if e is not None and c.get("election") and int(e) not in before:
            before[int(e)] = sorted(prev)
        prev = set(c.get("isr") or []) | set(c.get("elr") or [])
    elections = [{"epoch": e, "leader": el.leader, "class": el.election_class or ("unclean" if el.unclean else "isr"),
                  "unclean": el.unclean, "previous_isr": before.get(e, [])}
                 for e, el in sorted(history.elections.items())]
    by_epoch: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for c in history.changes:
        if c.get("leader_epoch") is not None:
            by_epoch[int(c["leader_epoch"])].append(c)
    # the epoch's last word counts, not all of it: once the ISR shrinks to the leader alone its
    # HW moves to its log end, so what it had appended before the shrink is committed too
    # (issue 21: a sole-ISR leader's records called uncommitted because the ISR was wider at
    # the start of the epoch and the HW checkpoint lagged)
    sole = sorted(e for e, cs in by_epoch.items()
                  if cs and all(c.get("leader") is not None and c["leader"] >= 0 and not c.get("hw_frozen")
                                for c in cs)
                  and list(cs[-1].get("isr") or []) == [cs[-1]["leader"]]
                  and len({c["leader"] for c in cs}) == 1
                  # KAFKA-15583: below min.insync.replicas the HW stays put; the broker's static
                  # default is not in the log, so only a min ISR the log sets to 1 proves it
                  and history.known_min_isr.get(e) == 1)
    if history.hw_frozen:
        # an ISR alone under min.insync.replicas with ELR on: the leader's HW stayed put. Only
        # the epochs a frozen stretch of the metadata log overlaps lose the proof (an offline
        # stretch after the epoch ended says nothing of it)
        starts = sorted((cs[0].get("offset"), e) for e, cs in by_epoch.items())
        if any(o is None for o, _e in starts):
            sole = []
        else:
            span = {e: (o, starts[i + 1][0] if i + 1 < len(starts) else None) for i, (o, e) in enumerate(starts)}
            sole = [e for e in sole if not any(_overlaps(span[e], f) for f in history.hw_frozen)]
    return {"leader": history.leader, "last_leader": history.last_leader, "leader_epoch": history.leader_epoch,
            "isr": list(history.isr), "elr": list(history.elr), "last_known_elr": list(history.last_known_elr),
            "replicas": list(history.replicas), "elections": elections, "sole_isr_epochs": sole}


def _epoch_times(batches: Sequence[BatchFacts]) -> list[tuple[int, int, int]]:
    """Per leader epoch, in log order: the smallest and largest batch MaxTimestamp (ms) of its
    batches (negative timestamps, i.e. none, skipped). Producer clocks under CreateTime."""
    spans: dict[int, list[int]] = {}
    for b in batches:
        if b.max_timestamp < 0 or b.partition_leader_epoch < 0:
            continue
        span = spans.get(b.partition_leader_epoch)
        if span is None:
            spans[b.partition_leader_epoch] = [b.max_timestamp, b.max_timestamp]
        else:
            span[0], span[1] = min(span[0], b.max_timestamp), max(span[1], b.max_timestamp)
    return [(e, lo, hi) for e, (lo, hi) in spans.items()]


def _cause(ref: ReplicaView, rep: ReplicaView, fork: int, history: PartitionHistory | None,
           committed: bool, holders: set[int]) -> str | None:
    return _cause_election(ref, rep, fork, history, committed, holders)[0]


def _election_json(el: Any, history: PartitionHistory | None = None) -> dict[str, Any]:
    cls = el.election_class or ("unclean" if el.unclean else "isr")
    out = {"epoch": el.epoch, "leader": el.leader, "class": cls, "isr": list(el.isr)}
    # the new leader came back from an unclean stop before it was elected: what it lacks
    # may be what that stop lost (KIP-966 unclean restarts, segtools.forensics.shutdowns)
    if history is not None and el.offset is not None and any(
            e["broker"] == el.leader and e.get("offset") is not None and e["offset"] <= el.offset
            for e in history.unclean_shutdowns):
        out["leader_restarted_uncleanly"] = True
    return out


def _cause_election(ref: ReplicaView, rep: ReplicaView, fork: int, history: PartitionHistory | None,
                    committed: bool, holders: set[int]) -> tuple[str | None, dict[str, Any] | None]:
    """FORENSICS.md D.6. With the metadata log, walk the elections after the epoch of the
    divergent records: the first one whose leader does not hold them decides -- unclean ->
    UNCLEAN_ELECTION; clean with committed records gone -> LOCAL_LOSS_REELECTED when the
    reference shows a local loss (S11b), else PROTOCOL_VIOLATION (S2, S13: every election was
    clean and no local loss is visible). Without metadata only local-loss evidence on the
    reference can be used; otherwise the cause is undetermined (None)."""
    hw = ref.high_watermark
    # The reference once held offsets it no longer has: its HW checkpoint, or an epoch it
    # recorded in its leader-epoch-checkpoint, lies beyond its log end (S11b, KIP-966).
    claimed = max((start for _, start in ref.facts.epoch_checkpoint or ()), default=-1)
    local_loss = (hw is not None and hw > ref.log_end_offset) or claimed > ref.log_end_offset
    fork_epoch = rep.epoch_map.epoch_at(fork)
    if history is not None:
        floor = -1 if fork_epoch is None else fork_epoch
        for epoch in sorted(history.elections):
            el = history.elections[epoch]
            # A leader whose epoch the replica holds batches of had the replica's earlier
            # records then (the replica copied its log from that leader).
            if epoch <= floor or el.leader < 0 or el.leader in holders or rep.epoch_map.has_epoch(epoch):
                continue
            # KIP-966: an ELR election is clean, a last-known-leader election unclean
            # (PartitionChangeBuilder.electAnyLeader); both are named in cause_election
            if el.unclean:
                return "UNCLEAN_ELECTION", _election_json(el, history)
            if committed:
                return ("LOCAL_LOSS_REELECTED" if local_loss else "PROTOCOL_VIOLATION"), \
                    _election_json(el, history)
            return None, None
    if committed and local_loss:
        return "LOCAL_LOSS_REELECTED", None
    if committed and history is not None:
        return "PROTOCOL_VIOLATION", None
    return None, None


def _hw_frozen(history: PartitionHistory | None) -> list[Finding]:
    """KIP-966: with ELR on, the leader keeps its high watermark while the ISR is below
    min.insync.replicas (core/src/main/scala/kafka/cluster/Partition.scala)."""
    if history is None:
        return []
    out = []
    for span in history.hw_frozen:
        end = ("the end of the metadata log" if span["open"] else
               f"metadata offset {span['to_offset']} ({_iso(span['to_timestamp_ms'])})")
        out.append(Finding("HW_FROZEN_UNDER_MIN_ISR",
                           f"ISR {span['isr']} below min.insync.replicas {span['min_isr']} from "
                           f"metadata offset {span['from_offset']} ({_iso(span['from_timestamp_ms'])}) "
                           f"to {end}: the high watermark did not advance (ELR, KIP-966)"))
    return out


def _iso(ms: int | None) -> str:
    if ms is None:
        return "time unknown"
    import datetime

    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).isoformat(timespec="milliseconds")


def _shutdown_info(v: ReplicaView, history: PartitionHistory | None) -> dict[str, Any] | None:
    from segtools.forensics.shutdowns import last_stop

    info = last_stop(v.facts.log_dir, v.facts.clean_shutdown, v.broker,
                     history.broker_events if history is not None else None)
    restarts = [e for e in (history.unclean_shutdowns if history is not None else []) if e["broker"] == v.broker]
    if restarts:
        info["unclean_restarts"] = [{k: e[k] for k in ("broker_epoch", "previous_broker_epoch", "detected_by",
                                                        "offset", "timestamp_ms") if k in e} for e in restarts]
    if not info["clean_shutdown_file"] and not restarts and history is None:
        return None if not v.facts.log_dir else info
    return info


def _unclean_shutdown_findings(verdicts: Sequence[ReplicaVerdict],
                               history: PartitionHistory | None) -> list[Finding]:
    if history is None:
        return []
    brokers = {rv.broker for rv in verdicts}
    out = []
    for e in history.unclean_shutdowns:
        if e["broker"] not in brokers:
            continue
        out.append(Finding("UNCLEAN_SHUTDOWN", f"broker {e['broker']} restarted after an unclean stop "
                           f"(broker epoch {e['previous_broker_epoch']} -> {e['broker_epoch']}): the "
                           f"controller dropped it from ISR/ELR when it registered again; metadata "
                           f"offset {e.get('offset')}"))
    for rv in verdicts:
        sd = rv.shutdown or {}
        if sd.get("last_stop") == "unclean":
            out.append(Finding("UNCLEAN_SHUTDOWN", f"broker {rv.broker} is down (fenced at the end of the "
                               f"metadata log, broker epoch {sd.get('last_registration_epoch')}) and its "
                               f"log dir has no .kafka_cleanshutdown: it stopped uncleanly"))
    return out


def _restarted_from_empty(ref: ReplicaView, views: Sequence[ReplicaView],
                          verdicts: Sequence[ReplicaVerdict]) -> list[Finding]:
    """S12 (KAFKA-14139): the reference's log starts over at its first offset under a high
    epoch while other replicas hold lower epochs at the same offsets -- an empty disk became
    leader and everyone else will truncate to it."""
    if not ref.batches or not ref.epoch_map.entries:
        return []
    first_epoch, first_start = ref.epoch_map.entries[0]
    out = []
    for rv, v in zip(verdicts, views):
        if v is ref or rv.fork_offset is None or rv.fork_offset > first_start:
            continue
        theirs = v.epoch_map.epoch_at(first_start)
        if theirs is not None and theirs < first_epoch and v.log_end_offset > first_start:
            out.append(Finding("LOG_RESTARTED_FROM_EMPTY", f"reference broker {ref.broker} starts "
                               f"again at offset {first_start} in epoch {first_epoch}; broker "
                               f"{v.broker} holds epoch {theirs} there (empty disk elected?)",
                               offset=first_start))
    return out


def _benign_notes(views: Sequence[ReplicaView], ref: ReplicaView) -> list[Finding]:
    out: list[Finding] = []
    starts = {v.broker: v.log_start_offset for v in views}
    if len(set(starts.values())) > 1:
        out.append(Finding("BENIGN_LOG_START_DIFFERS",
                           ", ".join(f"{b} {s}" for b, s in sorted(starts.items()))))
    layouts = {tuple(sorted({b.segment for b in v.batches})) for v in views if v.batches}
    if len(layouts) > 1:
        out.append(Finding("BENIGN_SEGMENT_LAYOUT_DIFFERS", "segment files differ across replicas"))
    epochs = ref.epoch_map.epochs
    if any(b - a > 1 for a, b in zip(epochs, epochs[1:])):
        out.append(Finding("BENIGN_EPOCH_GAPS", " ".join(str(e) for e in epochs)))
    return out


def _crc_replication(views: Sequence[ReplicaView]) -> list[Finding]:
    """S20: a CRC failure on every copy of a batch is 'replicated', else 'local'."""
    out: list[Finding] = []
    if all(b.crc_valid for v in views for b in v.batches):
        return out   # the common case, without a dict entry per batch
    bad: dict[tuple[int, int, int, int], list[int]] = defaultdict(list)
    present: dict[tuple[int, int, int, int], list[int]] = defaultdict(list)
    for v in views:
        for b in v.batches:
            present[b.key].append(v.broker)
            if not b.crc_valid:
                bad[b.key].append(v.broker)
    for key, brokers in bad.items():
        kind = "replicated" if len(brokers) == len(present[key]) and len(brokers) > 1 else "local"
        out.append(Finding("CRC_INVALID", f"({kind}) batch [{key[0]}..{key[1]}] epoch {key[2]} "
                           f"on brokers {sorted(brokers)}", offset=key[0]))
    return out


def _lost_txn_markers(ref: ReplicaView, tails: Sequence[tuple[ReplicaView, list[BatchFacts]]]) -> list[Finding]:
    """S19: transactional data in the reference with no later marker from that producer,
    while a divergent tail holds the marker (read_committed consumers hang at the LSO).
    Paired by producer id as the leader does (ProducerAppendInfo.appendEndTxnMarker): a v2
    marker carries the data's epoch plus one (KIP-890), a v1 fencing abort a bumped one too."""
    open_txn: dict[int, tuple[int, int]] = {}
    for b in ref.batches:
        if b.producer_id < 0:
            continue
        if b.is_control:
            open_txn.pop(b.producer_id, None)
        elif b.is_transactional and b.producer_id not in open_txn:
            open_txn[b.producer_id] = (b.producer_epoch, b.base_offset)
    out = []
    for pid, (pepoch, first) in sorted(open_txn.items(), key=lambda x: x[1][1]):
        holders = sorted({v.broker for v, batches in tails
                          if any(b.is_control and b.producer_id == pid and b.base_offset > first for b in batches)})
        if holders:
            out.append(Finding("TXN_MARKER_LOST", f"producer {pid} epoch {pepoch}: transaction from "
                               f"offset {first} has no marker in the reference; marker only on "
                               f"broker(s) {holders}", offset=first))
    return out


def _producer_duplicates(ref: ReplicaView) -> list[Finding]:
    seen: dict[tuple[int, int, int, int], int] = {}
    out: list[Finding] = []
    for b in ref.batches:
        if b.producer_id < 0 or b.base_sequence < 0 or b.is_control:
            continue
        k = (b.producer_id, b.producer_epoch, b.base_sequence, b.last_offset - b.base_offset)
        if k in seen:
            out.append(Finding("DUPLICATE", f"producer {k[0]} epoch {k[1]} seq {k[2]} at offsets "
                               f"{seen[k]} and {b.base_offset}", offset=b.base_offset))
        else:
            seen[k] = b.base_offset
    return out
