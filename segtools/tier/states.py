"""Kafka's remote segment states and the transitions it accepts
(storage-api ``RemoteLogSegmentState.isValidTransition``)."""

from __future__ import annotations

STARTED, FINISHED, DELETE_STARTED, DELETE_FINISHED = 0, 1, 2, 3
NAMES = {STARTED: "COPY_SEGMENT_STARTED", FINISHED: "COPY_SEGMENT_FINISHED",
         DELETE_STARTED: "DELETE_SEGMENT_STARTED", DELETE_FINISHED: "DELETE_SEGMENT_FINISHED"}


def is_valid_transition(src: int | None, target: int) -> bool:
    """Kafka's rule: the first state is STARTED; a repeat is allowed (retries, failover);
    STARTED -> FINISHED | DELETE_STARTED; FINISHED -> DELETE_STARTED;
    DELETE_STARTED -> DELETE_FINISHED; nothing leaves DELETE_FINISHED."""
    if src is None:
        return target == STARTED
    if src == target:
        return True
    return (src, target) in {(STARTED, FINISHED), (STARTED, DELETE_STARTED),
                             (FINISHED, DELETE_STARTED), (DELETE_STARTED, DELETE_FINISHED)}
