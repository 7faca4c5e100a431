"""Text building blocks shared by the checkpoint and root-file declarations.

Kafka writes these files with ``BufferedWriter`` + ``newLine()`` (``\\n`` on Linux) in UTF-8 and
reads them with ``BufferedReader.readLine`` and ``Integer.parseInt``/``Long.parseLong``.
"""

from __future__ import annotations

import re
from typing import Any

from construct import Adapter, ExplicitError, GreedyString, NullTerminated

__all__ = ["Line", "IntLine", "JAVA_INT_RE", "parse_java_int", "java_split"]

#: what ``Integer.parseInt``/``Long.parseLong`` accept (optional sign, ASCII digits)
JAVA_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_WS_RUN = re.compile(r"\s+")


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
