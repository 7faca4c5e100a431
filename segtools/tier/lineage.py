"""Kafka's acceptance rule for a remote segment against a partition's leader-epoch chain
(``RemoteLogManager.isRemoteSegmentWithinLeaderEpochs`` and ``buildFilteredLeaderEpochMap``),
written from reading Kafka's source."""

from __future__ import annotations

from collections.abc import Mapping


def filtered_epochs(epochs: Mapping[int, int]) -> dict[int, int]:
    """Drop epochs that hold no records: an epoch whose start offset equals the next one's."""
    items = sorted(epochs.items())
    out: dict[int, int] = {}
    for i, (epoch, offset) in enumerate(items):
        if i + 1 < len(items) and items[i + 1][1] == offset:
            continue
        out[epoch] = offset
    return out


def _higher(m: Mapping[int, int], key: int) -> tuple[int, int] | None:
    keys = [k for k in m if k > key]
    return (min(keys), m[min(keys)]) if keys else None


def within_leader_epochs(segment_epochs: Mapping[int, int], end_offset: int,
                         log_end_offset: int, leader_epochs: Mapping[int, int]) -> str | None:
    """None when Kafka would accept the segment, else why not (Kafka's checks, in its order)."""
    seg = filtered_epochs(segment_epochs)
    chain = dict(sorted(leader_epochs.items()))
    if not seg or not chain:
        return "no epochs to compare"
    last = max(seg)
    if last < min(chain) or last > max(chain):
        return f"last epoch {last} outside the replica's epochs {min(chain)}..{max(chain)}"
    firsts = [e for e in seg if e >= min(chain)]
    if not firsts:
        return "no segment epoch within the replica's chain"
    first = min(firsts)
    for epoch, offset in sorted(seg.items()):
        if epoch < first:
            continue
        if epoch not in chain:
            return f"epoch {epoch} is not in the replica's leader-epoch chain"
        if epoch == first and any(k < epoch for k in chain) and offset < chain[epoch]:
            return (f"epoch {epoch} starts at {offset}, before the chain's start "
                    f"{chain[epoch]} of that epoch")
        if epoch == last:
            nxt = _higher(chain, epoch)
            if nxt is not None and end_offset > nxt[1] - 1:
                return (f"end offset {end_offset} is past epoch {epoch}'s end {nxt[1] - 1} "
                        "in the replica's chain")
        if epoch != last and _higher(chain, epoch) != _higher(seg, epoch):
            return f"the epoch after {epoch} differs from the replica's chain"
    if end_offset >= log_end_offset:
        return f"end offset {end_offset} is not below the log end offset {log_end_offset}"
    return None
