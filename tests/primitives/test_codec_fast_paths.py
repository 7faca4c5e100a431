"""The fast paths of segtools.primitives.codecs (a whole zstd frame in one call when its block headers
bound the output; lz4/zstd payloads read as memoryviews of the read window) decode exactly
what the reference libraries decode, and keep the decompression-bomb bound."""

from __future__ import annotations

import os

import lz4.frame
import pytest
import zstandard

from segtools.errors import BatchTooLargeError, CompressionError
from segtools.primitives import codecs

MiB = 1 << 20


def _frames() -> dict[str, bytes]:
    rnd = os.urandom(300_000)                      # incompressible: raw blocks
    text = b"".join(b"key-%06d value %d;" % (i, i * 7) for i in range(20_000))
    cobj = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
    return {
        "stream, no content size": cobj.compress(text) + cobj.flush(),   # as zstd-jni writes
        "checksum + content size": zstandard.ZstdCompressor(write_checksum=True).compress(text),
        "raw blocks": zstandard.ZstdCompressor(level=1).compress(rnd),
        "rle blocks": zstandard.ZstdCompressor().compress(b"\x00" * 500_000),
        "concatenated": (zstandard.ZstdCompressor().compress(text[:1000])
                         + zstandard.ZstdCompressor(write_checksum=True).compress(rnd[:5000])),
    }


@pytest.mark.parametrize("name", sorted(_frames()))
def test_zstd_fast_path_matches_the_library(name: str) -> None:
    data = _frames()[name]
    # the oracle: zstandard's own streaming reader across every frame
    expected = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True).read()
    assert len(expected) > 1000
    assert codecs.decompress(4, data, max_size=64 * MiB) == expected
    assert codecs.decompress(4, memoryview(data), max_size=64 * MiB) == expected
    # a bound below the real size: refused, whichever path ran
    with pytest.raises(BatchTooLargeError):
        codecs.decompress(4, data, max_size=len(expected) - 1)


def test_zstd_bomb_still_refused_before_it_expands() -> None:
    bomb = zstandard.ZstdCompressor(level=1).compress(b"\x00" * (64 * MiB))
    with pytest.raises(BatchTooLargeError):
        codecs.decompress(4, bomb, max_size=16 * MiB)


def test_zstd_truncated_frame_is_corrupt() -> None:
    data = zstandard.ZstdCompressor().compress(os.urandom(200_000))
    for cut in (len(data) - 1, len(data) // 2, 7):
        with pytest.raises(CompressionError):
            codecs.decompress(4, data[:cut], max_size=64 * MiB)


def test_lz4_memoryview_input_and_kafka_3160_frames() -> None:
    text = b"segtools " * 50_000
    frame = codecs.compress(3, text)
    assert codecs.decompress(3, memoryview(b"xx" + frame)[2:], max_size=MiB) == text
    assert lz4.frame.decompress(frame) == text
    broken = codecs.compress(3, text, magic=0)   # HC over the magic too, as Kafka 0.8 wrote
    assert codecs.decompress(3, memoryview(broken), magic=0, max_size=MiB) == text
    with pytest.raises(CompressionError):
        codecs.decompress(3, memoryview(broken), magic=2, max_size=MiB)
