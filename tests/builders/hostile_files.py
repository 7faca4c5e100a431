"""Generators of small hostile files (decompression bombs, sparse giants) for tests and
benchmarks/bench_hostile.py.

Written with ``struct``, ``zlib``, ``zstandard`` and ``crc32c`` directly (not with our writer),
following the v2 batch layout of docs/FORMATS.md section 1: every batch here has a valid
CRC-32C, so only the size limits can stop a reader.
"""

from __future__ import annotations

import os
import struct
import zlib

import crc32c as _crc32c_lib

from segtools.primitives.varint import encode_varlong

# baseOffset, length, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
_HEADER = struct.Struct(">qiibIhiqqqhii")
OVERHEAD = _HEADER.size  # 61
#: a 7-byte record: length 6, attributes 0, timestampDelta 0, offsetDelta 0, key null,
#: value null, no headers (zigzag varints)
SEVEN_BYTE_RECORD = bytes([0x0C, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00])
CODECS = {"none": 0, "gzip": 1, "zstd": 4}
MiB = 1 << 20
GiB = 1 << 30


def _crc(data: bytes | memoryview, value: int = 0) -> int:
    return _crc32c_lib.crc32c(data, value) & 0xFFFFFFFF


def header(records_section_len: int, count: int, codec: int, crc: int, *,
           base_offset: int = 0) -> bytes:
    return _HEADER.pack(base_offset, OVERHEAD - 12 + records_section_len, 0, 2, crc, codec,
                        max(count - 1, 0), 1_700_000_000_000, 1_700_000_000_000, -1, -1, -1,
                        count)


def batch(records_section: bytes, count: int, codec: int, *, base_offset: int = 0) -> bytes:
    """One v2 batch with a valid CRC around an already encoded (compressed) records section."""
    h = bytearray(header(len(records_section), count, codec, 0, base_offset=base_offset))
    crc = _crc(records_section, _crc(bytes(h[21:])))
    struct.pack_into(">I", h, 17, crc)
    return bytes(h) + records_section


def _compress_repeated(codec: str, piece: bytes, repeats: int) -> bytes:
    """``piece * repeats`` compressed without holding it whole."""
    if codec == "zstd":
        import zstandard

        c = zstandard.ZstdCompressor(level=1, write_content_size=False).compressobj()
        out = [c.compress(piece) for _ in range(repeats)]
        out.append(c.flush())
        return b"".join(out)
    if codec == "gzip":
        c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        out = [c.compress(piece) for _ in range(repeats)]
        out.append(c.flush())
        return b"".join(out)
    raise ValueError(codec)


def record_bomb(path: str, n_records: int, codec: str = "zstd") -> str:
    """One batch of ``n_records`` seven-byte records (a few KB on disk)."""
    per = 1 << 17  # records per compressed piece
    whole, rest = divmod(n_records, per)
    payload = _compress_repeated(codec, SEVEN_BYTE_RECORD * per, whole)
    if rest:  # a second frame/member: both codecs read concatenated frames
        payload += _compress_repeated(codec, SEVEN_BYTE_RECORD * rest, 1)
    with open(path, "wb") as f:
        f.write(batch(payload, n_records, CODECS[codec]))
    return path


def zero_bomb(path: str, codec: str, zeros: int, n_batches: int = 1) -> str:
    """``n_batches`` batches each decompressing to ``zeros`` zero bytes (claims 1 record)."""
    payload = _compress_repeated(codec, bytes(MiB), zeros // MiB)
    with open(path, "wb") as f:
        for i in range(n_batches):
            f.write(batch(payload, 1, CODECS[codec], base_offset=i))
    return path


def sparse_hostile(path: str, size: int = 2 * GiB + 64 * 1024) -> str:
    """A sparse file of ``size`` bytes whose first header claims length 2**31-1."""
    with open(path, "wb") as f:
        f.write(header(0, 1, 0, 0)[:12].replace(struct.pack(">i", OVERHEAD - 12),
                                                  struct.pack(">i", 2**31 - 1)))
        f.write(bytes([0, 0, 0, 0, 2]))
        f.truncate(size)
    return path


def sparse_giant(path: str, batch_bytes: int, n_batches: int = 2) -> str:
    """A legal segment of ``n_batches`` uncompressed batches of about ``batch_bytes`` each:
    one record per batch whose value is a run of zero bytes left as a hole in the file."""
    zero_chunk = bytes(4 * MiB)
    with open(path, "wb") as f:
        pos = 0
        for i in range(n_batches):
            vlen = batch_bytes - OVERHEAD - 32
            body_tail = b"\x00"  # headersCount 0
            body = (b"\x00" + encode_varlong(0) + encode_varlong(0) + encode_varlong(-1) + encode_varlong(vlen))
            rec_len = len(body) + vlen + len(body_tail)
            prefix = encode_varlong(rec_len) + body
            section_len = len(prefix) + vlen + len(body_tail)
            h = bytearray(header(section_len, 1, 0, 0, base_offset=i))
            crc = _crc(prefix, _crc(bytes(h[21:])))
            left = vlen
            while left:
                n = min(left, len(zero_chunk))
                crc = _crc(memoryview(zero_chunk)[:n], crc)
                left -= n
            crc = _crc(body_tail, crc)
            struct.pack_into(">I", h, 17, crc)
            f.seek(pos)
            f.write(bytes(h) + prefix)
            pos += OVERHEAD + section_len
            f.seek(pos - 1)
            f.write(body_tail)
        f.truncate(pos)
    return path


def sparse_snapshot(path: str, size: int = GiB) -> str:
    """A producer .snapshot of ``size`` bytes: version 1 header, then a hole."""
    with open(path, "wb") as f:
        f.write(struct.pack(">hIi", 1, 0, 0))
        f.truncate(size)
    return path


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MB (Linux reports ru_maxrss in KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


__all__ = ["record_bomb", "zero_bomb", "sparse_hostile", "sparse_giant", "sparse_snapshot",
           "batch", "peak_rss_mb", "os"]
