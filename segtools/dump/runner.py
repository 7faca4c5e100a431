"""`segtools dump` end to end: expand paths, dispatch each file like DumpLogSegments, print the
end-of-run summaries, and compute the exit status (0 clean, 1 findings, 2 unusable input).

Unlike Kafka's tool, an error in one file does not abort the run: it is reported (stderr in
text mode, a "finding" object in JSON modes) and the next file is dumped.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
from typing import Any, Callable, TextIO

from segtools.dump import paths as path_rules
from segtools.dump.options import (EXIT_CLEAN, EXIT_FINDINGS, EXIT_TROUBLE, DumpOptions,
                                   Summaries)
from segtools.dump.sinks import Sink, TextSink
from segtools.errors import FormatError, SegtoolsError


class InternalError(SegtoolsError):
    """An unexpected exception inside a dumper (a segtools bug), reported per file."""


class DumpContext:
    """What every dumper needs: options, the sink, summaries, the payload parser and status."""

    def __init__(self, options: DumpOptions, sink: Sink, err: TextIO) -> None:
        self.options = options
        self.sink = sink
        self.err = err
        self.summaries = Summaries()
        self.status = EXIT_CLEAN
        self.parser: Any = None

    def _raise_status(self, status: int) -> None:
        self.status = max(self.status, status)

    def error(self, kind: str, exc: BaseException, **fields: Any) -> None:
        """A corrupt or inconsistent input (exit 1), printed on stderr right away."""
        self._raise_status(EXIT_FINDINGS)
        details: dict[str, Any] = {"problem": True, "message": str(exc)}
        if isinstance(exc, FormatError):
            details.update(position=exc.position, base_offset=exc.base_offset, field=exc.field)
        details.update(fields)
        self.sink.finding(kind, details, line=f"Error: {exc}", stream="err")
        if self.options.debug:
            traceback.print_exception(exc, file=self.err)

    def trouble(self, exc: BaseException) -> None:
        """Input that cannot be used at all (exit 2)."""
        self._raise_status(EXIT_TROUBLE)
        if isinstance(exc, OSError) and exc.filename is not None:
            message = f"cannot read {exc.filename}: {exc.strerror or exc}"
        else:
            message = str(exc)
        self.sink.finding("unusable_input", {"problem": True, "message": message},
                          line=f"Error: {message}",
                          stream="err")
        if self.options.debug:
            traceback.print_exception(exc, file=self.err)

    def flag(self, kind: str, fields: dict[str, Any], line: str | None = None,
             stream: str = "err") -> None:
        """A finding whose text (if any) Kafka prints inline (e.g. the invalid-bytes trailer)."""
        self._raise_status(EXIT_FINDINGS)
        self.sink.finding(kind, {"problem": True, **fields}, line=line, stream=stream)

    def deferred(self, kind: str, fields: dict[str, Any], is_problem: bool = True) -> None:
        """A finding that text mode prints in the end-of-run summary instead. ``is_problem``
        False marks what Kafka reports but healthy logs show too (compaction gaps, KAFKA-16310
        record-level time-index offsets): listed, but the exit status stays 0."""
        if is_problem:
            self._raise_status(EXIT_FINDINGS)
        self.sink.finding(kind, {"problem": is_problem, **fields}, line=None)


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


def _progress(err: TextIO, enabled: bool) -> Callable[[int, int, str], None]:
    if not enabled:
        return lambda i, n, name: None

    def show(i: int, n: int, name: str) -> None:
        err.write(f"\r\x1b[K[{i}/{n}] {name}" if i < n else "\r\x1b[K")
        err.flush()

    return show


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
    err = sys.stderr if err is None else err
    sink = make_sink(options.output, out, err)
    ctx = DumpContext(options, sink, err)
    if options.should_print_data_log:
        from segtools.dump.parsers import build_parser

        ctx.parser = build_parser(
            offsets_decoder=options.offsets_decoder,
            transaction_log_decoder=options.transaction_log_decoder,
            cluster_metadata_decoder=options.cluster_metadata_decoder,
            key_decoder_class=options.key_decoder_class,
            value_decoder_class=options.value_decoder_class)

    files: list[str] = []
    unreadable: dict[str, BaseException] = {}  # arguments that cannot be used
    resolution = path_rules.resolve_inputs(list(paths))
    for warning in resolution.messages:   # links out of the input, duplicates, copies
        err.write(f"Warning: {warning.message}\n")
    for item in resolution.inputs:
        if item.error is not None:
            files.append(item.path)  # reported as unusable when dumped
            unreadable[item.path] = item.error
        else:
            files += path_rules.files_of(item)
    # progress only helps when the data goes elsewhere (stdout redirected) and a human watches
    progress = _progress(err, not options.quiet and len(files) > 1
                         and _isatty(err) and not _isatty(out))

    for i, path in enumerate(files):
        progress(i, len(files), path)
        kind = path_rules.file_kind(os.path.basename(path))
        sink.begin_file(_display(path), kind)
        try:
            if path in unreadable:
                raise unreadable[path]
            if kind != "unknown" and not os.path.exists(path):
                raise FileNotFoundError(2, "No such file or directory", path)
            if kind != "unknown" and not os.path.isfile(path):
                raise IsADirectoryError(21, "Not a regular file", path)
            _dispatch(ctx, path, kind)
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
    progress(len(files), len(files), "")
    sink.summary(ctx.summaries)
    return ctx.status


def _display(path: str) -> str:
    from segtools.dump.text import java_file

    return java_file(path)
