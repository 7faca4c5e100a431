"""Transactions per partition (docs/REPORT.md "Transactions"): which transactions the reference
replica holds, how each ended, and where the last stable offset stands.

Data and markers are paired the way the partition leader pairs them, by producer id:
storage/src/main/java/org/apache/kafka/storage/internals/log/ProducerAppendInfo.java opens a
transaction at a producer's first transactional batch and closes it at that producer's next
control batch (appendEndTxnMarker), which must carry an epoch at least the producer's. Under
transactions v1 the marker repeats the data's epoch (or a bumped one after fencing); under
transactions v2 (KIP-890, FeatureLevelRecord ``transaction.version`` >= 2) every transaction
ends with the epoch bumped, so the marker's epoch is the data's plus one, and when the epoch
is exhausted (Short.MAX_VALUE) the coordinator rolls the producer over to a new producer id
(core/src/main/scala/kafka/coordinator/transaction/TransactionMetadata.scala). Pairing by
(producer id, epoch), as v1 tooling does, leaves every v2 transaction looking open.

Which protocol a transaction used is the client's choice, not only the cluster's: the
coordinator records it per transactional id as ``ClientTransactionVersion`` in the transaction
log (``__transaction_state``, TransactionLogValue v1); a client without KIP-890 support (e.g.
librdkafka) keeps v1 markers on a ``transaction.version`` 2 cluster (seen on Kafka 4.3.1).
When a replica's log dir holds the transaction log, each producer id gets its client version
and its previous / next producer id (the rollover chain).

The marker's type (COMMIT or ABORT) is in its control record key, read from the segment.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from segtools.forensics.findings import Finding
from segtools.forensics.model import BatchFacts
from segtools.internal_topics.transaction_state import TRANSACTION_STATES

if TYPE_CHECKING:
    from segtools.records.segment_file import SegmentFile

#: transaction.max.timeout.ms default (TransactionStateManagerConfig): an open transaction
#: older than this by the log's own clock can no longer be completed by its producer
MAX_TRANSACTION_TIMEOUT_MS = 900_000
#: ended transactions listed per partition (the latest); every open or hanging one is listed
MAX_LISTED = 1000
#: the last producer epoch before a v2 producer id rolls over
MAX_EPOCH = 32767
#: at most this many markers are opened to read their type; beyond, outcome "ended"
MAX_MARKER_READS = 200_000

#: the transaction log's topic (TransactionLogConfig / Topic.TRANSACTION_STATE_TOPIC_NAME)
TRANSACTION_STATE_TOPIC = "__transaction_state"

MarkerReader = Callable[[BatchFacts], "str | None"]


class _SegmentMarkers:
    """Reads the control type of marker batches from ``log_dir/topic-partition/<segment>``,
    keeping each segment open while the partition is read (``close`` at the end)."""

    def __init__(self, log_dir: str, topic: str, partition: int, partition_dir: str = "") -> None:
        # the folder discovery found (its name need not be topic-partition: a renamed copy)
        self.pdir = partition_dir or os.path.join(log_dir, f"{topic}-{partition}")
        self.files: dict[str, SegmentFile] = {}

    def __call__(self, b: BatchFacts) -> str | None:
        from segtools.errors import SegtoolsError
        from segtools.records.batches import SegmentBatch
        from segtools.records.segment_file import SegmentFile

        try:
            log = self.files.get(b.segment)
            if log is None:
                # read-only, size fixed at open: a segment that shrank since compare read it
                # is a FileChangedError here, i.e. the marker's type is unknown (None)
                log = self.files[b.segment] = SegmentFile(os.path.join(self.pdir, b.segment))
            recs = list(SegmentBatch.from_bytes(log.read(b.position, b.size)).control_records())
        except (OSError, SegtoolsError, ValueError):
            return None
        return recs[0].type_name if recs else None

    def close(self) -> None:
        for log in self.files.values():
            log.close()
        self.files.clear()


def marker_reader(log_dir: str, topic: str, partition: int, partition_dir: str = "") -> MarkerReader:
    """Reads the control type of a marker batch from ``partition_dir/segment`` (default
    ``log_dir/topic-partition``)."""
    return _SegmentMarkers(log_dir, topic, partition, partition_dir)


@dataclass(frozen=True)
class ProducerInfo:
    """What the transaction log says about one producer id (its latest record)."""

    transactional_id: str
    client_transaction_version: int
    previous_producer_id: int = -1
    next_producer_id: int = -1


_TXN_LOG_CACHE: dict[tuple[Any, ...], dict[int, ProducerInfo]] = {}


def _transaction_log_segments(log_dirs: Sequence[str]) -> list[str]:
    """Every segment of the ``__transaction_state-N`` partitions in ``log_dirs``, as
    :func:`segtools.files.sources.resolve` finds them (only those partition dirs are listed: this runs
    once per transactional partition compare classifies)."""
    from segtools.errors import SegtoolsError
    from segtools.files.sources import is_partition_dir_name, list_dir, parse_partition_dir_name, resolve

    pdirs: list[str] = []
    for ld in dict.fromkeys(log_dirs):
        try:
            entries = list_dir(ld)
        except SegtoolsError:
            continue
        for e in entries:
            if e.is_dir and is_partition_dir_name(e.name):
                topic, _partition, state = parse_partition_dir_name(e.name)
                if topic == TRANSACTION_STATE_TOPIC and not state:
                    pdirs.append(e.path)
    if not pdirs:
        return []
    return resolve(pdirs, errors="collect", check_copies=False).segment_paths()


def _txn_log_key(segments: Sequence[str]) -> tuple[Any, ...]:
    key: list[Any] = []
    for seg in segments:
        try:
            st = os.stat(seg)
        except OSError:
            continue
        key.append((seg, st.st_size, st.st_mtime_ns))
    return tuple(key)


def producers_from_transaction_log(log_dirs: Sequence[str]) -> dict[int, ProducerInfo]:
    """``producer id -> ProducerInfo`` from every ``__transaction_state-N`` partition in the
    given (local) log dirs; unreadable records are skipped (compare reports the partition
    itself). Read once per set of transaction-log segments (cached by size and mtime)."""
    segments = _transaction_log_segments(log_dirs)
    key = _txn_log_key(segments)
    if not key:
        return {}
    cached = _TXN_LOG_CACHE.get(key)
    if cached is None:
        if len(_TXN_LOG_CACHE) > 8:
            _TXN_LOG_CACHE.clear()
        cached = _TXN_LOG_CACHE[key] = _read_transaction_logs(segments)
    return cached


def _read_transaction_logs(segments: Sequence[str]) -> dict[int, ProducerInfo]:
    from segtools.errors import SegtoolsError
    from segtools.internal_topics.transaction_state import decode_key, decode_value
    from segtools.records import columnar

    out: dict[int, ProducerInfo] = {}
    for seg in segments:
        try:
            for rb in columnar.iter_record_batches(seg, include_control=False):
                for key, value in zip(rb.column("key").to_pylist(), rb.column("value").to_pylist()):
                    try:
                        k, v = decode_key(key), decode_value(value)
                    except SegtoolsError:
                        continue
                    if v is None or "transactionalId" not in k:
                        continue
                    out[int(v["producerId"])] = ProducerInfo(
                        str(k["transactionalId"]), int(v.get("clientTransactionVersion", 0)),
                        int(v.get("previousProducerId", -1)), int(v.get("nextProducerId", -1)))
        except (OSError, SegtoolsError):
            continue
    return out


def _abort_command(topic: str, partition: int, start: int) -> str:
    # flags of kafka-transactions.sh abort: tools/src/main/java/org/apache/kafka/tools/
    # TransactionsCommand.java (AbortTransactionCommand: --topic --partition --start-offset)
    return (f"kafka-transactions.sh --bootstrap-server <broker:port> abort --topic {topic} "
            f"--partition {partition} --start-offset {start}")


def partition_transactions(batches: Sequence[BatchFacts], *, high_watermark: int | None,
                           log_end_offset: int, topic: str, partition: int,
                           transaction_version: int | None = None,
                           marker_type: MarkerReader | None = None,
                           producers: Mapping[int, ProducerInfo] | None = None) -> dict[str, Any]:
    """``{"transaction_version", "last_stable_offset", "transactions": [...], "counts"}``.
    Each transaction: ``producer_id``, ``producer_epoch`` (of its data), ``first_offset``,
    ``last_offset`` (its last data offset), ``records``, ``state`` (``committed``,
    ``aborted``, ``ended`` when the marker could not be read, ``open`` or ``hanging``), and
    for ended ones ``marker_offset`` / ``marker_epoch``; ``producer_id_rolled_over`` when the
    marker carried the last epoch; ``abort_command`` for a hanging one. With the transaction
    log (``producers``): ``transactional_id``, ``client_transaction_version`` and
    ``previous_producer_id`` / ``next_producer_id``; a v2 transaction whose marker does not
    carry the data's epoch plus one is flagged ``marker_epoch_unexpected``."""
    ongoing: dict[int, dict[str, Any]] = {}
    done: list[dict[str, Any]] = []
    last_ts = max((b.max_timestamp for b in batches), default=-1)
    later_epoch: dict[int, int] = {}
    reads = 0
    for b in batches:
        pid = b.producer_id
        if pid < 0:
            continue
        later_epoch[pid] = max(later_epoch.get(pid, -1), b.producer_epoch)
        if b.is_control:
            txn = ongoing.pop(pid, None)
            if txn is None:
                continue      # a marker for a transaction that wrote nothing here
            kind = None
            if marker_type is not None and reads < MAX_MARKER_READS:
                reads += 1
                kind = marker_type(b)
            txn["state"] = {"COMMIT": "committed", "ABORT": "aborted"}.get(kind or "", "ended")
            txn["marker_offset"], txn["marker_epoch"] = b.base_offset, b.producer_epoch
            if b.producer_epoch == MAX_EPOCH:
                txn["producer_id_rolled_over"] = True    # no epoch left: a new producer id next
            done.append(txn)
        elif b.is_transactional:
            txn = ongoing.get(pid)
            if txn is None:
                ongoing[pid] = {"producer_id": pid, "producer_epoch": b.producer_epoch,
                                "first_offset": b.base_offset, "last_offset": b.last_offset,
                                "records": b.records_count, "first_timestamp_ms": b.max_timestamp}
            else:
                txn["last_offset"] = b.last_offset
                txn["records"] += b.records_count
                if b.producer_epoch > txn["producer_epoch"]:
                    txn["epoch_changed"] = True   # the old transaction lost its marker
    close = getattr(marker_type, "close", None)
    if close is not None:
        close()
    for pid, txn in ongoing.items():
        stale = (txn["first_timestamp_ms"] >= 0 and last_ts >= 0
                 and last_ts - txn["first_timestamp_ms"] > MAX_TRANSACTION_TIMEOUT_MS)
        hanging = txn.pop("epoch_changed", False) or later_epoch.get(pid, -1) > txn["producer_epoch"] or stale
        txn["state"] = "hanging" if hanging else "open"
        if hanging:
            txn["abort_command"] = _abort_command(topic, partition, txn["first_offset"])
        done.append(txn)
    for txn in done:
        txn.pop("epoch_changed", None)
        if txn.get("first_timestamp_ms", -1) < 0:
            txn.pop("first_timestamp_ms", None)
    for txn in done:
        info = (producers or {}).get(txn["producer_id"])
        if info is None:
            continue
        txn["transactional_id"] = info.transactional_id
        txn["client_transaction_version"] = info.client_transaction_version
        if info.previous_producer_id >= 0:
            txn["previous_producer_id"] = info.previous_producer_id
        if info.next_producer_id >= 0:
            txn["next_producer_id"] = info.next_producer_id
        if info.client_transaction_version >= 2 and "marker_epoch" in txn \
                and txn["marker_epoch"] != txn["producer_epoch"] + 1:
            txn["marker_epoch_unexpected"] = True     # v2 markers bump the epoch by one
    done.sort(key=lambda t: t["first_offset"])
    stable_end = high_watermark if high_watermark is not None else log_end_offset
    unstable = [t["first_offset"] for t in done if t["state"] in ("open", "hanging")]
    lso = min([stable_end, *unstable])
    counts: dict[str, int] = {}
    for t in done:
        counts[t["state"]] = counts.get(t["state"], 0) + 1
    out: dict[str, Any] = {"transaction_version": transaction_version, "last_stable_offset": lso,
                           "transactions": done, "counts": counts}
    ended = [t for t in done if t["state"] not in ("open", "hanging")]
    if len(ended) > MAX_LISTED:
        # an exactly-once topic holds millions: the report lists every open or hanging one and
        # the latest ended ones; counts cover all
        keep = {id(t) for t in ended[-MAX_LISTED:]}
        out["transactions"] = [t for t in done if t["state"] in ("open", "hanging") or id(t) in keep]
        out["transactions_not_listed"] = len(ended) - MAX_LISTED
    return out


def transaction_findings(report: dict[str, Any]) -> list[Finding]:
    """TXN_HANGING per hanging transaction (it pins the LSO: read_committed consumers stop
    there until it is aborted) and TXN_OPEN per open one."""
    out = []
    lso = report.get("last_stable_offset")
    for t in report.get("transactions", ()):
        if t["state"] == "hanging":
            out.append(Finding("TXN_HANGING", f"producer {t['producer_id']} epoch {t['producer_epoch']}: "
                               f"transaction from offset {t['first_offset']} has no marker and its producer "
                               f"moved on; last stable offset pinned at {lso}; abort it with: "
                               f"{t['abort_command']}", offset=t["first_offset"]))
        elif t["state"] == "open":
            out.append(Finding("TXN_OPEN", f"producer {t['producer_id']} epoch {t['producer_epoch']}: "
                               f"transaction from offset {t['first_offset']} still open; last stable "
                               f"offset {lso}", offset=t["first_offset"]))
    return out


# --- the transactional state of lost records (compare --lost-out, replay) -----------------
#
# A lost record of a transactional batch is only a loss for consumers when its transaction
# committed: read_committed consumers never see an aborted or undecided one. The state comes
# from the markers the evidence holds, in this order (docs/CONTRACT.md section 10):
#   1. the lost replica's own log after the record: the producer's next marker ends it (the
#      leader pairs data and markers by producer id: ProducerAppendInfo);
#   2. its .txnindex: an aborted range of the producer covering the record;
#   3. every other replica from the divergence on: the producer's first marker there is the
#      one the coordinator wrote for this transaction after the election (it cannot start
#      another transaction on the partition before that marker is written), provided no data
#      of another producer epoch comes first; replicas that disagree make it unknown.
# No marker and no sign the producer moved on: "open". A marker that cannot be read, a
# later producer epoch without a marker, disagreement: "unknown". Never "committed" on doubt.
# Either may then be decided by the coordinator's committed records (coordinator_states).

#: the values of lost-out's ``txn_state`` column
TXN_STATES = ("committed", "aborted", "open", "unknown", "none")


def marker_state(key: bytes | None) -> str:
    """``committed`` / ``aborted`` from a control record's key, ``unknown`` otherwise."""
    from segtools.errors import SegtoolsError
    from segtools.records.control import ABORT, COMMIT, decode_control_key

    try:
        type_id = decode_control_key(key).type_id
    except SegtoolsError:
        return "unknown"
    return {COMMIT: "committed", ABORT: "aborted"}.get(type_id, "unknown")


def _own_log_states(rows: Sequence[Mapping[str, Any]]) -> tuple[dict[int, str], dict[int, tuple[int, int]]]:
    """Pair data and markers in one replica's rows (offset order). Returns the state of each
    transactional data offset whose transaction ended here, and the still-open transactional
    offsets as ``offset -> (producer id, producer epoch)``."""
    ended: dict[int, str] = {}
    ongoing: dict[int, tuple[int, list[int]]] = {}    # producer id -> (epoch, data offsets)
    for r in rows:
        pid = int(r["producer_id"])
        if pid < 0:
            continue
        if r["is_control"]:
            txn = ongoing.pop(pid, None)
            if txn is not None:
                state = marker_state(r["key"])
                ended.update((o, state) for o in txn[1])
        elif r["is_transactional"]:
            epoch = int(r["producer_epoch"])
            txn = ongoing.get(pid)
            if txn is not None and epoch > txn[0]:
                # a new epoch before any marker: the old transaction ended, its marker is gone
                ended.update((o, "unknown") for o in txn[1])
                txn = None
            if txn is None:
                txn = ongoing[pid] = (epoch, [])
            txn[1].append(int(r["offset"]))
    still = {o: (pid, epoch) for pid, (epoch, offsets) in ongoing.items() for o in offsets}
    return ended, still


def _state_elsewhere(pid: int, epoch: int, rows: Sequence[Mapping[str, Any]], start: int) -> str | None:
    """What another replica's rows (offset order) from ``start`` on say about the transaction of
    ``pid``/``epoch`` open at the divergence: its first marker's state; ``unknown`` when data of
    another epoch of the producer comes first (the producer moved on without a marker here);
    None when the replica says nothing."""
    for r in rows:
        if int(r["offset"]) < start or int(r["producer_id"]) != pid:
            continue
        if r["is_control"]:
            if int(r["producer_epoch"]) < epoch:
                continue       # an older transaction's marker (cannot end this one)
            return marker_state(r["key"])
        if int(r["producer_epoch"]) != epoch:
            return "unknown"
    return None


def lost_transaction_states(lost: Sequence[Mapping[str, Any]], own: Sequence[Mapping[str, Any]],
                            aborted: Sequence[Any], others: Sequence[Sequence[Mapping[str, Any]]],
                            divergence: int) -> dict[int, str]:
    """``offset -> txn_state`` for the ``lost`` rows of one replica (``offset``,
    ``producer_id``, ``producer_epoch``, ``is_transactional``).

    ``own``: that replica's rows from ``divergence`` on, markers included (``offset``,
    ``producer_id``, ``producer_epoch``, ``is_transactional``, ``is_control``, ``key``);
    ``aborted``: its ``.txnindex`` entries (:class:`segtools.files.indexes.AbortedTxn`);
    ``others``: the same rows of every other replica of the partition; ``divergence``: the
    first offset where this replica's log left the surviving one."""
    ended, still = _own_log_states(own)
    out: dict[int, str] = {}
    for r in lost:
        offset = int(r["offset"])
        if not r["is_transactional"] or int(r["producer_id"]) < 0:
            out[offset] = "none"
            continue
        pid, epoch = int(r["producer_id"]), int(r["producer_epoch"])
        indexed = any(a.producer_id == pid and a.first_offset <= offset <= a.last_offset for a in aborted)
        if offset in ended:
            state = ended[offset]
            if indexed:
                # the .txnindex entry is written with the ABORT marker: it stands in for an
                # unreadable one, and contradicts a COMMIT
                state = {"committed": "unknown", "unknown": "aborted"}.get(state, state)
            out[offset] = state
            continue
        if indexed:
            out[offset] = "aborted"
            continue
        if offset not in still:
            out[offset] = "unknown"     # not paired in the rows read: decide nothing
            continue
        said = {s for s in (_state_elsewhere(pid, epoch, rows, divergence) for rows in others) if s is not None}
        out[offset] = said.pop() if len(said) == 1 else ("unknown" if said else "open")
    return out


def clear_aborted_commitment(lost: Sequence[Any], divergent: Mapping[tuple[int, str], Sequence[Any]]) -> int:
    """compare's stage 3 hook: lost records (``LostRecord``) of a transaction whose ABORT marker
    is lost with them (in the same replica's divergent records, ``RecordFacts``) are not a
    committed loss: no read_committed consumer ever saw them. Sets their ``committed`` to
    False; returns how many changed. (The full state of every lost record, markers on other
    replicas included, is lost-out's ``txn_state``.)"""
    aborted: set[tuple[int, str, int]] = set()
    for (broker, log_dir), recs in divergent.items():
        ongoing: dict[int, tuple[int, list[int]]] = {}     # producer id -> (epoch, data offsets)
        for r in sorted(recs, key=lambda x: x.offset):
            if r.producer_id < 0:
                continue
            if r.is_control:
                txn = ongoing.pop(r.producer_id, None)
                if txn is not None and r.producer_epoch >= txn[0] and marker_state(r.key) == "aborted":
                    aborted.update((broker, log_dir, o) for o in txn[1])
                continue
            txn = ongoing.get(r.producer_id)
            if txn is None or r.producer_epoch != txn[0]:
                txn = ongoing[r.producer_id] = (r.producer_epoch, [])
            txn[1].append(r.offset)
    changed = 0
    for x in lost:
        if x.committed and (x.broker, x.log_dir, x.offset) in aborted:
            x.committed = False
            changed += 1
    return changed


# --- the coordinator's word on a transaction (__transaction_state among the inputs) ----------
#
# A lost transaction whose marker is in no evidence may still be decided in the coordinator's
# log: PrepareCommit / PrepareAbort (the decision; the markers follow) and CompleteCommit /
# CompleteAbort (core/.../transaction/TransactionMetadata.scala). Only records below a
# replica's high-watermark checkpoint count: the coordinator's state transition completes once
# its append is committed, and an uncommitted PrepareCommit on a replica a later coordinator
# never read may end as an abort (on the transaction's timeout). Which transaction a closing
# record ends:
# - transactions v2 (ClientTransactionVersion >= 2, KIP-890): the coordinator bumps the epoch
#   when it prepares the end, so the closing record of the transaction whose data carry epoch
#   e has epoch e + 1, unique per transaction;
# - transactions v1: every transaction of a producer session has the same epoch e. Decided
#   only when the log holds that session's start (the Empty record InitProducerId writes with
#   epoch e; a record followed by later ones of its transactional id is not compacted away, nor
#   is anything after it) and exactly one transaction of (pid, e) after it lists the partition
#   (its Ongoing or Prepare record). A v1 abort on timeout fences with epoch e + 1 as well.

_STATUS = {name: code for code, name in TRANSACTION_STATES.items()}
#: the closing statuses and the outcome each decides (Prepare*: decided, Complete*: done)
_COMMIT_STATES = {_STATUS["PrepareCommit"]: "committed", _STATUS["CompleteCommit"]: "committed",
                  _STATUS["PrepareAbort"]: "aborted", _STATUS["CompleteAbort"]: "aborted"}
_COMPLETE = {_STATUS["CompleteCommit"], _STATUS["CompleteAbort"]}
_ONGOING, _EMPTY = _STATUS["Ongoing"], _STATUS["Empty"]

_COORDINATOR_CACHE: dict[tuple[Any, ...], list[list[dict[str, Any]]]] = {}


def _coordinator_sequences(specs: Sequence[Any]) -> list[list[dict[str, Any]]]:
    """Per replica of a ``__transaction_state`` partition among ``specs``: the decoded values
    below its high-watermark checkpoint, each with ``transactionalId``, in offset order (one
    list per replica; a replica without a checkpoint entry gives none)."""
    from segtools.errors import SegtoolsError
    from segtools.internal_topics.transaction_state import decode_key, decode_value
    from segtools.records import columnar

    coord = [s for s in specs if s.topic == TRANSACTION_STATE_TOPIC and not getattr(s, "state", "")]
    key = tuple((s.log_dir, s.partition, s.high_watermark, _txn_log_key([p for p, _ in s.segments]))
                for s in coord)
    cached = _COORDINATOR_CACHE.get(key)
    if cached is not None:
        return cached
    out: list[list[dict[str, Any]]] = []
    for s in coord:
        hw = s.high_watermark
        if hw is None or hw <= 0:
            continue
        seq: list[dict[str, Any]] = []
        try:
            for path, _size in s.segments:
                for rb in columnar.iter_record_batches(path, include_control=False, end_offset=hw):
                    for off, k, v in zip(rb.column("offset").to_pylist(), rb.column("key").to_pylist(),
                                         rb.column("value").to_pylist()):
                        if off >= hw:
                            continue
                        try:
                            dk, dv = decode_key(k), decode_value(v)
                        except SegtoolsError:
                            continue
                        if dv is not None and "transactionalId" in dk:
                            seq.append({**dv, "transactionalId": dk["transactionalId"], "offset": off})
        except (OSError, SegtoolsError):
            continue        # an unreadable replica decides nothing
        out.append(sorted(seq, key=lambda r: r["offset"]))
    if len(_COORDINATOR_CACHE) > 8:
        _COORDINATOR_CACHE.clear()
    _COORDINATOR_CACHE[key] = out
    return out


def _lists(value: Mapping[str, Any], topic: str, partition: int) -> bool:
    return any(p.get("topic") == topic and partition in (p.get("partitionIds") or ())
               for p in value.get("transactionPartitions") or ())


def _decided_in(seq: Sequence[Mapping[str, Any]], pid: int, epoch: int, topic: str, partition: int) -> str | None:
    """The outcome one replica's committed coordinator records give the transaction of
    ``pid`` whose data on ``topic``-``partition`` carry ``epoch`` (None: not decided there)."""
    mine = [v for v in seq if int(v["producerId"]) == pid]
    # transactions v2: the closing record with the bumped epoch
    v2 = {_COMMIT_STATES[int(v["transactionStatus"])] for v in mine
          if int(v["transactionStatus"]) in _COMMIT_STATES and int(v.get("clientTransactionVersion", 0)) >= 2
          and int(v["producerEpoch"]) == epoch + 1
          and (not v.get("transactionPartitions") or _lists(v, topic, partition))}
    if v2:
        return v2.pop() if len(v2) == 1 else None
    if any(int(v.get("clientTransactionVersion", 0)) >= 2 for v in mine):
        return None
    # transactions v1: the session's start must be in the log, then exactly one transaction
    start = next((i for i, v in enumerate(mine)
                  if int(v["transactionStatus"]) == _EMPTY and int(v["producerEpoch"]) == epoch), None)
    if start is None:
        return None
    outcomes: list[str | None] = []      # per transaction of (pid, epoch) listing the partition
    listed = False
    for v in mine[start + 1:]:
        status, ep = int(v["transactionStatus"]), int(v["producerEpoch"])
        if ep not in (epoch, epoch + 1) or status == _EMPTY or (status == _ONGOING and ep != epoch):
            break                           # a later session: its transactions are not ours
        if status == _ONGOING and ep == epoch:
            if not listed and _lists(v, topic, partition):
                listed = True
                outcomes.append(None)
        elif status in _COMMIT_STATES:
            if not listed and _lists(v, topic, partition):
                outcomes.append(None)
                listed = True
            if listed and outcomes[-1] is None:
                outcomes[-1] = _COMMIT_STATES[status]
            if status in _COMPLETE:
                listed = False              # complete: the next Ongoing starts another
    return outcomes[0] if len(outcomes) == 1 else None


def coordinator_states(specs: Sequence[Any], topic: str, partition: int,
                       txns: Sequence[tuple[int, int]]) -> dict[tuple[int, int], str]:
    """``(producer id, epoch) -> committed|aborted`` for the transactions ``txns`` of data on
    ``topic``-``partition`` that the committed records of the ``__transaction_state`` replicas
    among ``specs`` decide; replicas that disagree decide nothing."""
    seqs = _coordinator_sequences(specs) if txns else []
    out: dict[tuple[int, int], str] = {}
    for pid, epoch in dict.fromkeys(txns):
        said = {s for s in (_decided_in(seq, pid, epoch, topic, partition) for seq in seqs) if s is not None}
        if len(said) == 1:
            out[(pid, epoch)] = said.pop()
    return out
