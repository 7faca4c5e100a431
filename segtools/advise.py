"""`segtools advise`: which replica to elect for an offline partition, and what each choice
costs (docs/CONTRACT.md section 11).

For each candidate leader C of a partition, the records every other replica F would lose
when it follows C. A follower truncates by the epoch lineage, not by log length
(KIP-101/KIP-279: the follower asks the leader for the end offset of its latest epoch,
``OffsetsForLeaderEpoch``, truncates there and repeats; AbstractFetcherThread /
LeaderEpochFileCache.endOffsetFor). Its result is the first offset at which F's record
(offset, leader epoch) is not C's; everything F holds from there on goes, unless C holds the
same record elsewhere (same idempotent producer id and sequence, or same key, value and
headers: a producer retry), which is not lost.

Each lost record is ``committed`` (below the high-watermark checkpoint of a replica holding
it, or acked with acks=all in ``--acks``), ``acked`` (acked with acks=1/0 in ``--acks``) or
``unacknowledged``; without ``--acks``, records above every high watermark are ``uncommitted``
(acked or not is unknown). Candidates are ranked by committed, then acked, then all records
lost, then the larger log. The commands make the choice happen:
``kafka-reassign-partitions`` puts C first in the replica list (an election picks the first
live replica in that order), then ``kafka-leader-election`` elects it (``unclean`` when C is
not in the ISR any more, which an offline partition's survivors usually are not).

With the controller's KRaft metadata log (``metadata_log``, or found next to the broker dirs
as `segtools compare` finds it) the advice knows the partition's last leader epoch, ISR, ELR
and assignment: a candidate in the last ISR or ELR is elected cleanly (the controller does it
when that broker starts, or a preferred election after a reassignment that puts it first);
any other needs an unclean election, which the controller only makes while no ISR/ELR member
is alive (PartitionChangeBuilder.electLeader in Kafka's metadata module).

Never optimistic (issue 21): each partition's verdict is ``safe`` only when proven (the
metadata log names the replica set, every replica's dir is given, the best candidate loses
nothing), ``lost`` when every replica is given and even the best loses records, else ``cannot
tell`` naming the missing evidence (a replica's dir, above all the leader's or a last ISR/ELR
member's, a given dir older than an epoch its broker led, or the metadata log itself); costs
are then lower bounds. A cost also counts acked records (``--acks``) no given replica holds
and records at the same offset and leader epoch with different data (a conflict, which
Kafka's truncation never repairs). Printed reassignments list the whole replica set, or carry
a placeholder for the replicas a missing metadata log leaves unknown.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import InputError

__all__ = ["CANNOT_TELL", "LOST", "SAFE", "CandidateCost", "LostByElection", "MetadataState",
           "MissingEvidence", "PartitionAdvice", "advise"]


@dataclass
class MetadataState:
    """The partition at the end of the controller's metadata log."""

    leader: int | None
    leader_epoch: int
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    replicas: tuple[int, ...]
    source: str
    #: (leader epoch, leader) of every election in the log
    leaders: tuple[tuple[int, int], ...] = ()
    #: (broker, broker epoch) of each broker's last RegisterBrokerRecord in the log
    registrations: tuple[tuple[int, int], ...] = ()

    def election_for(self, broker: int) -> str:
        """``clean`` for a member of the last ISR or ELR (KIP-966: with an empty ISR an ELR
        member is a clean leader), else ``unclean``."""
        return "clean" if broker in self.isr or broker in self.elr else "unclean"

    def to_json(self) -> dict[str, Any]:
        return {"leader": self.leader, "leader_epoch": self.leader_epoch, "isr": list(self.isr),
                "elr": list(self.elr), "last_known_elr": list(self.last_known_elr),
                "replicas": list(self.replicas), "metadata_log": self.source}


@dataclass
class LostByElection:
    broker: int | None    # the replica holding it; None: known only from --acks
    offset: int
    leader_epoch: int
    klass: str            # committed | acked | unacknowledged | uncommitted
    #: ``replica``: a given replica holds it; ``acks``: acknowledged to a producer (--acks) and
    #: held by no given replica
    source: str = "replica"
    #: the candidate holds a different record at the same offset and leader epoch (a
    #: log-matching violation: the follower's truncation keeps its own, the logs never agree)
    conflict: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"broker": self.broker, "offset": self.offset, "leader_epoch": self.leader_epoch,
                "class": self.klass, "source": self.source, "conflict": self.conflict}


#: MissingEvidence.role of acks given without leader epochs (segtools/forensics/acks.py)
ACK_EPOCHS = "ack leader epochs"


@dataclass
class MissingEvidence:
    """A replica whose log dir is not among the inputs, or the replica set itself (``broker``
    None: no metadata log), and what it would decide."""

    broker: int | None
    #: leader | last ISR | last ELR | replica (not among the inputs) | given dir behind the
    #: metadata log (given, but older than an epoch its broker led) | replica set (no metadata log)
    role: str
    decides: str

    def describe(self) -> str:
        if self.role == ACK_EPOCHS:
            return f"the leader epochs of the acknowledgements (docs/ACKS.md): {self.decides}"
        if self.broker is None:
            return f"the controller's metadata log (__cluster_metadata-0): {self.decides}"
        return f"broker {self.broker}'s log dir ({self.role}): {self.decides}"

    def to_json(self) -> dict[str, Any]:
        return {"broker": self.broker, "role": self.role, "decides": self.decides,
                "text": self.describe()}


@dataclass
class CandidateCost:
    broker: int
    log_end_offset: int
    latest_epoch: int
    #: records given replicas hold that electing this candidate loses
    lost: list[LostByElection] = field(default_factory=list)
    election: str | None = None      # clean | unclean | None (no metadata log read)
    #: records acknowledged to producers (--acks) that this candidate lacks and no given
    #: replica holds: gone whichever given replica is elected
    lost_from_acks: list[LostByElection] = field(default_factory=list)
    #: the counts are lower bounds: a replica of the partition is not among the inputs (or the
    #: replica set is unknown, no metadata log)
    lower_bound: bool = False
    #: records of aborted transactions other replicas hold and this one lacks: not counted
    #: as lost (never delivered to read_committed consumers, never replayed)
    aborted: int = 0

    def all_lost(self) -> list[LostByElection]:
        return [*self.lost, *self.lost_from_acks]

    def counts(self) -> dict[str, int]:
        out = {"committed": 0, "acked": 0, "unacknowledged": 0, "uncommitted": 0}
        for r in self.all_lost():
            out[r.klass] += 1
        out["total"] = len(self.lost) + len(self.lost_from_acks)
        out["from_acks"] = len(self.lost_from_acks)
        out["conflict"] = sum(r.conflict for r in self.lost)
        out["aborted"] = self.aborted
        return out

    def rank_key(self) -> tuple[int, int, int, int, int, int]:
        c = self.counts()
        return (c["committed"], c["acked"], c["total"], -self.log_end_offset,
                int(self.election == "unclean"), self.broker)


#: the product's three verdicts (docs/CONTRACT.md section 11)
LOST, SAFE, CANNOT_TELL = "lost", "safe", "cannot tell"


@dataclass
class PartitionAdvice:
    topic: str
    partition: int
    candidates: list[CandidateCost]      # ranked, best first
    state: MetadataState | None = None
    #: evidence not among the inputs that could change the answer; empty only when the
    #: metadata log names the replica set and every replica's dir was given
    missing: list[MissingEvidence] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """``safe`` only when proven: every replica given and the best candidate loses nothing
        (not from the given replicas, not from the acks); ``lost`` when every candidate loses
        records and no replica is missing that could do better; else ``cannot tell``."""
        if self.missing:
            return CANNOT_TELL
        return LOST if self.candidates and self.candidates[0].all_lost() else SAFE

    @property
    def blocking(self) -> list[MissingEvidence]:
        """Missing replicas the controller would elect cleanly (the leader, last ISR or ELR):
        they may hold every record the given ones lack, no given candidate can be recommended."""
        return [m for m in self.missing if m.broker is not None and m.role in ("leader", "last ISR", "last ELR")]

    @property
    def recommended(self) -> int | None:
        return None if self.blocking or not self.candidates else self.candidates[0].broker

    def summary(self) -> list[str]:
        """The verdict in words: what the best candidate loses, or the missing evidence."""
        best = self.candidates[0] if self.candidates else None
        lines = []
        if best is not None:
            n = best.counts()
            at_least = "at least " if best.lower_bound else ""
            parts = [f"{n[k]} {word}" for k, word in (("committed", "committed"), ("acked", "acked"),
                                                         ("unacknowledged", "never acknowledged"),
                                                         ("uncommitted", "uncommitted")) if n[k]]
            what = (f"{at_least}{n['total']} record(s) ({', '.join(parts)}"
                    + (f"; {n['from_acks']} known only from the acks" if n["from_acks"] else "")
                    + (f"; {n['conflict']} in conflict: same offset and leader epoch, different data"
                       if n["conflict"] else "") + ")")
            if self.verdict == SAFE:
                lines.append(f"verdict: safe: electing broker {best.broker} loses no record "
                             f"(every replica of the partition given)")
            elif self.verdict == LOST:
                lines.append(f"verdict: lost: electing broker {best.broker}, the best candidate, loses {what}")
            else:
                lines.append(f"verdict: cannot tell: the best given candidate, broker {best.broker}, "
                             f"loses {what if n['total'] else 'no record of the given replicas and acks'}; "
                             f"the costs are lower bounds")
        lines += [f"missing: {m.describe()}" for m in self.missing]
        conflicts = sorted({(r.offset, r.leader_epoch) for c in self.candidates for r in c.lost if r.conflict})
        if conflicts:
            lines.append(f"conflict: replicas hold different records at the same offset and leader "
                         f"epoch ({_ranges(conflicts)}), a log-matching violation (compare reports "
                         f"LOG_MATCHING_VIOLATION): Kafka's truncation does not repair it, whichever "
                         f"is elected the others' versions are not in the leader's log")
        return lines

    def _reassign(self, bootstrap: str, broker: int) -> list[str]:
        name = f"reassign-{self.topic}-{self.partition}.json"
        if not (self.state and self.state.replicas):
            # the assignment is unknown: a list of only the given brokers would remove every
            # other replica from the partition. The placeholder keeps the file from parsing
            # until the SRE has filled in the real replica set.
            given = [broker, *[c.broker for c in self.candidates if c.broker != broker]]
            listed = json.dumps(given)
            plan = json.dumps({"version": 1, "partitions": [{"topic": self.topic, "partition": self.partition,
                                                             "replicas": given}]}).replace(
                listed, f"{listed[:-1]}, <every other replica of {self.topic}-{self.partition}>]", 1)
            return [f"# the replica set of {self.topic}-{self.partition} is unknown (no metadata log): "
                    f"`kafka-topics.sh --bootstrap-server {bootstrap} --describe --topic {self.topic}` "
                    f"lists it; the reassignment must name every replica, broker {broker} first (a "
                    f"replica left out is removed from the partition)",
                    f"echo '{plan}' > {name}",
                    f"kafka-reassign-partitions.sh --bootstrap-server {bootstrap} "
                    f"--reassignment-json-file {name} --execute"]
        current = list(self.state.replicas)
        if current[0] == broker:
            return []                    # already first in the assignment the controller holds
        order = [broker, *[b for b in current if b != broker]]
        plan_doc = {"version": 1, "partitions": [{"topic": self.topic, "partition": self.partition,
                                                  "replicas": order}]}
        return [f"echo '{json.dumps(plan_doc)}' > {name}",
                f"kafka-reassign-partitions.sh --bootstrap-server {bootstrap} "
                f"--reassignment-json-file {name} --execute"]

    def _elect(self, bootstrap: str, kind: str) -> str:
        # kafka-leader-election.sh flags: tools/.../LeaderElectionCommand.java (Kafka 4.3)
        return (f"kafka-leader-election.sh --bootstrap-server {bootstrap} --election-type {kind} "
                f"--topic {self.topic} --partition {self.partition}")

    def commands(self, bootstrap: str = "BROKER:9092", broker: int | None = None) -> list[str]:
        """The commands that make ``broker`` (default: the best candidate) the leader; when a
        replica the controller would elect cleanly is missing, they come after what to do
        first."""
        cand = self.candidates[0] if broker is None else \
            next(c for c in self.candidates if c.broker == broker)
        block = [m for m in self.blocking if m.broker != cand.broker]
        if not block:
            return self._commands(bootstrap, cand)
        names = ", ".join(f"broker {m.broker} ({m.role})" for m in block)
        return [f"# cannot tell what electing broker {cand.broker} loses: {names} not among the "
                f"inputs may hold records no given replica has. First start it (the controller "
                f"elects it cleanly) or add its log dir and run advise again; only once its log "
                f"is known to be gone:", *self._commands(bootstrap, cand)]

    def _commands(self, bootstrap: str, cand: CandidateCost) -> list[str]:
        st = self.state
        if st is None:       # no metadata log: the state is unknown, both elections shown
            return [*self._reassign(bootstrap, cand.broker), self._elect(bootstrap, "unclean"),
                    f"# or, when broker {cand.broker} is still in the ISR: --election-type preferred"]
        b = cand.broker
        if st.leader == b:
            return [f"# broker {b} leads {self.topic}-{self.partition} already (epoch {st.leader_epoch})"]
        eligible = sorted(set(st.isr) | set(st.elr))
        if cand.election == "clean":
            rivals = [x for x in eligible if x != b]
            where = "ISR" if b in st.isr else "ELR"
            if not rivals:
                # an offline partition's leader comes back by itself when the one eligible
                # replica is unfenced (ReplicationControlManager.handleBrokerUnfenced)
                return [f"# broker {b} is the only replica in the last ISR/ELR: start it and the "
                        f"controller elects it (clean, no command needed)"]
            lead = "" if st.leader is None else f"; broker {st.leader} leads now"
            return [f"# broker {b} is in the last {where} with {rivals}{lead}: started first while the "
                    f"partition has no leader, the controller elects it; otherwise put it first and "
                    f"run a preferred election",
                    *self._reassign(bootstrap, b), self._elect(bootstrap, "preferred")]
        keep = f"; keep {eligible} stopped (the controller elects them cleanly first)" if eligible else ""
        if st.leader is not None:   # an unclean election only happens without a leader
            keep += f"; broker {st.leader} leads now: stop it first"
        # an unclean election takes the first live replica in assignment order
        # (PartitionChangeBuilder.electAnyLeader): put the candidate first
        return [f"# broker {b} is not in the last ISR {list(st.isr)} / ELR {list(st.elr)}: an "
                f"unclean election{keep}",
                *self._reassign(bootstrap, b), self._elect(bootstrap, "unclean")]

    def to_json(self, bootstrap: str = "BROKER:9092") -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition,
                "recommended": self.recommended,
                "verdict": self.verdict, "summary": self.summary(),
                "missing": [m.to_json() for m in self.missing],
                "replica_set_known": bool(self.state and self.state.replicas),
                "metadata": self.state.to_json() if self.state else None,
                "candidates": [{"broker": c.broker, "log_end_offset": c.log_end_offset,
                                "latest_epoch": c.latest_epoch, "lost": c.counts(),
                                "lower_bound": c.lower_bound,
                                "election": c.election, "commands": self.commands(bootstrap, c.broker),
                                "lost_records": [r.to_json() for r in c.lost],
                                "lost_from_acks": [r.to_json() for r in c.lost_from_acks]}
                               for c in self.candidates],
                "commands": self.commands(bootstrap) if self.candidates else []}


def _ranges(points: Sequence[tuple[int, int]]) -> str:
    """``offsets 5..7 epoch 2, offset 9 epoch 3`` for (offset, epoch) pairs."""
    out: list[list[int]] = []
    for off, ep in sorted(points, key=lambda x: (x[1], x[0])):
        if out and out[-1][2] == ep and out[-1][1] == off - 1:
            out[-1][1] = off
        else:
            out.append([off, off, ep])
    return ", ".join(f"offset {a} epoch {e}" if a == b else f"offsets {a}..{b} epoch {e}" for a, b, e in out)


@dataclass
class _Replica:
    broker: int
    high_watermark: int | None
    log_start: int
    # offset -> (leader_epoch, producer_id, sequence, content digest)
    records: dict[int, tuple[int, int, int, bytes]]
    control: set[int] = field(default_factory=set)   # offsets of transaction markers
    #: the newest leader epoch the dir knows (records and leader-epoch-checkpoint)
    newest_epoch: int = -1
    #: transactional data and markers (offset order): rows as
    #: segtools.forensics.transactions.lost_transaction_states reads them
    txn_rows: list[dict[str, Any]] = field(default_factory=list)
    #: brokerEpoch of the dir's .kafka_cleanshutdown (None: no marker, or one without it)
    shutdown_epoch: int | None = None


def _digest(key: bytes | None, value: bytes | None, headers: Any) -> bytes:
    h = hashlib.sha256()
    for part in (key, value):
        h.update(b"\x00" if part is None else b"\x01" + len(part).to_bytes(8, "big") + part)
    for item in headers or []:
        k = item["key"].encode("utf-8", "surrogateescape")
        v = item["value"]
        h.update(len(k).to_bytes(8, "big") + k + (b"\x00" if v is None else b"\x01" + v))
    return h.digest()


def _load(spec: Any) -> _Replica:
    from segtools.records.columnar import iter_record_batches

    records: dict[int, tuple[int, int, int, bytes]] = {}
    control: set[int] = set()
    cols = ["offset", "leader_epoch", "producer_id", "sequence", "key", "value", "headers", "is_control",
            "producer_epoch", "is_transactional"]
    txn_rows: list[dict[str, Any]] = []
    for path, _size in spec.segments:
        # located: discovery listed the file (found again per file, it cost ~1.5 ms a segment)
        for rb in iter_record_batches(path, topic=spec.topic, partition=spec.partition, broker=spec.broker,
                                      include_control=True, located=True):
            for r in rb.select(cols).to_pylist():
                records[r["offset"]] = (r["leader_epoch"], r["producer_id"], r["sequence"],
                                        _digest(r["key"], r["value"], r["headers"]))
                if r["is_control"]:
                    control.add(r["offset"])
                if r["is_control"] or r["is_transactional"]:
                    txn_rows.append({k: r[k] for k in ("offset", "producer_id", "producer_epoch",
                                                       "is_transactional", "is_control")}
                                    | {"key": r["key"] if r["is_control"] else None})
    # records below the log start offset were deleted on purpose (retention, DeleteRecords)
    start = max(min(records, default=0), getattr(spec, "log_start_checkpoint", None) or 0)
    newest = max([-1, *(r[0] for r in records.values()), *(e for e, _o in spec.epoch_checkpoint or ())])
    return _Replica(spec.broker, spec.high_watermark, start, records, control, newest,
                    sorted(txn_rows, key=lambda r: r["offset"]), _shutdown_epoch(spec))


def _shutdown_epoch(spec: Any) -> int | None:
    from .errors import SegtoolsError
    from .files.checkpoints import read_clean_shutdown
    from .forensics.collect import CLEAN_SHUTDOWN_FILE

    if not getattr(spec, "clean_shutdown", False):
        return None
    try:
        return read_clean_shutdown(os.path.join(spec.log_dir, CLEAN_SHUTDOWN_FILE)).broker_epoch
    except (OSError, SegtoolsError):
        return None             # unreadable: proves nothing


def _aborted(follower: _Replica, cut: int, others: Sequence[_Replica]) -> set[int]:
    """Offsets of ``follower``'s records from ``cut`` on whose transaction aborted (the ABORT
    marker in its own log or on another replica, as compare reads it): electing a leader
    without them loses nothing a read_committed consumer could see, and replay never
    produces them."""
    from segtools.forensics.transactions import lost_transaction_states

    lost = [r for r in follower.txn_rows if r["offset"] >= cut and r["is_transactional"] and not r["is_control"]]
    if not lost:
        return set()
    own = [r for r in follower.txn_rows if r["offset"] >= cut]
    states = lost_transaction_states(lost, own, (), [o.txn_rows for o in others], cut)
    return {o for o, state in states.items() if state == "aborted"}


def _divergence(follower: _Replica, leader: _Replica) -> int:
    """The offset a follower truncates to when following ``leader`` (epoch lineage). Offsets
    below the leader's log start are not compared: the follower deletes them as the leader did
    (the fetch response carries the log start offset), they are not lost by the election."""
    for offset in sorted(o for o in follower.records if o >= leader.log_start):
        mine = follower.records[offset]
        theirs = leader.records.get(offset)
        if theirs is None or theirs[0] != mine[0]:
            return offset
    return max(follower.records, default=-1) + 1


def _cost(candidate: _Replica, others: Sequence[_Replica], acked: dict[tuple[int, int], bool],
          acked_all: set[tuple[int, int]], have_acks: bool) -> CandidateCost:
    seqs = {(r[1], r[2]) for r in candidate.records.values() if r[1] >= 0 and r[2] >= 0}
    contents = {r[3] for r in candidate.records.values()}
    lost: dict[tuple[int, int], LostByElection] = {}
    committed_below = {}
    held: set[tuple[int, int]] = set()
    for rep in [candidate, *others]:
        for off, rec in rep.records.items():
            held.add((off, rec[0]))
            if rep.high_watermark is not None and off < rep.high_watermark:
                committed_below[(off, rec[0])] = True

    def klass(key: tuple[int, int]) -> str:
        if committed_below.get(key) or key in acked_all:
            return "committed"
        if have_acks:
            return "acked" if acked.get(key) else "unacknowledged"
        return "uncommitted"

    aborted: set[tuple[int, int]] = set()
    for f in others:
        cut = _divergence(f, candidate)
        gone = _aborted(f, cut, [candidate, *(o for o in others if o is not f)])
        for off in sorted(o for o in f.records if o not in f.control and o >= candidate.log_start):
            epoch, pid, seq, digest = f.records[off]
            if off in gone:
                aborted.add((off, epoch))     # an aborted transaction's: no loss for consumers
                continue
            if off < cut:
                # the same offset and leader epoch on both: the follower keeps its own record.
                # Different data there is a log-matching violation, not agreement.
                if candidate.records[off][3] == digest:
                    continue
                conflict = True
            else:
                conflict = False
            if (pid >= 0 and seq >= 0 and (pid, seq) in seqs) or digest in contents:
                continue   # a producer retry wrote it again: the candidate has it
            key = (off, epoch)
            if key not in lost:
                lost[key] = LostByElection(f.broker, off, epoch, klass(key), conflict=conflict)
    # acknowledged to a producer, on no given replica: gone whoever is elected among them
    # (a replica whose dir is missing may hold it). Below the candidate's log start it was
    # deleted on purpose.
    from_acks = [LostByElection(None, off, epoch, klass((off, epoch)), source="acks")
                 for (off, epoch), ok in sorted(acked.items())
                 if ok and off >= candidate.log_start and (off, epoch) not in held]
    epochs = [r[0] for r in candidate.records.values()]
    return CandidateCost(candidate.broker, max(candidate.records, default=-1) + 1,
                         max(epochs, default=-1),
                         sorted(lost.values(), key=lambda r: (r.offset, r.broker or 0)),
                         lost_from_acks=from_acks, aborted=len(aborted))


def _missing(topic: str, partition: int, state: MetadataState | None,
             replicas: Sequence[_Replica], metadata_read: bool) -> list[MissingEvidence]:
    """The evidence not among the inputs that could change what a choice loses."""
    tp = f"{topic}-{partition}"
    if state is None or not state.replicas:
        read = f"the metadata log read has no assignment for {tp}; " if metadata_read else ""
        return [MissingEvidence(None, "replica set",
                                f"{read}which brokers hold replicas of {tp} and which were in its last ISR/ELR; "
                                f"a replica whose log dir is not given may hold records every given "
                                f"candidate lacks, so no choice can be proven safe")]
    given = {r.broker for r in replicas}
    newest = max((rec[0] for r in replicas for rec in r.records.values()), default=-1)
    out = []
    for b in dict.fromkeys([*([state.leader] if state.leader is not None else []), *state.isr,
                            *state.elr, *state.replicas]):
        if b in given:
            continue
        led = sorted(e for e, leader in state.leaders if leader == b)
        later = [e for e in led if e > newest]
        appended = (f"; it led leader epoch(s) {later}, newer than any epoch in the given dirs "
                    f"({newest}): what it appended then is on no given dir" if later else "")
        if b == state.leader:
            role, why = "leader", f"it leads {tp} (epoch {state.leader_epoch}) and holds every committed record"
        elif b in state.isr:
            role, why = "last ISR", ("it was in the ISR at the end of the metadata log, so it holds every "
                                     "committed record, including those committed after the given "
                                     "replicas left the ISR; the controller elects it cleanly")
        elif b in state.elr:
            role, why = "last ELR", ("an eligible leader replica (KIP-966): it holds every committed "
                                     "record up to when it left the ISR; the controller elects it cleanly")
        else:
            role, why = "replica", ("not in the last ISR/ELR; it may still hold records no given "
                                    "replica has (appended while it led or followed an older epoch)")
        out.append(MissingEvidence(b, role, f"{why}{appended}; with its log dir advise can tell what "
                                            f"each choice loses"))
    # a leader writes its epoch to its leader-epoch-checkpoint when it takes over: a given dir
    # whose newest epoch is older than one its broker led is a copy from before that epoch,
    # or the broker lost what it wrote then (power loss: recovery drops the epoch's entry with
    # the records). The disk cannot tell which; the first would make any "safe" false.
    # A dir copied after its broker's last stop, a clean one, is neither: a clean shutdown
    # flushes everything, so a later leader truncated the epoch away (Kafka's truncateTo drops
    # the epoch entries at or past the truncation offset). The .kafka_cleanshutdown's
    # brokerEpoch equal to the broker's last registration in the metadata log proves it.
    registered = dict(state.registrations)
    for r in replicas:
        led = [e for e, leader in state.leaders if leader == r.broker and e > r.newest_epoch]
        if led and not (r.shutdown_epoch is not None and registered.get(r.broker) == r.shutdown_epoch):
            out.append(MissingEvidence(r.broker, "given dir behind the metadata log",
                                       f"the metadata log has broker {r.broker} lead leader epoch(s) "
                                       f"{led}, its given dir knows epochs up to {r.newest_epoch} only: "
                                       f"either the dir was copied before (what it appended then is "
                                       f"missing) or the broker lost those records (power loss); a "
                                       f"copy of its dir taken after it last stopped tells which"))
    return out


def _states(paths: Sequence[str | os.PathLike[str]], metadata_log: str | os.PathLike[str] | None,
            find_metadata_log: bool, note: Callable[[str], None]) -> dict[tuple[str, int], MetadataState]:
    from .errors import SegtoolsError
    from .forensics.api import default_metadata_log
    from .forensics.elections import load_histories

    source = os.fspath(metadata_log) if metadata_log is not None else None
    if source is not None:
        histories = load_histories(source)      # asked for: unusable is an error
    else:
        source = default_metadata_log(paths) if find_metadata_log else None
        if source is None:
            return {}
        try:                                    # found, not asked for: only costs the state
            histories = load_histories(source)
        except SegtoolsError as exc:
            note(f"ignoring the controller's metadata log: {exc}")
            return {}
        note(f"using the controller's metadata log {source}")
    registered: dict[int, int] = {}
    for ev in histories.brokers:
        if ev.get("event") == "registered" and ev.get("broker") is not None and "broker_epoch" in ev:
            registered[int(ev["broker"])] = int(ev["broker_epoch"])
    return {tp: MetadataState(None if h.leader is None or h.leader < 0 else h.leader, h.leader_epoch,
                              tuple(h.isr), tuple(h.elr), tuple(h.last_known_elr), tuple(h.replicas),
                              source, tuple(sorted((e, el.leader) for e, el in h.elections.items()
                                                   if el.leader is not None and el.leader >= 0)),
                              tuple(sorted(registered.items())))
            for tp, h in histories.items()}


def advise(paths: Sequence[str | os.PathLike[str]], *, acks_path: str | os.PathLike[str] | None = None,
           topic: str | None = None, partition: int | None = None,
           metadata_log: str | os.PathLike[str] | None = None, find_metadata_log: bool = True,
           on_note: Callable[[str], None] | None = None) -> list[PartitionAdvice]:
    """Candidates per partition found under ``paths`` (one replica dir per broker).
    ``metadata_log``: the controller's ``__cluster_metadata-0`` (or a dir holding it); without
    it, ``find_metadata_log`` looks for one next to the broker dirs."""
    from .forensics.collect import discover_replicas
    from .forensics.loss import AckIndex

    # the KRaft metadata log is a Raft log, not a partition a leader election applies to
    specs = [s for s in discover_replicas([os.fspath(p) for p in paths])
             if s.topic != "__cluster_metadata" and (topic is None or s.topic == topic)
             and (partition is None or s.partition == partition)]
    if not specs:
        raise InputError("no partition replica found in: " + ", ".join(str(os.fspath(p)) for p in paths))
    acks = AckIndex.load(acks_path) if acks_path else None
    states = _states(paths, metadata_log, find_metadata_log, on_note or (lambda _text: None))
    groups: dict[tuple[str, int], list[Any]] = {}
    for s in specs:
        groups.setdefault((s.topic, s.partition), []).append(s)
    out = []
    for (t, p), group in sorted(groups.items()):
        replicas = [_load(s) for s in sorted(group, key=lambda s: s.broker)]
        acked = acks.for_partition(t, p) if acks else {}
        acked_all = acks.committed_for_partition(t, p) if acks else set()
        costs = [_cost(c, [r for r in replicas if r is not c], acked, acked_all, acks is not None)
                 for c in replicas]
        state = states.get((t, p))
        missing = _missing(t, p, state, replicas, bool(states))
        no_epoch = acks.without_epoch(t, p) if acks else {}
        if no_epoch:
            # an offset is no identity across elections: which candidate holds the acknowledged
            # record cannot be matched without the epoch, so no choice is proven safe
            missing.append(MissingEvidence(None, ACK_EPOCHS, (
                f"{len(no_epoch)} acknowledged offset(s) (first {min(no_epoch)}) came without a leader epoch: "
                "which candidate holds those records, and whether any was lost, cannot be matched")))
        for c in costs:
            c.election = state.election_for(c.broker) if state else None
            c.lower_bound = bool(missing)
        out.append(PartitionAdvice(t, p, sorted(costs, key=CandidateCost.rank_key), state, missing))
    return out
