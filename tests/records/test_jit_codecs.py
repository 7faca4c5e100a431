"""segtools.records.jit_codecs against the codec libraries (python-lz4, cramjam) as the oracle:
whatever the kernel accepts it decodes to the libraries' bytes, whatever it refuses goes to
them; well-formed frames are never refused; a full arena is reported, not overrun."""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("numba")
lz4_frame = pytest.importorskip("lz4.frame")

from segtools.primitives import codecs  # noqa: E402
from segtools.records import jit_codecs as jc  # noqa: E402

pytestmark = pytest.mark.fast


def _run(payloads: list[bytes], codec_ids: list[int], limit: int = 1 << 26,
         cap: int = 1 << 22) -> tuple[list[bytes], int, int]:
    buf = np.frombuffer(b"".join(payloads) or b"\0", np.uint8)
    ends = np.cumsum([len(p) for p in payloads]).astype(np.int64)
    starts = ends - np.array([len(p) for p in payloads], np.int64)
    arena = np.zeros(cap, np.uint8)
    out_start = np.zeros(len(payloads), np.int64)
    out_len = np.zeros(len(payloads), np.int64)
    done, status = jc.decompress_many(buf, starts, ends, np.array(codec_ids, np.int8), limit,
                                      arena, out_start, out_len)
    outs = [bytes(arena[out_start[i]:out_start[i] + out_len[i]]) for i in range(int(done))]
    return outs, int(done), int(status)


def _plain(rng: random.Random, big: bool = True) -> bytes:
    n = rng.choice([0, 1, 7, 100, 5000, 70000] if big else [0, 1, 7, 100, 3000])
    kind = rng.randrange(3)
    if kind == 0:
        return rng.randbytes(n)
    if kind == 1:
        return bytes(rng.choices(b"abc", k=n))
    return (b"record %d " % n) * (n // 10)


def _compressed(rng: random.Random, raw: bytes) -> tuple[bytes, int]:
    if rng.random() < 0.5:
        return lz4_frame.compress(
            raw, block_size=rng.choice([0, 4, 5, 6]), content_checksum=rng.random() < 0.5,
            block_checksum=rng.random() < 0.3, store_size=rng.random() < 0.5,
            block_linked=rng.random() < 0.5), codecs.LZ4
    return codecs.compress(codecs.SNAPPY, raw), codecs.SNAPPY


def test_well_formed_frames_decode_to_the_input() -> None:
    rng = random.Random(25)
    raws = [_plain(rng) for _ in range(120)]
    comp = [_compressed(rng, r) for r in raws]
    outs, done, status = _run([c for c, _ in comp], [k for _, k in comp], cap=1 << 24)
    assert (done, status) == (len(raws), jc.DONE)
    assert outs == raws


def test_damaged_frames_agree_with_the_libraries_or_are_refused() -> None:
    rng = random.Random(2025)
    accepted = refused = 0
    for _ in range(400):
        data, codec = _compressed(rng, _plain(rng, big=False))
        b = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
        if b and rng.random() < 0.3:
            del b[rng.randrange(len(b)):]
        outs, done, status = _run([bytes(b)], [codec], cap=1 << 21)
        if done:
            accepted += 1
            assert outs[0] == codecs.decompress(codec, bytes(b), max_size=1 << 26)
        else:
            refused += 1
            assert status in (jc.REFUSED, jc.FULL)   # FULL: a 1-4 MiB block in the 2 MiB arena
    assert accepted > 50 and refused > 50   # both branches were exercised


def test_full_arena_and_limit() -> None:
    raw = b"x" * 50_000
    lz4 = lz4_frame.compress(raw)
    outs, done, status = _run([lz4, lz4], [codecs.LZ4, codecs.LZ4], cap=80_000)
    assert (done, status, outs) == (1, jc.FULL, [raw])
    # above the batch limit: refused, so the library path raises BatchTooLargeError
    assert _run([lz4], [codecs.LZ4], limit=49_999)[1:] == (0, jc.REFUSED)
    snappy = codecs.compress(codecs.SNAPPY, raw)
    assert _run([snappy], [codecs.SNAPPY], limit=49_999)[1:] == (0, jc.REFUSED)
    assert _run([snappy], [codecs.SNAPPY], cap=1000)[1:] == (0, jc.FULL)
    # other codecs and unframed snappy are the library's
    assert _run([b"\x1f\x8b"], [codecs.GZIP])[1:] == (0, jc.REFUSED)
    import cramjam

    assert _run([bytes(cramjam.snappy.compress_raw(raw))], [codecs.SNAPPY])[1:] == (0, jc.REFUSED)


@pytest.mark.parametrize("codec", ["snappy", "lz4"])
def test_read_records_without_the_codec_kernel_matches_kafka_python(tmp_path, monkeypatch, codec):
    """The numba engine with jit_codecs unusable decompresses batch by batch, same rows."""
    from test_columnar_gen import CODECS, kp_batch, oracle_rows, random_records, write_segment

    from segtools.records import columnar

    rng = random.Random(CODECS[codec])
    data = b"".join(kp_batch(random_records(rng, 30, compress=True), base_offset=50 * i,
                             codec=CODECS[codec]) for i in range(3))
    path = write_segment(tmp_path, data)
    with_kernel = columnar.read_records(path, engine="numba")
    monkeypatch.setattr("segtools.records.columnar.record_table._jit_codecs", lambda: None)
    without = columnar.read_records(path, engine="numba")
    assert without.equals(with_kernel)
    assert [(r["offset"], r["key"], r["value"]) for r in without.to_pylist()] == [
        (r["offset"], r["key"], r["value"]) for r in oracle_rows(data)]
