"""Kafka's follower truncation rule, run offline over two epoch maps (FORENSICS.md A.2).

This is the loop a follower runs against its leader since KIP-279 / KAFKA-10554: ask the
leader for the end of our latest epoch; if we hold the epoch the leader answered with, the
fork is the smaller of the two ends; otherwise step down to our largest epoch below it.
The result T is what the cluster itself will truncate the replica to once it rejoins.
"""

from __future__ import annotations

from segtools.forensics.epochs import UNDEFINED_EPOCH, EpochMap


def fork_offset(reference: EpochMap, replica: EpochMap) -> int:
    """Offset T such that ``replica[0, T)`` should equal ``reference[0, T)``; the replica's
    records in ``[T, LEO)`` are its divergent suffix.

    As the follower runs it (AbstractFetcherThread.getOffsetTruncationState): it asks the
    leader for the end of its latest epoch; the leader answers (epoch L, end) with
    ``endOffsetFor``. The follower looks L up in its own cache the same way
    (LeaderEpochFileCache.endOffsetFor, which answers (L, its first start) for an L below all its
    epochs). Same epoch: truncate to min(leader's end, own end, LEO), done. Otherwise it
    truncates to its own end of the smaller epoch it found and asks again for that epoch."""
    leo_r = replica.log_end_offset
    epoch = replica.latest_epoch()
    if epoch is None or not reference.entries:
        # No epochs on one side (legacy data or an empty log): Kafka falls back to offsets.
        return min(reference.log_end_offset, leo_r)
    # Each round asks for a strictly smaller epoch, so the loop ends.
    while True:
        ref_epoch, ref_end = reference.end_offset_for(epoch)
        if ref_epoch == UNDEFINED_EPOCH:
            return min(ref_end, leo_r)
        own_epoch, own_end = replica.end_offset_for(ref_epoch)
        if own_epoch == ref_epoch:
            return min(ref_end, own_end, leo_r)
        # the follower does not know the leader's epoch: truncate to the end of its largest
        # epoch below it, then ask for that one
        leo_r = min(own_end, leo_r)
        if own_epoch == UNDEFINED_EPOCH or own_epoch >= epoch:
            return min(ref_end, leo_r)
        epoch = own_epoch
