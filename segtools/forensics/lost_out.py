"""`segtools compare --lost-out DIR`: every lost or divergent record, whole, ready to replay.

The compare report names each lost record (replica, offset, leader epoch); this module reads
each one back from its replica's segments with everything a producer would need to write it
again (key, value, headers, timestamp) and writes, in original order (topic, partition,
offset), ``DIR/lost.ndjson`` and ``DIR/lost.parquet`` (docs/CONTRACT.md section 10).

Deduplicated:
- a record lost from several replicas (same topic, partition, offset, leader epoch) once,
  with every broker that held it in ``brokers``;
- against the surviving log (the report's reference replica of the partition): a record whose
  idempotent producer id and sequence are there, or whose content (key, value, headers) is
  there, was written again (a producer retry) and is left out; ``relocated_to`` records too.

Transactions and keys (docs/CONTRACT.md section 10): ``txn_state`` is the state of the
record's transaction from the markers on every replica
(:func:`segtools.forensics.transactions.lost_transaction_states`); ``log_committed`` says the
high watermark (or an acks=all acknowledgement) passed the record; ``committed`` (a loss for
consumers) is ``log_committed`` unless the transaction aborted: an ``open`` or ``unknown`` one
may still be (or have been) committed, and the report counts it so. ``txn_state`` is the
report's own state of the copy written (``LostRecord.txn_state``), read here only when the
report did not. ``superseded_by``: the surviving log's offset of a newer record (higher leader epoch,
then offset) with the same key, which replay must not overwrite with the lost value.

``_SUCCESS`` lists the record count, the schema, and the size and SHA-256 of each data file.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from segtools.files.outputs import atomic_file, partial_run, prepare_output_dir

from .loss import text_or_base64

__all__ = ["LOST_SCHEMA", "MANIFEST_FILES", "LostOutSummary", "REPLAY_HEADER", "file_digest", "schema_names",
           "write_lost_out"]

#: header replay adds to each record it produces: the record's identity in the original log
REPLAY_HEADER = "segtools.replay.source"

LOST_SCHEMA = pa.schema([
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),             # original offset
    pa.field("leader_epoch", pa.int32()),
    pa.field("timestamp_ms", pa.int64()),
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("headers", pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))),
    pa.field("broker", pa.int32()),             # first broker holding it
    pa.field("brokers", pa.list_(pa.int32())),
    pa.field("producer_id", pa.int64()),
    pa.field("producer_epoch", pa.int32()),
    pa.field("sequence", pa.int32()),
    pa.field("committed", pa.bool_()),          # a loss for consumers: see the module doc
    pa.field("acked", pa.bool_()),
    pa.field("replay_id", pa.string()),         # value of REPLAY_HEADER
    pa.field("is_transactional", pa.bool_()),
    pa.field("is_control", pa.bool_()),         # always false: markers are never written here
    pa.field("txn_state", pa.string()),         # segtools.forensics.transactions.TXN_STATES
    pa.field("log_committed", pa.bool_()),      # the high watermark (or acks=all) passed it
    pa.field("superseded_by", pa.int64()),      # surviving offset of a newer record with its key
])

#: ``schema_version`` on every line of lost.ndjson (segtools/schemas/lost-record.schema.json)
LOST_NDJSON_SCHEMA_VERSION = 1

#: what ``_SUCCESS`` records of each data file (replay checks it before reading anything)
MANIFEST_FILES = ("lost.parquet", "lost.ndjson")


@dataclass
class LostOutSummary:
    out_dir: str
    records: int
    duplicates_across_replicas: int
    survived_by_producer_sequence: int
    survived_by_content: int
    relocated: int


def _content_digest(key: bytes | None, value: bytes | None, headers: Iterable[tuple[str, bytes | None]]) -> bytes:
    h = hashlib.sha256()
    for part in (key, value):
        h.update(b"\x00" if part is None else b"\x01" + len(part).to_bytes(8, "big") + part)
    for k, v in headers:
        kb = k.encode("utf-8", "surrogateescape")
        h.update(len(kb).to_bytes(8, "big") + kb)
        h.update(b"\x00" if v is None else b"\x01" + len(v).to_bytes(8, "big") + v)
    return h.digest()


def _headers(value: Any) -> list[tuple[str, bytes | None]]:
    return [(h["key"], h["value"]) for h in (value or [])]


def _rows(spec: Any, offsets: set[int] | None) -> Iterable[dict[str, Any]]:
    """Records of one replica (all, or only ``offsets``) as dicts."""
    from segtools.records.columnar import iter_record_batches

    lo = min(offsets) if offsets else None
    hi = max(offsets) + 1 if offsets else None
    cols = ["offset", "leader_epoch", "timestamp_ms", "key", "value", "headers", "producer_id",
            "producer_epoch", "sequence", "is_control", "is_transactional"]
    for path, _size in spec.segments:
        for rb in iter_record_batches(path, topic=spec.topic, partition=spec.partition, broker=spec.broker,
                                      include_control=False, start_offset=lo, end_offset=hi):
            for row in rb.select(cols).to_pylist():
                if offsets is None or row["offset"] in offsets:
                    yield row


def _marker_rows(spec: Any, start: int, pids: set[int], *,
                 own_until: dict[int, int] | None = None,
                 epochs: dict[int, set[int]] | None = None) -> list[dict[str, Any]]:
    """Rows of one replica from ``start`` on, markers included, of the producers ``pids`` only
    (what pairing a transaction with its marker needs; values are not kept), read only as far
    as they can decide something, so memory follows the lost records, not the log:

    - ``own_until`` (the lost replica: producer id -> its last lost offset): every row of
      those producers until each has a marker past its last lost offset;
    - ``epochs`` (another replica: producer id -> the epochs of its lost records): the
      producer's markers and its data of other epochs, until each producer has a marker."""
    from segtools.records.columnar import iter_record_batches

    cols = ["offset", "producer_id", "producer_epoch", "is_transactional", "is_control", "key"]
    open_pids = set(pids)
    out: list[dict[str, Any]] = []
    for path, _size in spec.segments:
        for rb in iter_record_batches(path, topic=spec.topic, partition=spec.partition, broker=spec.broker,
                                      include_control=True, start_offset=start):
            for r in rb.select(cols).to_pylist():
                pid = r["producer_id"]
                if pid not in open_pids:
                    continue
                if own_until is not None:
                    out.append(r)
                    if r["is_control"] and r["offset"] > own_until.get(pid, -1):
                        open_pids.discard(pid)
                elif r["is_control"]:
                    out.append(r)
                    if r["producer_epoch"] >= min((epochs or {}).get(pid, {0})):
                        open_pids.discard(pid)      # the marker that decides (older ones do not)
                elif epochs is not None and r["producer_epoch"] not in epochs.get(pid, ()):
                    out.append(r)
                if not open_pids:
                    return out
    return out


def _aborted_ranges(spec: Any) -> list[Any]:
    """The ``.txnindex`` entries beside the replica's segments (unreadable ones: none)."""
    from segtools.errors import SegtoolsError
    from segtools.files.indexes import read_txn_index

    out: list[Any] = []
    for path, _size in spec.segments:
        index = path[:-len(".log")] + ".txnindex" if path.endswith(".log") else ""
        if index and os.path.isfile(index):
            try:
                out.extend(read_txn_index(index, strict=False))
            except SegtoolsError:
                continue
    return out


def _txn_states(rows: Sequence[dict[str, Any]], holder: Any, specs: Sequence[Any], divergence: int) -> dict[int, str]:
    """txn_state of each of ``rows`` (lost from ``holder``), from every replica's markers, and,
    for a transaction no marker decides (``open``/``unknown``), from the coordinator's committed
    records when a ``__transaction_state`` partition is among ``specs``."""
    from .transactions import coordinator_states, lost_transaction_states

    pids = {int(r["producer_id"]) for r in rows if r["is_transactional"] and r["producer_id"] >= 0}
    if not pids:
        return {int(r["offset"]): "none" for r in rows}
    last: dict[int, int] = {}
    epochs: dict[int, set[int]] = {}
    for r in rows:
        if r["is_transactional"] and r["producer_id"] >= 0:
            last[r["producer_id"]] = max(last.get(r["producer_id"], -1), r["offset"])
            epochs.setdefault(r["producer_id"], set()).add(r["producer_epoch"])
    others = [_marker_rows(s, divergence, pids, epochs=epochs) for s in specs
              if (s.topic, s.partition) == (holder.topic, holder.partition) and s is not holder]
    own = _marker_rows(holder, divergence, pids, own_until=last)
    states = lost_transaction_states(rows, own, _aborted_ranges(holder), others, divergence)
    undecided = {int(r["offset"]): (int(r["producer_id"]), int(r["producer_epoch"])) for r in rows
                 if states.get(int(r["offset"])) in ("open", "unknown")}
    if undecided:
        decided = coordinator_states(specs, holder.topic, holder.partition, list(undecided.values()))
        for offset, txn in undecided.items():
            if txn in decided:
                states[offset] = decided[txn]
    return states


def _key_digest(key: bytes) -> bytes:
    return hashlib.blake2b(key, digest_size=16).digest()


def file_digest(path: str) -> dict[str, Any]:
    """``{"bytes", "sha256"}`` of one file, as ``_SUCCESS`` lists it."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return {"bytes": size, "sha256": h.hexdigest()}


def schema_names() -> list[str]:
    """The schema as ``_SUCCESS`` lists it: ``name:type`` per column."""
    return [f"{f.name}:{f.type}" for f in LOST_SCHEMA]


def write_lost_out(report: Any, specs: Sequence[Any], out_dir: str | os.PathLike[str],
                   inputs: Sequence[str | os.PathLike[str]], *, force: bool = False) -> LostOutSummary:
    """Write ``lost.ndjson`` and ``lost.parquet`` for the lost records of ``report`` (a
    CompareReport); ``specs`` are the replicas it compared, ``inputs`` the evidence."""
    out = prepare_output_dir(out_dir, inputs, force=force, flag="--lost-out")
    by_replica = {(s.topic, s.partition, s.broker, s.log_dir): s for s in specs}
    rows: list[dict[str, Any]] = []
    dup = by_seq = by_content = relocated = 0
    with partial_run(out, command="segtools compare --lost-out") as run:
        for part in sorted(report.partitions, key=lambda p: (p.verdict.topic, p.verdict.partition)):
            if not part.lost:
                continue
            topic, partition = part.verdict.topic, part.verdict.partition
            ref = next((s for s in specs if s.topic == topic and s.partition == partition
                        and s.broker == part.verdict.reference_broker), None)
            seqs: set[tuple[int, int]] = set()
            contents: set[bytes] = set()
            newest: dict[bytes, tuple[int, int]] = {}     # key digest -> (leader epoch, offset)
            if ref is not None:
                for r in _rows(ref, None):
                    if r["producer_id"] >= 0 and r["sequence"] >= 0:
                        seqs.add((r["producer_id"], r["sequence"]))
                    contents.add(_content_digest(r["key"], r["value"], _headers(r["headers"])))
                    if r["key"] is not None:
                        kd = _key_digest(r["key"])
                        newest[kd] = max(newest.get(kd, (-1, -1)), (r["leader_epoch"], r["offset"]))
            chosen: dict[tuple[int, int], dict[str, Any]] = {}
            wanted: dict[tuple[str, int, int, str], set[int]] = {}
            meta: dict[tuple[int, int, int], Any] = {}
            holders: dict[tuple[int, int], Any] = {}
            reported: dict[tuple[int, int], str | None] = {}     # the report's txn_state of the copy
            divergence: dict[int, int] = {}
            for lost in part.lost:
                divergence[lost.broker] = min(divergence.get(lost.broker, lost.offset), lost.offset)
                if lost.relocated_to is not None:
                    relocated += 1
                    continue
                wanted.setdefault((topic, partition, lost.broker, lost.log_dir), set()).add(lost.offset)
                meta[(lost.broker, lost.offset, lost.leader_epoch)] = lost
            for key, offsets in sorted(wanted.items()):
                spec = by_replica.get(key) or next(
                    (s for s in specs if (s.topic, s.partition, s.broker) == key[:3]), None)
                if spec is None:
                    continue
                for r in _rows(spec, offsets):
                    lost = meta.get((key[2], r["offset"], r["leader_epoch"]))
                    if lost is None:
                        continue
                    ident = (r["offset"], r["leader_epoch"])
                    if ident in chosen:
                        chosen[ident]["brokers"].append(key[2])
                        dup += 1
                        continue
                    if r["producer_id"] >= 0 and r["sequence"] >= 0 and (r["producer_id"], r["sequence"]) in seqs:
                        by_seq += 1
                        continue
                    if _content_digest(r["key"], r["value"], _headers(r["headers"])) in contents:
                        by_content += 1
                        continue
                    holders[ident] = spec
                    reported[ident] = lost.txn_state
                    chosen[ident] = {
                        "topic": topic, "partition": partition, "offset": r["offset"],
                        "leader_epoch": r["leader_epoch"], "timestamp_ms": r["timestamp_ms"],
                        "key": r["key"], "value": r["value"], "headers": r["headers"] or [],
                        "broker": key[2], "brokers": [key[2]], "producer_id": r["producer_id"],
                        "producer_epoch": r["producer_epoch"], "sequence": r["sequence"],
                        "committed": bool(lost.committed), "acked": lost.acked,
                        "replay_id": f"{topic}/{partition}/{r['offset']}/{r['leader_epoch']}",
                        "is_transactional": bool(r["is_transactional"]), "is_control": False,
                        "txn_state": "none", "log_committed": bool(lost.committed), "superseded_by": None,
                    }
                    if r["key"] is not None:
                        later = newest.get(_key_digest(r["key"]))
                        if later is not None and later > (r["leader_epoch"], r["offset"]):
                            chosen[ident]["superseded_by"] = later[1]
            by_holder: dict[int, list[dict[str, Any]]] = {}
            for ident, row in chosen.items():
                by_holder.setdefault(id(holders[ident]), []).append(row)
            for mine in by_holder.values():
                holder = holders[(mine[0]["offset"], mine[0]["leader_epoch"])]
                # the report read the states already (attach_replicas): the same value here, so
                # lost-out and report.json never disagree; read them only for a report without
                unread = [row for row in mine if reported[(row["offset"], row["leader_epoch"])] is None]
                states = _txn_states(unread, holder, specs,
                                     divergence.get(holder.broker, mine[0]["offset"])) if unread else {}
                for row in mine:
                    said = reported[(row["offset"], row["leader_epoch"])]
                    row["txn_state"] = said if said is not None else states.get(row["offset"], "unknown")
                    # a loss for consumers unless its transaction aborted: an open or unknown one
                    # may still commit (or did, with the marker lost), as the report counts it
                    row["committed"] = row["log_committed"] and row["txn_state"] != "aborted"
            rows.extend(chosen[k] for k in sorted(chosen))
        table = pa.Table.from_pylist(rows, schema=LOST_SCHEMA)
        with atomic_file(os.path.join(out, "lost.parquet"), "wb") as fh:
            pq.write_table(table, fh)
        with atomic_file(os.path.join(out, "lost.ndjson"), "w") as fh:
            for r in rows:
                fh.write(json.dumps({"schema_version": LOST_NDJSON_SCHEMA_VERSION,
                                     **r, "key": text_or_base64(r["key"]), "value": text_or_base64(r["value"]),
                                     "headers": [{"key": h["key"], "value": text_or_base64(h["value"])}
                                                 for h in r["headers"]]}) + "\n")
        summary = LostOutSummary(str(out), len(rows), dup, by_seq, by_content, relocated)
        state_counts: dict[str, int] = {}
        for r in rows:
            state_counts[r["txn_state"]] = state_counts.get(r["txn_state"], 0) + 1
        run.summary = {"records": len(rows), "duplicates_across_replicas": dup,
                       "survived_by_producer_sequence": by_seq, "survived_by_content": by_content,
                       "relocated": relocated, "txn_states": state_counts,
                       "superseded": sum(1 for r in rows if r["superseded_by"] is not None),
                       "schema": schema_names(),
                       "files": {name: file_digest(os.path.join(out, name)) for name in MANIFEST_FILES}}
    return summary
