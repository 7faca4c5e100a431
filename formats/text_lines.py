"""Text building blocks shared by the checkpoint and root-file declarations.

Kafka writes these files with ``BufferedWriter`` + ``newLine()`` (``\\n`` on Linux) in UTF-8 and
reads them with ``BufferedReader.readLine`` and ``Integer.parseInt``/``Long.parseLong``.
:data:`Line`/:data:`IntLine` are the canonical (written) form; :data:`KafkaLines` is how Kafka
reads a whole file back (``\\r\\n``, ``\\r`` or ``\\n`` end a line, a last line without a
terminator counts), and keeps each line's number and byte position for the errors.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from construct import Adapter, Construct, ExplicitError, GreedyString, NullTerminated
from construct.core import stream_read_entire

from segtools.formats.primitives import LocatedError, context_value

__all__ = ["Line", "IntLine", "KafkaLines", "TextLine", "kafka_lines", "JAVA_INT_RE", "parse_java_int",
           "java_split"]

#: what ``Integer.parseInt``/``Long.parseLong`` accept (optional sign, ASCII digits)
JAVA_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_WS_RUN = re.compile(r"\s+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def parse_java_int(text: str, bits: int = 64) -> int:
    """``Long.parseLong`` (``bits=64``) or ``Integer.parseInt`` (``bits=32``); ValueError if not."""
    if not JAVA_INT_RE.match(text):
        raise ValueError(f"not an integer: {text!r}")
    value = int(text)
    if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise ValueError(f"out of range for a {bits}-bit integer: {text!r}")
    return value


def java_split(line: str) -> list[str]:
    """``line.split("\\\\s+")``: Java drops trailing empty strings but keeps a leading one."""
    parts = _WS_RUN.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


#: one UTF-8 line, ``\\n``-terminated (the terminator is consumed, not included)
Line = NullTerminated(GreedyString("utf8"), term=b"\n")


class _IntText(Adapter):  # type: ignore[misc]  # construct ships no annotations
    def _decode(self, obj: Any, context: Any, path: str) -> int:
        try:
            return parse_java_int(obj, 32)
        except ValueError as exc:
            raise ExplicitError(f"malformed line {obj!r}: {exc}", path=path) from None

    def _encode(self, obj: Any, context: Any, path: str) -> str:
        return str(int(obj))


#: a line holding one decimal int32 (checkpoint version and entry count)
IntLine = _IntText(Line)


class TextLine(NamedTuple):
    """One line as ``BufferedReader.readLine`` returns it, with where it starts."""

    number: int      # 1-based
    position: int    # byte position of its first character
    text: str


def kafka_lines(text: str) -> list[TextLine]:
    """``text`` split like ``BufferedReader.readLine``, byte positions from its start (one
    linear pass: the positions of non-ASCII text are converted incrementally)."""
    out: list[TextLine] = []
    pos = 0
    number = 1
    for match in _LINE_BREAK.finditer(text):
        out.append(TextLine(number, pos, text[pos:match.start()]))
        pos = match.end()
        number += 1
    if pos < len(text):
        out.append(TextLine(number, pos, text[pos:]))
    if not text.isascii():     # character offsets -> byte offsets, one pass
        converted = []
        char_pos = byte_pos = 0
        for line in out:
            byte_pos += len(text[char_pos:line.position].encode("utf-8"))
            char_pos = line.position
            converted.append(line._replace(position=byte_pos))
        out = converted
    return out


class _KafkaLines(Construct):  # type: ignore[misc]  # construct ships no annotations
    """The rest of the data as UTF-8 text split into :class:`TextLine` the way ``readLine`` does.

    Invalid UTF-8 is an error naming the line and byte (Kafka's decoder would substitute
    U+FFFD and read a different number; a forensic reader says so instead).
    """

    def _parse(self, stream: Any, context: Any, path: str) -> list[TextLine]:
        start = stream.tell()
        data: bytes = stream_read_entire(stream, path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            number = data.count(b"\n", 0, exc.start) + 1
            what = context_value(context, "filekind", "")
            raise LocatedError(f"invalid UTF-8 in {what}" if what else "invalid UTF-8",
                               path=path, position=start + exc.start,
                               field=f"line {number}") from None
        out = kafka_lines(text)
        if start:
            out = [line._replace(position=line.position + start) for line in out]
        return out

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        data = "".join(f"{line.text if isinstance(line, TextLine) else line}\n" for line in obj)
        raw = data.encode("utf-8")
        stream.write(raw)
        return obj


#: a whole text file read line by line like ``BufferedReader.readLine``
KafkaLines = _KafkaLines()
