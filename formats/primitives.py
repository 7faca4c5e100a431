"""Kafka's primitive encodings as construct building blocks.

Spec (FORMATS.md section 0, ``ByteUtils.java``, ``Uuid.java``)::

    varint   zig-zag + base-128, at most 5 bytes (a 6th continuation byte is an error)
    varlong  the same for 64 bits, at most 10 bytes
    nullable bytes: a length of -1 (any negative length when reading) means null
    uuid: 16 bytes, shown as URL-safe base64 without padding (22 characters)

The flexible versions' compact types and tagged fields (section 12.1) are not here: the
generated-message specs of ``formats/messages.py`` declare them, and one engine
(``segtools.primitives.messages``) reads them.

No IO lives here; :func:`parse_located` turns construct's errors into segtools errors that name
the file, byte position and field.
"""

from __future__ import annotations

import base64
import io
import os
import uuid as _uuid
from typing import Any

from construct import (
    Adapter,
    Construct,
    ConstructError,
    ExplicitError,
    GreedyRange,
    StreamError,
)
from construct.core import stream_read, stream_write

from segtools.errors import FormatError

__all__ = [
    "KafkaVarint", "Varint", "Varlong", "NullableBytes", "VarintString", "uuid_to_base64url",
    "base64url_to_uuid", "parse_located", "greedy", "struct_format", "numpy_dtype", "LocatedError",
    "context_value", "construct_field",
]


class LocatedError(ExplicitError):  # type: ignore[misc]  # construct ships no annotations
    """A reader rule of Kafka broken: Kafka's own message, the byte position (from the start of
    the parsed data) and the field, kept apart so :func:`parse_located` passes them on as they
    are instead of prefixing them."""

    def __init__(self, message: str, *, path: str | None = None, position: int | None = None,
                 field: str | None = None, expected: Any = None, actual: Any = None) -> None:
        super().__init__(message, path=path)
        self.reason = message
        self.position = position
        self.field = field
        self.expected = expected
        self.actual = actual


def context_value(context: Any, key: str, default: Any) -> Any:
    """A keyword given to ``parse(...)`` (e.g. the file name a Kafka message quotes), looked up
    through nested contexts."""
    while context is not None:
        if key in context:
            return context[key]
        context = context.get("_")
    return default


class VarintError(ExplicitError):  # type: ignore[misc]  # construct ships no annotations
    """A varint longer than Kafka allows, or a value that does not fit its width."""


class KafkaVarint(Construct):  # type: ignore[misc]  # construct ships no annotations
    """Kafka's zig-zag variable-length integer (``ByteUtils.readVarint``/``readVarlong``).

    ``bits`` is 32 or 64; Kafka rejects more than 5 (32-bit) or 10 (64-bit) bytes. The decoded
    value wraps to ``bits`` like Java's int/long arithmetic does.
    """

    def __init__(self, bits: int) -> None:
        super().__init__()
        self.bits = bits
        self.max_bytes = 5 if bits == 32 else 10
        self.mask = (1 << bits) - 1

    def _parse(self, stream: Any, context: Any, path: str) -> int:
        raw = 0
        for i in range(self.max_bytes):
            b: int = stream_read(stream, 1, path)[0]
            raw |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                break
        else:
            raise VarintError(f"varint does not terminate after {self.max_bytes} bytes", path=path)
        raw &= self.mask
        return (raw >> 1) ^ -(raw & 1)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> int:
        if not isinstance(obj, int):
            raise VarintError(f"varint value {obj!r} is not an integer", path=path)
        lo, hi = -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        if not lo <= obj <= hi:
            raise VarintError(f"varint value {obj} does not fit {self.bits} bits", path=path)
        raw = ((obj << 1) ^ (obj >> (self.bits - 1))) & self.mask
        out = bytearray()
        while raw > 0x7F:
            out.append(0x80 | (raw & 0x7F))
            raw >>= 7
        out.append(raw)
        stream_write(stream, bytes(out), len(out), path)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        from construct import SizeofError
        raise SizeofError("varint has no fixed size", path=path)


#: signed zig-zag 32-bit varint (record length, deltas, key/value/header lengths)
Varint = KafkaVarint(32)
#: signed zig-zag 64-bit varlong (record timestampDelta)
Varlong = KafkaVarint(64)


class NullableBytes(Construct):  # type: ignore[misc]  # construct ships no annotations
    """Length-prefixed bytes where a negative length is null (``Utils.readBytes``).

    Builds ``None`` as length -1.
    """

    def __init__(self, length_field: Construct, *, nullable: bool = True) -> None:
        super().__init__()
        self.length_field = length_field
        self.nullable = nullable

    def _parse(self, stream: Any, context: Any, path: str) -> bytes | None:
        n = self.length_field._parsereport(stream, context, path)
        if n < 0:
            if not self.nullable:
                raise ExplicitError(f"non-nullable field has negative length {n}", path=path)
            return None
        data: bytes = stream_read(stream, n, path)
        return data

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            if not self.nullable:
                raise ExplicitError("non-nullable field cannot be None", path=path)
            self.length_field._build(-1, stream, context, path)
            return obj
        data = bytes(obj)
        self.length_field._build(len(data), stream, context, path)
        stream_write(stream, data, len(data), path)
        return obj


class _Utf8(Adapter):  # type: ignore[misc]  # construct ships no annotations
    """bytes <-> str the way Java's ``new String(bytes, UTF_8)`` decodes (malformed -> U+FFFD)."""

    def _decode(self, obj: Any, context: Any, path: str) -> str | None:
        return None if obj is None else bytes(obj).decode("utf-8", errors="replace")

    def _encode(self, obj: Any, context: Any, path: str) -> bytes | None:
        return None if obj is None else obj.encode("utf-8")


def VarintString(*, nullable: bool = False) -> Construct:
    """UTF-8 string with a zig-zag varint length (v2 record header key: length must be >= 0)."""
    return _Utf8(NullableBytes(Varint, nullable=nullable))


def uuid_to_base64url(value: bytes | _uuid.UUID | str) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
    if isinstance(value, str):
        value = _uuid.UUID(value)
    raw = value.bytes if isinstance(value, _uuid.UUID) else bytes(value)
    if len(raw) != 16:
        raise ValueError(f"a UUID has 16 bytes, got {len(raw)}")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def base64url_to_uuid(text: str) -> _uuid.UUID:
    """Kafka's ``Uuid.fromString``: 22 base64url characters -> 16 bytes."""
    if len(text) != 22:
        raise ValueError(f"a Kafka UUID string has 22 characters, got {len(text)}: {text!r}")
    try:
        raw = base64.urlsafe_b64decode(text + "==")
    except (ValueError, TypeError) as exc:
        raise ValueError(f"not URL-safe base64: {text!r}") from exc
    if len(raw) != 16 or uuid_to_base64url(raw) != text:
        raise ValueError(f"not a canonical Kafka UUID string: {text!r}")
    return _uuid.UUID(bytes=raw)


def construct_field(path: str | None) -> str | None:
    """construct paths look like ``(parsing) -> header -> base_timestamp``; keep the fields."""
    if not path:
        return None
    parts = [p.strip() for p in path.split("->")]
    parts = [p for p in parts if p and not p.startswith("(")]
    return ".".join(parts) or None


class _TrackingStream(io.BytesIO):
    """Remembers where the last read started: the start of the field that ran short."""

    last_start = 0

    def read(self, size: int | None = -1) -> bytes:
        self.last_start = self.tell()
        return super().read(size)


def parse_located(
    con: Construct,
    data: bytes | bytearray | memoryview,
    *,
    error: type[FormatError] = FormatError,
    path: str | os.PathLike[str] | None = None,
    position: int | None = None,
    base_offset: int | None = None,
    what: str = "structure",
    **context: Any,
) -> Any:
    """Parse ``data`` with ``con``; turn any construct/decoding failure into ``error``.

    The raised error names the failing field (construct's path) and, as ``position``, the byte
    position in the file (``position`` is where ``data`` starts): where the field that ran
    short starts, or how far the parser had got for other failures. A :class:`LocatedError`
    (a Kafka reader rule) keeps its own message, position and field. ``context`` goes to the
    construct context (e.g. the file name a Kafka message quotes).
    """
    stream = _TrackingStream(bytes(data))
    try:
        return con.parse_stream(stream, **context)
    except LocatedError as exc:
        where = None if position is None or exc.position is None else position + exc.position
        raise error(exc.reason, path=path, position=where, base_offset=base_offset,
                    field=exc.field or construct_field(exc.path), expected=exc.expected,
                    actual=exc.actual) from None
    except ConstructError as exc:
        reached = stream.last_start if isinstance(exc, StreamError) else stream.tell()
        field = construct_field(getattr(exc, "path", None))
        text = str(exc)
        msg = text.split("\n", 1)[-1].strip() if "\n" in text else text
        where = None if position is None else position + reached
        raise error(f"invalid {what}: {msg}", path=path, position=where,
                    base_offset=base_offset, field=field) from None
    except (UnicodeDecodeError, ValueError, OverflowError, IndexError, KeyError, TypeError,
            RecursionError) as exc:
        where = None if position is None else position + stream.tell()
        raise error(f"invalid {what}: {exc}", path=path, position=where,
                    base_offset=base_offset) from None


def greedy(con: Construct) -> Construct:
    """Entries back to back until the data ends (index files, line files)."""
    return GreedyRange(con)


# --------------------------------------------------------------- layouts derived for hot paths
# The hot paths read fixed-size entries with ``struct`` and ``numpy.frombuffer``; their formats
# are computed from the construct declaration once, at import, so a layout is written once.

#: construct's integer codes -> the one ``struct`` code we use (``l``/``L`` are ``i``/``I``
#: under standard sizes) and numpy's
_STRUCT_CODES = {"b": "b", "B": "B", "h": "h", "H": "H", "l": "i", "L": "I", "i": "i",
                 "I": "I", "q": "q", "Q": "Q"}
_NUMPY_CODES = {"b": "i1", "B": "u1", "h": "i2", "H": "u2", "i": "i4", "I": "u4",
                "q": "i8", "Q": "u8"}


def _fixed_fields(layout: Construct) -> list[tuple[str, str]]:
    """(field name, struct code) of a construct ``Struct`` of big-endian integers only."""
    fields = []
    for field in getattr(layout, "subcons", ()):
        inner = getattr(field, "subcon", None)
        while isinstance(inner, Adapter):   # a rule over the value keeps the layout
            inner = inner.subcon
        fmt = getattr(inner, "fmtstr", None)
        if not field.name or not isinstance(fmt, str) or len(fmt) != 2 or fmt[0] != ">" \
                or fmt[1] not in _STRUCT_CODES:
            raise TypeError(f"field {field.name!r} is not a big-endian integer: "
                            "only fixed integer layouts have a struct format")
        fields.append((field.name, _STRUCT_CODES[fmt[1]]))
    if not fields:
        raise TypeError("not a construct Struct of fields")
    return fields


def struct_format(layout: Construct) -> str:
    """The ``struct`` format of a fixed layout declared with construct, e.g. ``">ii"``."""
    return ">" + "".join(code for _, code in _fixed_fields(layout))


def numpy_dtype(layout: Construct) -> list[tuple[str, str]]:
    """The numpy dtype description (big-endian, the declaration's field names) of a fixed
    layout, for ``numpy.frombuffer``."""
    return [(name, ">" + _NUMPY_CODES[code]) for name, code in _fixed_fields(layout)]

