"""The quorum audit: Raft's rules checked across controllers' metadata logs (docs/QUORUM.md).

Each finding is evidence of something wrong; each answer about the committed prefix is proven
from the logs or says what evidence is missing. Rules (KafkaRaftClient / Raft paper):

* Log Matching: two logs holding a batch at the same offset with the same epoch hold the same
  bytes there and before. Equal (offset, epoch) with different bytes is a violation; different
  epochs at one offset is a divergence, the node with the lower epoch holds the stale suffix.
* Election Safety: one leader per epoch; two LEADER_CHANGE leaders of one epoch is split brain.
* A voter grants one vote per epoch: a ``quorum-state`` vote for V in epoch E while a
  LEADER_CHANGE of epoch E lists that voter among the granting voters of another leader
  contradicts it.
* Committed prefix (no high watermark is persisted): see :func:`committed_end`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from segtools.errors import SegtoolsError
from segtools.quorum.fingerprint import Fingerprint, fingerprint
from segtools.quorum.image import SnapshotCheck, check_snapshots
from segtools.quorum.known_bugs import BugMatch, bugs_for, match
from segtools.quorum.nodes import BatchInfo, ControllerNode, LeaderChange, VoterSet


@dataclass(frozen=True)
class Finding:
    kind: str          # divergence | log-matching-violation | split-brain | double-vote | ...
    message: str
    nodes: tuple[str, ...] = ()
    offset: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "nodes": list(self.nodes),
                "offset": self.offset}


#: ``schema_version`` of ``quorum --json`` (segtools/schemas/quorum.schema.json)
JSON_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Divergence:
    """The first offset where two logs differ (None: one is a prefix of the other)."""

    a: str
    b: str
    common_end: int              # both hold identical batches below this offset
    offset: int | None
    epoch_a: int | None
    epoch_b: int | None
    stale: str | None            # the node whose suffix from ``offset`` is not the newer leader's

    def to_json(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "identical_below": self.common_end,
                "first_divergence": self.offset, "epoch_a": self.epoch_a,
                "epoch_b": self.epoch_b, "stale_suffix_on": self.stale}


@dataclass(frozen=True)
class SurvivorChoice:
    """Keeping only ``node`` after losing a majority: what every other given log loses."""

    node: str
    log_end: int
    loses: tuple[tuple[str, int, int], ...]   # (other node, from offset, to offset exclusive)
    loses_committed: bool

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "log_end": self.log_end, "loses_committed": self.loses_committed,
                "loses": [{"node": n, "from": f, "to": t} for n, f, t in self.loses]}


@dataclass(frozen=True)
class ReplicaCheck:
    """A broker's ``__cluster_metadata-0`` (an observer's copy) against the controllers'."""

    broker: str
    node_id: int | None
    log_end: int
    reference: str            # the controller whose log shares the longest prefix with it
    identical_below: int
    first_divergence: int | None
    stale_suffix: bool        # the broker's batch there has the lower epoch
    missing_committed: int    # offsets proven committed that the broker does not hold yet

    def to_json(self) -> dict[str, Any]:
        return {"broker": self.broker, "node_id": self.node_id, "log_end": self.log_end,
                "reference": self.reference, "identical_below": self.identical_below,
                "first_divergence": self.first_divergence, "stale_suffix": self.stale_suffix,
                "missing_committed": self.missing_committed}


@dataclass
class QuorumAudit:
    nodes: list[ControllerNode]
    findings: list[Finding] = field(default_factory=list)
    divergences: list[Divergence] = field(default_factory=list)
    committed_end: int = 0
    committed_reason: str = ""
    voter_history: list[VoterSet] = field(default_factory=list)
    survivors: list[SurvivorChoice] = field(default_factory=list)
    fingerprints: list[Fingerprint] = field(default_factory=list)
    snapshot_checks: list[tuple[str, SnapshotCheck]] = field(default_factory=list)
    #: what the logs show that is not wrong in itself (a voter added again, a voter history
    #: that starts at a snapshot, an old leader appending after a newer epoch began)
    observations: list[Finding] = field(default_factory=list)
    known_bugs: list[BugMatch] = field(default_factory=list)
    #: brokers' metadata replicas compared with the controllers' logs
    replicas: list[ReplicaCheck] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": JSON_SCHEMA_VERSION,
            "nodes": [{"path": n.name, "node_id": n.node_id, "cluster_id": n.cluster_id,
                       "directory_id": n.directory_id, "log_start": n.log_start,
                       "log_end": n.log_end, "quorum_state": n.quorum_state,
                       "snapshots": [[s.end_offset, s.epoch] for s in n.snapshots],
                       "problems": n.problems} for n in self.nodes],
            "findings": [f.to_json() for f in self.findings],
            "divergences": [d.to_json() for d in self.divergences],
            "committed": {"proven_below": self.committed_end, "reason": self.committed_reason},
            "voter_history": [{"offset": v.offset, "source": v.source, "node": v.node,
                               "voters": [[i, d] for i, d in v.voters]}
                              for v in self.voter_history],
            "survivors": [s.to_json() for s in self.survivors],
            "fingerprints": [f.to_json() for f in self.fingerprints],
            "snapshot_replay": [{"node": n, "snapshot": c.path, "end_offset": c.end_offset,
                                 "entities": c.entities, "checked": c.checked,
                                 "reason": c.reason, "reproduced": c.checked and
                                 c.first_difference is None,
                                 "first_difference": None if c.first_difference is None
                                 else repr(c.first_difference)}
                                for n, c in self.snapshot_checks],
            "observations": [o.to_json() for o in self.observations],
            "known_bugs": [m.to_json() for m in self.known_bugs],
            "broker_replicas": [r.to_json() for r in self.replicas],
        }


def _by_offset(batches: Sequence[BatchInfo]) -> dict[int, BatchInfo]:
    return {b.base_offset: b for b in batches}


def diverge(a: ControllerNode, b: ControllerNode) -> tuple[Divergence, list[Finding]]:
    """Walk both logs from the later of their starts; the first differing batch."""
    findings: list[Finding] = []
    bb = _by_offset(b.batches)
    start = max(a.log_start, b.log_start)
    common = start
    for x in a.batches:
        if x.last_offset < start:
            continue
        y = bb.get(x.base_offset)
        if y is None:
            if x.base_offset >= b.log_end:
                break       # b ends here: a prefix, no divergence
            # b holds this offset inside another batch: batch boundaries differ
            return Divergence(a.name, b.name, common, x.base_offset, x.epoch,
                              b.epoch_at(x.base_offset), _stale(a, b, x.epoch,
                                                                b.epoch_at(x.base_offset))), findings
        if x.digest == y.digest:
            common = x.last_offset + 1
            continue
        if x.epoch == y.epoch:
            findings.append(Finding(
                "log-matching-violation",
                f"offset {x.base_offset} epoch {x.epoch}: {a.name} ({x.path} byte {x.position}) "
                f"and {b.name} ({y.path} byte {y.position}) hold different bytes under the same "
                "offset and epoch (Log Matching broken: corruption or a mutated copy)",
                (a.name, b.name), x.base_offset))
        return Divergence(a.name, b.name, common, x.base_offset, x.epoch, y.epoch,
                          _stale(a, b, x.epoch, y.epoch)), findings
    return Divergence(a.name, b.name, common, None, None, None, None), findings


def _stale(a: ControllerNode, b: ControllerNode, ea: int | None, eb: int | None) -> str | None:
    if ea is None or eb is None or ea == eb:
        return None
    return a.name if ea < eb else b.name


def _history_order(v: VoterSet) -> tuple[int, bool, str]:
    # a snapshot ending at E holds the voter set in force before E: it comes before a
    # VotersRecord written at offset E itself
    return v.offset, v.source == "log", v.node


def voters_at(history: Sequence[VoterSet], nodes: Sequence[ControllerNode],
              offset: int) -> tuple[set[int] | None, str]:
    """The voter set in force at ``offset``: the last VotersRecord before it, else the static
    voters of the last LEADER_CHANGE before it (kraft.version 0), else unknown."""
    vs = [v for v in history if v.offset <= offset]
    if vs:
        last = max(vs, key=_history_order)
        return {i for i, _ in last.voters}, f"VotersRecord at offset {last.offset} ({last.source})"
    lcs = [lc for n in nodes for lc in n.leader_changes if lc.offset <= offset and lc.voters]
    if lcs:
        last_lc = max(lcs, key=lambda lc: lc.offset)
        return set(last_lc.voters), f"LEADER_CHANGE voters at offset {last_lc.offset}"
    return None, "no VotersRecord or LEADER_CHANGE voters before it"


def static_voters(n: ControllerNode) -> tuple[int, ...] | None:
    """The voter ids a node's ``quorum-state`` lists (``currentVoters``: written only with
    data_version 0, by a node running the static ``controller.quorum.voters``); None otherwise."""
    cv = (n.quorum_state or {}).get("currentVoters")
    if not isinstance(cv, list) or not cv:
        return None
    ids = [v.get("voterId") for v in cv if isinstance(v, dict)]
    return tuple(sorted(i for i in ids if isinstance(i, int)))


def committed_end(nodes: Sequence[ControllerNode],
                  history: Sequence[VoterSet]) -> tuple[int, str, tuple[str, ...]]:
    """The end (exclusive) of the prefix proven committed, why, and the nodes whose logs hold
    that committed prefix.

    Two proofs. (1) A snapshot ending at X holds only committed records: X-1 is committed.
    (2) A majority of the voter set in force holds byte-identical batches through an offset
    whose batch epoch is the highest epoch of any batch given: every later leader needs a vote
    from that majority, so its log holds the prefix (Raft 5.4). When a voter is not given it
    may hold batches of a newer epoch (Raft figure 8), so the proof then also needs every
    holder's quorum-state to know no epoch newer than that. Nodes not given count as holding
    nothing.
    """
    best, why, held = 0, "nothing proven committed", tuple[str, ...]()
    for n in nodes:
        for s in n.snapshots:
            if s.end_offset > best:
                best, why, held = s.end_offset, f"snapshot {s.path} ends at {s.end_offset}", ()
    # a snapshot's own node applied (so holds, if its log reaches there) only committed records
    held = tuple(n.name for n in nodes if any(s.end_offset >= best for s in n.snapshots)) if best else ()
    # highest epoch on disk (batches, snapshots) and the highest any node knows (+quorum-state)
    top_log = max((max([b.epoch for b in n.batches] + [s.epoch for s in n.snapshots],
                       default=-1) for n in nodes), default=-1)
    top_known = max((n.max_epoch() for n in nodes), default=-1)
    ids = {n.node_id: n for n in nodes if n.node_id is not None}
    common: dict[tuple[str, str], int] = {}
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            c = diverge(a, b)[0].common_end
            common[(a.name, b.name)] = common[(b.name, a.name)] = c
    cand = sorted({b.last_offset for n in nodes for b in n.batches if b.epoch == top_log},
                  reverse=True)
    # nodes running static voters (quorum-state currentVoters) that differ from the
    # VotersRecords count a majority of their own set: the proof must hold in every view
    statics = sorted({sv for n in nodes if (sv := static_voters(n)) is not None})

    def majority(voters: set[int], end: int) -> list[ControllerNode] | None:
        holders = [ids[v] for v in voters if v in ids and ids[v].epoch_at(end) == top_log]
        for n in holders:
            same = [m for m in holders if m is n or common[(n.name, m.name)] > end]
            if 2 * len(same) > len(voters):
                return same
        return None

    for end in cand:
        if end + 1 <= best:
            break
        voters, src = voters_at(history, nodes, end)
        if not voters:
            continue
        same = majority(voters, end)
        others = [set(v) for v in statics if set(v) != voters]
        if same is None or any(majority(v, end) is None for v in others):
            continue
        absent = sorted({v for view in [voters, *others] for v in view if v not in ids})
        if absent:
            # a voter not given may hold a newer epoch's batches (Raft figure 8): only
            # the holders' quorum-state can rule out a newer leader
            blind = [m.name for m in same if m.quorum_state is None]
            if blind:
                return best, why + (f"; cannot tell past it: voters {absent} not given "
                                    f"and {', '.join(blind)} have no quorum-state"), held
            if top_known > top_log:
                return best, why + (f"; cannot tell past it: voters {absent} not given "
                                    f"and a quorum-state knows epoch {top_known}, newer "
                                    f"than any batch ({top_log})"), held
        also = "".join(f"; also a majority of the static voters {sorted(v)} (quorum-state)"
                       for v in others)
        return end + 1, (f"{len(same)} of {len(voters)} voters ({src}: "
                         f"{', '.join(m.name for m in same)}) hold identical batches "
                         f"through offset {end} of epoch {top_log}, the highest epoch "
                         + ("on any voter's disk" if not absent else "shown") + also), \
            tuple(m.name for m in same)
    return best, why, held


def _snapshot_oracle(n: ControllerNode, out: QuorumAudit) -> None:
    """Each snapshot reproduced by replay, and its epoch equal to the log's at its offset."""
    logs = sorted({b.path for b in n.batches})
    try:
        checks = check_snapshots([(s.path, s.end_offset) for s in n.snapshots], logs,
                                 n.log_start)
    except SegtoolsError as exc:
        n.problems.append(f"snapshot replay stopped: {exc}")
        return
    for c in checks:
        out.snapshot_checks.append((n.name, c))
        if c.checked and c.first_difference is not None:
            key, want, got = c.first_difference[0], c.first_difference[2], c.first_difference[1]
            out.findings.append(Finding(
                "snapshot-mismatch", f"{c.path}: replaying the previous image and the log to "
                f"offset {c.end_offset} does not reproduce it; first entity differing: {key}: "
                f"snapshot {want}, replay {got}", (n.name,), c.end_offset))
    for s in n.snapshots:
        e = n.epoch_at(s.end_offset - 1) if s.end_offset > 0 else None
        if e is not None and e != s.epoch:
            out.findings.append(Finding(
                "snapshot-mismatch", f"{s.path}: snapshot epoch {s.epoch}, but the log's batch "
                f"at offset {s.end_offset - 1} has epoch {e}", (n.name,), s.end_offset))


def audit(nodes: Sequence[ControllerNode],
          brokers: Sequence[ControllerNode] = ()) -> QuorumAudit:
    """Run every check over the given controllers; ``brokers``' metadata replicas are
    compared with them (they take no part in the quorum's answers)."""
    out = QuorumAudit(list(nodes))
    out.fingerprints = [fingerprint(n) for n in nodes]   # before problems become findings
    for n in nodes:
        _snapshot_oracle(n, out)
    for n in nodes:
        out.findings.extend(Finding("evidence", p, (n.name,)) for p in n.problems)
    # --- formatting: cluster ids and bootstrap voters
    cids = {n.cluster_id for n in nodes if n.cluster_id}
    if len(cids) > 1:
        out.findings.append(Finding("split-at-formatting", "cluster ids differ: " + "; ".join(
            f"{n.name}={n.cluster_id}" for n in nodes), tuple(n.name for n in nodes)))
    boots = {n.name: n.bootstrap_voters for n in nodes if n.bootstrap_voters is not None}
    if len(set(boots.values())) > 1:
        out.findings.append(Finding(
            "split-at-formatting",
            "the bootstrap snapshots (0-0.checkpoint) name different voter sets, two quorums "
            "can elect leaders independently: " + "; ".join(
                f"{k}: {sorted(i for i, _ in v)}" for k, v in boots.items()), tuple(boots)))
    # a node that ran a static quorum (kraft.version 0: LEADER_CHANGE records, never a
    # VotersRecord) beside one formatted with a dynamic voter set
    static = [n for n in nodes if n.leader_changes and not n.voter_sets]
    if boots and static and len(cids) <= 1:
        out.findings.append(Finding(
            "split-at-formatting",
            f"{', '.join(n.name for n in static)} ran a static quorum (LEADER_CHANGE records "
            "and no VotersRecord: controller.quorum.voters) while "
            f"{', '.join(boots)} bootstrapped a dynamic voter set (0-0.checkpoint) under the "
            "same cluster id: two quorums", tuple(n.name for n in static) + tuple(boots)))
    # a node running static voters (quorum-state currentVoters, data_version 0) beside a
    # dynamic voter set bootstrapped as another set: a 0-0.checkpoint's, or a VotersRecord in
    # a log's first batch (the first leader copies its bootstrap there). An upgrade from
    # static voters writes its VotersRecord later, and with the static set: not this.
    boot_sets: dict[tuple[int, ...], list[str]] = {}
    for n in nodes:
        first = n.batches[0] if n.batches and n.batches[0].base_offset == 0 else None
        at_start = [v.voters for v in n.voter_sets if v.source == "log" and first is not None
                    and v.offset <= first.last_offset]
        for vs in ([n.bootstrap_voters] if n.bootstrap_voters is not None else []) + at_start:
            names = boot_sets.setdefault(tuple(sorted(i for i, _ in vs)), [])
            if n.name not in names:
                names.append(n.name)
    for n in nodes:
        sv = static_voters(n)
        other = {v: k for v, k in boot_sets.items() if v != sv}
        if sv is not None and other and len(cids) <= 1:
            out.findings.append(Finding(
                "split-at-formatting",
                f"{n.name} (node {n.node_id}) ran the static voter set {list(sv)} (quorum-state "
                "currentVoters, data_version 0: controller.quorum.voters) while a dynamic voter "
                "set was bootstrapped as " + "; ".join(
                    f"{list(v)} (on {', '.join(k)})" for v, k in sorted(other.items()))
                + " under the same cluster id: the dynamic quorum's leader commits with a "
                "majority of its own voters, this node counts a majority of its static set "
                "(two quorums)", (n.name, *sorted({x for k in other.values() for x in k}))))
    # --- Log Matching, pairwise
    for i, a in enumerate(nodes):
        for b in nodes[i + 1:]:
            d, fs = diverge(a, b)
            out.divergences.append(d)
            out.findings.extend(fs)
            if d.offset is not None:
                out.findings.append(Finding(
                    "divergence",
                    f"{a.name} and {b.name} are identical below offset {d.common_end} and differ "
                    f"from offset {d.offset} (epoch {d.epoch_a} vs {d.epoch_b})"
                    + (f"; {d.stale} holds the stale suffix, truncated when it follows the newer "
                       "leader" if d.stale else ""), (a.name, b.name), d.offset))
    # --- one leader per epoch
    leaders: dict[int, dict[int, list[LeaderChange]]] = {}
    for n in nodes:
        for lc in n.leader_changes:
            leaders.setdefault(lc.epoch, {}).setdefault(lc.leader_id, []).append(lc)
    for epoch, by_leader in sorted(leaders.items()):
        if len(by_leader) > 1:
            out.findings.append(Finding(
                "split-brain", f"epoch {epoch} has LEADER_CHANGE records naming leaders "
                + ", ".join(f"{lid} (on {sorted({lc.node for lc in lcs})})"
                            for lid, lcs in sorted(by_leader.items())),
                tuple(sorted({lc.node for lcs in by_leader.values() for lc in lcs}))))
    # --- double votes: quorum-state vote vs granting voters
    for n in nodes:
        qs = n.quorum_state or {}
        voted, qepoch = qs.get("votedId", -1), qs.get("leaderEpoch")
        if (n.node_id is None or not isinstance(voted, int) or voted < 0
                or not isinstance(qepoch, int) or qepoch not in leaders):
            continue
        for lid, lcs in leaders[qepoch].items():
            if lid != voted and any(n.node_id in lc.granting_voters for lc in lcs):
                out.findings.append(Finding(
                    "double-vote", f"{n.name} (node {n.node_id}): quorum-state votes for {voted} "
                    f"in epoch {qepoch}, but the LEADER_CHANGE of epoch {qepoch} lists it among "
                    f"the voters granting leader {lid} (a double vote, or a mutated quorum-state)",
                    (n.name,)))
    # --- voter history and directory ids
    hist = sorted((v for n in nodes for v in n.voter_sets), key=_history_order)
    seen: set[tuple[int, tuple[tuple[int, str], ...]]] = set()
    for v in hist:
        if (v.offset, v.voters) not in seen:
            seen.add((v.offset, v.voters))
            out.voter_history.append(v)
    by_id = {n.node_id: n for n in nodes if n.node_id is not None}
    for v in out.voter_history[-1:]:
        for vid, did in v.voters:
            owner = by_id.get(vid)
            if owner is not None and owner.directory_id and owner.directory_id != did:
                out.findings.append(Finding(
                    "voter-directory", f"the voter set at offset {v.offset} ({v.source}) names "
                    f"node {vid} with directory id {did}, but {owner.name} has directory.id "
                    f"{owner.directory_id}: that voter's disk was replaced or reformatted",
                    (owner.name,), v.offset))
    out.committed_end, out.committed_reason, holders = committed_end(nodes, out.voter_history)
    # --- which survivor to keep
    for n in nodes:
        loses = []
        for m in nodes:
            if m is n:
                continue
            d, _ = diverge(n, m)
            cut = d.offset if d.offset is not None else d.common_end
            if m.log_end > cut:
                loses.append((m.name, cut, m.log_end))
        # committed records are lost when the kept log lacks part of the committed prefix: it
        # ends before it, or it differs from a node holding it below its end
        out.survivors.append(SurvivorChoice(
            n.name, n.log_end, tuple(loses),
            n.log_end < out.committed_end
            or any(f < out.committed_end and m in holders for m, f, _ in loses)))
    _observe(nodes, out)
    _match_bugs(nodes, out)
    # a replica is compared with the logs proven to hold the committed prefix, when known
    refs = [n for n in nodes if n.name in holders] or list(nodes)
    for b in brokers:
        _compare_replica(b, refs, out)
    return out


def _compare_replica(b: ControllerNode, nodes: Sequence[ControllerNode],
                     out: QuorumAudit) -> None:
    """A broker's metadata replica: of ``nodes`` (the controllers holding the committed
    prefix, when known), the log it shares the longest prefix with, where they part, and
    whether the broker holds all of the proven committed prefix. Its own snapshots go
    through the replay oracle like a controller's."""
    _snapshot_oracle(b, out)
    out.findings.extend(Finding("evidence", p, (b.name,)) for p in b.problems)
    if not nodes:
        return
    pairs = [(diverge(b, c), c) for c in nodes]
    (d, same_epoch), ref = max(pairs, key=lambda p: (p[0][0].common_end, p[1].log_end))
    out.findings.extend(same_epoch)          # equal offset and epoch, other bytes
    held = max([b.log_end] + [s.end_offset for s in b.snapshots])
    stale = d.offset is not None and d.stale == b.name
    out.replicas.append(ReplicaCheck(b.name, b.node_id, held, ref.name, d.common_end, d.offset,
                                     stale, max(0, out.committed_end - held)))
    if d.offset is not None and not same_epoch:
        who = (f"{b.name} holds the stale suffix (an older leader's batches; truncated when "
               "it fetches again, brokers apply only committed records)" if stale
               else f"{ref.name} holds the older epoch there: the broker saw a newer leader's "
               "batches than any controller given")
        out.observations.append(Finding(
            "replica-diverges", f"broker replica {b.name} and {ref.name} are identical below "
            f"offset {d.common_end} and differ from offset {d.offset} (epoch {d.epoch_a} vs "
            f"{d.epoch_b}); {who}", (b.name, ref.name), d.offset))


def _observe(nodes: Sequence[ControllerNode], out: QuorumAudit) -> None:
    """Voters added again, voter histories cut by a snapshot, old leaders appending late."""
    # each node's own history (its log and snapshots are one line of events): the nodes of
    # a split quorum hold different sets at one offset, merged they would seem to flip
    rejoined: dict[tuple[int, str], tuple[int, int]] = {}
    for n in nodes:
        was: dict[tuple[int, str], list[int]] = {}  # voter -> offsets where its presence flips
        prev: set[tuple[int, str]] = set()
        for v in sorted(n.voter_sets, key=_history_order):
            cur = set(v.voters)
            for key in cur ^ prev:
                was.setdefault(key, []).append(v.offset)
            prev = cur
        for key, flips in was.items():
            if len(flips) >= 3:        # in, out, in again
                rejoined.setdefault(key, (flips[1], flips[2]))
    for (vid, did), (left, back) in sorted(rejoined.items()):
        out.observations.append(Finding(
            "voter-rejoined", f"voter {vid} (directory {did}) left the voter set at offset "
            f"{left} and is in it again from offset {back}: an operator's "
            "add-controller, or auto-join adding a removed controller", (), back))
    for n in nodes:
        if n.voter_sets and n.log_start > 0:
            out.observations.append(Finding(
                "voter-history-truncated", f"{n.name}: the log starts at offset {n.log_start}; "
                "before it only the snapshot's voter set (the one in force) is known, a voter "
                "removed earlier leaves no trace on this node", (n.name,), n.log_start))
    by_name = {n.name: n for n in nodes}
    for d in out.divergences:
        if d.stale is None or d.offset is None:
            continue
        old = by_name[d.stale]
        new = by_name[d.b if d.stale == d.a else d.a]
        new_epoch = max(d.epoch_a or 0, d.epoch_b or 0)
        began = min((b.max_timestamp for b in new.batches if b.epoch == new_epoch
                     and b.max_timestamp >= 0), default=None)
        late = max((b.max_timestamp for b in old.batches if b.base_offset >= d.offset),
                   default=-1)
        if began is not None and late > began:
            out.observations.append(Finding(
                "stale-leader-appended", f"{old.name} appended in epoch "
                f"{min(d.epoch_a or 0, d.epoch_b or 0)} until {late} ms, {late - began} ms "
                f"after {new.name}'s epoch {new_epoch} began ({began} ms): a leader without a "
                "majority resigns after 1.5 x controller.quorum.fetch.timeout.ms (default "
                "2000 ms) in releases with the fix; longer points at a leader that did not",
                (old.name,), d.offset))


def _match_bugs(nodes: Sequence[ControllerNode], out: QuorumAudit) -> None:
    by_name = {n.name: n for n in nodes}
    prints = {f.node: f for f in out.fingerprints}
    for mark in out.findings + out.observations:
        for bug in bugs_for(mark.kind):
            involved = [by_name[x] for x in mark.nodes if x in by_name] or list(nodes)
            if mark.kind in ("split-at-formatting", "split-brain"):
                # the act is the formatting: the files kafka-storage format wrote date it
                dating = [fingerprint(n, bootstrap_only=True) for n in involved]
            else:
                dating = [prints[n.name] for n in involved if n.name in prints]
            out.known_bugs.append(match(bug, mark.kind, [n.name for n in involved], dating))
