"""Build ReplicaFacts from FORENSICS.md Part C notation: ``[b..l]@eE{ids}`` batches.

The payload id list stands in for content: a batch's CRC is a function of its payload ids
only (the CRC does not cover offset or epoch, FORENSICS.md Part 0), so the same producer
batch written at two offsets or epochs gets the same CRC, as on a real broker."""

from __future__ import annotations

import zlib

from segtools.forensics.model import BatchFacts, ReplicaFacts


def batch(base: int, last: int, epoch: int, payload: str, **kw) -> BatchFacts:
    return BatchFacts(base_offset=base, last_offset=last, partition_leader_epoch=epoch,
                      crc=zlib.crc32(payload.encode()), records_count=last - base + 1,
                      segment="00000000000000000000.log", **kw)


def replica(broker: int, spec: list[tuple[int, int, int, str]], *, hw: int | None = None,
            lec: list[tuple[int, int]] | None = None, clean: bool = True, **kw) -> ReplicaFacts:
    batches = [batch(*b) for b in spec]
    if lec is None:
        lec = []
        for b in batches:
            if not lec or lec[-1][0] != b.partition_leader_epoch:
                lec.append((b.partition_leader_epoch, b.base_offset))
    return ReplicaFacts(broker=broker, topic="t", partition=0, batches=batches,
                        high_watermark=hw, epoch_checkpoint=lec, clean_shutdown=clean,
                        first_segment_base=0 if batches else None, **kw)


def dense(broker_epochs: list[tuple[int, int, int]], tag: str = "") -> list[tuple[int, int, int, str]]:
    """One single-record batch per offset: (first, last, epoch) ranges."""
    out = []
    for first, last, epoch in broker_epochs:
        for o in range(first, last + 1):
            out.append((o, o, epoch, f"{tag}{o}@{epoch}"))
    return out


def data_records_of(partition_dir):
    """(offset, leader_epoch, key, value) of every data record in one partition dir, read with
    kafka-python's record reader (the independent oracle); control batches skipped."""
    import glob
    import os

    from kafka.record import MemoryRecords

    for seg in sorted(glob.glob(os.path.join(str(partition_dir), "*.log"))):
        with open(seg, "rb") as fh:
            records = MemoryRecords(fh.read())
        while (b := records.next_batch()) is not None:
            if b.is_control_batch:
                continue
            for r in b:
                yield r.offset, b.leader_epoch, r.key, r.value


def disk_records_by_replica(root) -> dict:
    """Independent oracle: (topic, partition, broker) -> {(offset, leader_epoch)} of the data
    records on disk under ``root/broker-<id>/``, read with kafka-python's record reader."""
    import collections
    import glob
    import os

    out: dict = collections.defaultdict(set)
    for bdir in glob.glob(os.path.join(str(root), "broker-*")):
        broker = int(bdir.rsplit("-", 1)[1])
        for pdir in glob.glob(os.path.join(bdir, "*-*")):
            topic, _, part = os.path.basename(pdir).rpartition("-")
            if not part.isdigit():
                continue
            for offset, epoch, _key, _value in data_records_of(pdir):
                out[(topic, int(part), broker)].add((offset, epoch))
    return out


DIVERGED = {"COMMITTED_LOSS", "DIVERGED_UNCOMMITTED", "LOG_MATCHING_VIOLATION"}
NOT_DIVERGED = {"CONSISTENT", "LAGGING_PREFIX", "TRUNCATED_BELOW_HW"}


def check_against_truth(report, truth: dict, disk: dict, *, with_metadata: bool,
                        final_state: bool = True) -> list:
    """Differences between a compare report and the simulator's truth.json. truth's `lost`
    lists every record that ever left the surviving lineage; a detector can only see those
    still on some disk, so the expectation is truth's lost records found on each replica's
    disk by the oracle. ``final_state=False`` for a snapshot taken earlier (offsets and the
    reference broker are then not those of truth.json). Returns a list of problems (empty = agreement)."""
    problems = []
    got = {(p.verdict.topic, p.verdict.partition): p for p in report.partitions}
    for key, t in truth.items():
        p = got.get((t["topic"], t["partition"]))
        if p is None:
            if any(k[:2] == (t["topic"], t["partition"]) and v for k, v in disk.items()):
                problems.append((key, "partition missing from report"))
            continue
        truth_lost = {(x["offset"], x["leader_epoch"]): x for x in t["lost"]}
        reported = {(x.broker, x.offset, x.leader_epoch): x for x in p.lost}
        for rv in p.verdict.replicas:
            on_disk = {k for k in truth_lost if k in disk[(t["topic"], t["partition"], rv.broker)]}
            mine = {(o, e) for (b, o, e) in reported if b == rv.broker}
            if on_disk != mine:
                problems.append((key, rv.broker, "lost set", sorted(on_disk - mine), sorted(mine - on_disk)))
            tr = t["replicas"].get(str(rv.broker))
            if final_state and tr is not None and (
                    (tr["log_end_offset"], tr["log_start_offset"]) != (rv.log_end_offset, rv.log_start_offset)):
                problems.append((key, rv.broker, "offsets", tr, rv.log_end_offset, rv.log_start_offset))
            if on_disk:
                if rv.status not in DIVERGED or rv.fork_offset != min(o for o, _ in on_disk):
                    problems.append((key, rv.broker, "status/fork", rv.status, rv.fork_offset, min(on_disk)))
                for k in on_disk:
                    x = reported.get((rv.broker,) + k)
                    # HW checkpoints trail the true HW, so "committed" may be under-reported,
                    # never over-reported; acked comes from acks.jsonl and must match exactly.
                    if x is not None and x.committed and not truth_lost[k]["committed"]:
                        problems.append((key, rv.broker, "committed but not in truth", k))
                    if x is not None and x.acked != truth_lost[k]["acked"]:
                        problems.append((key, rv.broker, "acked", k, x.acked))
            elif rv.status not in NOT_DIVERGED and not (
                    rv.divergent and rv.divergent["records"] == 0
                    and any(f.code == "TXN_MARKER_LOST" for f in p.verdict.findings)):
                # (a divergent tail holding only a transaction marker is DIVERGED, S19)
                problems.append((key, rv.broker, "status", rv.status, [f.code for f in rv.findings]))
        if with_metadata and final_state:
            expected_ref = t["leader"] if t["leader"] is not None else t["last_leader"]
            if expected_ref is not None and str(expected_ref) in t["replicas"] and \
                    p.verdict.reference_broker != expected_ref:
                problems.append((key, "reference", p.verdict.reference_broker, expected_ref))
    return problems
