"""Kafka's acceptance rule for a remote segment against a partition's leader-epoch chain
(``RemoteLogManager.isRemoteSegmentWithinLeaderEpochs`` and ``buildFilteredLeaderEpochMap``),
written from reading Kafka's source."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


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


def epoch_for_offset(epochs: Mapping[int, int], offset: int) -> int | None:
    """``LeaderEpochFileCache.epochForOffset``: the epoch an offset was written in, by the
    entries in epoch order (an entry starting exactly at ``offset`` wins, the first such)."""
    previous = None
    for epoch, start in sorted(epochs.items()):
        if start == offset:
            return epoch
        if start > offset:
            return previous
        previous = epoch
    return previous


@dataclass(frozen=True)
class Seg:
    """What the index needs of one remote segment's metadata."""

    segment_id: str
    start: int
    end: int
    epochs: Mapping[int, int]

    def epoch_end(self, epoch: int) -> int:
        """The last offset of ``epoch`` inside the segment (``highestOffsetForEpoch``)."""
        later = [o for e, o in self.epochs.items() if e > epoch]
        return min(later) - 1 if later else self.end


@dataclass
class _EpochState:
    offset_to_id: dict[int, str] = field(default_factory=dict)
    unreferenced: set[str] = field(default_factory=set)
    highest: int | None = None


class EpochIndex:
    """Kafka's ``RemoteLogMetadataCache`` of one partition (``RemoteLogLeaderEpochState`` per
    leader epoch), fed the accepted state changes in metadata-log order. It decides which
    segment a read is served from and which segments the leader's clean-up lists; both
    follow Kafka's quirks: a segment finished later at the same start offset of an epoch
    replaces the earlier one in that epoch without listing it anywhere (it is then read and
    cleaned up by no code path, as seen on 4.3.1: docs/TIER.md)."""

    def __init__(self) -> None:
        self.segs: dict[str, Seg] = {}
        self._epochs: dict[int, _EpochState] = {}

    def _state(self, epoch: int) -> _EpochState:
        return self._epochs.setdefault(epoch, _EpochState())

    def started(self, seg: Seg) -> None:
        self.segs[seg.segment_id] = seg
        for epoch in seg.epochs:
            self._state(epoch).unreferenced.add(seg.segment_id)

    def finished(self, seg: Seg) -> None:
        self.segs[seg.segment_id] = seg
        for epoch, start in sorted(seg.epochs.items()):
            st, end = self._state(epoch), seg.epoch_end(epoch)
            # a later upload of the same epoch from an earlier offset supersedes those above
            while st.offset_to_id and max(st.offset_to_id) >= start and \
                    st.highest is not None and st.highest <= end:
                st.unreferenced.add(st.offset_to_id.pop(max(st.offset_to_id)))
            st.offset_to_id[start] = seg.segment_id   # replaces one at this start, unlisted
            st.unreferenced.discard(seg.segment_id)
            if st.highest is None or end > st.highest:
                st.highest = end

    def delete_started(self, seg: Seg) -> None:
        for epoch, start in seg.epochs.items():
            st = self._state(epoch)
            if st.offset_to_id.get(start) == seg.segment_id:
                del st.offset_to_id[start]
            st.unreferenced.add(seg.segment_id)

    def delete_finished(self, seg: Seg) -> None:
        for epoch in seg.epochs:
            self._state(epoch).unreferenced.discard(seg.segment_id)

    def lookup(self, epoch: int, offset: int) -> Seg | None:
        """``remoteLogSegmentMetadata(epoch, offset)``: the segment a read at ``offset`` in
        ``epoch`` is served from, or None (the fetch fails with OFFSET_OUT_OF_RANGE)."""
        st = self._epochs.get(epoch)
        keys = [k for k in (st.offset_to_id if st else {}) if k <= offset]
        if st is None or not keys:
            return None
        seg = self.segs[st.offset_to_id[max(keys)]]
        return seg if offset <= seg.epoch_end(epoch) else None

    def listed(self, segment_id: str) -> list[int]:
        """The epochs under which the clean-up finds the segment (``listRemoteLogSegments``)."""
        return sorted(e for e, st in self._epochs.items()
                      if segment_id in st.offset_to_id.values() or segment_id in st.unreferenced)

    def keys_above(self, offset: int) -> list[int]:
        return [k for st in self._epochs.values() for k in st.offset_to_id if k > offset]


@dataclass
class Walk:
    """What a leader with a given chain serves of ``[start, stop)`` from the remote tier."""

    #: (first, last, segment id): offsets served from the segment, in the leader's lineage
    served: list[tuple[int, int, str]] = field(default_factory=list)
    #: (first, last, segment id, the segment's epoch there, the chain's epoch there):
    #: offsets whose records a read is answered with from a segment of another lineage
    foreign: list[tuple[int, int, str, int | None, int | None]] = field(default_factory=list)
    #: (first, last): offsets no read is served for (OFFSET_OUT_OF_RANGE)
    gaps: list[tuple[int, int]] = field(default_factory=list)


def _foreign_ranges(seg: Seg, lo: int, chain: Mapping[int, int], log_end: int
                    ) -> list[tuple[int, int, int | None, int | None]]:
    """The parts of ``[lo, seg.end]`` whose epoch in the segment differs from the chain's (or
    that lie at or past the log end): another lineage's records."""
    s_eps, c_eps = filtered_epochs(seg.epochs), filtered_epochs(chain)
    cuts = sorted({lo, *(o for o in (*s_eps.values(), *c_eps.values(), log_end)
                         if lo < o <= seg.end)})
    out: list[tuple[int, int, int | None, int | None]] = []
    for i, a in enumerate(cuts):
        b = cuts[i + 1] - 1 if i + 1 < len(cuts) else seg.end
        mine, theirs = epoch_for_offset(s_eps, a), epoch_for_offset(c_eps, a)
        if mine != theirs or a >= log_end:
            if out and out[-1][1] == a - 1 and out[-1][2:] == (mine, theirs):
                out[-1] = (out[-1][0], b, mine, theirs)
            else:
                out.append((a, b, mine, theirs))
    return out


def serve_walk(index: EpochIndex, chain: Mapping[int, int], start: int, stop: int,
               log_end: int) -> Walk:
    """Kafka's remote read path (``RemoteLogManager.read``) walked over ``[start, stop)``
    (``stop``: the leader's first local offset): the read at offset o asks the index for the
    chain's epoch of o, and is answered from the segment found, from the batch holding o to
    as far as the fetch size reaches in that segment, with no check of the segment's lineage.
    A consumer going on past a segment's in-lineage part is served the other lineage's
    records (``foreign``); the walk goes on where the leader's own records are next asked."""
    walk = Walk()
    o = start
    while o < stop:
        epoch = epoch_for_offset(chain, o)
        seg = index.lookup(epoch, o) if epoch is not None else None
        if seg is None:
            nxt = min([v for v in (*chain.values(), *index.keys_above(o)) if v > o] + [stop])
            if walk.gaps and walk.gaps[-1][1] == o - 1:
                walk.gaps[-1] = (walk.gaps[-1][0], nxt - 1)
            else:
                walk.gaps.append((o, nxt - 1))
            o = nxt
            continue
        lo = max(o, seg.start)
        if lo > o:   # the batch found is the segment's first: the offsets below are skipped
            walk.gaps.append((o, lo - 1))
        foreign = _foreign_ranges(seg, lo, chain, log_end)
        first_foreign = foreign[0][0] if foreign else seg.end + 1
        if first_foreign > lo:
            walk.served.append((lo, first_foreign - 1, seg.segment_id))
        walk.foreign.extend((a, b, seg.segment_id, x, y) for a, b, x, y in foreign)
        o = max(first_foreign, o + 1)
    return walk


def deletion_threshold(seg: Seg, chain: Mapping[int, int]) -> int | None:
    """The lowest log start offset of the leader at which Kafka's clean-up
    (``cleanupExpiredRemoteLogSegments``) deletes a segment out of its lineage, or None when
    none on this chain does. The leader epoch cache is truncated at the log start offset L;
    the segment is deleted when the cache then starts at an epoch above all of the segment's
    (the unreferenced-segment clean-up), or starts at the segment's last epoch with L past
    the segment's end (``isSegmentBreachByLogStartOffset``, met while walking that epoch's
    segments). Retention alone never deletes it (it counts segments in lineage only); a
    segment Kafka's index no longer lists is never deleted (``EpochIndex.listed``)."""
    top = max(seg.epochs, default=None)
    if top is None or not chain:
        return None
    found = [v for v in sorted(chain.values()) if (epoch_for_offset(chain, v) or -1) > top]
    if top in chain:
        at = max(seg.end + 1, chain[top])
        if epoch_for_offset(chain, at) == top:
            found.append(at)
    return min(found, default=None)
