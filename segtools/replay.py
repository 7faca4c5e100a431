"""`segtools replay LOST_DIR --bootstrap-server HOST:PORT`: produce the records of
`compare --lost-out` back to a live cluster, in their original order, once.

Idempotent across runs: each record is produced with the header ``segtools.replay.source``
= ``topic/partition/offset/leader_epoch`` (its identity in the original log). Before
producing, the target partitions are read from their log start to their end and every record
whose identity is already there is skipped, so a second replay (or a replay after a partial
one) adds nothing. Within a run the producer is idempotent (``enable.idempotence``, acks=all),
so a retry inside the client does not duplicate either and per-partition order is kept.
Records go to the partition they were lost from, with their key, value, headers and original
timestamp (CreateTime; a topic with LogAppendTime stamps its own). Needs confluent-kafka
(``pip install 'segtools[kafka]'``). docs/CONTRACT.md section 10.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow.parquet as pq

from .errors import InputError, SegtoolsError
from .forensics.lost_out import REPLAY_HEADER

__all__ = ["ReplaySummary", "ReplayError", "load_lost", "replay"]


class ReplayError(SegtoolsError):
    """The cluster refused or did not confirm a record (exit 2)."""


@dataclass
class ReplaySummary:
    records: int = 0            # in the lost-out folder
    already_present: int = 0    # skipped: their replay header is in the target partition
    produced: int = 0
    dry_run: bool = False
    planned: list[dict[str, Any]] = field(default_factory=list)


def load_lost(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of ``lost.parquet`` (``path`` = the --lost-out folder or the file), in
    original order (topic, partition, offset)."""
    p = os.fspath(path)
    file = os.path.join(p, "lost.parquet") if os.path.isdir(p) else p
    if not os.path.isfile(file):
        raise InputError(f"{p}: no lost.parquet (write one with segtools compare --lost-out)")
    if os.path.isdir(p) and os.path.exists(os.path.join(p, "_PARTIAL")):
        raise InputError(f"{p}: holds _PARTIAL: the compare --lost-out run did not finish")
    try:
        rows = pq.read_table(file).to_pylist()
    except Exception as exc:  # noqa: BLE001 - pyarrow's errors: not a Parquet file
        raise InputError(f"{file}: not a lost-out Parquet file: {exc}") from None
    missing = {"topic", "partition", "offset", "key", "value", "headers", "replay_id"} - set(rows[0] if rows else {})
    if rows and missing:
        raise InputError(f"{file}: not a lost-out file (no {', '.join(sorted(missing))})")
    return sorted(rows, key=lambda r: (r["topic"], r["partition"], r["offset"]))


def _client() -> Any:
    try:
        import confluent_kafka
    except ImportError:
        raise InputError("segtools replay needs confluent-kafka: pip install 'segtools[kafka]'") from None
    return confluent_kafka


def _present(bootstrap: str, partitions: Iterable[tuple[str, int]], timeout: float) -> set[str]:
    """Replay identities already in the target partitions (read from log start to end)."""
    ck = _client()
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "segtools-replay-check",
                            "enable.auto.commit": False, "auto.offset.reset": "earliest",
                            "isolation.level": "read_uncommitted", "log_level": 0})
    found: set[str] = set()
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
            return found
        consumer.assign(starts)
        deadline = time.monotonic() + timeout
        pending = set(ends)
        while pending:
            if time.monotonic() > deadline:
                raise ReplayError(f"timed out reading {sorted(pending)[:3]} to check what was replayed already")
            for m in consumer.consume(500, timeout=1):
                if m.error():
                    continue
                for k, v in m.headers() or []:
                    if k == REPLAY_HEADER and v is not None:
                        found.add(v.decode("utf-8", "replace"))
                if m.offset() + 1 >= ends[(m.topic(), m.partition())]:
                    pending.discard((m.topic(), m.partition()))
            for tp in list(pending):   # transaction markers at the end are never delivered
                if consumer.position([ck.TopicPartition(*tp)])[0].offset >= ends[tp]:
                    pending.discard(tp)
    finally:
        consumer.close()
    return found


def replay(lost_dir: str | os.PathLike[str], bootstrap: str, *, dry_run: bool = False,
           timeout: float = 60.0) -> ReplaySummary:
    """Produce the records of ``lost_dir`` that the cluster does not hold yet (see module doc)."""
    rows = load_lost(lost_dir)
    summary = ReplaySummary(records=len(rows), dry_run=dry_run)
    if not rows:
        return summary
    partitions = sorted({(r["topic"], r["partition"]) for r in rows})
    present = _present(bootstrap, partitions, timeout)
    todo = [r for r in rows if r["replay_id"] not in present]
    summary.already_present = len(rows) - len(todo)
    summary.planned = todo
    if dry_run or not todo:
        return summary
    ck = _client()
    producer = ck.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                            "max.in.flight.requests.per.connection": 5, "linger.ms": 5, "log_level": 0})
    failures: list[str] = []
    delivered = 0

    def on_delivery(err: Any, msg: Any) -> None:
        nonlocal delivered
        if err is not None:
            failures.append(f"{msg.topic()}-{msg.partition()}: {err}")
        else:
            delivered += 1

    for r in todo:
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
    left = producer.flush(timeout)
    if left or failures:
        raise ReplayError(f"{len(failures) + left} of {len(todo)} records not confirmed by {bootstrap}"
                          + (f": {failures[0]}" if failures else " (timed out)")
                          + "; run replay again: records already written are skipped")
    summary.produced = delivered
    return summary
