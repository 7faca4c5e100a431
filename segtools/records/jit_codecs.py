"""numba decompression of many lz4 and snappy batch payloads in one call (issue 25).

Why: a Python call per compressed batch (the codec library's own entry, its output ``bytes``,
the hand-off to the decoder) cost about as much as decoding the batch's records. Here the
payloads of a whole run of batches go into one reusable arena in one call, and
:func:`segtools.records.jit_kernel.decode_records` reads them from there.

What is accepted is a strict subset of what the libraries accept (python-lz4's frame decoder,
cramjam's snappy, as :mod:`segtools.primitives.codecs` calls them), with the same output: every
check those libraries make is made here too or the batch is refused. A refused batch (anything
unusual: an lz4 dictionary id, a snappy stream without xerial framing, a bad checksum, a
truncated block, output past the limit) is handed back to :mod:`segtools.primitives.codecs`,
which decides and words any error. So this module never raises and never decides that bytes
are broken; it only takes the common well-formed case off the slow path.

Formats: the LZ4 frame format (magic 0x184D2204, FLG/BD descriptor with its xxh32 header
checksum, blocks with optional xxh32 checksums, end mark, optional content checksum) and the
LZ4 block format; xerial snappy-java's stream (16-byte header, big-endian block lengths,
headers repeated between blocks) over raw snappy blocks (FORMATS.md section 3).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types

__all__ = ["decompress_many", "CODEC_SNAPPY", "CODEC_LZ4", "DONE", "FULL", "REFUSED"]

CODEC_SNAPPY = 2
CODEC_LZ4 = 3
#: decompress_many's status: every batch done / the arena is full at batch n / batch n refused
DONE, FULL, REFUSED = 0, 1, 2

_memcpy = types.ExternalFunction("memcpy", types.voidptr(types.voidptr, types.voidptr, types.uintp))

_P1 = np.uint32(2654435761)
_P2 = np.uint32(2246822519)
_P3 = np.uint32(3266489917)
_P4 = np.uint32(668265263)
_P5 = np.uint32(374761393)
_M32 = 0xFFFFFFFF
_XERIAL = (0x82, 0x53, 0x4E, 0x41, 0x50, 0x50, 0x59, 0x00)   # b"\x82SNAPPY\x00"
_LZ4_BLOCK_MAX = (0, 0, 0, 0, 1 << 16, 1 << 18, 1 << 20, 1 << 22)


@numba.njit(_nrt=False, cache=True, inline="always")
def _le32(buf, p):
    return (np.int64(buf[p]) | (np.int64(buf[p + 1]) << 8) | (np.int64(buf[p + 2]) << 16)
            | (np.int64(buf[p + 3]) << 24))


@numba.njit(_nrt=False, cache=True, inline="always")
def _rotl(x, r):
    return ((x << r) | (x >> (32 - r))) & _M32


@numba.njit(_nrt=False, cache=True)
def _xxh32(buf, s, n):
    """xxHash32 with seed 0 of buf[s:s+n] (LZ4 frame checksums)."""
    p = s
    e = s + n
    if n >= 16:
        v1 = (np.int64(_P1) + np.int64(_P2)) & _M32
        v2 = np.int64(_P2)
        v3 = np.int64(0)
        v4 = (-np.int64(_P1)) & _M32
        limit = e - 16
        while p <= limit:
            v1 = (_rotl((v1 + _le32(buf, p) * np.int64(_P2)) & _M32, 13) * np.int64(_P1)) & _M32
            v2 = (_rotl((v2 + _le32(buf, p + 4) * np.int64(_P2)) & _M32, 13) * np.int64(_P1)) & _M32
            v3 = (_rotl((v3 + _le32(buf, p + 8) * np.int64(_P2)) & _M32, 13) * np.int64(_P1)) & _M32
            v4 = (_rotl((v4 + _le32(buf, p + 12) * np.int64(_P2)) & _M32, 13) * np.int64(_P1)) & _M32
            p += 16
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
    else:
        h = np.int64(_P5)
    h = (h + n) & _M32
    while p + 4 <= e:
        h = (_rotl((h + _le32(buf, p) * np.int64(_P3)) & _M32, 17) * np.int64(_P4)) & _M32
        p += 4
    while p < e:
        h = (_rotl((h + np.int64(buf[p]) * np.int64(_P5)) & _M32, 11) * np.int64(_P1)) & _M32
        p += 1
    h ^= h >> 15
    h = (h * np.int64(_P2)) & _M32
    h ^= h >> 13
    h = (h * np.int64(_P3)) & _M32
    h ^= h >> 16
    return h


@numba.njit(_nrt=False, cache=True, inline="always")
def _copy(dst, d, src, s, n):
    _memcpy(dst.ctypes.data + d, src.ctypes.data + s, n)


@numba.njit(_nrt=False, cache=True)
def _lz4_length(src, ip, limit, n):
    """An LZ4 length continued past its token's 15: bytes added until one is not 255, read
    below ``limit``. Returns (length, new ip), or (-1, ip) when the bytes run out."""
    while True:
        if ip >= limit:
            return np.int64(-1), ip
        b = np.int64(src[ip])
        ip += 1
        n += b
        if b != 255:
            return n, ip


@numba.njit(_nrt=False, cache=True)
def _lz4_block(src, ip, ie, out, op, oend, low):
    """Decode one LZ4 block src[ip:ie] to out[op:]; output capacity ends at ``oend`` (the
    frame's maximum block size past the block's start, as LZ4F gives LZ4_decompress_safe) and
    matches may reach back to ``low``. Returns the new op, or -1 when refused. The end-of-block
    rules are the reference decoder's: the last sequence is literals only and ends the input
    exactly; other literals end at least 8 input bytes and 12 output bytes before the ends; a
    match ends at least 5 output bytes before ``oend``."""
    while True:
        if ip >= ie:
            return -1
        token = np.int64(src[ip])
        ip += 1
        lit = token >> 4
        if lit == 15:
            lit, ip = _lz4_length(src, ip, ie, lit)
            if lit < 0:
                return -1
        if ip + lit > ie - 8 or op + lit > oend - 12:
            # must be the last sequence: literals up to the input's end exactly
            if ip + lit != ie or op + lit > oend:
                return -1
            _copy(out, op, src, ip, lit)
            return op + lit
        _copy(out, op, src, ip, lit)
        ip += lit
        op += lit
        off = np.int64(src[ip]) | (np.int64(src[ip + 1]) << 8)
        ip += 2
        if off == 0 or op - off < low:
            return -1
        mlen = token & 15
        if mlen == 15:   # the length bytes may not reach into the last 5 input bytes
            mlen, ip = _lz4_length(src, ip, ie - 5, mlen)
            if mlen < 0:
                return -1
        mlen += 4
        if ip > ie - 5 or op + mlen > oend - 5:
            return -1
        m = op - off
        if off >= mlen:
            _copy(out, op, out, m, mlen)
        else:   # overlapping: byte by byte repeats the pattern
            for k in range(mlen):
                out[op + k] = out[m + k]
        op += mlen


@numba.njit(_nrt=False, cache=True)
def _lz4_frame(src, s, e, out, o, cap):
    """One LZ4 frame src[s:e] decoded to out[o:o+cap]: (bytes written, 0) or (0, status)."""
    if e - s < 7 or src[s] != 0x04 or src[s + 1] != 0x22 or src[s + 2] != 0x4D or src[s + 3] != 0x18:
        return 0, REFUSED
    flg = np.int64(src[s + 4])
    bd = np.int64(src[s + 5])
    if (flg >> 6) != 1 or flg & 0x02 or flg & 0x01 or bd & 0x8F:
        return 0, REFUSED   # version, reserved bit, dictionary id, reserved BD bits
    block_max = _LZ4_BLOCK_MAX[(bd >> 4) & 7]
    if block_max == 0:
        return 0, REFUSED
    independent = flg & 0x20
    block_sum = flg & 0x10
    has_size = flg & 0x08
    content_sum = flg & 0x04
    hc = s + 6 + (8 if has_size else 0)
    if hc >= e or np.int64(src[hc]) != (_xxh32(src, s + 4, hc - s - 4) >> 8) & 0xFF:
        return 0, REFUSED
    p = hc + 1
    op = o
    end = o + cap
    while True:
        if p + 4 > e:
            return 0, REFUSED   # no end mark
        size = _le32(src, p)
        p += 4
        if size == 0:
            break
        raw = size & 0x80000000
        size &= 0x7FFFFFFF
        if size > block_max or p + size > e or (block_sum and p + size + 4 > e):
            return 0, REFUSED
        if op + (size if raw else block_max) > end:
            # the block might not fit: the caller retries in a fresh arena (or refuses)
            return 0, FULL
        if raw:
            _copy(out, op, src, p, size)
            nop = op + size
        else:
            nop = _lz4_block(src, p, p + size, out, op, op + block_max, op if independent else o)
            if nop < 0:
                return 0, REFUSED
        if block_sum and _le32(src, p + size) != _xxh32(src, p, size):
            return 0, REFUSED
        p += size + (4 if block_sum else 0)
        op = nop
    if content_sum:
        if p + 4 > e or _le32(src, p) != _xxh32(out, o, op - o):
            return 0, REFUSED
    if has_size:
        declared = np.int64(0)
        for k in range(8):
            declared |= np.int64(src[s + 6 + k]) << (8 * k)
        if declared != op - o:
            return 0, REFUSED
    return op - o, 0


@numba.njit(_nrt=False, cache=True)
def _snappy_raw(src, ip, ie, out, op, room):
    """One raw snappy block src[ip:ie] to out[op:]: bytes written, -1 refused, -2 no room."""
    want = np.int64(0)
    shift = 0
    while True:   # the uncompressed length, a varint of at most 5 bytes (32 bits)
        if ip >= ie or shift > 28:
            return -1
        b = np.int64(src[ip])
        ip += 1
        want |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            break
    if want > 0xFFFFFFFF:
        return -1
    if want > room:
        return -2
    start = op
    end = op + want
    while ip < ie:
        tag = np.int64(src[ip])
        ip += 1
        kind = tag & 3
        if kind == 0:
            n = tag >> 2
            if n >= 60:
                extra = n - 59
                if ip + extra > ie:
                    return -1
                n = np.int64(0)
                for k in range(extra):
                    n |= np.int64(src[ip + k]) << (8 * k)
                ip += extra
            n += 1
            if ip + n > ie or op + n > end:
                return -1
            _copy(out, op, src, ip, n)
            ip += n
            op += n
            continue
        if kind == 1:
            if ip >= ie:
                return -1
            n = ((tag >> 2) & 7) + 4
            off = ((tag >> 5) << 8) | np.int64(src[ip])
            ip += 1
        elif kind == 2:
            if ip + 2 > ie:
                return -1
            n = (tag >> 2) + 1
            off = np.int64(src[ip]) | (np.int64(src[ip + 1]) << 8)
            ip += 2
        else:
            if ip + 4 > ie:
                return -1
            n = (tag >> 2) + 1
            off = _le32(src, ip)
            ip += 4
        if off == 0 or off > op - start or op + n > end:
            return -1
        m = op - off
        if off >= n:
            _copy(out, op, out, m, n)
        else:
            for k in range(n):
                out[op + k] = out[m + k]
        op += n
    if op != end:
        return -1
    return want


@numba.njit(_nrt=False, cache=True)
def _xerial_at(src, p, e):
    if e - p < 16:
        return False
    for k in range(8):
        if src[p + k] != _XERIAL[k]:
            return False
    return True


@numba.njit(_nrt=False, cache=True)
def _snappy_stream(src, s, e, out, o, cap, limit):
    """A xerial snappy-java stream src[s:e] to out[o:o+cap]: (bytes written, 0) or (0, status)."""
    if not _xerial_at(src, s, e):
        return 0, REFUSED   # raw snappy without framing: the library path decides
    p = s + 16
    op = o
    while p < e:
        if _xerial_at(src, p, e):   # concatenated streams: a header between blocks
            p += 16
            continue
        if e - p < 4:
            return 0, REFUSED
        size = ((np.int64(src[p]) << 24) | (np.int64(src[p + 1]) << 16)
                | (np.int64(src[p + 2]) << 8) | np.int64(src[p + 3]))
        p += 4
        if size >= 0x80000000 or size > e - p:
            return 0, REFUSED
        room = limit - (op - o)
        if room > o + cap - op:
            room = o + cap - op
        got = _snappy_raw(src, p, p + size, out, op, room)
        if got == -2:
            return 0, FULL if limit - (op - o) > o + cap - op else REFUSED
        if got < 0:
            return 0, REFUSED
        op += got
        p += size
    return op - o, 0


@numba.njit(_nrt=False, cache=True, nogil=True)
def decompress_many(buf, starts, ends, codecs, limit, arena, out_start, out_len):
    """Decompress the payloads buf[starts[i]:ends[i]] (codec ``codecs[i]``: snappy or lz4) one
    after another into ``arena``; ``out_start[i]``/``out_len[i]`` say where each went. Stops at
    the first batch it cannot finish: returns (batches done, DONE / FULL / REFUSED). FULL: the
    arena has no room for that batch (retry it in a fresh arena); REFUSED: anything else,
    including output above ``limit`` bytes (the library path raises the error)."""
    o = np.int64(0)
    cap = arena.shape[0]
    for i in range(starts.shape[0]):
        room = cap - o
        if codecs[i] == CODEC_LZ4:
            n, status = _lz4_frame(buf, starts[i], ends[i], arena, o, room)
            if status == 0 and n > limit:
                status = REFUSED
        elif codecs[i] == CODEC_SNAPPY:
            n, status = _snappy_stream(buf, starts[i], ends[i], arena, o, room, limit)
        else:
            n, status = 0, REFUSED
        if status != 0:
            return i, status
        out_start[i] = o
        out_len[i] = n
        o += n
    return starts.shape[0], DONE
