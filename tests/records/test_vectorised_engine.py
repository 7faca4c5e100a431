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
