"""Where dump events go. The dumpers call one Sink; TextSink prints Kafka's lines, the JSON
sinks (json_out.py) print the same facts as objects."""

from __future__ import annotations

from itertools import islice
from typing import Any, TextIO

from segtools.dump import text
from segtools.dump.options import Summaries, java_tool

_SUMMARY_CHUNK = 4096  # pair lines formatted at a time


class Sink:
    """Event interface used by log_dump/index_dump/state_dump. ``stream`` is "out" or "err".

    ``data_modes`` is set by the runner when data is printed: how the JSON sinks render keys
    and payloads (json_out.data_value); the text sink prints the decoders' strings."""

    data_modes: tuple[str, str] | None = None
    #: whether :meth:`finding` keeps findings that have no line (the JSON sinks list them; the
    #: text sink prints only lines, its summary comes from the run's tally)
    keeps_lineless_findings: bool = True

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

    keeps_lineless_findings = False

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

    def write_bytes(self, data: bytes | memoryview) -> None:
        """UTF-8 lines built elsewhere (fast_text.py): straight to the byte stream under
        ``out`` when there is one, after what was written as text."""
        buffer = getattr(self.out, "buffer", None)
        if buffer is None:
            self._write(bytes(data).decode("utf-8"))
            return
        self.out.flush()
        buffer.write(data)

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
        """Kafka's end-of-run stderr blocks, in Kafka's order (DUMP_LOG.md section 8), written
        in bounded chunks: a block may hold millions of pairs."""
        blocks = [
            (summaries.ordered("index_mismatches"), text.index_mismatch_lines),
            (summaries.ordered("timestamp_mismatches"), text.timestamp_mismatch_lines),
            (summaries.ordered("out_of_order_timestamps"), text.out_of_order_lines),
            (summaries.ordered("offsets_not_found"),
             # the Java tool (4.3+) names the time index; the Scala one did not
             lambda path, pairs: text.offset_not_found_lines(
                 pairs, path if java_tool(summaries.kafka_version) else None)),
            (summaries.ordered("non_consecutive"), text.non_consecutive_lines),
        ]
        flushed = False
        for entries, lines_of in blocks:
            for path, pairs in entries:
                if not flushed:
                    self.out.flush()
                    flushed = True
                pairs = iter(pairs)
                head = True
                while True:
                    chunk = list(islice(pairs, _SUMMARY_CHUNK))
                    if not chunk and not head:
                        break
                    lines = lines_of(path, chunk)
                    # the heading once, then only the pair lines of later chunks
                    self.err.write("\n".join(lines if head else lines[1:]) + "\n")
                    head = False
                    if len(chunk) < _SUMMARY_CHUNK:
                        break
