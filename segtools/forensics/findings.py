"""Finding codes (FORENSICS.md Part B) and how they rank into one status per replica."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: Status codes, most severe first. A replica's status is the first code in this list
#: among its findings; CONSISTENT when none applies.
STATUS_ORDER = (
    "LOG_MATCHING_VIOLATION",
    "COMMITTED_LOSS",
    "CRC_INVALID",
    "SALVAGE_HOLE",
    "NON_MONOTONIC_OFFSETS",
    "EPOCH_REGRESSION",
    "TRUNCATED_BELOW_HW",
    "DIVERGED_UNCOMMITTED",
    "NOT_COMPARABLE",
    "LAGGING_PREFIX",
    "CONSISTENT",
)

#: Statuses that mean data is lost, diverged or corrupt (compare exits 1).
PROBLEM_STATUSES = frozenset(STATUS_ORDER[:8])

#: Informational codes: reported, never raise the status.
INFO_CODES = frozenset({
    "TORN_TAIL", "GAP", "STALE_EPOCH_CKPT", "CKPT_MISSING_EPOCH", "CKPT_EPOCH_START_DIFFERS",
    "EMPTY_TAIL_EPOCH", "BENIGN_LOG_START_DIFFERS", "BENIGN_SEGMENT_LAYOUT_DIFFERS",
    "BENIGN_COMPACTION_DIFFERS", "BENIGN_EPOCH_GAPS", "RELOCATED", "DUPLICATE",
    "TXN_MARKER_LOST", "READ_ERROR", "SPECIAL_DIR", "HW_ABOVE_LEO_COVERED", "LOG_RESTARTED_FROM_EMPTY",
    # Kafka 4.x forensics (docs/REPORT.md)
    "HW_FROZEN_UNDER_MIN_ISR", "UNCLEAN_SHUTDOWN", "TXN_OPEN", "TXN_HANGING", "EPOCH_CKPT_CORRUPT",
    "BENIGN_FORMAT_CONVERTED",
    # issue 21: lost records of an aborted transaction (no loss for consumers)
    "TXN_ABORTED_LOST",
})


@dataclass(slots=True)
class Finding:
    code: str
    detail: str = ""
    offset: int | None = None
    segment: str | None = None
    position: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None and v != ""}


def rank_status(codes: set[str]) -> str:
    for status in STATUS_ORDER:
        if status in codes:
            return status
    return "CONSISTENT"
