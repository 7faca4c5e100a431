"""Stage 3 of compare: the records inside divergent ranges, matched against the reference.

A divergent record is lost from the surviving lineage when the reference does not hold the
same offset with the same leader epoch (the definition truth.json uses). It is additionally
marked ``relocated_to`` when the reference holds it again elsewhere: by producer id, epoch
and sequence for idempotent producers, by content (key, value, headers) otherwise, as in
FORENSICS.md S10. Acks come from the producer's own log (``acks.jsonl``), never from disk.
"""

from __future__ import annotations

import base64
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from segtools.errors import InputError
from segtools.forensics.classify import DivergentRange
from segtools.forensics.findings import Finding
from segtools.forensics.model import RecordFacts


def text_or_base64(data: bytes | None) -> str | dict[str, str] | None:
    """CONTRACT.md section 4: UTF-8 text when it decodes, else {"base64": ...}."""
    if data is None:
        return None
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(bytes(data)).decode("ascii")}


@dataclass(slots=True)
class LostRecord:
    broker: int
    offset: int
    leader_epoch: int
    key: bytes | None
    value: bytes | None
    committed: bool
    acked: bool | None
    relocated_to: int | None = None
    producer_id: int = -1
    sequence: int = -1
    log_dir: str = ""
    #: the state of its transaction once the report read the markers (lost_details.py):
    #: "aborted" records are no loss for consumers; None until then
    txn_state: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "broker": self.broker, "offset": self.offset, "leader_epoch": self.leader_epoch,
            "key": text_or_base64(self.key), "value": text_or_base64(self.value),
            "committed": self.committed, "acked": self.acked,
        }
        if self.relocated_to is not None:
            out["relocated_to"] = self.relocated_to
        if self.producer_id >= 0:
            out["producer_id"], out["sequence"] = self.producer_id, self.sequence
        return out


class PartitionAcks(dict[tuple[int, int], bool]):
    """One partition's (offset, epoch) -> acknowledged, carrying the offsets acknowledged
    without an epoch (``no_epoch``: offset -> committed) so a lost record at such an offset is
    marked acked unknown (None), not "not acknowledged"."""

    def __init__(self, acked: Mapping[tuple[int, int], bool], no_epoch: Mapping[int, bool]) -> None:
        super().__init__(acked)
        self.no_epoch = dict(no_epoch)

    def __reduce__(self) -> Any:   # pickled to Spark's workers with its no_epoch
        return (PartitionAcks, (dict(self), self.no_epoch))


def acked_flag(acks: Mapping[tuple[int, int], bool], offset: int, epoch: int) -> bool | None:
    """Whether the record at (offset, epoch) was acknowledged: None when its offset was
    acknowledged in an unknown epoch (it may be this record or one it replaced)."""
    if acks.get((offset, epoch), False):
        return True
    return None if offset in getattr(acks, "no_epoch", {}) else False


class AckIndex:
    """Producer-side acknowledgements (CONTRACT.md section 3; the formats in forensics/acks.py).
    Entries with a leader epoch identify a record; entries without one only an offset."""

    def __init__(self, entries: Iterable[Mapping[str, Any]] = ()) -> None:
        # per (topic, partition): (offset, epoch) -> ok, and the (offset, epoch) acked under acks=all
        self._acked: dict[tuple[str, int], dict[tuple[int, int], bool]] = {}
        self._acked_all: dict[tuple[str, int], set[tuple[int, int]]] = {}
        # per (topic, partition): offset -> committed (acks=all, or read by a consumer), epoch unknown
        self._no_epoch: dict[tuple[str, int], dict[int, bool]] = {}
        for e in entries:
            if e.get("offset") is None or int(e["offset"]) < 0:
                continue
            tp = (str(e["topic"]), int(e["partition"]))
            if e.get("leader_epoch") is None or int(e["leader_epoch"]) < 0:
                if e.get("ok"):
                    seen = self._no_epoch.setdefault(tp, {})
                    o = int(e["offset"])
                    seen[o] = seen.get(o, False) or str(e.get("acks")) in ("all", "-1", "consumed")
                continue
            k = (int(e["offset"]), int(e["leader_epoch"]))
            acked = self._acked.setdefault(tp, {})
            acked[k] = acked.get(k, False) or bool(e.get("ok"))
            if e.get("ok") and str(e.get("acks")) in ("all", "-1", "consumed"):
                self._acked_all.setdefault(tp, set()).add(k)

    def committed_for_partition(self, topic: str, partition: int) -> set[tuple[int, int]]:
        """(offset, epoch) acknowledged under acks=all: the leader acks those only once the HW
        passed them, so they were committed whatever the (lagging) HW checkpoints say."""
        return set(self._acked_all.get((topic, partition), ()))

    def without_epoch(self, topic: str, partition: int) -> dict[int, bool]:
        """Acknowledged offsets whose leader epoch the source did not give -> committed."""
        return dict(self._no_epoch.get((topic, partition), {}))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> AckIndex:
        """``path``: NDJSON, CSV, kcat -J output, or ``console-consumer:TOPIC:FILE``."""
        from segtools.forensics.acks import read_acks

        entries = read_acks(path)
        try:
            return cls(entries)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"{os.fspath(path)}: malformed ack entry ({exc})") from None

    def for_partition(self, topic: str, partition: int) -> dict[tuple[int, int], bool]:
        return PartitionAcks(self._acked.get((topic, partition), {}), self._no_epoch.get((topic, partition), {}))

    def partitions(self) -> list[tuple[str, int]]:
        """Every (topic, partition) acks.jsonl names with an offset."""
        return sorted(set(self._acked) | set(self._no_epoch))

    def acked(self, topic: str, partition: int, offset: int, epoch: int) -> bool:
        return self._acked.get((topic, partition), {}).get((offset, epoch), False)


def lost_records(ranges: Sequence[DivergentRange], divergent: Mapping[tuple[int, str], Sequence[RecordFacts]],
                 reference: Sequence[RecordFacts],
                 acks: Mapping[tuple[int, int], bool] | None,
                 committed_by_ack: set[tuple[int, int]] | frozenset = frozenset(),
                 committed_epochs: Iterable[int] = (),
                 ) -> tuple[list[LostRecord], list[Finding]]:
    """Lost records per divergent range (keyed by (broker, log_dir)), with relocation and
    committed/acked flags; plus RELOCATED / DUPLICATE findings. ``committed_epochs``: leader
    epochs whose leader was the ISR alone throughout (the metadata log): every record appended
    in them was committed at once, whatever the lagging HW checkpoints say."""
    sole = frozenset(committed_epochs)
    at = {(r.offset, r.leader_epoch) for r in reference}
    by_producer: dict[tuple[int, int, int], int] = {}
    by_content: dict[tuple[Any, ...], list[int]] = defaultdict(list)
    for r in reference:
        if r.is_control:
            continue
        if r.producer_id >= 0 and r.sequence >= 0:
            by_producer[(r.producer_id, r.producer_epoch, r.sequence)] = r.offset
        by_content[r.content].append(r.offset)
    out: list[LostRecord] = []
    findings: list[Finding] = []
    seen_dups: set[tuple[Any, ...]] = set()
    for rng in ranges:
        moved = 0
        for rec in divergent.get((rng.broker, rng.log_dir), ()):
            if rec.is_control or not (rng.first_offset <= rec.offset <= rng.last_offset):
                continue
            if (rec.offset, rec.leader_epoch) in at:
                continue
            relocated = None
            if rec.producer_id >= 0 and rec.sequence >= 0:
                relocated = by_producer.get((rec.producer_id, rec.producer_epoch, rec.sequence))
            else:
                later = [o for o in by_content.get(rec.content, ()) if o != rec.offset]
                relocated = later[0] if len(later) == 1 else None
            moved += relocated is not None
            out.append(LostRecord(
                broker=rng.broker, log_dir=rng.log_dir, offset=rec.offset, leader_epoch=rec.leader_epoch,
                key=rec.key, value=rec.value,
                committed=(rng.is_committed(rec.offset) or (rec.offset, rec.leader_epoch) in committed_by_ack
                           or rec.leader_epoch in sole),
                acked=None if acks is None else acked_flag(acks, rec.offset, rec.leader_epoch),
                relocated_to=relocated, producer_id=rec.producer_id, sequence=rec.sequence))
        if moved:
            findings.append(Finding("RELOCATED", f"broker {rng.broker}: {moved} divergent record(s) "
                                    "found again in the reference lineage", offset=rng.first_offset))
        # S10 variant: a non-idempotent retry whose content now sits twice in the lineage
        for rec in divergent.get((rng.broker, rng.log_dir), ()):
            if rec.producer_id >= 0 or rec.is_control or (rec.key is None and rec.value is None):
                continue
            again = sorted(set(by_content.get(rec.content, ())))
            if len(again) > 1 and (rec.content, tuple(again)) not in seen_dups:
                seen_dups.add((rec.content, tuple(again)))
                findings.append(Finding("DUPLICATE", f"content of broker {rng.broker}'s divergent "
                                        f"offset {rec.offset} appears at reference offsets {again}",
                                        offset=again[0]))
    out.sort(key=lambda x: (x.offset, x.broker, x.leader_epoch))
    return out, findings


def apply_lost_evidence(verdict: Any, lost: Sequence[LostRecord]) -> None:
    """Fold stage 3's evidence back into the stage 2 verdict: records proven committed by
    acks=all acknowledgements raise ``committed_records`` and turn DIVERGED_UNCOMMITTED
    into COMMITTED_LOSS (with the cause stage 2 computed for that case)."""
    from segtools.forensics.findings import rank_status

    for rv in verdict.replicas:
        if not rv.divergent:
            continue
        mine = [x for x in lost if x.broker == rv.broker and x.log_dir == rv.log_dir]
        committed = sum(1 for x in mine if x.committed)
        if committed <= rv.divergent["committed_records"]:
            continue
        rv.divergent["committed_records"] = committed
        if rv.status == "DIVERGED_UNCOMMITTED":
            rv.status = rank_status({"COMMITTED_LOSS"})
            rng = next((r for r in verdict.divergent_ranges
                        if (r.broker, r.log_dir) == (rv.broker, rv.log_dir)), None)
            rv.cause = rng.cause_if_committed if rng is not None else rv.cause


class ReferenceFilter:
    """Which reference records stage 3 needs: those at a divergent offset (to tell "held at
    the same offset and epoch"), and those that could be a relocated or duplicated copy of a
    divergent record (same producer id/epoch/sequence, or same content). Everything else in
    the reference range is dropped where it is read, so a long reference range never has to
    sit in one place."""

    def __init__(self, divergent: Iterable[RecordFacts]) -> None:
        self.offsets: set[int] = set()
        self.producers: set[tuple[int, int, int]] = set()
        self.contents: set[bytes] = set()
        for r in divergent:
            self.offsets.add(r.offset)
            if r.producer_id >= 0 and r.sequence >= 0:
                self.producers.add((r.producer_id, r.producer_epoch, r.sequence))
            self.contents.add(content_digest(r))

    def keep(self, r: RecordFacts) -> bool:
        return (r.offset in self.offsets
                or (r.producer_id, r.producer_epoch, r.sequence) in self.producers
                or content_digest(r) in self.contents)


def content_digest(r: RecordFacts) -> bytes:
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    for part in (r.key, r.value):
        h.update(b"\x00" if part is None else b"\x01" + len(part).to_bytes(4, "big") + part)
    for k, v in r.headers:
        kb = k.encode("utf-8", "surrogatepass")
        h.update(len(kb).to_bytes(4, "big") + kb)
        h.update(b"\x00" if v is None else b"\x01" + len(v).to_bytes(4, "big") + v)
    return h.digest()


@dataclass(slots=True)
class LostOffsets:
    """Committed offsets ``[first_offset, end_offset)`` of one partition that no given replica
    holds: a high-watermark checkpoint vouches for them, yet every replica's log ends before.
    No copy of the records remains, so they are counted as offsets, not records."""

    first_offset: int
    end_offset: int
    high_watermark_broker: int       # the replica whose checkpoint holds the highest HW
    acked: int | None = None         # offsets in the range a producer saw acknowledged

    @property
    def count(self) -> int:
        return self.end_offset - self.first_offset

    def finding(self) -> Finding:
        acked = "" if self.acked is None else f", {self.acked} acknowledged to producers"
        return Finding("COMMITTED_OFFSETS_LOST",
                       f"offsets {self.first_offset}..{self.end_offset - 1} ({self.count}) are below the "
                       f"high-watermark checkpoint {self.end_offset} of broker {self.high_watermark_broker} "
                       f"but on no replica: committed records with no copy left{acked}",
                       offset=self.first_offset)


def committed_offsets_lost(verdict: Any, acks: AckIndex | None = None) -> LostOffsets | None:
    """The committed offsets of a partition that survive on no replica (None when every
    committed offset is still held somewhere). Replicas of another topic id do not count."""
    same = [r for r in verdict.replicas
            if not (verdict.topic_id and r.topic_id and r.topic_id != verdict.topic_id)]
    hws = [(r.high_watermark, r.broker) for r in same if r.high_watermark is not None]
    if not hws:
        return None
    hw, hw_broker = max(hws)
    held_to = max(r.log_end_offset for r in same)
    if hw <= held_to:
        return None
    acked = None
    if acks is not None:
        acked = len({o for (o, _e), ok in acks.for_partition(verdict.topic, verdict.partition).items()
                     if ok and held_to <= o < hw})
    return LostOffsets(held_to, hw, hw_broker, acked)


@dataclass(slots=True)
class AckedLoss:
    """An offset a producer saw acknowledged (acks.jsonl: offset and leader epoch) that no
    given replica's lineage holds: every replica holding that offset holds it in another
    epoch, or ends before it. No copy of the record is left on the given disks, so it is
    counted from the acks alone."""

    offset: int
    leader_epoch: int | None   # None: the ack source gave no epoch (no replica holds the offset)
    committed: bool            # acks=all, or the leader of its epoch was the ISR alone

    def to_json(self) -> dict[str, Any]:
        return {"offset": self.offset, "leader_epoch": self.leader_epoch, "committed": self.committed}


@dataclass(slots=True)
class AckReconciliation:
    """acks.jsonl checked against the lineages of one partition's replicas."""

    lost: list[AckedLoss]
    #: acknowledged offsets below a replica's log start that no replica holds: deleted by
    #: retention or DeleteRecords, or lost before; the segments that would tell are gone
    below_log_start: list[tuple[int, int]]
    checked: int               # acknowledged (offset, epoch) pairs compared
    #: acknowledged offsets without a leader epoch that a replica holds: whether it holds the
    #: acknowledged record or another one written there after an unclean election needs the epoch
    epoch_unknown: list[int] = field(default_factory=list)

    def finding(self) -> Finding | None:
        if not self.lost:
            return None
        first = self.lost[0]
        committed = sum(x.committed for x in self.lost)
        shown = ", ".join(f"{x.offset} (epoch {'unknown' if x.leader_epoch is None else x.leader_epoch})"
                          for x in self.lost[:5])
        more = f" and {len(self.lost) - 5} more" if len(self.lost) > 5 else ""
        return Finding("ACKED_OFFSETS_LOST",
                       f"{len(self.lost)} offset(s) acknowledged to producers are held by no replica in "
                       f"their leader epoch ({committed} committed): {shown}{more}; no copy left on the "
                       "given log dirs", offset=first.offset)


def _epoch_at(epochs: Sequence[Sequence[int]], offset: int) -> int | None:
    import bisect

    starts = [int(s) for _e, s in epochs]
    i = bisect.bisect_right(starts, offset)
    return int(epochs[i - 1][0]) if i > 0 else None


def reconcile_acks(verdict: Any, acks: AckIndex | None) -> AckReconciliation | None:
    """Every offset acks.jsonl shows acknowledged for this partition, checked against each
    replica's lineage (its leader-epoch runs between log start and log end): held when some
    replica holds that offset in that epoch (on the surviving lineage, or on a divergent
    suffix, where stage 3 reports it as a lost record). Otherwise lost, unless some replica's
    log starts above it (its segments are gone: cannot tell). None without acks."""
    if acks is None:
        return None
    entries = [(o, e) for (o, e), ok in acks.for_partition(verdict.topic, verdict.partition).items() if ok]
    same = [r for r in verdict.replicas if r.state not in ("delete", "future", "stray")
            and not (verdict.topic_id and r.topic_id and r.topic_id != verdict.topic_id)]
    committed_all = acks.committed_for_partition(verdict.topic, verdict.partition)
    sole = set((verdict.evidence or {}).get("sole_isr_epochs") or ())
    lost: list[AckedLoss] = []
    below: list[tuple[int, int]] = []
    for o, e in sorted(entries):
        # epoch -1 (no epoch known): held when any replica holds the offset at all
        if any(r.log_start_offset <= o < r.log_end_offset and (e < 0 or _epoch_at(r.epochs, o) == e) for r in same):
            continue
        if any(o < r.log_start_offset for r in same):
            below.append((o, e))
            continue
        lost.append(AckedLoss(o, e, (o, e) in committed_all or e in sole))
    # no epoch: held proves nothing (an unclean election rewrites the same offsets), but an
    # offset no replica holds at all is lost on every lineage
    unknown: list[int] = []
    no_epoch = acks.without_epoch(verdict.topic, verdict.partition) if hasattr(acks, "without_epoch") else {}
    for o, committed in sorted(no_epoch.items()):
        if any(r.log_start_offset <= o < r.log_end_offset for r in same):
            unknown.append(o)
        elif any(o < r.log_start_offset for r in same):
            below.append((o, -1))
        else:
            lost.append(AckedLoss(o, None, committed))
    lost.sort(key=lambda x: x.offset)
    return AckReconciliation(lost, below, len(entries) + len(no_epoch), unknown)
