"""The ``Record`` object the batch reader yields (kept apart so legacy.py and batches.py can both
build it without importing each other)."""

from __future__ import annotations

from typing import TypedDict

from segtools.primitives.java_numbers import java_int

__all__ = ["Record", "RecordDict", "NO_TIMESTAMP", "NO_SEQUENCE", "INT32_MAX", "increment_sequence"]

NO_TIMESTAMP = -1
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1


def increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence`` in Java int arithmetic: sequences wrap from
    Int.MAX to 0. Both arguments are Java ints (the object reader and the python columnar
    engine share this one helper; the numba kernel has its compiled twin)."""
    if increment >= 0 and sequence >= 0:  # the usual case: nothing below can overflow
        if sequence > INT32_MAX - increment:
            return increment - (INT32_MAX - sequence) - 1
        return sequence + increment
    if sequence > java_int(INT32_MAX - increment):  # a negative delta overflows MAX - delta
        return java_int(increment - (INT32_MAX - sequence) - 1)
    return java_int(sequence + increment)


class RecordDict(TypedDict):
    """:meth:`Record.as_dict`: every attribute of a record by name."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    sequence: int
    attributes: int
    timestamp_delta: int
    offset_delta: int
    size: int
    is_control: bool
    magic: int | None
    crc: int | None
    crc_valid: bool | None
    compression: str | None
    timestamp_type: str | None


class Record:
    """One v2 record, or one legacy (inner) message.

    ``size`` is the v2 record length prefix (bytes after it); for legacy messages the message
    size field. For v2 records ``magic``, ``crc``, ``crc_valid``, ``compression`` and
    ``timestamp_type`` are None (they belong to the batch). Legacy messages report
    ``timestamp_delta`` 0, ``offset_delta`` = offset - batch base offset, ``sequence`` -1 and
    no headers.
    """

    __slots__ = ("offset", "timestamp", "key", "value", "headers", "sequence", "attributes",
                 "timestamp_delta", "offset_delta", "size", "is_control", "magic", "crc",
                 "crc_valid", "compression", "timestamp_type")

    def __init__(self, offset: int, timestamp: int, key: bytes | None, value: bytes | None,
                 headers: list[tuple[str, bytes | None]], sequence: int, attributes: int,
                 timestamp_delta: int, offset_delta: int, size: int, is_control: bool,
                 magic: int | None = None, crc: int | None = None,
                 crc_valid: bool | None = None, compression: str | None = None,
                 timestamp_type: str | None = None) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self.sequence = sequence
        self.attributes = attributes
        self.timestamp_delta = timestamp_delta
        self.offset_delta = offset_delta
        self.size = size
        self.is_control = is_control
        self.magic = magic
        self.crc = crc
        self.crc_valid = crc_valid
        self.compression = compression
        self.timestamp_type = timestamp_type

    @property
    def key_size(self) -> int:
        """Kafka's keySize: -1 for a null key."""
        return -1 if self.key is None else len(self.key)

    @property
    def value_size(self) -> int:
        """Kafka's valueSize: -1 for a null value."""
        return -1 if self.value is None else len(self.value)

    def as_dict(self) -> RecordDict:
        return {"offset": self.offset, "timestamp": self.timestamp, "key": self.key,
                "value": self.value, "headers": self.headers, "sequence": self.sequence,
                "attributes": self.attributes, "timestamp_delta": self.timestamp_delta,
                "offset_delta": self.offset_delta, "size": self.size,
                "is_control": self.is_control, "magic": self.magic, "crc": self.crc,
                "crc_valid": self.crc_valid, "compression": self.compression,
                "timestamp_type": self.timestamp_type}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={_short(self.value)}, headers={self.headers!r}, "
                f"sequence={self.sequence})")


def _short(value: bytes | None, limit: int = 40) -> str:
    if value is None or len(value) <= limit:
        return repr(value)
    return repr(value[:limit]) + f"...({len(value)} bytes)"
