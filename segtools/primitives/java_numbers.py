"""Java's fixed-width integer arithmetic: Kafka's fields are Java ints and longs, and some of
Kafka's rules (sequence wrap-around, offsets in dump-log) depend on their overflow."""

from __future__ import annotations

__all__ = ["java_int", "java_long"]


def java_int(x: int) -> int:
    """``x`` wrapped to a Java int (two's complement, 32 bits)."""
    return ((x + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def java_long(x: int) -> int:
    """``x`` wrapped to a Java long (two's complement, 64 bits)."""
    return ((x + 0x8000000000000000) & 0xFFFFFFFFFFFFFFFF) - 0x8000000000000000
