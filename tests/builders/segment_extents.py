"""Byte extents of the batches of an intact segment, walked by their size fields only (no
segtools reader: the salvage and skip-corrupt tests mutate files at these positions and must
not take them from the code under test)."""

from __future__ import annotations

import struct


def batch_extents(data: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` of each batch (or legacy entry): offset(8) + size(4) + size bytes."""
    out, pos = [], 0
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        out.append((pos, pos + 12 + length))
        pos += 12 + length
    return out
