"""What `segtools dump` adds to kafka-dump-log's stderr, after Kafka's own blocks: one line per
file and kind of deferred finding (naming the file, which Kafka's "The following indexed
offsets are not found in the log." block does not, and saying when it is benign), then one
summary line. Every such line starts with ``segtools: `` so a diff against Kafka's tool can
drop them (``grep -v '^segtools: '``)."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from segtools.primitives.visible import visible

if TYPE_CHECKING:
    from segtools.dump.pairs import PairStore

PREFIX = "segtools: "
_SAMPLES = 5  # offsets quoted per line; the JSON outputs list every one

#: kinds counted as index mismatches (offset and time index checks)
_INDEX_KINDS = frozenset({"index_offset_mismatch", "time_index_offset_not_found",
                          "time_index_timestamp_mismatch", "time_index_out_of_order"})

#: why a finding Kafka reports is not corruption (or, "skipped", which corruption it comes
#: from), by reason
_WHY = {
    "gap": "benign: compaction, deleted records and transaction markers leave offset gaps",
    "inside_batch": "benign: brokers before 3.8 indexed the offset of the batch's "
                    "max-timestamp record, inside the batch (KAFKA-16310)",
    "unused_slot": "benign: the unused first slot of a preallocated index "
                   "(an active segment, or one a crash left unflushed)",
    "skipped": "not compaction: --skip-corrupt skipped corrupt bytes between these offsets "
               "(the \"Skipped ... corrupt bytes\" lines on stdout)",
    "salvaged": "not compaction: segtools salvage dropped damaged bytes of the original here "
                "(the salvaged-hole line of this file)",
}


@dataclass
class _Group:
    count: int = 0
    samples: list[str] = field(default_factory=list)


@dataclass
class RunTally:
    files: int = 0
    errors: int = 0
    crc_invalid: int = 0
    index_mismatches: int = 0
    benign: int = 0
    # file -> (description key) -> group, in discovery order
    groups: dict[str, dict[tuple[str, str], _Group]] = field(default_factory=dict)
    # file -> finding kind -> group of the errors printed inline (CRC-invalid batches,
    # unreadable tails, corrupt or unusable files), so the summary names each file with one
    problems: dict[str, dict[str, _Group]] = field(default_factory=dict)

    def problem(self, path: str, kind: str, fields: dict[str, Any]) -> None:
        group = self.problems.setdefault(path, {}).setdefault(kind, _Group())
        group.count += 1
        if len(group.samples) < _SAMPLES:
            where = [f"{k.replace('_', ' ')} {fields[k]}" for k in ("offset", "base_offset", "position")
                     if fields.get(k) is not None]
            if where:
                group.samples.append(" ".join(where[:2]))

    def deferred(self, path: str, kind: str, fields: dict[str, Any], is_problem: bool) -> None:
        skipped = fields.get("skipped_ranges")
        salvaged = fields.get("across_salvaged_hole")
        if skipped or salvaged:
            pass  # a gap --skip-corrupt or salvage made: the range is the error already counted
        elif not is_problem:
            self.benign += 1
        elif kind in _INDEX_KINDS:
            self.index_mismatches += 1
        else:  # offsets that do not increase
            self.errors += 1
        if skipped:
            reason = "skipped"
        elif salvaged:
            reason = "salvaged"
        elif fields.get("unused_slot"):
            reason = "unused_slot"
        elif fields.get("inside_batch"):
            reason = "inside_batch"
        elif kind == "non_consecutive_offsets" and not is_problem:
            reason = "gap"
        else:
            reason = "problem" if is_problem else "benign"
        group = self.groups.setdefault(path, {}).setdefault((kind, reason), _Group())
        group.count += 1
        if len(group.samples) < _SAMPLES:
            if kind == "salvaged_hole":
                group.samples.append(
                    f"after {_or_unknown(fields.get('after_offset'))}, before "
                    f"{_or_unknown(fields.get('before_offset'))}: bytes {fields.get('original_start')}-"
                    f"{fields.get('original_end')} of the original ({fields.get('reason')})")
            elif kind == "non_consecutive_offsets":
                sample = f"{fields.get('previous_offset')} -> {fields.get('offset')}"
                if skipped:
                    sample += " across skipped bytes " + ", ".join(
                        f"{r['position']}-{r['end']}" for r in skipped)
                group.samples.append(sample)
            else:
                value = fields.get("index_offset", fields.get("index_timestamp"))
                if value is not None:
                    group.samples.append(str(value))

    def gap_pairs(self, path: str, store: PairStore) -> int:
        """What :meth:`deferred` records for every pair of ``store`` (newest first) when none
        crosses bytes --skip-corrupt skipped or a salvage hole: counts per block of pairs and
        the first samples, not a Python call per pair (a batch whose records all claim one
        offset gives one pair per record). Returns the number of offsets that do not
        increase (problems)."""
        kind = "non_consecutive_offsets"
        problems = 0
        for chunk in store.chunks_newest_first():
            firsts, seconds = chunk[-2::-2], chunk[::-2]   # newest first
            bad = sum(map(operator.le, seconds, firsts))     # b <= a: does not increase
            counts = {"problem": bad, "gap": len(firsts) - bad}
            problems += bad
            groups = self.groups.setdefault(path, {})
            # samples (and each group's place in discovery order) from the first pairs only
            want = {r: min(n, _SAMPLES - len(groups[(kind, r)].samples) if (kind, r) in groups else _SAMPLES)
                    for r, n in counts.items()}
            if any(want.values()):
                for a, b in zip(firsts, seconds):
                    reason = "problem" if b <= a else "gap"
                    if want[reason] <= 0:
                        if not any(want.values()):
                            break
                        continue
                    want[reason] -= 1
                    groups.setdefault((kind, reason), _Group()).samples.append(f"{a} -> {b}")
            for reason, n in counts.items():
                if n:
                    groups.setdefault((kind, reason), _Group()).count += n
        self.errors += problems
        self.benign += len(store) - problems
        return problems

    def lines(self, status: int) -> list[str]:
        from segtools.dump.text import java_absolute_path

        out = []
        for path, kinds in self.problems.items():
            shown = visible(java_absolute_path(path)) if path else "(no file)"
            what = ", ".join(f"{g.count} {_problem_name(kind, g.count)}" + (f" ({_quote(g)})" if g.samples else "")
                             for kind, g in kinds.items())
            out.append(f"{PREFIX}{shown}: {what}; a problem (exit {2 if 'unusable_input' in kinds else 1})")
        for path, groups in self.groups.items():
            shown = visible(java_absolute_path(path))   # our line: a newline in a name stays inside it
            for (kind, reason), group in groups.items():
                out.append(f"{PREFIX}{shown}: {_describe(kind, reason, group)}")
        out.append(
            f"{PREFIX}{_n(self.files, 'file')}, {_n(self.errors, 'error')}, "
            f"{_n(self.crc_invalid, 'CRC-invalid batch', 'CRC-invalid batches')}, "
            f"{_n(self.index_mismatches, 'index mismatch', 'index mismatches')}, "
            f"{_n(self.benign, 'benign note')}; exit {status}")
        return out


_PROBLEMS = {"crc_invalid": ("CRC-invalid batch", "CRC-invalid batches"),
             "invalid_bytes": ("run of invalid trailing bytes", "runs of invalid trailing bytes"),
             "corrupt_file": ("corrupt structure", "corrupt structures"),
             "unusable_input": ("unreadable or unusable file", "unreadable or unusable files")}


def _problem_name(kind: str, count: int) -> str:
    one, many = _PROBLEMS.get(kind, (kind.replace("_", " "), kind.replace("_", " ")))
    return one if count == 1 else many


def _or_unknown(value: Any) -> str:
    return "?" if value is None else str(value)


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def _quote(group: _Group) -> str:
    more = ", ..." if group.count > len(group.samples) else ""
    return ", ".join(group.samples) + more


_WHAT = {
    "non_consecutive_offsets": ("offset gap", "offset gaps",
                                "under \"Non-consecutive offsets in\"", "offsets"),
    "salvaged_hole": ("hole left by segtools salvage (records of the original may be missing)",
                      "holes left by segtools salvage (records of the original may be missing)",
                      "in segtools-salvage.json beside the segment", "offsets"),
    "index_offset_mismatch": ("index entry whose offset is not the log's",
                              "index entries whose offset is not the log's",
                              "under \"Mismatches in :\"", "index offset"),
    "time_index_offset_not_found": ("time-index offset not found as a batch's last offset",
                                    "time-index offsets not found as a batch's last offset",
                                    "under \"The following indexed offsets are not found in "
                                    "the log.\"", "indexed offset"),
    "time_index_timestamp_mismatch": ("time-index timestamp not the batch's",
                                      "time-index timestamps not the batch's",
                                      "under \"Found timestamp mismatch in :\"",
                                      "index timestamp"),
    "time_index_out_of_order": ("time-index timestamp out of order",
                                "time-index timestamps out of order",
                                "under \"Found out of order timestamp in :\"", "index timestamp"),
}


def _describe(kind: str, reason: str, group: _Group) -> str:
    one, many, where, label = _WHAT.get(kind, (kind, kind, "", "offset"))
    if kind == "non_consecutive_offsets" and reason == "problem":
        one, many = "offset that does not increase", "offsets that do not increase"
    if reason == "skipped":
        one, many = "offset gap made by --skip-corrupt", "offset gaps made by --skip-corrupt"
    if reason == "salvaged":
        one, many = "offset gap across a salvage hole", "offset gaps across salvage holes"
    text = f"{group.count} {one if group.count == 1 else many} ({label} {_quote(group)})"
    if where:
        text += f", listed {where}"
    why = _WHY.get(reason)
    return f"{text}; {why}" if why else f"{text}; a problem (exit 1)"
