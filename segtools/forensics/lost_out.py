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

__all__ = ["LOST_SCHEMA", "LostOutSummary", "write_lost_out", "REPLAY_HEADER"]

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
    pa.field("committed", pa.bool_()),
    pa.field("acked", pa.bool_()),
    pa.field("replay_id", pa.string()),         # value of REPLAY_HEADER
])


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
            "producer_epoch", "sequence", "is_control"]
    for path, _size in spec.segments:
        for rb in iter_record_batches(path, topic=spec.topic, partition=spec.partition, broker=spec.broker,
                                      include_control=False, start_offset=lo, end_offset=hi):
            for row in rb.select(cols).to_pylist():
                if offsets is None or row["offset"] in offsets:
                    yield row


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
            if ref is not None:
                for r in _rows(ref, None):
                    if r["producer_id"] >= 0 and r["sequence"] >= 0:
                        seqs.add((r["producer_id"], r["sequence"]))
                    contents.add(_content_digest(r["key"], r["value"], _headers(r["headers"])))
            chosen: dict[tuple[int, int], dict[str, Any]] = {}
            wanted: dict[tuple[str, int, int, str], set[int]] = {}
            meta: dict[tuple[int, int, int], Any] = {}
            for lost in part.lost:
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
                    chosen[ident] = {
                        "topic": topic, "partition": partition, "offset": r["offset"],
                        "leader_epoch": r["leader_epoch"], "timestamp_ms": r["timestamp_ms"],
                        "key": r["key"], "value": r["value"], "headers": r["headers"] or [],
                        "broker": key[2], "brokers": [key[2]], "producer_id": r["producer_id"],
                        "producer_epoch": r["producer_epoch"], "sequence": r["sequence"],
                        "committed": bool(lost.committed), "acked": lost.acked,
                        "replay_id": f"{topic}/{partition}/{r['offset']}/{r['leader_epoch']}",
                    }
            rows.extend(chosen[k] for k in sorted(chosen))
        table = pa.Table.from_pylist(rows, schema=LOST_SCHEMA)
        with atomic_file(os.path.join(out, "lost.parquet"), "wb") as fh:
            pq.write_table(table, fh)
        with atomic_file(os.path.join(out, "lost.ndjson"), "w") as fh:
            for r in rows:
                fh.write(json.dumps({**r, "key": text_or_base64(r["key"]), "value": text_or_base64(r["value"]),
                                     "headers": [{"key": h["key"], "value": text_or_base64(h["value"])}
                                                 for h in r["headers"]]}) + "\n")
        summary = LostOutSummary(str(out), len(rows), dup, by_seq, by_content, relocated)
        run.summary = {"records": len(rows), "duplicates_across_replicas": dup,
                       "survived_by_producer_sequence": by_seq, "survived_by_content": by_content,
                       "relocated": relocated}
    return summary
