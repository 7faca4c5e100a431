"""Three-valued answers of compare: ``lost`` (with the records), ``safe`` (proven from the
evidence) or ``cannot_tell`` (naming the evidence that is missing and what it would decide).

"Nothing lost" needs proof: the metadata log's last ISR/ELR and last leader all among the
given log dirs; after an election that could truncate acknowledged records (any election but
the first), the producers' acks checked against every replica's lineage; after an unclean
election, the untruncated logs of the ISR it passed over. Anything short of that is
``cannot_tell``, never ``safe`` (docs/REPORT.md "answer").
"""

from __future__ import annotations

from typing import Any

LOST, SAFE, CANNOT_TELL = "lost", "safe", "cannot_tell"
ANSWER_ORDER = (LOST, CANNOT_TELL, SAFE)     # the worst first: a report's answer is its worst


def _missing(evidence: str, detail: str, decides: str, **extra: Any) -> dict[str, Any]:
    return {"evidence": evidence, **extra, "detail": detail, "decides": decides}


def partition_answer(p: Any, *, acks_given: bool, problems: list[str]) -> dict[str, Any]:
    """The answer for one PartitionReport: {"value", "lost": [...what], "missing": [...]};
    ``problems``: its replicas with a problem status ("broker N: STATUS")."""
    v = p.verdict
    lost: list[str] = []
    # records of an aborted transaction (its ABORT marker read on some replica): never delivered
    # to read_committed consumers, never replayed; named, but no loss
    live = [x for x in p.lost if getattr(x, "txn_state", None) != "aborted"]
    aborted = {(x.offset, x.leader_epoch) for x in p.lost if getattr(x, "txn_state", None) == "aborted"}
    not_delivered = [f"{len(aborted)} record(s) of aborted transactions held only off the surviving lineage: "
                     "aborted, not delivered to read_committed consumers"] if aborted else []
    if live:
        distinct = {(x.offset, x.leader_epoch) for x in live}
        committed = {(x.offset, x.leader_epoch) for x in live if x.committed}
        # an open or unknown transaction: no marker in the evidence says whether it committed
        undecided = {(x.offset, x.leader_epoch) for x in live if getattr(x, "txn_state", None) in ("open", "unknown")}
        lost.append(f"{len(distinct)} record(s) held only off the surviving lineage ({len(committed)} committed"
                    + (f"; {len(undecided)} of open or unknown transactions, whose outcome no marker in the "
                       "evidence shows" if undecided else "") + ")")
    if p.lost_offsets is not None:
        lost.append(f"offsets {p.lost_offsets.first_offset}..{p.lost_offsets.end_offset - 1} committed "
                    "(high-watermark checkpoint) with no copy on any replica")
    acked = getattr(p, "acked_lost", None)
    if acked is not None and acked.lost:
        lost.append(f"{len(acked.lost)} acknowledged offset(s) held by no replica in their epoch")
    missing: list[dict[str, Any]] = []
    same = [r for r in v.replicas if r.state not in ("delete", "future", "stray")
            and not (v.topic_id and r.topic_id and r.topic_id != v.topic_id)]
    given = {r.broker: r for r in same}
    ev = v.evidence
    lineage_unknown = False
    if v.topic == "__cluster_metadata":
        # the KRaft log itself: replicated by Raft (a majority of voters), not by an ISR, and
        # not described by itself; its copies are only compared with each other
        missing.append(_missing(
            "raft_voters", "the controller quorum's voters and their logs: __cluster_metadata is replicated "
            "by Raft, which compare does not check beyond comparing the given copies; which nodes vote "
            "(controller.quorum.voters) is in their configs, not in a log dir",
            "whether entries committed by the quorum were lost"))
    elif ev is None:
        missing.append(_missing(
            "metadata_log", "no KRaft metadata log (__cluster_metadata-0) covers this partition: which "
            "brokers were its last ISR/ELR and leader is unknown, so a broker whose log dir is not given "
            "may hold records the given ones lack",
            "whether the given log dirs include every in-sync replica and the last leader"))
    else:
        need = set(ev["isr"]) | set(ev["elr"]) | set(ev["last_known_elr"])
        for b in (ev["leader"], ev["last_leader"]):
            if b is not None and b >= 0:
                need.add(b)
        # whose log survives: the live leader's; offline, whichever ISR/ELR member or last leader
        # is elected next. Without that log, records off the given replicas' lineage may be on it
        leader = ev["leader"] if ev["leader"] is not None and ev["leader"] >= 0 else None
        lineage_unknown = (leader not in given) if leader is not None else bool(need - set(given))
        for b in sorted(need - set(given)):
            missing.append(_missing(
                "log_dir", f"broker {b}'s log dir for this partition: the metadata log names it in the last "
                f"ISR/ELR or as the last leader, so it may hold committed records no given dir has",
                "whether records committed beyond the given replicas' log ends were lost", broker=b))
        for el in ev["elections"]:
            if not el.get("unclean"):
                continue
            for b in el.get("previous_isr") or []:
                if b == el["leader"]:
                    continue
                r = given.get(b)
                if r is not None and max((e for e, _s in r.epochs), default=-1) < el["epoch"]:
                    continue        # its log is from before the election: stage 3 compares it
                why = ("it is not among the inputs" if r is None
                       else "the given copy already followed the new leader and truncated")
                missing.append(_missing(
                    "untruncated_log", f"broker {b}'s log as it was before the unclean election of epoch "
                    f"{el['epoch']} (leader {el['leader']}): {why}",
                    f"whether records committed before epoch {el['epoch']} were lost", broker=b, epoch=el["epoch"]))
    for b in sorted(need & set(given)) if ev is not None else []:
        # a power loss of a broker whose log is (or may become) the surviving one takes its
        # unflushed tail off every copy: committed records appended after its last flush leave
        # no trace but a high-watermark checkpoint or an ack written after them
        how = _unclean_stop(b, given[b].shutdown or {}, v.metadata_changes or [])
        if how is not None:
            missing.append(_missing(
                "unflushed_tail", f"broker {b} may have stopped uncleanly ({how}) and the metadata log names it "
                "in the last ISR/ELR or as the last leader: records it appended after its last flush may be "
                "gone from every copy, and no given file records them",
                "whether committed records above its log end at the stop were lost (an ack or a high-watermark "
                "checkpoint written after them would show them)", broker=b))
    # acknowledged offsets given without a leader epoch that a replica holds decide nothing:
    # after an election the same offset may hold another record (forensics/acks.py)
    unknown = list(getattr(acked, "epoch_unknown", None) or []) if acked is not None else []
    if (not acks_given or unknown) and v.topic != "__cluster_metadata":
        if ev is not None:
            later = [el for el in ev["elections"] if el["class"] not in ("initial", "offline") and el["leader"] >= 0]
        else:
            later = [{"epoch": e} for e, _s in v.reference_epochs[1:]]
        if later and acks_given:
            missing.append(_missing(
                "ack_leader_epoch", f"{len(unknown)} acknowledged offset(s) (first {unknown[0]}) came without a "
                "leader epoch and a replica holds that offset, but an election after the first can have "
                "rewritten it with another record",
                "whether the acknowledged records at those offsets are the ones the replicas hold"))
        elif later:
            epochs = ", ".join(str(el["epoch"]) for el in later[:5]) + (" ..." if len(later) > 5 else "")
            missing.append(_missing(
                "acks", f"the producers' acks (acks.jsonl): {len(later)} leader election(s) after the first "
                f"(epoch {epochs}) can truncate records acknowledged with acks=1 that no log keeps",
                "whether acknowledged records were lost (each acknowledged offset is checked against "
                "every replica's lineage)"))
    if acked is not None and acked.below_log_start:
        o, e = acked.below_log_start[0]
        missing.append(_missing(
            "segments_below_log_start", f"{len(acked.below_log_start)} acknowledged offset(s) (first {o}, "
            f"epoch {e}) lie below a replica's log start and on no replica: the segments that held them were "
            "deleted (retention, DeleteRecords) or never written there",
            "whether those acknowledged records were in the log before its start moved"))
    for r in same:
        for f in r.findings:
            if f.code == "SALVAGE_HOLE":
                missing.append(_missing(
                    "salvage_hole", f"broker {r.broker}'s original segment, {f.detail}",
                    "whether this replica held records there that no other replica holds", broker=r.broker))
    # the holes are named above: a replica whose only problem they are needs no intact copy named
    problems = [x for x in problems if not x.endswith(": SALVAGE_HOLE")]
    if problems and not lost and aborted and _aborted_only(v, p.lost):
        pass    # every problem replica diverged by aborted transactions alone: explained
    elif problems and not lost:
        marker = _lost_marker_only(v)
        ref_start = next((r.log_start_offset for r in v.replicas if r.is_reference), 0)
        if marker == "" and ref_start > 0:
            # only a marker diverged, and the data it closed are below the surviving log's start
            missing.append(_missing(
                "segments_below_log_start", f"the segments below offset {ref_start} (the surviving log's "
                "start): only a transaction marker diverged (" + ", ".join(problems) + "), and the records "
                "of its transaction were deleted from the given logs",
                "whether the transaction's records, and its outcome, survive"))
        elif marker and not _transaction_log_given(v):
            # S19: only a transaction marker diverged; the data survive, open on the surviving
            # log. Whether that transaction ends is the coordinator's state, not a log copy's
            missing.append(_missing(
                "transaction_state", f"the transaction coordinator's log (__transaction_state): {marker}; "
                "the records survive, but no given file says whether the coordinator completed the "
                "transaction (then it hangs on the surviving log and read_committed consumers stop at it "
                "until it is aborted) or will write the marker again",
                "whether the transaction's records reach read_committed consumers"))
        else:
            # replicas whose offset ranges do not overlap cannot be lined up (retention deleted the
            # segments that overlapped): the deleted segments are what is missing
            unmatched = any(r.status == "NOT_COMPARABLE" or any(f.code == "NOT_COMPARABLE" for f in r.findings)
                            for r in same)
            apart = [r for r in same if unmatched and r.log_start_offset > 0]
            for r in apart:
                missing.append(_missing(
                    "segments_below_log_start", f"broker {r.broker}'s segments below its log start "
                    f"{r.log_start_offset}: the replicas' logs do not all overlap (retention or DeleteRecords "
                    "deleted what would line it up), so what it holds cannot be matched against the "
                    "problem replicas (" + ", ".join(problems) + ")",
                    "whether the records in the damaged or diverged ranges survive on it", broker=r.broker))
            if not apart:
                missing.append(_missing(
                    "intact_copy", "replicas with problems but no record proven lost: " + ", ".join(problems),
                    "whether the records in the damaged or diverged ranges survive elsewhere"))
    if ev is None and v.topic != "__cluster_metadata" and lost:
        # without the metadata log the reference is only the given replica with the newest
        # epoch: the surviving log may be on a broker not given, under a later epoch, and hold
        # what the given ones lack (random-19: broker 1, not given, kept offset 0 of epoch 0,
        # the given broker 4 had it in epoch 3; a high-watermark checkpoint's offsets no given
        # replica holds may be on it too)
        lineage_unknown = True
    if lost and lineage_unknown:
        # measured against a given replica, not the surviving log: at risk, not proven lost
        # (the missing broker may hold them); the records stay in lost_records for --lost-out
        return {"value": CANNOT_TELL, "lost": [], "at_risk": lost, "missing": missing,
                **({"not_delivered": not_delivered} if not_delivered else {})}
    value = LOST if lost else CANNOT_TELL if missing else SAFE
    return {"value": value, "lost": lost, "missing": missing,
            **({"not_delivered": not_delivered} if not_delivered else {})}


def _aborted_only(v: Any, lost: Any) -> bool:
    """Every problem replica diverged by records of aborted transactions alone (and markers):
    status DIVERGED_UNCOMMITTED, no unreadable file, and each divergent record is a lost record
    whose transaction aborted."""
    for r in v.replicas:
        if any(f.code == "READ_ERROR" for f in r.findings):
            return False
        if r.status in ("CONSISTENT", "LAGGING_PREFIX"):
            continue
        if r.status != "DIVERGED_UNCOMMITTED":
            return False
        mine = [x for x in lost if (x.broker, x.log_dir) == (r.broker, r.log_dir)]
        if any(getattr(x, "txn_state", None) != "aborted" for x in mine) \
                or len(mine) != (r.divergent or {}).get("records", -1):
            return False
    return True


def _lost_marker_only(v: Any) -> str | None:
    """When every problem replica diverged by transaction markers alone (no data record off the
    surviving lineage): the TXN_MARKER_LOST findings' text ("" when there is none); else None."""
    found = [f for f in v.findings if f.code == "TXN_MARKER_LOST"]
    diverged = False
    for r in v.replicas:
        if any(f.code == "READ_ERROR" for f in r.findings):
            return None
        if r.status in ("CONSISTENT", "LAGGING_PREFIX"):
            continue
        d = r.divergent or {}
        if r.status != "DIVERGED_UNCOMMITTED" or d.get("records") or not d.get("control_records"):
            return None
        diverged = True
    return "; ".join(f.detail for f in found) if diverged else None


def _transaction_log_given(v: Any) -> bool:
    """The given dirs held the transaction log: its producers name the transactions."""
    txns = (v.transactions or {}).get("transactions") or []
    return any("transactional_id" in t for t in txns)


def _unclean_stop(broker: int, shutdown: dict[str, Any], changes: list[dict[str, Any]]) -> str | None:
    """How the evidence shows (or cannot exclude) a stop of ``broker`` that could lose its
    unflushed tail; None when it shows none."""
    if shutdown.get("last_stop") == "unclean":
        return "it is down and its log dir has no .kafka_cleanshutdown"
    if shutdown.get("unclean_restarts"):
        return "the controller dropped it from ISR/ELR when it registered again after an unclean stop"
    for i, c in enumerate(changes):
        # offline with it the only ISR member, then it leads again: it stopped and restarted
        # while it alone held the committed tail. Without ELR the controller writes nothing
        # about how a broker stopped, and the restart deleted .kafka_cleanshutdown
        if c.get("leader") == -1 and list(c.get("isr") or []) == [broker] and c.get("elr") is None \
                and any(d.get("leader") == broker for d in changes[i + 1:]):
            return (f"the partition went offline with it the only ISR member (metadata offset {c.get('offset')}) "
                    "and it led again later; without ELR the metadata log does not say whether that stop was clean")
    return None


def worst(values: list[str]) -> str:
    for a in ANSWER_ORDER:
        if a in values:
            return a
    return SAFE
