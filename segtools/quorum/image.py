"""The cluster image a metadata log describes, at any offset (time travel), and the snapshot
replay oracle (docs/QUORUM.md "Cluster image").

The image is what the records say, applied as the controller applies them
(``PartitionRegistration.merge``: a PartitionChangeRecord replaces each non-null field, a leader
other than -2 bumps the leader epoch, every change bumps the partition epoch; records between
BeginTransaction and AbortTransaction are dropped). Entities are keyed
``(kind, id)`` and hold the fields compared by the oracle.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from segtools.errors import SegtoolsError
from segtools.internal_topics.metadata import decode_record
from segtools.quorum.nodes import ControllerNode
from segtools.records.batches import SegmentReader

Key = tuple[str, Any]
#: partition fields kept: the data-plane state an SRE asks about (directories are left out:
#: Kafka fills them in on merge with placeholders the records do not carry)
_PARTITION_FIELDS = ("replicas", "isr", "removingReplicas", "addingReplicas", "leader",
                     "leaderRecoveryState", "leaderEpoch", "partitionEpoch",
                     "eligibleLeaderReplicas", "lastKnownElr")
_CHANGE_LISTS = ("replicas", "isr", "removingReplicas", "addingReplicas",
                 "eligibleLeaderReplicas", "lastKnownElr")


@dataclass
class Image:
    """Entities by key, and the offset up to which (exclusive) records were applied."""

    entities: dict[Key, dict[str, Any]] = field(default_factory=dict)
    offset: int = 0
    time_ms: int = -1
    _txn: list[tuple[str, dict[str, Any]]] | None = None

    def apply(self, name: str, data: dict[str, Any]) -> None:
        """Apply one decoded record (type name as ``decode_record`` gives it)."""
        if name == "BEGIN_TRANSACTION_RECORD":
            self._txn = []
            return
        if name == "END_TRANSACTION_RECORD":
            pending, self._txn = self._txn or [], None
            for n, d in pending:
                self._apply(n, d)
            return
        if name == "ABORT_TRANSACTION_RECORD":
            self._txn = None
            return
        if self._txn is not None:
            self._txn.append((name, data))
            return
        self._apply(name, data)

    def _apply(self, name: str, d: dict[str, Any]) -> None:
        e = self.entities
        if name == "TOPIC_RECORD":
            e[("topic", str(d["topicId"]))] = {"name": d["name"]}
        elif name == "REMOVE_TOPIC_RECORD":
            tid = str(d["topicId"])
            topic = e.get(("topic", tid), {}).get("name")
            # the topic's configs go with it (Kafka's MetadataDelta replays the removal into
            # the configs delta too); resource type 2 is TOPIC
            for gone in [k for k in e
                         if k == ("topic", tid) or (k[0] == "partition" and k[1][0] == tid)
                         or (k[0] == "config" and k[1][:2] == (2, topic))]:
                del e[gone]
        elif name == "PARTITION_RECORD":
            e[("partition", (str(d["topicId"]), d["partitionId"]))] = {
                k: _norm(d.get(k)) for k in _PARTITION_FIELDS}
        elif name == "PARTITION_CHANGE_RECORD":
            cur = e.get(("partition", (str(d["topicId"]), d["partitionId"])))
            if cur is None:
                return
            for field_name in _CHANGE_LISTS:
                if d.get(field_name) is not None:
                    cur[field_name] = list(d[field_name])
            if d.get("leader", -2) != -2:
                cur["leader"] = d["leader"]
                cur["leaderEpoch"] += 1
            if d.get("leaderRecoveryState", -1) != -1:
                cur["leaderRecoveryState"] = d["leaderRecoveryState"]
            cur["partitionEpoch"] += 1
        elif name == "REGISTER_BROKER_RECORD":
            e[("broker", d["brokerId"])] = {
                "brokerEpoch": d["brokerEpoch"], "incarnationId": str(d["incarnationId"]),
                "fenced": d.get("fenced", True), "inControlledShutdown":
                    d.get("inControlledShutdown", False), "rack": d.get("rack")}
        elif name == "UNREGISTER_BROKER_RECORD":
            e.pop(("broker", d["brokerId"]), None)
        elif name in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD"):
            b = e.get(("broker", d["id"]))
            if b is not None:
                b["fenced"] = name == "FENCE_BROKER_RECORD"
        elif name == "BROKER_REGISTRATION_CHANGE_RECORD":
            b = e.get(("broker", d["brokerId"]))
            if b is not None:
                # BrokerRegistrationFencingChange: 1 fence, -1 unfence, 0 none
                if d.get("fenced", 0) == 1:
                    b["fenced"] = True
                elif d.get("fenced", 0) == -1:
                    b["fenced"] = False
                if d.get("inControlledShutdown", 0) == 1:
                    b["inControlledShutdown"] = True
        elif name == "FEATURE_LEVEL_RECORD":
            if d["featureLevel"] == 0:
                e.pop(("feature", d["name"]), None)
            else:
                e[("feature", d["name"])] = {"level": d["featureLevel"]}
        elif name == "CONFIG_RECORD":
            k: Key = ("config", (d["resourceType"], d["resourceName"], d["name"]))
            if d.get("value") is None:
                e.pop(k, None)
            else:
                e[k] = {"value": d["value"]}
        elif name == "PRODUCER_IDS_RECORD":
            e[("producer-ids", None)] = {"nextProducerId": d["nextProducerId"]}
        elif name == "ACCESS_CONTROL_ENTRY_RECORD":
            e[("acl", str(d["id"]))] = {k: v for k, v in d.items() if k != "id"}
        elif name == "REMOVE_ACCESS_CONTROL_ENTRY_RECORD":
            e.pop(("acl", str(d["id"])), None)
        elif name == "CLIENT_QUOTA_RECORD":
            ent = tuple((x["entityType"], x["entityName"]) for x in d["entity"])
            k = ("quota", (ent, d["key"]))
            if d.get("remove"):
                e.pop(k, None)
            else:
                e[k] = {"value": d["value"]}


def _norm(v: Any) -> Any:
    return list(v) if isinstance(v, (list, tuple)) else v


def metadata_records(path: str, *, skip_unreadable: bool = False
                     ) -> Iterator[tuple[int, int, str, dict[str, Any]]]:
    """(offset, timestamp, type name, data) of the metadata records of one file; a record
    that does not decode raises, or is passed over with ``skip_unreadable``."""
    for offset, ts, name, _v, data in versioned_records(path, skip_unreadable=skip_unreadable):
        yield offset, ts, name, data


def versioned_records(path: str, *, skip_unreadable: bool = False
                      ) -> Iterator[tuple[int, int, str, int, dict[str, Any]]]:
    """:func:`metadata_records` with each record's version (offset, timestamp, type name,
    version, data)."""
    with SegmentReader(path) as reader:
        for batch in reader:
            if batch.is_control:
                continue
            for rec in batch.records():
                try:
                    name, version, data = decode_record(rec.value)
                except SegtoolsError as e:
                    if skip_unreadable:
                        continue
                    raise SegtoolsError(f"{path}: byte {batch.position}, offset {rec.offset}: "
                                        f"metadata record unreadable: {e}") from None
                yield rec.offset, rec.timestamp, name, version, data


def image_from_snapshot(path: str, end_offset: int) -> Image:
    """The image a ``.checkpoint`` snapshot holds."""
    img = Image(offset=end_offset)
    for _o, _t, name, data in metadata_records(path):
        img.apply(name, data)
    return img


def replay(start: Image, logs: Iterable[str], *, until_offset: int | None = None,
           until_time_ms: int | None = None) -> Image:
    """``start`` advanced by the log records from its offset up to ``until_offset``
    (exclusive) or the last record at or before ``until_time_ms``."""
    img = Image(dict((k, dict(v)) for k, v in start.entities.items()), start.offset,
                start.time_ms)
    for path in logs:
        for offset, ts, name, data in metadata_records(path):
            if offset < img.offset:
                continue
            if until_offset is not None and offset >= until_offset:
                return img
            if until_time_ms is not None and ts > until_time_ms:
                return img
            img.apply(name, data)
            img.offset, img.time_ms = offset + 1, ts
    return img


def diff(a: Image, b: Image) -> list[tuple[Key, dict[str, Any] | None, dict[str, Any] | None]]:
    """Entities that differ between two images: (key, in a, in b), sorted by key text."""
    keys = sorted(set(a.entities) | set(b.entities), key=repr)
    return [(k, a.entities.get(k), b.entities.get(k)) for k in keys
            if a.entities.get(k) != b.entities.get(k)]


@dataclass(frozen=True)
class SnapshotCheck:
    """One snapshot against the previous one (or an empty image) plus the log."""

    path: str
    end_offset: int
    entities: int
    first_difference: tuple[Key, dict[str, Any] | None, dict[str, Any] | None] | None
    checked: bool            # False: the log does not reach back to the previous image
    reason: str = ""


def check_snapshots(snapshots: Iterable[tuple[str, int]], logs: list[str],
                    log_start: int) -> list[SnapshotCheck]:
    """Replay the previous snapshot (or nothing, from offset 0) plus the log up to each
    snapshot's end offset and compare with the snapshot. ``snapshots``: (path, end offset) in
    offset order; the bootstrap ``0-0`` snapshot holds no metadata records."""
    out = []
    prev: Image | None = Image()
    for path, end in snapshots:
        snap = image_from_snapshot(path, end)
        if end == 0:
            prev = snap
            continue
        if prev is None or prev.offset < log_start:
            out.append(SnapshotCheck(path, end, len(snap.entities), None, False,
                                     f"the log starts at {log_start}, after the previous "
                                     f"image at {0 if prev is None else prev.offset}"))
        else:
            got = replay(prev, logs, until_offset=end)
            d = diff(got, snap)
            out.append(SnapshotCheck(path, end, len(snap.entities), d[0] if d else None, True))
        prev = snap
    return out


def image_at(node: ControllerNode, *, offset: int | None = None,
             time_ms: int | None = None) -> Image:
    """Time travel: the image of ``node``'s metadata at ``offset`` (exclusive) or at the last
    record stamped at or before ``time_ms`` (neither: the log end). Starts from the newest
    snapshot at or before the target offset when the log does not reach back to 0."""
    logs = sorted({b.path for b in node.batches})
    start = Image()
    for s in node.snapshots:
        if s.end_offset > 0 and (offset is None or s.end_offset <= offset) \
                and (time_ms is None or s.end_offset <= node.log_start):
            start = image_from_snapshot(s.path, s.end_offset)
    if start.offset < node.log_start:
        raise SegtoolsError(f"{node.name}: the log starts at {node.log_start} and no snapshot "
                            f"ends between it and the target: the image cannot be rebuilt")
    return replay(start, logs, until_offset=offset, until_time_ms=time_ms)


#: ``schema_version`` of ``quorum --image-at`` and ``--diff-from`` (segtools/schemas/quorum-image,
#: quorum-diff)
JSON_SCHEMA_VERSION = 1


def image_json(img: Image) -> dict[str, Any]:
    """The image as JSON: offset, time and entities grouped by kind."""
    out: dict[str, Any] = {"schema_version": JSON_SCHEMA_VERSION, "offset": img.offset, "time_ms": img.time_ms,
                           "entities": {}}
    for (kind, ident), data in sorted(img.entities.items(), key=lambda kv: repr(kv[0])):
        out["entities"].setdefault(kind, []).append({"id": ident, **data})
    return out


def images_after(path: str, offsets: Iterable[int]) -> dict[int, Image]:
    """The image just after each metadata offset (records up to and including it applied) of
    the metadata dir ``path``, replayed once in offset order from the newest snapshot at or
    before the first. Offsets the log cannot rebuild (before its start, no snapshot) are
    left out."""
    from segtools.quorum.nodes import load_node

    node = load_node(path)
    logs = sorted({b.path for b in node.batches})
    out: dict[int, Image] = {}
    cur: Image | None = None
    for offset in sorted(set(offsets)):
        if cur is None:
            try:
                cur = image_at(node, offset=offset + 1)
            except SegtoolsError:
                continue
        else:
            cur = replay(cur, logs, until_offset=offset + 1)
        out[offset] = cur
    return out
