"""Iteration order of Scala 2.13's ``mutable.HashMap`` (Kafka 3.x's kafka-dump-log) and of
Java's ``java.util.HashMap`` (Kafka 4.x's) for String keys.

kafka-dump-log keeps its end-of-run summaries (index mismatches, time-index errors,
non-consecutive offsets) in ``mutable.Map[String, ...]`` keyed by absolute path and prints them
in the map's iteration order. With several files that order is neither insertion nor sorted
order; reproducing it keeps multi-file stderr byte-identical. Model (checked against
scala-library 2.13 itself in the tests): a table of 16 buckets that doubles whenever a put
finds ``size + 1 >= 0.75 * buckets`` (updates of existing keys included); bucket =
``improved & (buckets - 1)`` with ``improved = h ^ (h >>> 16)`` of ``String.hashCode``; nodes
within a bucket ordered by signed improved hash, ties in insertion order.
"""

from __future__ import annotations

from collections.abc import Iterable

from segtools.primitives.java_hash import int32, java_string_hash


def _improved(key: str) -> int:
    h = java_string_hash(key) & 0xFFFFFFFF
    return h ^ (h >> 16)


def scala_hashmap_order(puts: Iterable[str]) -> list[str]:
    """Distinct keys in the order a Scala 2.13 mutable.HashMap built by these ``put`` calls
    (in this order, repeats included) iterates them."""
    buckets = 16
    first_put: dict[str, int] = {}
    for key in puts:
        if len(first_put) + 1 >= int(buckets * 0.75):
            buckets *= 2
        first_put.setdefault(key, len(first_put))
    mask = buckets - 1
    return sorted(first_put, key=lambda k: (_improved(k) & mask, int32(_improved(k)),
                                            first_put[k]))


def java_hashmap_order(calls: Iterable[str]) -> list[str]:
    """Distinct keys in the order a ``java.util.HashMap`` filled by these ``computeIfAbsent``
    calls (in this order, hits included) iterates them (Kafka 4.x's DumpLogSegments).

    ``computeIfAbsent`` first resizes (16 buckets, doubled) when the size already exceeds
    0.75 of the buckets, hits included, then links a new key at the head of its bucket; a
    bucket that reaches 8 keys while the table is under 64 buckets doubles it again
    (``treeifyBin``); resizing splits buckets keeping their order. So: bucket =
    ``(h ^ (h >>> 16)) & (buckets - 1)``, newest first within a bucket. (Bins of 8 or more
    keys in a table of 64+ buckets become red-black trees, whose order is not modelled: it
    takes 8 colliding paths.) Checked against java.util.HashMap in tests/realkafka."""
    first_put: dict[str, int] = {}
    improved: dict[str, int] = {}
    buckets = 16
    bins: dict[int, int] = {}

    def rebin() -> dict[int, int]:
        counts: dict[int, int] = {}
        for h in improved.values():
            counts[h & (buckets - 1)] = counts.get(h & (buckets - 1), 0) + 1
        return counts

    for key in calls:
        if len(first_put) > buckets * 3 // 4:
            buckets *= 2
            bins = rebin()
        if key in first_put:
            continue
        first_put[key] = len(first_put)
        h = improved[key] = _improved(key)
        b = h & (buckets - 1)
        bins[b] = bins.get(b, 0) + 1
        if bins[b] >= 8 and buckets < 64:  # 7 nodes were there before this one
            buckets *= 2
            bins = rebin()
    mask = buckets - 1
    return sorted(first_put, key=lambda k: (improved[k] & mask, -first_put[k]))


def java_hashmap_order_is_modelled(keys: Iterable[str]) -> bool:
    """False when ``java_hashmap_order`` may be wrong for these keys: 8 or more of them share a
    bucket of a table of 64+ buckets, which Java turns into a red-black tree bin."""
    distinct = set(keys)
    size = 64
    while len(distinct) > size * 3 // 4:
        size *= 2
    for buckets in (64, size):
        counts: dict[int, int] = {}
        for k in distinct:
            b = _improved(k) & (buckets - 1)
            counts[b] = counts.get(b, 0) + 1
        if counts and max(counts.values()) >= 8:
            return False
    return True
