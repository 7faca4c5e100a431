"""`segtools dump` end to end: expand paths, dispatch each file like DumpLogSegments, print the
end-of-run summaries, and compute the exit status (0 clean, 1 findings, 2 unusable input).

Unlike Kafka's tool, an error in one file does not abort the run: it is reported (stderr in
text mode, a "finding" object in JSON modes) and the next file is dumped.
"""

from __future__ import annotations

import errno
import os
import shutil
import sys
from typing import Any, TextIO, cast

from segtools.dump import paths as path_rules
from segtools.dump.context import DumpContext
from segtools.dump.options import DumpOptions
from segtools.dump.sinks import Sink, TextSink
from segtools.errors import BatchTooLargeError, FormatError, InputError, SegtoolsError

__all__ = ["DumpContext", "InternalError", "StatusLine", "data_modes", "make_sink", "run_dump"]


class InternalError(SegtoolsError):
    """An unexpected exception inside a dumper (a segtools bug), reported per file."""


def _dispatch(ctx: DumpContext, path: str, kind: str) -> None:
    from segtools.dump import index_dump, log_dump, state_dump, time_index_dump

    if kind in ("log", "kraft_snapshot"):
        log_dump.dump_log(ctx, path)
    elif kind == "index":
        index_dump.dump_index(ctx, path)
    elif kind == "time_index":
        time_index_dump.dump_time_index(ctx, path)
    elif kind == "txn_index":
        index_dump.dump_txn_index(ctx, path)
    elif kind == "producer_snapshot":
        state_dump.dump_producer_snapshot(ctx, path)
    elif kind == "unknown":
        if not os.path.lexists(path):  # a typo is unusable input, not a file Kafka would skip
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
        ctx.sink.note(f"Ignoring unknown file {_display(path)}", {"ignored": True}, stream="err")
    else:
        state_dump.dump_text_file(ctx, path, kind)


def make_sink(output: str, out: TextIO, err: TextIO) -> Sink:
    if output == "text":
        return TextSink(out, err)
    from segtools.dump.json_out import JsonSink, NdjsonSink

    if output == "ndjson":
        return NdjsonSink(out, err)
    if output == "json":
        return JsonSink(out, err)
    raise ValueError(f"unknown output {output!r}")


class StatusLine:
    """stderr with a one-line progress display that is erased before anything else is written
    to stderr and at the end, so it never mixes with warnings or stays behind on screen.

    Drawn only when stderr is a terminal and stdout is not (the data goes to a file or a pipe
    and a human watches), and cut to the terminal width so it never wraps into stale rows."""

    def __init__(self, err: TextIO, enabled: bool) -> None:
        self.err = err
        self.enabled = enabled
        self.drawn = False

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, ...
        return getattr(self.err, name)

    def clear(self) -> None:
        if self.drawn:
            self.err.write("\r\x1b[K")
            self.err.flush()
            self.drawn = False

    def write(self, text: str) -> int:
        self.clear()
        return self.err.write(text)

    def show(self, i: int, n: int, name: str) -> None:
        if not self.enabled:
            return
        line = _fit(f"[{i + 1}/{n}] ", name, _terminal_width(self.err) - 1)
        self.err.write("\r\x1b[K" + line)
        self.err.flush()
        self.drawn = True


def _terminal_width(stream: TextIO) -> int:
    """Columns of the terminal ``stream`` is on (COLUMNS wins, as shutil.get_terminal_size has
    it); shutil alone would ask stdout, which is redirected whenever progress is shown."""
    if os.environ.get("COLUMNS", "").isdigit() and int(os.environ["COLUMNS"]) > 0:
        return int(os.environ["COLUMNS"])
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (OSError, ValueError, AttributeError):
        return shutil.get_terminal_size().columns


def _fit(prefix: str, name: str, width: int) -> str:
    """``prefix + name`` in at most ``width`` characters, keeping the end of the path."""
    if width <= 0:
        return ""
    if len(prefix) + len(name) <= width:
        return prefix + name
    room = width - len(prefix) - 3
    if room <= 0:
        return (prefix + name)[:width]
    return prefix + "..." + name[-room:]


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def run_dump(paths: list[str], options: DumpOptions, *, out: TextIO | None = None,
             err: TextIO | None = None) -> int:
    """Dump every path (file, partition dir or broker log dir); return the exit status.

    Raises SegtoolsError (exit 2) only for problems found before any file is read, such as
    a decoder that cannot be loaded."""
    out = sys.stdout if out is None else out
    raw_err = sys.stderr if err is None else err
    # progress only helps when the data goes elsewhere (stdout redirected) and a human watches
    status_line = StatusLine(raw_err, not options.quiet and _isatty(raw_err) and not _isatty(out))
    # everything below writes to stderr through the status line (a TextIO by duck typing)
    err = cast(TextIO, status_line)
    sink = make_sink(options.output, out, err)
    ctx = DumpContext(options, sink, err)
    if options.should_print_data_log:
        from segtools.dump.parsers import build_parser

        ctx.parser = build_parser(
            offsets_decoder=options.offsets_decoder,
            transaction_log_decoder=options.transaction_log_decoder,
            cluster_metadata_decoder=options.cluster_metadata_decoder,
            key_decoder_class=options.key_decoder_class,
            value_decoder_class=options.value_decoder_class,
            # the JSON outputs keep one shape whatever --kafka-version says (txn_key/txn_value)
            kafka4=options.output == "text",
            remote_log_metadata_decoder=options.remote_log_metadata_decoder,
            share_group_state_decoder=options.share_group_state_decoder,
            kafka_version=options.kafka_version)
        sink.data_modes = data_modes(ctx.parser)
        if hasattr(ctx.parser, "note"):  # what a coordinator decoder shows beyond Kafka's text
            ctx.parser.note = lambda kind, fields, line, problem: _decoder_note(
                ctx, kind, fields, line, problem)

    files: list[str] = []
    unreadable: dict[str, BaseException] = {}  # arguments that cannot be dumped at all
    resolution = path_rules.resolve_inputs(list(paths))
    for warning in resolution.messages:   # links out of the input, duplicates, copies
        err.write(f"Warning: {warning.message}\n")
    for item in resolution.inputs:
        if item.error is not None:
            files.append(item.path)  # reported as unusable when dumped
            if os.path.isdir(item.path):
                unreadable[item.path] = item.error
            # else a file argument (missing, a FIFO...): dumped as a file, failing with its
            # own OSError and counted as a file, as Kafka's tool does
            continue
        if item.duplicate_of is not None:
            continue   # a dir already read (its warning is printed above): read once
        found = path_rules.files_of(item)
        if item.kind != "segment" and not any(
                path_rules.file_kind(os.path.basename(f)) != "unknown" for f in found):
            # an empty folder or one without Kafka files (a typo'd parent, /etc): one line,
            # exit 2, instead of silence or a page of "Ignoring unknown file"
            files.append(item.path)
            unreadable[item.path] = InputError(f"no Kafka files found under {item.path}")
            continue
        files += found
    status_line.enabled = status_line.enabled and len(files) > 1

    try:
        for i, path in enumerate(files):
            status_line.show(i, len(files), path)
            ctx.current_file = path
            kind = path_rules.file_kind(os.path.basename(path))
            if path in unreadable and not isinstance(unreadable[path], OSError):
                ctx.trouble(unreadable[path])  # not a file: no file document, just the error
                continue
            ctx.tally.files += 1
            sink.begin_file(_display(path), kind)
            try:
                if path in unreadable:
                    raise unreadable[path]
                if kind != "unknown" and not os.path.exists(path):
                    raise FileNotFoundError(2, "No such file or directory", path)
                if kind != "unknown" and not os.path.isfile(path):
                    raise IsADirectoryError(21, "Not a regular file", path)
                _dispatch(ctx, path, kind)
            except BatchTooLargeError as exc:
                ctx.trouble(exc.located(path=path))  # as export: exit 2, names the flag
            except FormatError as exc:
                ctx.error("corrupt_file", exc.located(path=path))
            except BrokenPipeError:
                raise  # our output is gone, not our input: the command stops
            except (SegtoolsError, OSError) as exc:
                ctx.trouble(exc)
            except Exception as exc:  # a bug must cost one file, not the whole forensic run
                if options.debug:
                    raise
                ctx.trouble(InternalError(f"internal error while dumping {path}: "
                                          f"{type(exc).__name__}: {exc} (rerun with --debug)"))
            sink.end_file()
    except BaseException:
        status_line.clear()  # Ctrl-C or a closed pipe: no progress left on the screen
        raise
    ctx.current_file = None
    status_line.clear()
    try:
        sink.summary(ctx.summaries)
    finally:
        ctx.summaries.close()
    if options.summary:
        out.flush()
        for line in ctx.tally.lines(ctx.status):
            err.write(line + "\n")
        err.flush()
    return ctx.status


def _decoder_note(ctx: DumpContext, kind: str, fields: dict[str, Any], line: str,
                  problem: bool) -> None:
    """A decoder's note on stderr (``Warning: <file>: ...``); only a note marked as a problem
    raises the exit status (the coordinator decoders mark none: CONTRACT.md)."""
    text = f"Warning: {ctx.current_file or '?'}: {line}"
    fields = {"file": ctx.current_file, **fields}
    if problem:
        ctx.flag(kind, fields, line=text)
    else:
        ctx.sink.finding(kind, {"problem": False, **fields}, line=text)


def data_modes(parser: Any) -> tuple[str, str]:
    """How JSON renders (key, payload): the record's bytes for Kafka's StringDecoder, nested
    JSON for the internal-topic decoders, the string of any other decoder."""
    from segtools.dump.parsers import DecoderMessageParser, InternalTopicParser, string_decoder

    if isinstance(parser, DecoderMessageParser):
        return ("bytes" if parser.key_decoder is string_decoder else "text",
                "bytes" if parser.value_decoder is string_decoder else "text")
    if isinstance(parser, InternalTopicParser) and parser.module == "transaction_state":
        return ("txn_key", "txn_value")
    return ("json", "json")


def _display(path: str) -> str:
    from segtools.dump.text import java_file

    return java_file(path)
