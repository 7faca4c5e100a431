"""The state one `segtools dump` run hands to every dumper (``DumpContext``).

Its own module so the dumpers (log_dump, index_dump, ...) and the runner that calls them both
depend on it, and not on each other.
"""

from __future__ import annotations

import traceback
from typing import Any, TextIO

from segtools.dump.options import EXIT_CLEAN, EXIT_FINDINGS, EXIT_TROUBLE, DumpOptions, Summaries
from segtools.dump.sinks import Sink
from segtools.dump.tally import RunTally
from segtools.errors import FormatError
from segtools.primitives.visible import visible


class DumpContext:
    """What every dumper needs: options, the sink, summaries, the payload parser and status."""

    def __init__(self, options: DumpOptions, sink: Sink, err: TextIO) -> None:
        self.options = options
        self.sink = sink
        self.err = err
        self.summaries = Summaries(kafka_version=options.kafka_version)
        sink.configure(options)
        self.status = EXIT_CLEAN
        self.parser: Any = None
        self.tally = RunTally()
        self.current_file: str | None = None

    def raise_status(self, status: int) -> None:
        self.status = max(self.status, status)

    def error(self, kind: str, exc: BaseException, **fields: Any) -> None:
        """A corrupt or inconsistent input (exit 1), printed on stderr right away."""
        self.raise_status(EXIT_FINDINGS)
        self.tally.errors += 1
        details: dict[str, Any] = {"problem": True, "message": str(exc)}
        if isinstance(exc, FormatError):
            details.update(position=exc.position, base_offset=exc.base_offset, field=exc.field)
        details.update(fields)
        self.tally.problem(self.current_file or "", kind, details)
        self.sink.finding(kind, details, line=f"Error: {exc}", stream="err")
        if self.options.debug:
            traceback.print_exception(exc, file=self.err)

    def trouble(self, exc: BaseException) -> None:
        """Input that cannot be used at all (exit 2)."""
        self.raise_status(EXIT_TROUBLE)
        self.tally.errors += 1
        if isinstance(exc, OSError) and exc.filename is not None:
            message = f"cannot read {exc.filename}: {exc.strerror or exc}"
        else:
            message = str(exc)
        self.tally.problem(self.current_file or "", "unusable_input", {})
        self.sink.finding("unusable_input", {"problem": True, "message": message},
                          line=f"Error: {visible(message)}",   # ours: one visible line
                          stream="err")
        if self.options.debug:
            traceback.print_exception(exc, file=self.err)

    def flag(self, kind: str, fields: dict[str, Any], line: str | None = None,
             stream: str = "err") -> None:
        """A finding whose text (if any) Kafka prints inline (e.g. the invalid-bytes trailer)."""
        self.raise_status(EXIT_FINDINGS)
        if kind == "crc_invalid":
            self.tally.crc_invalid += 1
        else:
            self.tally.errors += 1
        self.tally.problem(self.current_file or "", kind, fields)
        self.sink.finding(kind, {"problem": True, **fields}, line=line, stream=stream)

    def deferred(self, kind: str, fields: dict[str, Any], is_problem: bool = True) -> None:
        """A finding that text mode prints in the end-of-run summary instead. ``is_problem``
        False marks what Kafka reports but healthy logs show too (compaction gaps, KAFKA-16310
        record-level time-index offsets): listed, but the exit status stays 0."""
        if is_problem:
            self.raise_status(EXIT_FINDINGS)
        self.tally.deferred(self.current_file or "", kind, fields, is_problem)
        self.sink.finding(kind, {"problem": is_problem, **fields}, line=None)
