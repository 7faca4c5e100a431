"""One replica's log as Kafka would load it: torn tail cut off, offsets derived, and the
checks that need only this replica (FORENSICS.md Part D.1, S4, S5, S17, S20)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from segtools.forensics.epochs import EpochMap, build_epoch_map
from segtools.forensics.findings import Finding
from segtools.forensics.model import BatchFacts, ReplicaFacts
from segtools.formats.names import stem_offset


@dataclass(frozen=True, slots=True)
class SalvageHole:
    """Offsets ``[first, last]`` (``last`` None: to the end of the log and past it) whose
    records ``segtools salvage`` could not copy into this rebuilt replica: what this replica
    held there is unknown, so it neither holds nor lacks them (docs/REPORT.md SALVAGE_HOLE)."""

    first: int
    last: int | None
    segment: str | None
    detail: str

    def overlaps(self, first: int, last: int) -> bool:
        return last >= self.first and (self.last is None or first <= self.last)


@dataclass(slots=True)
class ReplicaView:
    """Derived facts of one replica: the batches of its lineage and its epoch map."""

    facts: ReplicaFacts
    batches: Sequence[BatchFacts]      # lineage batches (torn tail removed)
    log_start_offset: int
    log_end_offset: int
    epoch_map: EpochMap
    findings: list[Finding] = field(default_factory=list)
    holes: list[SalvageHole] = field(default_factory=list)

    def in_hole(self, b: BatchFacts) -> bool:
        """Does batch ``b`` (of another replica) lie in offsets this replica cannot speak for?"""
        return any(h.overlaps(b.base_offset, b.last_offset) for h in self.holes)

    @property
    def broker(self) -> int:
        return self.facts.broker

    @property
    def high_watermark(self) -> int | None:
        return self.facts.high_watermark


def _torn_tail_start(facts: ReplicaFacts) -> int:
    """Index of the first batch that Kafka's crash recovery would cut: trailing CRC-invalid
    batches at or after the recovery point, when the broker did not shut down cleanly."""
    batches = facts.batches
    cut = len(batches)
    if facts.clean_shutdown or not batches:
        return cut
    last_segment = batches[-1].segment
    recovery = facts.recovery_point if facts.recovery_point is not None else 0
    while cut > 0:
        b = batches[cut - 1]
        if b.crc_valid or b.segment != last_segment or b.last_offset < recovery:
            break
        cut -= 1
    return cut


def _int_or_none(x: object) -> int | None:
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def salvage_holes_of(facts: ReplicaFacts) -> list[SalvageHole]:
    """The holes the ``segtools-salvage.json`` marker in this replica's partition dir lists, as
    offset ranges: after the kept batch before the hole, up to the kept batch after it (or
    from the segment's base offset; up to the next segment's first batch, or without end)."""
    from segtools.files.salvage_marker import partition_holes

    raw = partition_holes(facts.partition_dir)
    if not raw:
        return []
    out = []
    for segment, h in raw:
        base = stem_offset(segment) if segment else None
        after, before = _int_or_none(h.get("after_offset")), _int_or_none(h.get("before_offset"))
        first = after + 1 if after is not None else (base if base is not None else 0)
        if before is not None:
            last: int | None = before - 1
        else:
            later = [b.base_offset for b in facts.batches
                     if base is not None and (stem_offset(b.segment) or -1) > base]
            last = min(later) - 1 if later else None
        start, end = h.get("original_start"), h.get("original_end")
        where = (f"bytes {start}-{end} of the original {segment}" if start is not None
                 else str(h.get("detail") or "extent unknown"))
        span = (f"offsets {first} and above" if last is None else f"offsets {first}..{last}" if last >= first
                else f"between offsets {last} and {first}")
        out.append(SalvageHole(first, last, segment, f"{span}: {where} ({h.get('reason')}) were not "
                               "copied by segtools salvage; what this replica held there is unknown"))
    return out


def build_view(facts: ReplicaFacts) -> ReplicaView:
    findings: list[Finding] = []
    holes = salvage_holes_of(facts)
    for h in holes:
        findings.append(Finding("SALVAGE_HOLE", h.detail, offset=h.first, segment=h.segment))
    cut = _torn_tail_start(facts)
    kept = facts.batches[:cut]
    if cut < len(facts.batches):
        first_cut = facts.batches[cut]
        torn = sum(b.size for b in facts.batches[cut:])
        findings.append(Finding("TORN_TAIL", f"{torn + facts.torn_tail_bytes} bytes fail the CRC "
                                f"after the last valid batch (no clean shutdown)",
                                offset=first_cut.base_offset, segment=first_cut.segment,
                                position=first_cut.position))
    elif facts.torn_tail_bytes:
        findings.append(Finding("TORN_TAIL", f"{facts.torn_tail_bytes} bytes after the last "
                                "complete batch", segment=facts.torn_tail_segment,
                                position=facts.torn_tail_position))
    if facts.read_error:
        if facts.unreadable_before_tail or facts.clean_shutdown:
            # The reader stopped at bytes that are no batch (a corrupt length or magic) before
            # the active segment's end, or after a clean shutdown: corruption, not a torn tail.
            findings.append(Finding("CRC_INVALID", f"unreadable: {facts.read_error}"))
        else:
            # Kafka's recovery truncates the active segment at such bytes (CorruptRecordException)
            findings.append(Finding("TORN_TAIL", f"recovery would cut here: {facts.read_error}",
                                    segment=facts.torn_tail_segment, position=facts.torn_tail_position))
    if facts.checkpoint_error:
        # A leader-epoch-checkpoint that does not parse is the KAFKA-16541 signature (written
        # without a flush, left empty or NUL-filled by an OS crash; fixed in Kafka 3.7.1/3.8):
        # it stays a READ_ERROR (a damaged file is a problem), is named as such, and the epoch
        # map comes from the batches alone (the checkpoint was not read).
        findings.append(Finding("READ_ERROR", facts.checkpoint_error))
        for x in facts.checkpoint_error.split("; "):
            if "leader-epoch-checkpoint" in x:
                findings.append(Finding("EPOCH_CKPT_CORRUPT", f"{x} (KAFKA-16541?); epochs rebuilt "
                                        "from the batches"))

    prev: BatchFacts | None = None
    for b in kept:
        if not b.crc_valid:
            findings.append(Finding("CRC_INVALID", f"batch [{b.base_offset}..{b.last_offset}] "
                                    f"epoch {b.partition_leader_epoch} stored crc 0x{b.crc:08x}",
                                    offset=b.base_offset, segment=b.segment, position=b.position))
        if prev is not None:
            if b.base_offset <= prev.last_offset:
                findings.append(Finding("NON_MONOTONIC_OFFSETS",
                                        f"overlap [{b.base_offset}..{prev.last_offset}]",
                                        offset=b.base_offset, segment=b.segment, position=b.position))
            elif b.base_offset > prev.last_offset + 1 and facts.cleaner_checkpoint is None:
                findings.append(Finding("GAP", f"offsets {prev.last_offset + 1}..{b.base_offset - 1} "
                                        "missing", offset=prev.last_offset + 1, segment=b.segment,
                                        position=b.position))
            if 0 <= b.partition_leader_epoch < prev.partition_leader_epoch:
                findings.append(Finding("EPOCH_REGRESSION", f"epoch {prev.partition_leader_epoch} "
                                        f"then {b.partition_leader_epoch}", offset=b.base_offset,
                                        segment=b.segment, position=b.position))
        prev = b

    if kept:
        leo = max(b.last_offset for b in kept) + 1
        first = kept[0].base_offset if facts.first_segment_base is None else facts.first_segment_base
    else:
        leo = max(x for x in (facts.active_segment_base, facts.log_start_checkpoint, 0) if x is not None)
        first = leo
    log_start = max(first, facts.log_start_checkpoint or 0)
    log_start = min(log_start, leo)
    epoch_map = build_epoch_map(kept, leo, facts.epoch_checkpoint, log_start)
    for code, detail in epoch_map.notes:
        findings.append(Finding(code, detail))
    if facts.high_watermark is not None and facts.high_watermark > leo:
        findings.append(Finding("TRUNCATED_BELOW_HW", f"log end {leo} < high-watermark checkpoint "
                                f"{facts.high_watermark} ({facts.high_watermark - leo} offsets)",
                                offset=leo))
    return ReplicaView(facts=facts, batches=kept, log_start_offset=log_start,
                       log_end_offset=leo, epoch_map=epoch_map, findings=findings, holes=holes)
