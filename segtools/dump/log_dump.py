"""`.log` segments and KRaft `.checkpoint` snapshots (DumpLogSegments.dumpLog, DUMP_LOG.md 3)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from segtools.dump import text
from segtools.dump.control import describe_control
from segtools.dump.options import EXIT_FINDINGS, MAX_BYTES_DEFAULT, release_tuple
from segtools.dump.pairs import PairStore
from segtools.errors import BatchTooLargeError, FormatError, InputError, SegtoolsError
from segtools.formats.names import dump_stem_offset

if TYPE_CHECKING:
    from segtools.dump.context import DumpContext
    from segtools.records.batches import SegmentReader
    from segtools.salvage import DroppedRange

_NO_MESSAGE_LIMIT = 2147483647


def dump_log(ctx: DumpContext, path: str) -> None:
    """Header line, one line per batch, record lines when deep-iterating, then the
    ``Found N invalid bytes`` trailer. Record-level errors are reported and the dump goes on with
    the next batch; a broken batch frame ends the file (nothing after it can be located)."""
    from segtools.records.batches import SegmentReader  # noqa: F811 (the object reader, batches.py)

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
            fields: dict[str, object] = {"log_starting_offset": dump_stem_offset(name)}
        elif name == "bootstrap.checkpoint":
            fields = {"kraft_bootstrap_snapshot": True}
        else:
            end_offset, epoch = text.parse_snapshot_name(name)
            fields = {"snapshot_end_offset": end_offset, "snapshot_epoch": epoch}
        sink.header(header, fields)

    # a segment rebuilt by `segtools salvage`: the holes it left are findings (its offset gaps
    # are not compaction)
    holes = _salvage_holes(ctx, path) if name.endswith(".log") else None

    where = None
    if opts.where:  # --where (segtools/dump/where.py)
        from segtools.dump.where import DumpWhere

        where = DumpWhere(opts.where, opts.where_producer_ids, path)
        if not where.file_wanted():
            return
    deep = opts.is_deep_iteration
    max_bytes = opts.max_bytes
    abs_path = text.java_absolute_path(path)
    non_consecutive = PairStore()

    # Kafka's dump deep-iterates legacy wrappers without a per-message limit
    # (Integer.MAX_VALUE; --max-message-size is for .index only); the reader still bounds the
    # total decompressed bytes of a batch
    state = _OrderState(non_consecutive)
    fatal = False
    with SegmentReader(path, max_bytes=None if max_bytes == MAX_BYTES_DEFAULT else max_bytes,
                       max_message_size=_NO_MESSAGE_LIMIT,
                       max_batch_bytes=opts.max_batch_bytes) as reader:
        # --where and --skip-corrupt walk batch by batch through the object reader
        fast = _fast_text(ctx, path, reader) if deep and where is None and not opts.skip_corrupt else None
        if fast is None:
            fatal, _ = _object_batches(ctx, path, reader, state, abs_path, plain_stops=False,
                                       where=where)
            valid_bytes = reader.valid_bytes
        else:
            # plain batches column-wise (fast_text.py); anything else through the object
            # reader from that batch on, back to the fast path after the next plain batch
            with fast:
                pos = 0
                use_fast = True
                while True:
                    try:
                        pos, finished = fast.run(pos, state)
                    except (SegtoolsError, OSError):
                        raise
                    except Exception:
                        if not FAST_FALLBACK or opts.debug:
                            raise
                        # a bug in the column-wise path must not cost the file: the object
                        # reader prints the rest, from the first batch not yet printed
                        pos, finished, use_fast = fast.resume_at, False, False
                    if finished:
                        valid_bytes = pos
                        break
                    reader.start = pos
                    fatal, at_plain = _object_batches(ctx, path, reader, state, abs_path,
                                                      plain_stops=use_fast)
                    valid_bytes = reader.valid_bytes
                    if fatal or not at_plain:
                        break
                    pos = reader.valid_bytes

        if not fatal and not opts.skip_corrupt:  # (--skip-corrupt reported the tail itself)
            limit = min(reader.file_size, max_bytes)
            trailing = limit - valid_bytes
            if trailing > 0 and max_bytes == MAX_BYTES_DEFAULT:
                ctx.flag("invalid_bytes", {"position": valid_bytes, "size": trailing},
                         line=text.invalid_bytes_line(trailing, name), stream="out")

    if non_consecutive:
        # Kafka prepends to a List: printed newest first
        ctx.summaries.set_newest_first("non_consecutive", abs_path, non_consecutive)
        if holes is None and not state.skipped_gaps and not ctx.sink.keeps_lineless_findings:
            # a sink that keeps no finding without a line (text): the tally counts the pairs in
            # blocks (millions when every record claims one offset), the same lines result
            if ctx.tally.gap_pairs(ctx.current_file or "", non_consecutive):
                ctx.raise_status(EXIT_FINDINGS)
            return
        for a, b in non_consecutive.newest_first():
            gap: dict[str, Any] = {"previous_offset": a, "offset": b}
            skipped = state.skipped_gaps.get((a, b))
            if skipped:
                # not compaction: --skip-corrupt jumped over these bytes between the two records
                gap["skipped_ranges"] = [{"position": d.start, "end": d.end} for d in skipped]
            salvaged = holes is not None and _across_hole(holes, a, b)
            if salvaged:
                gap["across_salvaged_hole"] = True
            # gaps are normal after compaction; only offsets that do not increase are corruption
            ctx.deferred("non_consecutive_offsets", gap, is_problem=b <= a or bool(skipped) or salvaged)


def _salvage_holes(ctx: DumpContext, path: str) -> list[dict[str, Any]] | None:
    """The holes `segtools salvage` left in this segment, each reported as a finding."""
    from segtools.files.salvage_marker import salvage_holes

    holes = salvage_holes(path)
    for hole in holes or ():
        ctx.deferred("salvaged_hole", dict(hole), is_problem=True)
    return holes


def _across_hole(holes: list[dict[str, Any]], a: int, b: int) -> bool:
    """Whether the gap from offset ``a`` to ``b`` spans a salvage hole (or one of unknown
    place, an unreadable marker)."""
    for h in holes:
        after, before = h.get("after_offset"), h.get("before_offset")
        if after is None and before is None:
            return True
        if (after is None or after <= a) and (before is None or before >= b):
            return True
        if (after is not None and a <= after < b) or (before is not None and a < before <= b):
            return True
    return False


class _OrderState:
    """The offset-order check's running state, shared by the object and the fast path."""

    __slots__ = ("last_offset", "non_consecutive", "skipped_gaps")

    def __init__(self, non_consecutive: PairStore) -> None:
        self.last_offset = -1
        self.non_consecutive = non_consecutive
        #: --skip-corrupt: gap (previous offset, offset) -> the ranges skipped between the two
        self.skipped_gaps: dict[tuple[int, int], list[DroppedRange]] = {}


#: files smaller than this are not worth importing numpy and pyarrow for (about 0.2 s of CPU,
#: what the fast path saves on a few MB of records); once they are loaded, every file is
FAST_MIN_BYTES = 4 << 20
#: False routes every batch through the object reader (the tests compare both paths)
FAST_PATH = True
#: an unexpected exception in the fast path hands the rest of the file to the object reader
#: (False: it propagates; the tests run so)
FAST_FALLBACK = True


def _fast_text(ctx: DumpContext, path: str, reader: SegmentReader) -> Any:
    """The column-wise printer (fast_text.py) when it prints exactly what the object path
    would: Kafka's text to a UTF-8 stream, record metadata on, the default StringDecoder."""
    from segtools.dump.sinks import TextSink

    opts = ctx.options
    sink = ctx.sink
    if not FAST_PATH or type(sink) is not TextSink or opts.skip_record_metadata:
        return None
    if reader.end < FAST_MIN_BYTES and "segtools.dump.fast_text" not in sys.modules:
        return None
    print_data = opts.should_print_data_log
    if print_data:
        from segtools.dump.parsers import DecoderMessageParser

        parser = ctx.parser
        if type(parser) is not DecoderMessageParser or not parser._fast:
            return None
    from segtools.dump import fast_text

    if not fast_text.usable(sink.out):
        return None
    try:
        return fast_text.FastLogText(path, reader.end, reader.max_batch_bytes,
                                     sink.write_bytes, print_data, opts.kafka4)
    except OSError:
        return None  # the object reader reports it in its own words


def _object_batches(ctx: DumpContext, path: str, reader: SegmentReader, state: _OrderState,
                    abs_path: str, plain_stops: bool, where: Any = None) -> tuple[bool, bool]:
    """Batches through the object reader and text.py from ``reader.start``. Returns
    ``(fatal, at_plain)``: ``fatal`` when a broken frame ended the file; ``at_plain`` when
    ``plain_stops`` and the walk stopped after a batch the fast path could have printed
    (the caller goes back to it at ``reader.valid_bytes``)."""
    opts = ctx.options
    sink = ctx.sink
    deep = opts.is_deep_iteration
    print_data = opts.should_print_data_log
    metadata = not opts.skip_record_metadata
    parser = ctx.parser if print_data else None
    kafka4 = opts.kafka4
    # LEADER_CHANGE is decoded from Kafka 4.1 on (the Scala tool of 4.1/4.2 too, not 4.0)
    leader_change_json = release_tuple(opts.kafka_version) >= (4, 1)
    non_consecutive = state.non_consecutive
    last_offset = state.last_offset
    prev_batch_last = None
    sink_record = sink.record  # bound once: called once per record
    parse = parser.parse if parser is not None else None
    batches: Any = iter(reader)
    #: ranges --skip-corrupt skipped since the last record: they explain the next offset gap
    skipped: list[DroppedRange] = []
    if opts.skip_corrupt:  # past the bad ranges, one line each (segtools/dump/skip_corrupt.py)
        from segtools.dump.skip_corrupt import batches_skipping_corrupt

        batches = batches_skipping_corrupt(ctx, path, opts.max_batch_bytes, skipped)
    try:
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return False, False
            except BatchTooLargeError:
                raise  # a limit the user can raise, not corruption: unusable input (exit 2)
            except FormatError as exc:
                ctx.error("corrupt_batch", exc.located(path=path))
                return True, False
            if where is not None and not where.batch(batch):
                continue
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
                    if where is not None and not where.record(batch, record):
                        continue
                    offset = record.offset
                    # Kafka 4.x also compares the file's first record with -1 (a segment that
                    # does not start at offset 0 reports "-1 is followed by N"); 3.x skipped it
                    if offset != last_offset + 1 and (kafka4 or last_offset != -1) and where is None:
                        non_consecutive.append(last_offset, offset)
                        if skipped:
                            state.skipped_gaps[(last_offset, offset)] = skipped[:]
                    if skipped:
                        skipped.clear()
                    last_offset = offset
                    control = None
                    if is_control and metadata:
                        try:
                            control = describe_control(record.key, record.value, leader_change_json)
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
            if (plain_stops and batch.magic == 2 and batch.crc_valid and not batch.is_control
                    and batch.compression_id <= 4):
                return False, True
    finally:
        state.last_offset = last_offset
