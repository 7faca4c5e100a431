"""The vectorised engine's length-prefix walk (records/columnar/vectorised.py): in lockstep
across batches while many walk, batch by batch for the rest. Both halves must find the same
record bounds as a plain sequential walk written here from DefaultRecord's layout (a zig-zag
varint length, then that many bytes), and decline the same first bad batch."""

from __future__ import annotations

import random

import numpy as np
import pytest

from segtools.primitives.varint import encode_varint
from segtools.records.columnar import vectorised


def _sequential(buf: bytes, starts: list[int], ends: list[int], counts: list[int]):
    """Record bodies by the definition, or the first batch that does not walk."""
    out_s, out_e = [], []
    for b, (p, e, c) in enumerate(zip(starts, ends, counts)):
        for _ in range(c):
            shift = x = 0
            for k in range(3):
                if p + k >= e:
                    return b
                byte = buf[p + k]
                x |= (byte & 0x7F) << shift
                shift += 7
                if byte < 0x80:
                    p += k + 1
                    break
            else:
                return b
            length = (x >> 1) ^ -(x & 1)
            if length < 0 or p + length > e:
                return b
            out_s.append(p)
            out_e.append(p + length)
            p += length
        if c and p != e:
            return b
    return out_s, out_e


def _batches(rng: random.Random, n: int) -> tuple[bytes, list[int], list[int], list[int]]:
    buf = bytearray()
    starts, ends, counts = [], [], []
    for _ in range(n):
        c = rng.choice([1, 2, 3, rng.randint(1, 60)])
        starts.append(len(buf))
        for _ in range(c):
            body = bytes(rng.choice([0, 5, 63, 64, 200, 9000, 20000]))
            buf += encode_varint(len(body)) + body
        ends.append(len(buf))
        counts.append(c)
    return bytes(buf), starts, ends, counts


def _walk(buf, starts, ends, counts):
    try:
        s, e = vectorised._record_bounds(buf, np.array(starts), np.array(ends), np.array(counts))
    except vectorised._Declined as exc:
        return exc.args[0]
    return s.tolist(), e.tolist()


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("lockstep_min", [1, 32, 10**9])
def test_the_walk_finds_every_record_or_the_first_bad_batch(seed, lockstep_min, monkeypatch):
    monkeypatch.setattr(vectorised, "_LOCKSTEP_MIN", lockstep_min)
    rng = random.Random(seed)
    buf, starts, ends, counts = _batches(rng, rng.randint(30, 90))
    if seed % 2:   # damage: a length prefix or a count off by a little, somewhere
        raw = bytearray(buf)
        what = seed % 4
        b = rng.randrange(len(starts))
        if what == 1:
            raw[starts[b]] ^= 1 << rng.randrange(8)
        else:
            counts[b] += rng.choice([-1, 1, 5])
        buf = bytes(raw)
    expected = _sequential(buf, starts, ends, counts)
    got = _walk(buf, starts, ends, counts)
    if isinstance(expected, int):
        # the walk may stop at an earlier bad-looking batch only if the definition does too:
        # it declines exactly the first batch the definition cannot walk, or a later one that
        # is also bad (decode_records then retries on the batches before it)
        assert isinstance(got, int) and got >= expected
        assert isinstance(_sequential(buf, starts[:got + 1], ends[:got + 1], counts[:got + 1]), int)
    else:
        assert got == expected


def test_a_hostile_count_is_declined_before_anything_is_sized():
    buf = encode_varint(3) + b"abc"
    got = _walk(buf, [0], [len(buf)], [2**31 - 1])
    assert got == 0


def _varint_definition(buf: bytes, pos: int, max_bytes: int) -> tuple[int, int] | None:
    """ByteUtils.readVarlong by its definition: (value, next position), or None when longer
    than max_bytes or past the buffer's end."""
    raw = shift = 0
    for k in range(max_bytes):
        if pos + k >= len(buf):
            return None
        byte = buf[pos + k]
        raw |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return (raw >> 1) ^ -(raw & 1), pos + k + 1
    return None


@pytest.mark.parametrize("seed", range(20))
def test_the_column_varint_reader_agrees_with_the_definition(seed):
    """The table of two-byte prefixes, the byte-by-byte path for longer ones, and a varint at
    the buffer's very last byte (read_records' buffers end where the records end)."""
    rng = random.Random(seed)
    buf = bytes(rng.choice([rng.randrange(0x80), rng.randrange(0x80, 0x100)])
                for _ in range(rng.randint(1, 40)))
    pos = np.array([rng.randrange(len(buf)) for _ in range(30)] + [len(buf) - 1], dtype=np.int64)
    bad = np.zeros(len(pos), dtype=bool)
    values, ends = vectorised._varint(np.frombuffer(buf, np.uint8), pos, 9, bad)
    for p, v, e, b in zip(pos.tolist(), values.tolist(), ends.tolist(), bad.tolist()):
        want = _varint_definition(buf, p, 9)
        if want is not None:
            assert not b and (v, e) == want
        else:
            # cut short by the buffer's end: the read ends past it (the record is then refused)
            # or, longer than 9 bytes, it is marked
            assert b or e > len(buf)


@pytest.mark.parametrize("rows", [1, 7, vectorised._JOIN_MAX_ROWS, vectorised._JOIN_MAX_ROWS + 1, 900])
def test_byte_ranges_are_cut_out_as_python_slices_them(rows):
    """_slices joins few ranges itself and takes many with Arrow: both give, row by row, the
    bytes Python's slicing gives (empty ranges, adjacent ranges and the buffer's last byte too)."""
    rng = random.Random(rows)
    buf = bytes(rng.randrange(256) for _ in range(20 * rows + 5))
    starts, lengths, pos = [], [], 0
    for _ in range(rows):
        pos += rng.choice((0, 0, 1, 3))               # adjacent ranges, and gaps
        length = rng.choice((0, 1, 2, 9))
        starts.append(pos)
        lengths.append(length)
        pos += length
    if rows:   # the last range ends at the buffer's end
        lengths[-1] += len(buf) - pos
    arr = vectorised._slices(np.frombuffer(buf, np.uint8), np.array(starts, np.int64),
                             np.array(lengths, np.int64))
    assert arr.to_pylist() == [buf[s:s + n] for s, n in zip(starts, lengths)]


def test_header_keys_are_checked_for_utf8_one_by_one(tmp_path):
    """Two header keys that are each a half of one UTF-8 character (valid only when joined) are
    both not UTF-8: every engine replaces each, as the Python decoder does key by key."""
    from test_columnar_gen import Rec, fix_crc, kp_batch, write_segment

    from segtools.records import columnar

    data = bytearray(kp_batch([Rec(b"k", b"v", [("XY", b"1"), ("ZW", b"2")])], base_offset=0))
    data[data.index(b"XY"):data.index(b"XY") + 2] = b"a\xc3"
    data[data.index(b"ZW"):data.index(b"ZW") + 2] = b"\xa9b"
    fix_crc(data)
    path = write_segment(tmp_path, bytes(data))
    for engine in columnar.available_engines():
        headers = columnar.read_records(path, engine=engine).column("headers").to_pylist()
        assert headers == [[{"key": "a\ufffd", "value": b"1"}, {"key": "\ufffdb", "value": b"2"}]], engine
