"""`segtools replay LOST_DIR`: plan, and with a cluster produce, the records of
`compare --lost-out` back to their partitions, once, without undoing anything that happened
after the loss (docs/CONTRACT.md section 10).

The lost-out folder is checked first (:func:`load_lost`): its ``_SUCCESS`` manifest must be
there, its record count, schema and each data file's size and SHA-256 must match what compare
wrote; anything else is refused (exit 2) before a record is planned.

Every record then gets one action and a reason (:func:`plan`), offline, from the folder alone:

- ``refuse``: a control record, or a record of an internal topic (``__consumer_offsets``,
  ``__transaction_state``, ``__cluster_metadata``, any ``__``-prefixed name): writing into the
  cluster's own bookkeeping is never a replay;
- ``hold``: ``duplicate`` (the same record twice in the folder), ``aborted`` (its transaction
  aborted: no consumer should ever see it), ``transaction_open`` / ``transaction_unknown``
  (nothing proves its transaction committed), ``superseded`` (the surviving log holds a newer
  value for its key: producing the old one would overwrite it in a compacted topic or a table;
  ``include_superseded`` produces it anyway), ``transaction_incomplete`` (another record of its
  transaction is held: a part of a transaction is not replayed);
- ``hold``, with a cluster: ``older_than_retention`` (its original timestamp is older than
  the topic's ``retention.ms``: the broker would delete it at its next retention check);
- ``skip``: ``already_in_cluster`` (with a cluster: an earlier replay wrote it; its header
  ``segtools.replay.source`` = ``topic/partition/offset/leader_epoch`` is there), or
  ``superseded_in_cluster`` (the cluster holds a newer record with its key: a higher leader
  epoch than the lost record's, not written by replay);
- ``produce``: everything else, in original order, to the partition it was lost from, with its
  key, value, headers and timestamp. The records of one committed transaction (producer id
  and epoch) are produced inside one new transaction, so read_committed consumers see all of
  them or none; the rest with an idempotent producer (acks=all).

Producing needs confluent-kafka (``pip install 'segtools[kafka]'``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import InputError, SegtoolsError
from .forensics.lost_out import LOST_SCHEMA, MANIFEST_FILES, REPLAY_HEADER, file_digest, schema_names

__all__ = ["ACTIONS", "PlannedRecord", "ReplayError", "ReplaySummary", "is_internal_topic", "load_lost",
           "plan", "replay"]

#: the actions of a plan, in the order the summary lists them
ACTIONS = ("produce", "skip", "hold", "refuse")
#: the plan JSON's schema_version (--plan-out; segtools/schemas/replay-plan.schema.json)
PLAN_SCHEMA_VERSION = 1


class ReplayError(SegtoolsError):
    """The cluster refused or did not confirm a record (exit 2)."""


@dataclass
class PlannedRecord:
    """One lost-out row and what replay does with it."""

    row: dict[str, Any]
    action: str        # ACTIONS
    reason: str        # a code, see the module doc

    @property
    def replay_id(self) -> str:
        return str(self.row["replay_id"])

    def to_json(self) -> dict[str, Any]:
        from .forensics.loss import text_or_base64

        r = self.row
        out = {"replay_id": r["replay_id"], "topic": r["topic"], "partition": r["partition"],
               "offset": r["offset"], "leader_epoch": r["leader_epoch"], "action": self.action,
               "reason": self.reason, "txn_state": r.get("txn_state"),
               "producer_id": r.get("producer_id"), "producer_epoch": r.get("producer_epoch"),
               "key": text_or_base64(r.get("key")), "value": text_or_base64(r.get("value"))}
        if r.get("superseded_by") is not None:
            out["superseded_by"] = r["superseded_by"]
        return out


@dataclass
class ReplaySummary:
    records: int = 0            # in the lost-out folder
    already_present: int = 0    # skipped: their replay header is in the target partition
    produced: int = 0
    dry_run: bool = False
    cluster_checked: bool = False
    planned: list[PlannedRecord] = field(default_factory=list)

    def count(self, action: str) -> int:
        return sum(1 for p in self.planned if p.action == action)

    def reasons(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.planned:
            out[f"{p.action}:{p.reason}"] = out.get(f"{p.action}:{p.reason}", 0) + 1
        return out

    def to_json(self, lost_dir: str) -> dict[str, Any]:
        return {"schema_version": PLAN_SCHEMA_VERSION, "lost_dir": lost_dir, "records": self.records,
                "dry_run": self.dry_run,
                "cluster_checked": self.cluster_checked, "produced": self.produced,
                "counts": {a: self.count(a) for a in ACTIONS}, "reasons": self.reasons(),
                "plan": [p.to_json() for p in self.planned]}


def is_internal_topic(topic: str) -> bool:
    """Kafka's internal topics (``__consumer_offsets``, ``__transaction_state``,
    ``__cluster_metadata``, ``__share_group_state``...): every ``__``-prefixed name."""
    return topic.startswith("__")


def _manifest(folder: str) -> dict[str, Any]:
    path = os.path.join(folder, "_SUCCESS")
    if not os.path.isfile(path):
        raise InputError(f"{folder}: no _SUCCESS manifest: not a finished compare --lost-out folder")
    try:
        with open(path, encoding="utf-8") as fh:
            manifest = json.load(fh)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path}: not a compare --lost-out manifest ({exc})") from None
    if not isinstance(manifest, dict) or not str(manifest.get("command", "")).endswith("--lost-out"):
        raise InputError(f"{path}: not a compare --lost-out manifest")
    if not isinstance(manifest.get("files"), dict) or not isinstance(manifest.get("records"), int):
        raise InputError(f"{path}: the manifest has no file checksums or record count (written by an "
                         "older segtools): run compare --lost-out again")
    return manifest


def load_lost(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a ``compare --lost-out`` folder, in original order (topic, partition,
    offset), after checking the folder against its ``_SUCCESS`` manifest: every data file's
    size and SHA-256, the schema and the record count. Anything that does not check out is an
    :class:`InputError` naming the file."""
    import pyarrow.parquet as pq

    folder = os.fspath(path)
    if not os.path.isdir(folder):
        raise InputError(f"{folder}: not a folder (give the folder compare --lost-out wrote)")
    if os.path.exists(os.path.join(folder, "_PARTIAL")):
        raise InputError(f"{folder}: holds _PARTIAL: the compare --lost-out run did not finish")
    file = os.path.join(folder, "lost.parquet")
    if not os.path.isfile(file):
        raise InputError(f"{folder}: no lost.parquet (write one with segtools compare --lost-out)")
    manifest = _manifest(folder)
    for name in MANIFEST_FILES:
        want = manifest["files"].get(name)
        target = os.path.join(folder, name)
        if not isinstance(want, dict) or not os.path.isfile(target):
            raise InputError(f"{target}: missing, or not listed in the _SUCCESS manifest")
        got = file_digest(target)
        if got != {"bytes": want.get("bytes"), "sha256": want.get("sha256")}:
            raise InputError(f"{target}: changed after compare --lost-out wrote it (size or SHA-256 "
                             "differs from the _SUCCESS manifest)")
    if manifest.get("schema") != schema_names():
        raise InputError(f"{folder}/_SUCCESS: schema differs from this segtools' lost-out schema: "
                         "run compare --lost-out again")
    try:
        table = pq.read_table(file)
    except Exception as exc:  # noqa: BLE001 - pyarrow's errors: not a Parquet file
        raise InputError(f"{file}: not a lost-out Parquet file: {exc}") from None
    if not table.schema.equals(LOST_SCHEMA):
        raise InputError(f"{file}: its schema is not the lost-out schema")
    if table.num_rows != manifest["records"]:
        raise InputError(f"{file}: holds {table.num_rows} records, the _SUCCESS manifest says "
                         f"{manifest['records']}")
    rows = table.to_pylist()
    return sorted(rows, key=lambda r: (r["topic"], r["partition"], r["offset"]))


def _txn_group(row: dict[str, Any]) -> tuple[int, int] | None:
    """The transaction a row is replayed in: its producer id and epoch (None: not transactional)."""
    pid = row.get("producer_id")
    if not row.get("is_transactional") or pid is None or pid < 0:
        return None
    return int(row["producer_id"]), int(row["producer_epoch"])


def plan(rows: Sequence[dict[str, Any]], *, include_superseded: bool = False,
         present: Iterable[str] = (),
         newer_in_cluster: dict[tuple[str, int, bytes], int] | None = None,
         retention_ms: dict[str, int] | None = None, now_ms: int = 0) -> list[PlannedRecord]:
    """One :class:`PlannedRecord` per row (see the module doc for the actions and reasons).
    ``present``: replay ids the cluster already holds; ``newer_in_cluster``: per (topic,
    partition, key) the highest leader epoch of a cluster record with that key (not a replay);
    ``retention_ms``: per topic, the cluster's ``retention.ms`` (with ``now_ms``)."""
    retention_ms = retention_ms or {}
    have = set(present)
    seen: set[str] = set()
    out: list[PlannedRecord] = []
    for r in rows:
        state = r.get("txn_state") or "unknown"
        key = r.get("key")
        if r.get("is_control"):
            p = PlannedRecord(r, "refuse", "control_record")
        elif is_internal_topic(str(r["topic"])):
            p = PlannedRecord(r, "refuse", "internal_topic")
        elif r["replay_id"] in seen:
            p = PlannedRecord(r, "hold", "duplicate")
        elif state == "aborted":
            p = PlannedRecord(r, "hold", "aborted")
        elif state in ("open", "unknown"):
            p = PlannedRecord(r, "hold", f"transaction_{state}")
        elif state not in ("none", "committed"):
            p = PlannedRecord(r, "hold", "transaction_unknown")
        elif r["replay_id"] in have:
            p = PlannedRecord(r, "skip", "already_in_cluster")
        elif (key is not None and newer_in_cluster is not None
              and newer_in_cluster.get((r["topic"], r["partition"], key), -1) > r["leader_epoch"]):
            p = PlannedRecord(r, "skip", "superseded_in_cluster")
        elif (retention_ms.get(r["topic"], -1) >= 0 and r.get("timestamp_ms") is not None
              and 0 <= r["timestamp_ms"] < now_ms - retention_ms[r["topic"]]):
            # its original timestamp is past the topic's retention: the broker would delete it
            p = PlannedRecord(r, "hold", "older_than_retention")
        elif r.get("superseded_by") is not None and not include_superseded:
            p = PlannedRecord(r, "hold", "superseded")
        elif r.get("superseded_by") is not None:
            p = PlannedRecord(r, "produce", "superseded_included")
        else:
            p = PlannedRecord(r, "produce", "lost")
        seen.add(r["replay_id"])
        out.append(p)
    # a transaction is replayed whole or not at all
    blocked = {g for p in out if (p.action in ("hold", "refuse") and p.reason != "duplicate")
               or p.reason == "superseded_in_cluster"
               for g in [_txn_group(p.row)] if g is not None}
    for p in out:
        if p.action == "produce" and _txn_group(p.row) in blocked:
            p.action, p.reason = "hold", "transaction_incomplete"
    return out


def _client() -> Any:
    try:
        import confluent_kafka
    except ImportError:
        raise InputError("segtools replay needs confluent-kafka: pip install 'segtools[kafka]'") from None
    return confluent_kafka


def _cluster_state(bootstrap: str, partitions: Iterable[tuple[str, int]], timeout: float,
                   keys: set[tuple[str, int, bytes]]) -> tuple[set[str], dict[tuple[str, int, bytes], int]]:
    """Replay identities already in the target partitions (read from log start to end), and
    per (topic, partition, key) of ``keys`` the highest leader epoch of a record there that
    replay did not write."""
    ck = _client()
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "segtools-replay-check",
                            "enable.auto.commit": False, "auto.offset.reset": "earliest",
                            # an aborted earlier replay is not there for consumers: read it again
                            "isolation.level": "read_committed", "log_level": 0})
    found: set[str] = set()
    newer: dict[tuple[str, int, bytes], int] = {}
    try:
        ends: dict[tuple[str, int], int] = {}
        starts = []
        for topic, partition in partitions:
            try:
                low, high = consumer.get_watermark_offsets(ck.TopicPartition(topic, partition), timeout=timeout)
            except ck.KafkaException as exc:
                raise ReplayError(f"cannot read {topic}-{partition} on {bootstrap}: {exc}") from None
            if high > low:
                ends[(topic, partition)] = high
                starts.append(ck.TopicPartition(topic, partition, low))
        if not starts:
            return found, newer
        consumer.assign(starts)
        deadline = time.monotonic() + timeout
        pending = set(ends)
        while pending:
            if time.monotonic() > deadline:
                raise ReplayError(f"timed out reading {sorted(pending)[:3]} to check what was replayed already "
                                  "(an open transaction there stops read_committed reads before the end)")
            for m in consumer.consume(500, timeout=1):
                if m.error():
                    continue
                ident = next((v for k, v in m.headers() or [] if k == REPLAY_HEADER and v is not None), None)
                if ident is not None:
                    found.add(ident.decode("utf-8", "replace"))
                elif m.key() is not None and (m.topic(), m.partition(), m.key()) in keys:
                    epoch = m.leader_epoch()
                    k = (m.topic(), m.partition(), m.key())
                    newer[k] = max(newer.get(k, -1), epoch if epoch is not None else -1)
                if m.offset() + 1 >= ends[(m.topic(), m.partition())]:
                    pending.discard((m.topic(), m.partition()))
            for tp in list(pending):   # transaction markers at the end are never delivered
                if consumer.position([ck.TopicPartition(*tp)])[0].offset >= ends[tp]:
                    pending.discard(tp)
    finally:
        consumer.close()
    return found, newer


def _retention(bootstrap: str, topics: Sequence[str], timeout: float) -> dict[str, int]:
    """``retention.ms`` of each topic (-1: kept forever) as the cluster reports it."""
    ck = _client()
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    out: dict[str, int] = {}
    futures = admin.describe_configs([ConfigResource(ResourceType.TOPIC, t) for t in topics],
                                     request_timeout=timeout)
    for resource, fut in futures.items():
        try:
            config = fut.result(timeout)
        except ck.KafkaException as exc:
            raise ReplayError(f"cannot read the configuration of topic {resource.name} on {bootstrap}: "
                              f"{exc}") from None
        stamp, entry = config.get("message.timestamp.type"), config.get("retention.ms")
        if stamp is not None and stamp.value == "LogAppendTime":
            continue        # the broker stamps each record now: its original time does not count
        if entry is not None and entry.value is not None:
            out[resource.name] = int(entry.value)
    return out


def replay(lost_dir: str | os.PathLike[str], bootstrap: str | None = None, *, dry_run: bool = False,
           include_superseded: bool = False, timeout: float = 60.0) -> ReplaySummary:
    """Plan the records of ``lost_dir`` and, unless ``dry_run``, produce those planned
    ``produce`` to ``bootstrap`` (see the module doc). Without ``bootstrap`` only a dry run is
    possible: the plan from the folder alone."""
    if bootstrap is None and not dry_run:
        raise InputError("replay needs --bootstrap-server to produce (or --dry-run to plan offline)")
    rows = load_lost(lost_dir)
    summary = ReplaySummary(records=len(rows), dry_run=dry_run)
    present: set[str] = set()
    newer: dict[tuple[str, int, bytes], int] | None = None
    if bootstrap is not None and rows:
        keys = {(r["topic"], r["partition"], r["key"]) for r in rows if r["key"] is not None}
        targets = sorted({(r["topic"], r["partition"]) for r in rows if not is_internal_topic(r["topic"])})
        present, newer = _cluster_state(bootstrap, targets, timeout, keys)
        retention = _retention(bootstrap, sorted({t for t, _p in targets}), timeout) if targets else {}
        summary.cluster_checked = True
    else:
        retention = {}
    summary.planned = plan(rows, include_superseded=include_superseded, present=present,
                           newer_in_cluster=newer, retention_ms=retention,
                           now_ms=int(time.time() * 1000))
    summary.already_present = sum(1 for p in summary.planned if p.reason == "already_in_cluster")
    todo = [p.row for p in summary.planned if p.action == "produce"]
    if dry_run or not todo:
        return summary
    assert bootstrap is not None
    summary.produced = _produce(todo, bootstrap, timeout, os.path.abspath(os.fspath(lost_dir)))
    return summary


def _produce(todo: Sequence[dict[str, Any]], bootstrap: str, timeout: float, origin: str) -> int:
    """Produce ``todo`` in order: runs of plain records with one idempotent producer, each
    transaction's records in one new transaction at the place of its first record."""
    ck = _client()
    failures: list[str] = []
    delivered = 0

    def on_delivery(err: Any, msg: Any) -> None:
        nonlocal delivered
        if err is not None:
            failures.append(f"{msg.topic()}-{msg.partition()}: {err}")
        else:
            delivered += 1

    def send(producer: Any, r: dict[str, Any]) -> None:
        headers = [(h["key"], h["value"]) for h in r["headers"] or []] + \
            [(REPLAY_HEADER, r["replay_id"].encode("utf-8"))]
        kwargs: dict[str, Any] = {"partition": r["partition"], "key": r["key"], "value": r["value"],
                                  "headers": headers, "on_delivery": on_delivery}
        if r.get("timestamp_ms") is not None and r["timestamp_ms"] >= 0:
            kwargs["timestamp"] = r["timestamp_ms"]
        while True:
            try:
                producer.produce(r["topic"], **kwargs)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)

    base = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
            "max.in.flight.requests.per.connection": 5, "linger.ms": 5, "log_level": 0}
    groups: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for r in todo:
        g = _txn_group(r)
        if g is not None:
            groups.setdefault(g, []).append(r)
    plain = ck.Producer(base)
    done: set[tuple[int, int]] = set()
    left = 0
    try:
        for r in todo:
            g = _txn_group(r)
            if g is None:
                send(plain, r)
                continue
            if g in done:
                continue
            done.add(g)
            left += plain.flush(timeout)     # order: what came before is written first
            txn_id = "segtools-replay-" + hashlib.sha256(f"{origin}/{g[0]}/{g[1]}".encode()).hexdigest()[:16]
            tp = ck.Producer({**base, "transactional.id": txn_id})
            try:
                tp.init_transactions(timeout)
                tp.begin_transaction()
                for x in groups[g]:
                    send(tp, x)
                tp.commit_transaction(timeout)
            except ck.KafkaException as exc:
                failures.append(f"transaction of producer {g[0]} epoch {g[1]}: {exc}")
    finally:
        left += plain.flush(timeout)
    if left or failures:
        raise ReplayError(f"{len(failures) + left} of {len(todo)} records not confirmed by {bootstrap}"
                          + (f": {failures[0]}" if failures else " (timed out)")
                          + "; run replay again: records already written are skipped")
    return delivered
