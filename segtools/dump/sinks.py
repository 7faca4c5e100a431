"""Where dump events go. The dumpers call one Sink; TextSink prints Kafka's lines, the JSON
sinks (json_out.py) print the same facts as objects."""

from __future__ import annotations

from typing import Any, TextIO

from segtools.dump import text
from segtools.dump.options import Summaries


class Sink:
    """Event interface used by log_dump/index_dump/state_dump. ``stream`` is "out" or "err"."""

    def begin_file(self, path: str, kind: str) -> None: ...

    def configure(self, options: Any) -> None:
        """Called once with the run's DumpOptions (e.g. whose text: --kafka-version)."""

    def header(self, line: str, fields: dict[str, Any]) -> None: ...

    def batch(self, batch: Any) -> None: ...

    def record(self, batch: Any, record: Any, metadata: bool,
               control: tuple[str, dict[str, Any]] | None,
               key: str | None, payload: str | None) -> None: ...

    def entry(self, kind: str, line: str, fields: dict[str, Any]) -> None:
        """One data line of an index, snapshot or text file (stdout in text mode)."""

    def note(self, line: str, fields: dict[str, Any], stream: str = "out") -> None:
        """A message Kafka prints as is ("... is empty.", "Ignoring unknown file ...")."""

    def finding(self, kind: str, fields: dict[str, Any], line: str | None = None,
                stream: str = "err") -> None:
        """Something wrong. ``line`` is printed immediately in text mode; findings without a
        line are text-mode summary items printed by ``summary``."""

    def end_file(self) -> None: ...

    def summary(self, summaries: Summaries) -> None: ...


class TextSink(Sink):
    """kafka-dump-log's exact output: data on ``out``, summaries and warnings on ``err``."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self._write = out.write
        self.kafka4 = True

    def configure(self, options: Any) -> None:
        self.kafka4 = options.kafka4

    def begin_file(self, path: str, kind: str) -> None:
        self._write(f"Dumping {path}\n")

    def header(self, line: str, fields: dict[str, Any]) -> None:
        self._write(line + "\n")

    def batch(self, batch: Any) -> None:
        self._write(text.batch_line(batch) + "\n")

    def record(self, batch: Any, record: Any, metadata: bool,
               control: tuple[str, dict[str, Any]] | None,
               key: str | None, payload: str | None) -> None:
        self._write(text.record_text(batch, record, self.kafka4, metadata,
                                     control[0] if control is not None else None, key,
                                     payload) + "\n")

    def entry(self, kind: str, line: str, fields: dict[str, Any]) -> None:
        self._write(line + "\n")

    def note(self, line: str, fields: dict[str, Any], stream: str = "out") -> None:
        self._stream(stream).write(line + "\n")

    def finding(self, kind: str, fields: dict[str, Any], line: str | None = None,
                stream: str = "err") -> None:
        if line is not None:
            self._stream(stream).write(line + "\n")

    def _stream(self, stream: str) -> TextIO:
        if stream == "err":
            self.out.flush()  # keep stdout/stderr interleaving sane on a terminal
            return self.err
        return self.out

    def summary(self, summaries: Summaries) -> None:
        """Kafka's end-of-run stderr blocks, in Kafka's order (DUMP_LOG.md section 8)."""
        lines = text.summary_lines(summaries)
        if lines:
            self.out.flush()
            self.err.write("\n".join(lines) + "\n")
