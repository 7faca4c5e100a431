"""Variable-length integers of Kafka's formats (FORMATS.md section 0, ``ByteUtils.java``).

* varint / varlong: zig-zag signed, base-128, least-significant group first, at most 5 / 10
  bytes. Used for every length and delta inside a v2 record (the record length prefix too).
* uvarint: unsigned base-128 without zig-zag (KRaft metadata frames, flexible "compact"
  lengths and tagged fields).

Decoders take ``(buf, pos)`` and return ``(value, next_pos)``. They raise ``VarintError``
(a ``CorruptBatchError``) with ``position`` set to the index in ``buf`` where the varint
started; callers translate that into a file position with ``FormatError.located`` or by
re-raising with their own location.
"""

from __future__ import annotations

from segtools.errors import CorruptBatchError, TruncatedBatchError

__all__ = [
    "VarintError",
    "VarintTruncatedError",
    "read_varint",
    "read_varlong",
    "read_uvarint",
    "read_uvarlong",
    "zigzag_decode",
    "zigzag_encode",
    "encode_varint",
    "encode_varlong",
    "encode_uvarint",
    "varint_size",
]

Buffer = bytes | bytearray | memoryview


class VarintError(CorruptBatchError):
    """A varint that does not terminate within its maximum length."""


class VarintTruncatedError(TruncatedBatchError):
    """The buffer ends inside a varint."""


def zigzag_decode(raw: int) -> int:
    return (raw >> 1) ^ -(raw & 1)


def zigzag_encode(value: int, bits: int = 64) -> int:
    return ((value << 1) ^ (value >> (bits - 1))) & ((1 << bits) - 1)


def _read_unsigned(buf: Buffer, pos: int, max_bytes: int, what: str) -> tuple[int, int]:
    start = pos
    end = len(buf)
    result = 0
    shift = 0
    for _ in range(max_bytes):
        if pos >= end:
            raise VarintTruncatedError(f"buffer ends inside a {what}", position=start,
                                       field=what)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    # actual: the value its max_bytes groups spell (Kafka's own message prints it)
    raise VarintError(f"{what} is too long, the most significant bit in the {max_bytes}th "
                      f"byte is set", position=start, field=what, actual=result)


def read_uvarint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Unsigned 32-bit base-128 varint (``ByteUtils.readUnsignedVarint``)."""
    if pos < len(buf):
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
    raw, pos = _read_unsigned(buf, pos, 5, "varint")
    return raw & 0xFFFFFFFF, pos


def read_uvarlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Unsigned 64-bit base-128 varint."""
    return _read_unsigned(buf, pos, 10, "varlong")


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Zig-zag signed 32-bit varint (``ByteUtils.readVarint``)."""
    try:  # fast paths: most lengths and deltas fit one or two bytes
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        c = buf[pos + 1]
        if c < 0x80:
            raw = (b & 0x7F) | (c << 7)
            return (raw >> 1) ^ -(raw & 1), pos + 2
    except IndexError:
        pass  # the general path below reports the truncation
    raw, pos = _read_unsigned(buf, pos, 5, "varint")
    raw &= 0xFFFFFFFF  # Java keeps only 32 bits of a 5-byte varint
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Zig-zag signed 64-bit varint (``ByteUtils.readVarlong``)."""
    try:
        b = buf[pos]
        if b < 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
        c = buf[pos + 1]
        if c < 0x80:
            raw = (b & 0x7F) | (c << 7)
            return (raw >> 1) ^ -(raw & 1), pos + 2
    except IndexError:
        pass
    raw, pos = _read_unsigned(buf, pos, 10, "varlong")
    raw &= 0xFFFFFFFFFFFFFFFF
    return (raw >> 1) ^ -(raw & 1), pos


def encode_uvarint(value: int) -> bytes:
    """Unsigned base-128 encoding of a non-negative int."""
    if value < 0:
        raise ValueError("encode_uvarint needs a non-negative value")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Zig-zag 32-bit varint."""
    return encode_uvarint(zigzag_encode(value, 32))


def encode_varlong(value: int) -> bytes:
    """Zig-zag 64-bit varint."""
    return encode_uvarint(zigzag_encode(value, 64))


def varint_size(value: int) -> int:
    """Encoded size of a zig-zag varint/varlong (``ByteUtils.sizeOfVarint``)."""
    return len(encode_varlong(value))
