"""Ground truth of a simulation: acks.jsonl (what producers saw) and truth.json (what happened).

truth.json maps ``"<topic>-<partition>"`` to the final leader, epoch, ISR, HW, every replica's
offsets and the ``lost`` records (CONTRACT.md section 3): a record is lost when it was appended to
some replica's log but is not in the final leader's log at the same offset with the same epoch
(records below the final log start offset were deleted on purpose and are not lost; transaction
markers are not records a producer sent and are not listed). Without a live leader the last
leader's log is used.
"""

from __future__ import annotations

import json
from typing import Any

from segtools.formats.primitives import uuid_to_base64url
from segtools.simulate.cluster import Cluster
from segtools.simulate.controller import NO_LEADER, Election
from segtools.simulate.replica import ReplicaLog, SimRecord

UNCLEAN_ELECTION = "UNCLEAN_ELECTION"
LEADER_CRASH_ACKS_1 = "LEADER_CRASH_ACKS_1"
UNCOMMITTED = "UNCOMMITTED"
POWER_LOSS = "POWER_LOSS"
TRUNCATED = "TRUNCATED"


#: ``schema_version`` on every acks.jsonl line and every partition entry of truth.json
#: (segtools/schemas/acks-line, truth): truth.json stays a map of partitions, so the version
#: sits in each entry rather than beside them
FILES_SCHEMA_VERSION = 1


def acks_lines(cluster: Cluster) -> str:
    return acks_text([a.to_json() for a in cluster.acks])


def acks_text(acks: list[dict[str, Any]]) -> str:
    """acks.jsonl: one acknowledgement a line, each with its schema_version."""
    return "".join(json.dumps({"schema_version": FILES_SCHEMA_VERSION, **a}, sort_keys=True) + "\n" for a in acks)


def truth_file_text(parts: dict[str, dict[str, Any]]) -> str:
    """truth.json of a model or a real run: each partition entry with its schema_version."""
    return json.dumps({name: {"schema_version": FILES_SCHEMA_VERSION, **part} for name, part in parts.items()},
                      sort_keys=True, indent=2) + "\n"


def _cause(cluster: Cluster, rec: SimRecord, elections: list[Election], final_id: int) -> str:
    """Why a record left the surviving lineage: the first election after its epoch whose new
    leader did not hold it decides (unclean election, a power loss on that leader, a committed
    record truncated away by a clean leader, or an uncommitted tail)."""
    fork = next((e for e in elections if e.epoch > rec.leader_epoch and e.leader != NO_LEADER
                 and not e.leader_had(rec.offset, rec.leader_epoch)), None)
    if fork is None:
        reasons = cluster.removals.get((id(rec), final_id), set())
        return POWER_LOSS if POWER_LOSS in reasons else TRUNCATED
    if fork.unclean:
        return UNCLEAN_ELECTION
    if POWER_LOSS in cluster.removals.get((id(rec), fork.leader), set()):
        return POWER_LOSS
    if rec.committed:
        return TRUNCATED
    if rec.acks == "1" and rec.acked and fork.reason in ("crash", "restart"):
        return LEADER_CRASH_ACKS_1
    return UNCOMMITTED


def _relocated_to(rec: SimRecord, final: ReplicaLog | None) -> int | None:
    """Offset in the final log of a later copy of the same send (producer resend), if any."""
    seen = 0
    nxt = rec.resent_as
    while nxt is not None and seen < 100:
        if final is not None and final.has_record(nxt.offset, nxt.leader_epoch):
            return nxt.offset
        nxt = nxt.resent_as
        seen += 1
    return None


def truth(cluster: Cluster) -> dict[str, Any]:
    by_tp: dict[tuple[str, int], list[SimRecord]] = {}
    for rec in cluster.records:
        by_tp.setdefault((rec.topic, rec.partition), []).append(rec)
    out: dict[str, Any] = {}
    for tp in sorted(cluster.partitions):
        ps = cluster.partitions[tp]
        reps = cluster.replicas[tp]
        final_id = ps.leader if ps.leader != NO_LEADER else ps.last_leader
        final = reps.get(final_id)
        lost: list[dict[str, Any]] = []
        for rec in by_tp.get(tp, []):
            if final is not None and (rec.offset < final.log_start_offset
                                      or final.has_record(rec.offset, rec.leader_epoch)):
                continue
            lost.append({
                "offset": rec.offset, "leader_epoch": rec.leader_epoch, "key": rec.key,
                "value": rec.value, "acks": rec.acks, "acked": rec.acked,
                "committed": rec.committed, "cause": _cause(cluster, rec, ps.elections, final_id),
                "relocated_to": _relocated_to(rec, final),
                # brokers whose final log still holds it (the evidence a detector can find)
                "on_brokers": sorted(b for b, r in reps.items()
                                     if r.has_record(rec.offset, rec.leader_epoch))})
        lost.sort(key=lambda d: (d["offset"], d["leader_epoch"]))
        out[f"{tp[0]}-{tp[1]}"] = {
            "topic": tp[0], "partition": tp[1],
            "topic_id": uuid_to_base64url(cluster.topic_ids[tp[0]]),
            "leader": None if ps.leader == NO_LEADER else ps.leader,
            "last_leader": None if ps.last_leader == NO_LEADER else ps.last_leader,
            "leader_epoch": ps.leader_epoch,
            "isr": list(ps.isr),
            "assignment": list(ps.replicas),
            "high_watermark": final.high_watermark if final is not None else 0,
            "replicas": {str(b): {
                "log_end_offset": r.log_end_offset, "log_start_offset": r.log_start_offset,
                "high_watermark": r.high_watermark,
                "high_watermark_checkpoint": r.hw_checkpoint,
                "latest_epoch": r.latest_epoch(),
                "alive": cluster.brokers[b].alive,
                "clean_shutdown": cluster.brokers[b].clean_shutdown,
            } for b, r in sorted(reps.items())},
            "elections": [e.to_json() for e in ps.elections],
            "lost": lost,
        }
    return out


def truth_text(cluster: Cluster) -> str:
    return truth_file_text(truth(cluster))
