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

The marker's type (COMMIT or ABORT) is in its control record key, read from the segment.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from segtools.forensics.findings import Finding
from segtools.forensics.model import BatchFacts

#: transaction.max.timeout.ms default (TransactionStateManagerConfig): an open transaction
#: older than this by the log's own clock can no longer be completed by its producer
MAX_TRANSACTION_TIMEOUT_MS = 900_000
#: the last producer epoch before a v2 producer id rolls over
MAX_EPOCH = 32767
#: at most this many markers are opened to read their type; beyond, outcome "ended"
MAX_MARKER_READS = 200_000

MarkerReader = Callable[[BatchFacts], "str | None"]


def marker_reader(log_dir: str, topic: str, partition: int) -> MarkerReader:
    """Reads the control type of a marker batch from ``log_dir/topic-partition/segment``."""
    pdir = os.path.join(log_dir, f"{topic}-{partition}")

    def read(b: BatchFacts) -> str | None:
        from segtools.batches import RecordBatch
        from segtools.errors import SegtoolsError

        path = os.path.join(pdir, b.segment)
        try:
            with open(path, "rb") as fh:
                fh.seek(b.position)
                data = fh.read(b.size)
            batch = RecordBatch.from_bytes(data)
            recs = list(batch.control_records())
        except (OSError, SegtoolsError, ValueError):
            return None
        return recs[0].type_name if recs else None
    return read


def _abort_command(topic: str, partition: int, start: int) -> str:
    # flags of kafka-transactions.sh abort: tools/src/main/java/org/apache/kafka/tools/
    # TransactionsCommand.java (AbortTransactionCommand: --topic --partition --start-offset)
    return (f"kafka-transactions.sh --bootstrap-server <broker:port> abort --topic {topic} "
            f"--partition {partition} --start-offset {start}")


def partition_transactions(batches: Sequence[BatchFacts], *, high_watermark: int | None,
                           log_end_offset: int, topic: str, partition: int,
                           transaction_version: int | None = None,
                           marker_type: MarkerReader | None = None) -> dict[str, Any]:
    """``{"transaction_version", "last_stable_offset", "transactions": [...], "counts"}``.
    Each transaction: ``producer_id``, ``producer_epoch`` (of its data), ``first_offset``,
    ``last_offset`` (its last data offset), ``records``, ``state`` (``committed``,
    ``aborted``, ``ended`` when the marker could not be read, ``open`` or ``hanging``), and
    for ended ones ``marker_offset`` / ``marker_epoch``; ``producer_id_rolled_over`` when the
    marker carried the last epoch; ``abort_command`` for a hanging one."""
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
            if b.producer_epoch == MAX_EPOCH and (transaction_version or 0) >= 2:
                txn["producer_id_rolled_over"] = True
            if (transaction_version or 0) >= 2 and b.producer_epoch != txn["producer_epoch"] + 1:
                txn["marker_epoch_unexpected"] = True     # v2 markers bump the epoch by one
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
    done.sort(key=lambda t: t["first_offset"])
    stable_end = high_watermark if high_watermark is not None else log_end_offset
    unstable = [t["first_offset"] for t in done if t["state"] in ("open", "hanging")]
    lso = min([stable_end, *unstable])
    counts: dict[str, int] = {}
    for t in done:
        counts[t["state"]] = counts.get(t["state"], 0) + 1
    return {"transaction_version": transaction_version, "last_stable_offset": lso,
            "transactions": done, "counts": counts}


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
