"""Kafka's kafka-dump-log text templates (DUMP_LOG.md sections 3-8), byte for byte.

Every function returns one line without its newline. Java objects are printed the way Java's
``toString`` prints them (``true``/``false``, ``OptionalLong.empty``/``OptionalLong[N]``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from segtools.formats.names import EPOCH_DIGITS, KRAFT_CHECKPOINT_SUFFIX, OFFSET_DIGITS, dump_stem_offset

#: kafka.tools.DumpLogSegments.RecordIndent + " ": the prefix of every deep-iteration line
RECORD_PREFIX = "| "


def java_bool(value: bool) -> str:
    return "true" if value else "false"


def optional_long(value: int | None) -> str:
    """java.util.OptionalLong.toString()."""
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def java_file(path: str) -> str:
    """java.io.File.toString(): the path as given, with duplicate and trailing separators removed."""
    if not path:
        return path
    parts = path.split("/")
    collapsed = "/".join(p for i, p in enumerate(parts) if p or i == 0)
    if len(collapsed) > 1 and collapsed.endswith("/"):
        collapsed = collapsed.rstrip("/") or "/"
    return collapsed


def java_absolute_path(path: str) -> str:
    """java.io.File.getAbsolutePath(): cwd prepended, but '..' and symlinks kept as written."""
    path = java_file(path)
    if os.path.isabs(path):
        return path
    return java_file(os.getcwd() + "/" + path)


# --------------------------------------------------------------------------- .log/.checkpoint


def batch_line(batch: Any) -> str:
    """printBatchLevel: the v2 form for magic >= 2, the legacy form otherwise. (One f-string,
    booleans inlined: this runs once per batch, a million times for one-record batches.)"""
    magic = batch.magic
    tail = (f"position: {batch.position} {batch.timestamp_type}: {batch.max_timestamp} "
            f"size: {batch.size} magic: {magic} compresscodec: {batch.compression} "
            f"crc: {batch.crc} isvalid: {'true' if batch.crc_valid else 'false'}")
    if magic < 2:
        return f"offset: {batch.last_offset} {tail}"
    horizon = batch.delete_horizon_ms
    return (
        f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
        f"count: {batch.records_count} baseSequence: {batch.base_sequence} "
        f"lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
        f"producerEpoch: {batch.producer_epoch} "
        f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
        f"isTransactional: {'true' if batch.is_transactional else 'false'} "
        f"isControl: {'true' if batch.is_control else 'false'} deleteHorizonMs: "
        f"{'OptionalLong.empty' if horizon is None else f'OptionalLong[{horizon}]'} {tail}"
    )


def record_metadata(batch: Any, record: Any, kafka4: bool = True) -> str:
    """The metadata part of a record line, without the leading ``| `` (section 3.4).
    Kafka 3.x printed a stray ``}`` after a legacy record's crc; 4.x does not."""
    key = record.key
    value = record.value
    text = (
        f"offset: {record.offset} {batch.timestamp_type}: {record.timestamp} "
        f"keySize: {-1 if key is None else len(key)} "
        f"valueSize: {-1 if value is None else len(value)}"
    )
    if batch.magic >= 2:
        headers = record.headers
        keys = ",".join([k for k, _ in headers]) if headers else ""
        text += f" sequence: {record.sequence} headerKeys: [{keys}]"
    elif kafka4:
        text += f" isValid: {java_bool(record.crc_valid)} crc: {record.crc}"
    else:
        # the stray '}' is Kafka 3.x's (DumpLogSegments.scala prints "crc: ${r.checksum}}")
        text += f" isValid: {java_bool(record.crc_valid)} crc: {record.crc}}}"
    return text


def record_text(batch: Any, record: Any, kafka4: bool, metadata: bool, control: str | None,
                key: str | None, payload: str | None) -> str:
    """``record_line(record_metadata(...) if metadata else None, ...)`` in one call: the
    deep-iteration hot path (one call per record)."""
    if not metadata:
        if kafka4:
            # 4.x: the "| " prefix goes to the first printed part, key or payload (3.x gave a
            # key-less record " payload: ..." without the "|")
            if key is not None:
                return f"| key: {key}" + ("" if payload is None else f" payload: {payload}")
            return "" if payload is None else f"| payload: {payload}"
        return record_line(None, control, key, payload)
    line = RECORD_PREFIX + record_metadata(batch, record, kafka4)
    if control is not None:
        line += control
    if key is not None:
        line += f" key: {key}"
    if payload is not None:
        line += f" payload: {payload}"
    return line


def record_line(metadata: str | None, control: str | None, key: str | None,
                payload: str | None) -> str:
    """Assemble a record line as DumpLogSegments does.

    ``metadata`` is None with --skip-record-metadata; ``control`` is the control suffix
    (already starting with a space) or None; ``key``/``payload`` are the parser's strings
    (None when absent or when data is not printed)."""
    if metadata is not None:
        line = RECORD_PREFIX + metadata
        prefix = " "
        if control is not None:
            line += control
    else:
        line = ""
        prefix = RECORD_PREFIX
    if key is not None:
        line += f"{prefix}key: {key}"
    if payload is not None:
        line += f" payload: {payload}"
    return line


def log_header(name: str) -> str | None:
    """The line after "Dumping": from the file *name*, never from the content (section 3.1).

    Raises ValueError for a name Kafka itself cannot parse."""
    if name.endswith(".log"):
        return f"Log starting offset: {dump_stem_offset(name)}"
    if name.endswith(".checkpoint"):
        if name == "bootstrap.checkpoint":
            return "KRaft bootstrap snapshot"
        end_offset, epoch = parse_snapshot_name(name)
        return f"Snapshot end offset: {end_offset}, epoch: {epoch}"
    return None


def parse_snapshot_name(name: str) -> tuple[int, int]:
    """Snapshots.parse: ``<20 digits>-<10 digits>.checkpoint``; ValueError otherwise."""
    stem = name[: -len(KRAFT_CHECKPOINT_SUFFIX)]
    offset, dash, epoch = stem[:OFFSET_DIGITS], stem[OFFSET_DIGITS:OFFSET_DIGITS + 1], stem[OFFSET_DIGITS + 1:]
    if dash != "-" or len(epoch) != EPOCH_DIGITS or not (offset.isdigit() and epoch.isdigit()) \
            or len(offset) != OFFSET_DIGITS:
        raise ValueError(f"not a KRaft snapshot name (<20 digits>-<10 digits>.checkpoint): {name}")
    return int(offset), int(epoch)


def invalid_bytes_line(trailing: int, name: str) -> str:
    return f"Found {trailing} invalid bytes at the end of {name}"


# --------------------------------------------------------------------------- indexes


def offset_index_line(offset: int, position: int) -> str:
    return f"offset: {offset} position: {position}"


def time_index_line(timestamp: int, offset: int) -> str:
    return f"timestamp: {timestamp} offset: {offset}"


def txn_index_line(version: int, producer_id: int, first_offset: int, last_offset: int,
                   last_stable_offset: int) -> str:
    return (f"version: {version} producerId: {producer_id} firstOffset: {first_offset} "
            f"lastOffset: {last_offset} lastStableOffset: {last_stable_offset}")


def producer_entry_line(entry: Any) -> str:
    """dumpProducerIdSnapshot: the batch part only when lastOffset >= 0; note the trailing space
    otherwise (section 7)."""
    txn = entry.current_txn_first_offset
    line = (f"producerId: {entry.producer_id} producerEpoch: {entry.epoch} "
            f"coordinatorEpoch: {entry.coordinator_epoch} "
            f"currentTxnFirstOffset: {optional_long(txn if txn >= 0 else None)} "
            f"lastTimestamp: {entry.timestamp} ")
    if entry.last_offset >= 0:
        line += (f"firstSequence: {entry.first_sequence} lastSequence: {entry.last_sequence} "
                 f"lastOffset: {entry.last_offset} offsetDelta: {entry.offset_delta} "
                 f"timestamp: {entry.timestamp}")
    return line


# --------------------------------------------------------------------------- summaries (stderr)


def _block(head: str, line: str, pairs: Iterable[tuple[int, int]]) -> list[str]:
    """Kafka's end-of-run block: ``head``, then ``line`` filled with each pair ``(a, b)``."""
    return [head, *(line.format(a=a, b=b) for a, b in pairs)]


def index_mismatch_lines(path: str, pairs: Iterable[tuple[int, int]]) -> list[str]:
    return _block(f"Mismatches in :{path}", "  Index offset: {a}, log offset: {b}", pairs)


def timestamp_mismatch_lines(path: str, pairs: Iterable[tuple[int, int]]) -> list[str]:
    return _block(f"Found timestamp mismatch in :{path}",
                  "  Index timestamp: {a}, log timestamp: {b}", pairs)


def out_of_order_lines(path: str, pairs: Iterable[tuple[int, int]]) -> list[str]:
    return _block(f"Found out of order timestamp in :{path}",
                  "  Index timestamp: {a}, Previously indexed timestamp: {b}", pairs)


def offset_not_found_lines(pairs: Iterable[tuple[int, int]], path: str | None = None) -> list[str]:
    """Kafka 4.x names the time index (``path``); 3.x printed no file name."""
    head = ("The following indexed offsets are not found in the log." if path is None
            else f"The following indexed offsets are not found in :{path}")
    return _block(head, "Indexed offset: {a}, found log offset: {b}", pairs)


def non_consecutive_lines(path: str, pairs: Iterable[tuple[int, int]]) -> list[str]:
    return _block(f"Non-consecutive offsets in {path}", "  {a} is followed by {b}", pairs)
