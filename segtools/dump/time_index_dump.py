"""`.timeindex` as kafka-dump-log checks and prints it (DUMP_LOG.md section 5).

Each entry is looked up like Kafka: OffsetIndex.lookup gives a start position, the first
batch from there whose lastOffset >= the entry offset must end exactly at that offset, and its
largest record timestamp must equal the entry's timestamp; timestamps must increase.
"""

from __future__ import annotations

import bisect
import os
from typing import TYPE_CHECKING

from segtools.dump import text
from segtools.dump.index_dump import Slots, base_offset_of, lookup_position, segment_log, sibling
from segtools.errors import BatchTooLargeError, FormatError, IndexCorruptionError

if TYPE_CHECKING:
    from segtools.dump.context import DumpContext

#: Kafka iterates the batch an entry points at with no per-message limit (Integer.MAX_VALUE)
NO_MESSAGE_LIMIT = 2147483647


def dump_time_index(ctx: DumpContext, path: str) -> None:
    from segtools.records.batches import SegmentReader

    opts = ctx.options
    base = base_offset_of(path)
    index_path = sibling(path, ".index")
    log_path = segment_log(ctx, path)
    if log_path is None:
        return
    if not os.path.exists(index_path):
        # kafka-dump-log creates the missing .index next to the input and dies ("Invalid max
        # index size: -1"). A broker rebuilds a missing index (and copies of broker dirs often
        # drop empty files), so it is a warning, not a finding: we check from position 0
        ctx.sink.finding("missing_offset_index", {
            "problem": False, "message": f"offset index {index_path} does not exist"},
            line=f"Warning: {text.java_file(path)}: its offset index {index_path} does not "
                 f"exist (kafka-dump-log dies on this file: 'Invalid max index size: -1'); "
                 f"entries are looked up from position 0 of the log", stream="err")
    with Slots.open(path, base, "time") as time_slots:
        if opts.index_sanity_check:
            _time_index_sanity_check(ctx, path, base, time_slots, time_slots.length)
            return
        slots = list(time_slots.real())
    if not slots:
        return
    # an absent index only means no lookup shortcut (position 0)
    positions_for: list[int] = []
    if os.path.exists(index_path):
        with Slots.open(index_path, base, "offset") as offset_slots:
            positions_for = [lookup_position(offset_slots, base, o) for _, o in slots]
    else:
        positions_for = [0] * len(slots)

    # Pass 1: where every batch starts and ends (shallow).
    positions: list[int] = []
    base_offsets: list[int] = []
    last_offsets: list[int] = []
    with SegmentReader(log_path, max_message_size=NO_MESSAGE_LIMIT,
                       max_batch_bytes=opts.max_batch_bytes) as reader:
        try:
            for batch in reader:
                positions.append(batch.position)
                base_offsets.append(batch.base_offset)
                last_offsets.append(batch.last_offset)
        except BatchTooLargeError:
            raise  # a limit the user can raise, not corruption (exit 2)
        except FormatError as exc:
            ctx.error("corrupt_batch", exc.located(path=log_path))
        log_size = reader.file_size

    # For each entry: first batch at/after the indexed position with lastOffset >= offset.
    first_at_least = _FirstAtLeast(last_offsets)
    targets: list[int | None] = []
    for (_ts, offset), position in zip(slots, positions_for):
        if position > log_size:
            ctx.error("index_entry_unreadable", FormatError(
                f"offset index position {position} for offset {offset} is past the end of the "
                f"log ({log_size} bytes)", path=index_path, position=position))
            targets.append(None)
            continue
        targets.append(first_at_least(bisect.bisect_left(positions, position), offset))

    # Pass 2: the max record timestamp of each batch an entry points at (deep, as Kafka).
    wanted = {j for (_, offset), j in zip(slots, targets)
              if j is not None and last_offsets[j] == offset}
    max_ts: dict[int, int] = {}
    if wanted:
        last_wanted = max(wanted)
        with SegmentReader(log_path, max_message_size=NO_MESSAGE_LIMIT,
                           max_batch_bytes=opts.max_batch_bytes) as reader:
            try:
                for k, batch in enumerate(reader):
                    if k in wanted:
                        best = -1
                        for record in batch.records(max_message_size=NO_MESSAGE_LIMIT):
                            if record.timestamp > best:
                                best = record.timestamp
                        max_ts[k] = best
                    if k >= last_wanted:
                        break
            except BatchTooLargeError:
                raise  # a limit the user can raise, not corruption (exit 2)
            except FormatError as exc:
                ctx.error("corrupt_records", exc.located(path=log_path))

    abs_path = text.java_absolute_path(path)
    summaries = ctx.summaries
    prev_ts = -1
    for i, ((ts, offset), j) in enumerate(zip(slots, targets)):
        # slot 0 reading (0, base) is a preallocated time index before its first entry (an
        # active segment): reported as Kafka does, but not corruption
        unused = i == 0 and ts == 0 and offset == base
        if j is None:
            summaries.append("offsets_not_found", abs_path, (offset, -1))
            ctx.deferred("time_index_offset_not_found",
                         {"index_offset": offset, "log_offset": -1, "unused_slot": unused},
                         is_problem=not unused)
        elif last_offsets[j] != offset:
            summaries.append("offsets_not_found", abs_path, (offset, last_offsets[j]))
            # Kafka 3.6/3.7 indexed the offset of the max-timestamp *record* (KAFKA-16310): an
            # offset inside the found batch is reported as Kafka does but is not corruption.
            inside = base_offsets[j] <= offset < last_offsets[j]
            ctx.deferred("time_index_offset_not_found",
                         {"index_offset": offset, "log_offset": last_offsets[j],
                          "inside_batch": inside, "unused_slot": unused},
                         is_problem=not (inside or unused))
        elif j in max_ts:
            if max_ts[j] != ts:
                summaries.append("timestamp_mismatches", abs_path, (ts, max_ts[j]))
                ctx.deferred("time_index_timestamp_mismatch",
                             {"index_timestamp": ts, "log_timestamp": max_ts[j],
                              "unused_slot": unused}, is_problem=not unused)
            if prev_ts >= ts:
                summaries.append("out_of_order_timestamps", abs_path, (ts, prev_ts))
                ctx.deferred("time_index_out_of_order",
                             {"index_timestamp": ts, "previous_timestamp": prev_ts})
        if not opts.verify_index_only:
            ctx.sink.entry("time_index_entry", text.time_index_line(ts, offset),
                           {"timestamp": ts, "offset": offset})
        prev_ts = ts


def _time_index_sanity_check(ctx: DumpContext, path: str, base: int, slots: Slots,
                             length: int) -> None:
    """TimeIndex.sanityCheck, with Kafka's messages (the last slot may be a zero slot)."""
    abs_path = text.java_absolute_path(path)
    if len(slots):
        first_ts = slots[0][0]
        last_ts, last_offset = slots[-1]
    if len(slots) and last_ts < first_ts:
        ctx.error("index_sanity_check", IndexCorruptionError(
            f"Corrupt time index found, time index file ({abs_path}) has non-zero size but "
            f"the last timestamp is {last_ts} which is less than the first timestamp "
            f"{first_ts}", path=path))
    elif len(slots) and last_offset < base:
        ctx.error("index_sanity_check", IndexCorruptionError(
            f"Corrupt time index found, time index file ({abs_path}) has non-zero size but "
            f"the last offset is {last_offset} which is less than the first offset {base}",
            path=path))
    elif length % 12 != 0:
        stop = "" if ctx.options.kafka4 else "."  # 4.x dropped the full stop
        ctx.error("index_sanity_check", IndexCorruptionError(
            f"Time index file {abs_path} is corrupt, found {length} bytes which is neither "
            f"positive nor a multiple of 12{stop}", path=path))
    else:
        ctx.sink.note(f"{text.java_file(path)} passed sanity check.", {"sanity_check": "passed"})


class _FirstAtLeast:
    """first_at_least(start, x): smallest j >= start with values[j] >= x, or None.

    Bisect when the values never decrease (every sane log); otherwise a sparse table of
    block maxima keeps each query O(log n), so corrupt logs cannot make the check quadratic."""

    def __init__(self, values: list[int]) -> None:
        self.values = values
        self.sorted = all(a <= b for a, b in zip(values, values[1:]))
        self.levels: list[list[int]] = []
        if not self.sorted:
            level = values
            width = 1
            while width <= len(values):
                self.levels.append(level)
                level = [max(level[i], level[i + width]) if i + width < len(level) else level[i]
                         for i in range(len(level))]
                width *= 2

    def __call__(self, start: int, x: int) -> int | None:
        values, n = self.values, len(self.values)
        if self.sorted:
            j = bisect.bisect_left(values, x, lo=start)
            return j if j < n else None
        pos = start
        for k in range(len(self.levels) - 1, -1, -1):
            width = 1 << k
            if pos + width <= n and self.levels[k][pos] < x:
                pos += width
        return pos if pos < n and values[pos] >= x else None
