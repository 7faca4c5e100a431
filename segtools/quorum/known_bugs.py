"""Known Kafka bugs that leave the marks the quorum audit finds, matched by the release
fingerprint (docs/QUORUM.md "Known Kafka bugs").

Each row names the bug, its links, the releases it affects and where those releases were read.
A match says a finding *may* be that bug: the affected range contains what the fingerprint
allows for the files that date the act. A row is excluded only when those files prove a release
at or after the fix (a lower bound: no software downgrade after the act is assumed, as the
fingerprint assumes). A match never replaces the finding; it says where to read further.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from segtools.quorum.fingerprint import Fingerprint, release_key


@dataclass(frozen=True)
class KnownBug:
    key: str
    title: str
    links: tuple[str, ...]
    affected_from: str            # the first release affected
    fixed_in: str | None          # the first release fixed (None: not fixed)
    versions_source: str          # where the affected/fixed releases were read
    marks: tuple[str, ...]        # audit finding/observation kinds it can leave


KNOWN_BUGS: tuple[KnownBug, ...] = (
    KnownBug(
        "KAFKA-19489",
        "kafka-storage format accepted --standalone or --initial-controllers on a node whose "
        "controller.quorum.voters is set: that node bootstraps its own dynamic voter set while "
        "the others follow the static one, two quorums under one cluster id",
        ("https://issues.apache.org/jira/browse/KAFKA-19489",
         "https://github.com/apache/kafka/pull/20136"),
        "3.9", "4.2",
        "--standalone/--initial-controllers first in 3.9.0 (KAFKA-16518, apache/kafka commit "
        "129e7fb, tags 3.9.0-rc0 on); the refusal of PR 20136 (merged 2025-07-09) is in the "
        "StorageTool of the 4.2.0 jar and not of 4.1.0 (measured: 4.1.0 formats such a node, "
        "4.2.0 refuses it)",
        ("split-at-formatting", "split-brain")),
    KnownBug(
        "KAFKA-19850",
        "with controller.quorum.auto.join.enable a removed controller joins the voter set "
        "again; a snapshot holds only the voter set in force, so after a restart the leader "
        "no longer knows the node was removed (apache/kafka PR 21025 documents it: shut a "
        "controller down before removing it)",
        ("https://issues.apache.org/jira/browse/KAFKA-19850",
         "https://github.com/apache/kafka/pull/20859",
         "https://github.com/apache/kafka/pull/21025"),
        "4.2", None,
        "controller.quorum.auto.join.enable is in QuorumConfig of the kafka-raft 4.2.0, 4.3.1 "
        "and 4.4.0 jars, not of 4.0.0 or 4.1.0; PR 20859 (the fix) was closed unmerged, PR "
        "21025 (documentation) merged",
        ("voter-rejoined", "voter-history-truncated")),
    KnownBug(
        "KAFKA-15489",
        "a KRaft leader that no longer heard from a majority did not resign: it kept "
        "appending in its old epoch after a newer leader was elected (split brain until it "
        "learnt of the new epoch)",
        ("https://issues.apache.org/jira/browse/KAFKA-15489",
         "https://github.com/apache/kafka/pull/14428"),
        "3.3", "3.7",
        "the fix (apache/kafka commit 37416e1, PR 14428) is in the tag 3.7.0 and not in the "
        "3.6 branch (3.6.2); 3.3 is the first KRaft release of the fingerprint table",
        ("stale-leader-appended",)),
)


@dataclass(frozen=True)
class BugMatch:
    bug: KnownBug
    mark: str                     # the finding/observation kind matched
    nodes: tuple[str, ...]
    verdict: str                  # "possible" | "excluded"
    why: str

    def to_json(self) -> dict[str, Any]:
        return {"bug": self.bug.key, "links": list(self.bug.links), "mark": self.mark,
                "nodes": list(self.nodes), "verdict": self.verdict, "why": self.why,
                "affected": f"{self.bug.affected_from} to "
                            + (f"before {self.bug.fixed_in}" if self.bug.fixed_in
                               else "the newest release (not fixed)")}


def match(bug: KnownBug, mark: str, nodes: Sequence[str],
          dating: Sequence[Fingerprint]) -> BugMatch:
    """``bug`` against a mark on ``nodes``; ``dating`` are the fingerprints of the files that
    date the act (the bootstrap files for formatting, the node's dir otherwise)."""
    lows = [f.release_min for f in dating if f.release_min is not None]
    low = max(lows, key=release_key) if lows else None
    if bug.fixed_in is not None and low is not None and \
            release_key(low) >= release_key(bug.fixed_in):
        return BugMatch(bug, mark, tuple(nodes), "excluded",
                        f"written by Kafka {low} or later; {bug.key} was fixed in "
                        f"{bug.fixed_in}")
    span = f"affects {bug.affected_from}" + (f" to before {bug.fixed_in}" if bug.fixed_in
                                              else " and later (not fixed)")
    dated = (f"written by Kafka {low} or later" if low is not None
             else "the release cannot be told")
    return BugMatch(bug, mark, tuple(nodes), "possible", f"{bug.key} {span}; {dated}")


def bugs_for(mark: str) -> list[KnownBug]:
    """The rows that can leave ``mark``."""
    return [b for b in KNOWN_BUGS if mark in b.marks]
