"""Java's ``int`` arithmetic and ``String.hashCode``, which decide Kafka's partition for a
group or transactional id and the iteration order of the Java/Scala hash maps whose order
kafka-dump-log prints (java.lang.String.hashCode: s[0]*31^(n-1) + ... over UTF-16 units)."""

from __future__ import annotations


def int32(x: int) -> int:
    """``x`` wrapped to a Java ``int`` (two's complement, 32 bits)."""
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= (1 << 31) else x


def java_string_hash(text: str) -> int:
    """``java.lang.String.hashCode`` over UTF-16 code units, as a Java ``int``."""
    h = 0
    raw = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(raw), 2):
        h = (31 * h + ((raw[i] << 8) | raw[i + 1])) & 0xFFFFFFFF
    return int32(h)
