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
