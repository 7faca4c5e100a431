"""Producer-state `.snapshot` files (Kafka's format, DUMP_LOG.md 7) and the text files Kafka's
tool does not know (checkpoints, partition.metadata, meta.properties, quorum-state,
.kafka_cleanshutdown), printed in segtools' own ``name: value`` style."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from segtools.dump import text
from segtools.dump.options import release_tuple
from segtools.errors import CheckpointFormatError, FormatError, SnapshotFormatError

if TYPE_CHECKING:
    from segtools.dump.context import DumpContext


def dump_producer_snapshot(ctx: DumpContext, path: str) -> None:
    """Validated as a whole first; a corrupt snapshot prints Kafka's message on stderr only."""
    from segtools.files.snapshots import read_producer_snapshot

    try:
        snapshot = read_producer_snapshot(path)
    except SnapshotFormatError as exc:
        reason = getattr(exc, "reason", str(exc))
        message = reason if reason.startswith("Snapshot") else \
            f"Snapshot failed schema validation: {reason}"
        # the generated ProducerSnapshot reader of every 4.x release (the Scala tool of
        # 4.0-4.2 calls it too)
        if release_tuple(ctx.options.kafka_version) >= (4, 0):
            message = _kafka4_snapshot_message(path) or message
        ctx.flag("corrupt_producer_snapshot", {"message": message, "detail": str(exc)},
                 line=message)
        return
    if not snapshot.crc_valid:
        computed = getattr(snapshot, "computed_crc", None)
        message = (f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {snapshot.crc}. "
                   f"Computed crc: {computed}")
        ctx.flag("corrupt_producer_snapshot", {"message": message}, line=message)
        return
    for entry in snapshot.entries:
        fields = {
            "producer_id": entry.producer_id, "producer_epoch": entry.epoch,
            "coordinator_epoch": entry.coordinator_epoch,
            "current_txn_first_offset": entry.current_txn_first_offset,
            "last_sequence": entry.last_sequence, "last_offset": entry.last_offset,
            "offset_delta": entry.offset_delta, "timestamp": entry.timestamp,
        }
        if entry.last_offset >= 0:
            fields["first_sequence"] = entry.first_sequence
        ctx.sink.entry("producer_entry", text.producer_entry_line(entry), fields)


def _kafka4_snapshot_message(path: str) -> str | None:
    """The CorruptSnapshotException message of Kafka 4.x's readSnapshot for a snapshot our
    reader rejected. 4.x reads the file with the generated ProducerSnapshot message: a short
    read is a BufferUnderflowException (message ``null``), a negative entry count
    "non-nullable field producerEntries was serialized as null", a count above the bytes left
    "Tried to allocate a collection of size N, but there are only R bytes remaining."."""
    from construct import ConstructError, StreamError

    from segtools.errors import InputError
    from segtools.files.snapshots import read_snapshot_head
    from segtools.formats.primitives import LocatedError
    from segtools.formats.producer_snapshot import (
        PRODUCER_ENTRY_SIZE,
        PRODUCER_SNAPSHOT_HEADER_SIZE,
        ProducerSnapshotHeader,
    )

    prefix = "Snapshot failed schema validation: "
    try:
        head, size = read_snapshot_head(path)
    except InputError:
        return None
    # the bytes 4.x's reader holds (the old reader took at most 16 MiB: kept, so the wording
    # of a huge file's count check stays as it was)
    held = min(size, 16 * 1024 * 1024)
    if held < 2:
        return prefix + "null"
    try:    # the header through its declaration: the version is checked before the rest
        count = ProducerSnapshotHeader.parse(head[:PRODUCER_SNAPSHOT_HEADER_SIZE]).producer_entries
    except LocatedError:
        return None  # an unknown version: same words as 3.x
    except StreamError:
        return prefix + "null"    # version 1, header cut short
    except ConstructError:
        return None
    remaining = held - PRODUCER_SNAPSHOT_HEADER_SIZE
    if count < 0:
        return prefix + "non-nullable field producerEntries was serialized as null"
    if count > remaining:
        return (prefix + f"Tried to allocate a collection of size {count}, but there are only "
                f"{remaining} bytes remaining.")
    if count * PRODUCER_ENTRY_SIZE > remaining:
        return prefix + "null"
    return None


def dump_text_file(ctx: DumpContext, path: str, kind: str) -> None:
    try:
        _dump_text_file(ctx, path, kind)
    except (CheckpointFormatError, FormatError) as exc:
        ctx.error("corrupt_text_file", exc.located(path=path))
    except (ValueError, KeyError, AttributeError, TypeError, UnicodeDecodeError) as exc:
        # a reader that let a plain error through still names the file for the user
        ctx.error("corrupt_text_file", CheckpointFormatError(
            f"cannot parse {kind.replace('_', ' ')}: {exc}", path=path))


def _dump_text_file(ctx: DumpContext, path: str, kind: str) -> None:
    from segtools.files import checkpoints

    sink = ctx.sink
    if kind == "offset_checkpoint":
        cp = checkpoints.read_offset_checkpoint(path)
        entries = cp.entries
        version = "none (empty file)" if cp.version is None else cp.version
        sink.header(f"Offset checkpoint version: {version} entries: {len(entries)}",
                    {"version": cp.version, "entries": len(entries)})
        for (topic, partition), offset in sorted(entries.items()):
            sink.entry("checkpoint_entry", f"topic: {topic} partition: {partition} offset: {offset}",
                       {"topic": topic, "partition": partition, "offset": offset})
    elif kind == "leader_epoch_checkpoint":
        epochs = checkpoints.read_leader_epoch_checkpoint(path)
        sink.header(f"Leader epoch checkpoint entries: {len(epochs)}", {"entries": len(epochs)})
        for e in epochs:
            epoch, start = e.epoch, e.start_offset
            sink.entry("leader_epoch_entry", f"epoch: {epoch} startOffset: {start}",
                       {"epoch": epoch, "start_offset": start})
    elif kind == "partition_metadata":
        pm = checkpoints.read_partition_metadata(path)
        version, topic_id = pm.version, pm.topic_id
        sink.entry("partition_metadata", f"version: {version} topicId: {topic_id}",
                   {"version": version, "topic_id": topic_id})
    elif kind == "meta_properties":
        props = checkpoints.read_meta_properties(path)
        for key in sorted(props):
            sink.entry("property", f"{key}: {props[key]}", {"key": key, "value": props[key]})
    elif kind == "quorum_state":
        state = checkpoints.read_quorum_state(path)
        for key, value in state.items():
            shown = json.dumps(value, separators=(",", ":")) if not isinstance(value, str) else value
            sink.entry("quorum_state", f"{key}: {shown}", {"key": key, "value": value})
    elif kind == "clean_shutdown":
        marker = checkpoints.read_clean_shutdown(path)
        if marker.version is None:
            sink.entry("clean_shutdown", "clean shutdown marker (empty, Kafka < 3.7)", {})
        else:
            sink.entry("clean_shutdown",
                       f"version: {marker.version} brokerEpoch: {marker.broker_epoch}",
                       {"version": marker.version, "broker_epoch": marker.broker_epoch})
    else:  # pragma: no cover - runner only routes the kinds above here
        raise CheckpointFormatError(f"no reader for {kind}", path=path)
