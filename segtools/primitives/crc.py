"""Checksums used by Kafka's on-disk formats (FORMATS.md section 0).

* CRC-32C (Castagnoli): record batch v2 (bytes [21, end)) and producer snapshots.
* CRC-32 (IEEE, ``java.util.zip.CRC32``): legacy message format v0/v1.

Both return the unsigned 32-bit value, which is how Kafka reports and compares CRCs.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import crc32c as _crc32c_lib

from segtools.errors import MissingCodecError

__all__ = ["crc32c", "crc32c_of", "crc32", "HARDWARE_CRC32C"]

#: True when the ``crc32c`` package uses SSE4.2 / ARMv8 instructions.
HARDWARE_CRC32C: bool = bool(getattr(_crc32c_lib, "hardware_based", False))

_Crc = Callable[[bytes | bytearray | memoryview, int], int]


def _crc32c_impl() -> _Crc:
    fn = getattr(_crc32c_lib, "crc32c", None)
    if fn is None:  # very old releases only had crc32()
        fn = getattr(_crc32c_lib, "crc32", None)
    if fn is None:  # pragma: no cover - depends on the installed package
        raise MissingCodecError("the 'crc32c' package is required: pip install crc32c")
    impl: _Crc = fn
    return impl


#: the package's own routine, for loops that call it once per batch (no wrapper call): the
#: ``crc32c`` package returns the unsigned value already
crc32c_of: _Crc = _crc32c_impl()


def crc32c(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32C of ``data``; ``value`` continues a previous result (for chunked input)."""
    return crc32c_of(data, value) & 0xFFFFFFFF


def crc32(data: bytes | bytearray | memoryview, value: int = 0) -> int:
    """CRC-32 (IEEE) of ``data`` as ``java.util.zip.CRC32`` computes it."""
    return zlib.crc32(data, value) & 0xFFFFFFFF
