"""`.log` segments and KRaft `.checkpoint` snapshots (DumpLogSegments.dumpLog, DUMP_LOG.md 3)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from segtools.dump import text
from segtools.dump.control import describe_control
from segtools.dump.options import MAX_BYTES_DEFAULT
from segtools.dump.pairs import PairStore
from segtools.errors import BatchTooLargeError, FormatError, InputError

if TYPE_CHECKING:
    from segtools.dump.runner import DumpContext

_NO_MESSAGE_LIMIT = 2147483647


def dump_log(ctx: DumpContext, path: str) -> None:
    """Header line, one line per batch, record lines when deep-iterating, then the
    ``Found N invalid bytes`` trailer. Record-level errors are reported and the dump goes on with
    the next batch; a broken batch frame ends the file (nothing after it can be located)."""
    from segtools.batches import SegmentReader  # the object reader (owned by batches.py)

    opts = ctx.options
    sink = ctx.sink
    name = os.path.basename(path)
    try:
        header = text.log_header(name)
    except ValueError as exc:
        if not name.endswith(".log"):
            raise InputError(f"{path}: {exc}") from None
        # Kafka's tool dies on Long.parseLong here; a renamed segment is still worth reading
        header = None
        sink.note(f"No base offset in the file name {name}: \"Log starting offset\" omitted",
                  {"log_starting_offset": None}, stream="err")
    if header is not None:
        if name.endswith(".log"):
            fields: dict[str, object] = {"log_starting_offset": int(name.split(".")[0])}
        elif name == "bootstrap.checkpoint":
            fields = {"kraft_bootstrap_snapshot": True}
        else:
            end_offset, epoch = text.parse_snapshot_name(name)
            fields = {"snapshot_end_offset": end_offset, "snapshot_epoch": epoch}
        sink.header(header, fields)

    deep = opts.is_deep_iteration
    print_data = opts.should_print_data_log
    metadata = not opts.skip_record_metadata
    parser = ctx.parser if print_data else None
    max_bytes = opts.max_bytes
    abs_path = text.java_absolute_path(path)
    non_consecutive = PairStore()
    kafka4 = opts.kafka4
    last_offset = -1
    prev_batch_last = None
    fatal = False

    # Kafka's dump deep-iterates legacy wrappers without a per-message limit
    # (Integer.MAX_VALUE; --max-message-size is for .index only); the reader still bounds the
    # total decompressed bytes of a batch
    sink_record = sink.record  # bound once: called once per record
    parse = parser.parse if parser is not None else None
    with SegmentReader(path, max_bytes=None if max_bytes == MAX_BYTES_DEFAULT else max_bytes,
                       max_message_size=_NO_MESSAGE_LIMIT,
                       max_batch_bytes=opts.max_batch_bytes) as reader:
        batches = iter(reader)
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                break
            except BatchTooLargeError:
                raise  # a limit the user can raise, not corruption: unusable input (exit 2)
            except FormatError as exc:
                ctx.error("corrupt_batch", exc.located(path=path))
                fatal = True
                break
            sink.batch(batch)
            if not deep and (header_error := batch.header_error()) is not None:
                ctx.error("corrupt_batch", header_error)  # where Kafka's tool dies
            if not batch.crc_valid:
                ctx.flag("crc_invalid", {"position": batch.position, "base_offset": batch.base_offset,
                                         "crc": batch.crc,
                                         "computed_crc": getattr(batch, "computed_crc", None)})
            if not deep:
                # Kafka only notices offset order while deep-iterating; shallow dumps still must
                # not exit 0 on batches that go backwards.
                if prev_batch_last is not None and batch.base_offset <= prev_batch_last:
                    ctx.flag("non_monotonic_batch",
                             {"position": batch.position, "base_offset": batch.base_offset,
                              "previous_last_offset": prev_batch_last},
                             line=f"Non-monotonic offsets in {abs_path}: batch at position "
                                  f"{batch.position} has baseOffset {batch.base_offset} after "
                                  f"lastOffset {prev_batch_last}")
                prev_batch_last = batch.last_offset
                continue
            is_control = batch.is_control
            try:
                for record in batch.records(max_message_size=_NO_MESSAGE_LIMIT):
                    offset = record.offset
                    # Kafka 4.x also compares the file's first record with -1 (a segment that
                    # does not start at offset 0 reports "-1 is followed by N"); 3.x skipped it
                    if offset != last_offset + 1 and (kafka4 or last_offset != -1):
                        non_consecutive.append(last_offset, offset)
                    last_offset = offset
                    control = None
                    if is_control and metadata:
                        try:
                            control = describe_control(record.key, record.value, kafka4)
                        except FormatError as exc:
                            ctx.error("corrupt_control_record", exc.located(
                                path=path, position=batch.position, base_offset=batch.base_offset))
                    key = payload = None
                    if print_data and not is_control:
                        try:
                            key, payload = parse(record)  # type: ignore[misc]
                        except FormatError as exc:  # where Kafka's tool aborts
                            ctx.error("undecodable_record", exc.located(
                                path=path, position=batch.position,
                                base_offset=batch.base_offset), offset=offset)
                    sink_record(batch, record, metadata, control, key, payload)
            except BatchTooLargeError:
                raise
            except FormatError as exc:
                ctx.error("corrupt_records", exc.located(
                    path=path, position=batch.position, base_offset=batch.base_offset))

        if not fatal:
            limit = min(reader.file_size, max_bytes)
            trailing = limit - reader.valid_bytes
            if trailing > 0 and max_bytes == MAX_BYTES_DEFAULT:
                ctx.flag("invalid_bytes", {"position": reader.valid_bytes, "size": trailing},
                         line=text.invalid_bytes_line(trailing, name), stream="out")

    if non_consecutive:
        # Kafka prepends to a List: printed newest first
        ctx.summaries.set_newest_first("non_consecutive", abs_path, non_consecutive)
        for a, b in non_consecutive.newest_first():
            # gaps are normal after compaction; only offsets that do not increase are corruption
            ctx.deferred("non_consecutive_offsets", {"previous_offset": a, "offset": b},
                         is_problem=b <= a)
