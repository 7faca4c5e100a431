"""crc.py and codecs.py against independent references: published check values, the codec
libraries themselves, kafka-python's codec module and the real Kafka 0.8 snappy/gzip vectors."""

from __future__ import annotations

import gzip
import os
import random
import struct
from pathlib import Path

import cramjam
import lz4.frame
import pytest
import zstandard
from kafka import codec as kcodec

from segtools.errors import CompressionError, CorruptBatchError
from segtools.primitives.codecs import COMPRESSION_NAMES, compress, decompress, xxh32
from segtools.primitives.crc import crc32, crc32c

PAYLOAD = b"".join(b"record %d with some text that compresses; " % i for i in range(3000)) + \
    os.urandom(2000)
MiB = 1 << 20


# ------------------------------------------------------------------------------------ CRC

def test_crc32c_check_value():
    # FORMATS.md section 0: CRC-32C check value of "123456789"
    assert crc32c(b"123456789") == 0xE3069283


def test_crc32_check_value():
    # the standard CRC-32 (IEEE) check value
    assert crc32(b"123456789") == 0xCBF43926


def test_crc32c_is_incremental_and_accepts_memoryview():
    data = os.urandom(1000)
    assert crc32c(data[400:], crc32c(data[:400])) == crc32c(data)
    assert crc32c(memoryview(data)[10:20]) == crc32c(data[10:20])


def test_crc32c_of_spec_worked_example_batch():
    # FORMATS.md 1.9: the stored crc 0x965A94B1 covers bytes [21, end) of the batch
    batch = bytes.fromhex(
        "0000000000000000" "00000039" "00000000" "02" "965a94b1" "0000" "00000000"
        "0000018bcfe56800" "0000018bcfe56800" "ffffffffffffffff" "ffff" "ffffffff"
        "00000001" "0e0000000102" "6100")
    assert len(batch) == 69
    assert crc32c(batch[21:]) == 0x965A94B1


# ------------------------------------------------------------------------------------ xxh32

@pytest.mark.parametrize("data,expected", [
    (b"", 0x02CC5D05),      # published xxHash32 test vectors, seed 0
    (b"a", 0x550D7456),
    (b"abc", 0x32D153FF),
])
def test_xxh32_known_vectors(data, expected):
    assert xxh32(data) == expected


def test_xxh32_agrees_with_lz4_library_header_checksum():
    # liblz4 writes HC = (xxh32(descriptor) >> 8) & 0xFF; check several descriptors
    for kwargs in ({}, {"store_size": False}, {"block_size": lz4.frame.BLOCKSIZE_MAX4MB},
                   {"content_checksum": True, "block_linked": False}):
        frame = lz4.frame.compress(b"abc" * 100, **kwargs)
        flg = frame[4]
        hc_pos = 6 + (8 if flg & 0x08 else 0)
        assert frame[hc_pos] == (xxh32(frame[4:hc_pos]) >> 8) & 0xFF


# ------------------------------------------------------------------------------------ names

def test_compression_names():
    assert COMPRESSION_NAMES == {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_ids(codec_id):
    with pytest.raises(CompressionError, match=f"Unknown compression type id: {codec_id}"):
        decompress(codec_id, b"x", max_size=100)


# ------------------------------------------------------------------------------------ compress:
# what we write must decode with the codec libraries / kafka-python (independent readers)

def test_gzip_output_is_java_like_and_standard():
    out = compress(1, PAYLOAD)
    assert gzip.decompress(out) == PAYLOAD
    assert kcodec.gzip_decode(out) == PAYLOAD
    # JDK 17 GZIPOutputStream header: deflate, no flags, mtime 0, xfl 0, OS 255
    assert out[:10] == b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def test_snappy_output_is_xerial_framed():
    out = compress(2, PAYLOAD)
    assert out[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    assert kcodec.snappy_decode(out) == PAYLOAD
    # 32 KiB input blocks, each a raw snappy block with a BE length prefix
    pos, blocks = 16, []
    while pos < len(out):
        (n,) = struct.unpack_from(">i", out, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(out[pos + 4:pos + 4 + n])))
        pos += 4 + n
    assert b"".join(blocks) == PAYLOAD
    assert [len(b) for b in blocks[:-1]] == [32 * 1024] * (len(blocks) - 1)


def test_lz4_output_is_kafka_frame():
    out = compress(3, PAYLOAD, magic=2)
    assert out[:4] == b"\x04\x22\x4d\x18"
    assert out[4] == 0x60 and out[5] == 0x40  # Lz4BlockOutputStream FLG / BD
    assert lz4.frame.decompress(out) == PAYLOAD
    assert kcodec.lz4_decode(out) == PAYLOAD


def test_lz4_magic0_writes_broken_header_checksum_kafka_3160():
    out = compress(3, PAYLOAD, magic=0)
    # HC over magic + FLG + BD (bytes [0,6)), as old Kafka and kafka-python's
    # lz4_encode_old_kafka compute it
    assert out[6] == (xxh32(out[0:6]) >> 8) & 0xFF
    assert out[6] != (xxh32(out[4:6]) >> 8) & 0xFF
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(out)  # a strict reader rejects it ...
    assert decompress(3, out, magic=0, max_size=len(PAYLOAD)) == PAYLOAD  # ... we accept it
    with pytest.raises(CompressionError, match="header checksum"):
        decompress(3, out, magic=1, max_size=len(PAYLOAD))  # magic 1/2 verify HC


def test_zstd_output_has_no_content_size():
    out = compress(4, PAYLOAD)
    params = zstandard.get_frame_parameters(out)
    assert params.content_size == zstandard.CONTENTSIZE_UNKNOWN  # like zstd-jni streams
    assert zstandard.ZstdDecompressor().decompressobj().decompress(out) == PAYLOAD
    assert kcodec.zstd_decode(out) == PAYLOAD


def test_zstd_not_allowed_below_magic_2():
    with pytest.raises(CompressionError, match="magic"):
        compress(4, b"x", magic=1)
    frame = zstandard.ZstdCompressor().compress(b"x")
    with pytest.raises(CompressionError, match="magic"):
        decompress(4, frame, magic=1, max_size=100)


# ------------------------------------------------------------------------------------ decompress:
# input produced by other writers

def test_decompress_inputs_from_other_writers():
    assert decompress(1, kcodec.gzip_encode(PAYLOAD), max_size=MiB) == PAYLOAD
    assert decompress(2, kcodec.snappy_encode(PAYLOAD, xerial_compatible=True),
                      max_size=MiB) == PAYLOAD
    assert decompress(2, kcodec.snappy_encode(PAYLOAD), max_size=MiB) == PAYLOAD  # raw
    assert decompress(3, kcodec.lz4_encode(PAYLOAD), max_size=MiB) == PAYLOAD
    assert decompress(4, kcodec.zstd_encode(PAYLOAD), max_size=MiB) == PAYLOAD
    # zstd frame with content size, and one produced by a streaming writer
    assert decompress(4, zstandard.ZstdCompressor(level=19).compress(PAYLOAD),
                      max_size=MiB) == PAYLOAD


def test_gzip_concatenated_members_and_trailing_garbage():
    two = gzip.compress(b"first ") + gzip.compress(b"second")
    assert decompress(1, two, max_size=100) == b"first second"
    # JDK GZIPInputStream stops silently at bytes that are not another member
    assert decompress(1, gzip.compress(b"abc") + b"\x00junk", max_size=100) == b"abc"


def test_zstd_concatenated_frames():
    c = zstandard.ZstdCompressor()
    assert decompress(4, c.compress(b"one ") + c.compress(b"two"), max_size=100) == b"one two"


def test_snappy_concatenated_xerial_streams():
    data = compress(2, b"abc" * 10) + compress(2, b"xyz" * 10)
    assert decompress(2, data, max_size=100) == b"abc" * 10 + b"xyz" * 10


def test_real_kafka_08_snappy_and_gzip_wrappers(realdata):
    """The value of the 0.8.2 wrapper messages: snappy-java/JDK gzip output, not ours."""
    lines = (realdata / "kafka-0.8-0.9-legacy-messages" / "fetch1.txt").read_bytes()
    for name, codec_id in [("fetch1.mytopic.1p.gzip.kafka.0821", 1),
                           ("fetch1.mytopic.1p.snappy.kafka.0821", 2),
                           ("fetch1.mytopic.1p.snappy.kafka.0822", 2)]:
        raw = (realdata / "kafka-0.8-0.9-legacy-messages" /
               f"{name}.tmy-topic.p0.records.bin").read_bytes()
        # one v0 wrapper: offset, size, crc, magic, attrs, key -1, value length, value
        assert raw[16] == 0 and raw[17] & 7 == codec_id
        (value_len,) = struct.unpack_from(">i", raw, 22)
        value = raw[26:26 + value_len]
        inner = decompress(codec_id, value, magic=0, max_size=MiB)
        if codec_id == 2:
            assert value.startswith(b"\x82SNAPPY\x00")
        # every text line appears in the inner message set
        assert all(line in inner for line in lines.splitlines() if line)


# ------------------------------------------------------------------------------------ bombs and
# corrupt payloads

@pytest.mark.parametrize("codec_id", [1, 2, 3, 4])
def test_bomb_is_bounded(codec_id):
    bomb = compress(codec_id, bytes(64 * MiB))
    assert len(bomb) < 4 * MiB
    with pytest.raises(CompressionError, match="more than"):
        decompress(codec_id, bomb, max_size=MiB)


def test_snappy_raw_length_header_checked_before_allocation():
    # a raw snappy block claiming 4 GiB output, 6 bytes long
    hostile = b"\xff\xff\xff\xff\x0f\x00"
    with pytest.raises(CompressionError):
        decompress(2, hostile, max_size=MiB)


@pytest.mark.parametrize("codec_id", [1, 2, 3, 4])
def test_truncated_payloads_raise_compression_error(codec_id):
    good = compress(codec_id, PAYLOAD)
    for cut in (1, 7, len(good) // 2, len(good) - 1):
        with pytest.raises(CompressionError) as info:
            decompress(codec_id, good[:cut], max_size=MiB)
        assert isinstance(info.value, CorruptBatchError)
        assert info.value.field == "records"


@pytest.mark.parametrize("codec_id", [1, 2, 3, 4])
def test_garbage_payloads_raise_compression_error(codec_id):
    rng = random.Random(codec_id)
    noise = lambda n: bytes(rng.getrandbits(8) for _ in range(n))  # noqa: E731
    for junk in (b"", b"\x00", noise(64), b"\x1f\x8b" + noise(40),
                 b"\x04\x22\x4d\x18" + noise(40), b"\x82SNAPPY\x00" + noise(40)):
        if codec_id == 2 and junk == b"\x00":
            # raw-snappy fallback: varint length 0 is a valid empty block (snappy-java agrees)
            assert decompress(codec_id, junk, max_size=MiB) == b""
            continue
        with pytest.raises(CompressionError):
            decompress(codec_id, junk, max_size=MiB)


def test_gzip_corrupt_crc_is_reported():
    good = bytearray(gzip.compress(PAYLOAD))
    good[-6] ^= 0xFF  # stored CRC-32 of the member
    with pytest.raises(CompressionError):
        decompress(1, bytes(good), max_size=MiB)


def test_none_codec_is_bounded_too():
    assert decompress(0, b"abc", max_size=3) == b"abc"
    with pytest.raises(CompressionError):
        decompress(0, b"abcd", max_size=3)



def test_real_multi_block_xerial_stream(realdata):
    """fetch1.snappy.chunked.4k: a snappy-java stream of fetch1.txt in 4 KiB blocks."""
    folder = realdata / "kafka-0.8-0.9-legacy-messages"
    stream = (folder / "fetch1.snappy.chunked.4k").read_bytes()
    text = (folder / "fetch1.txt").read_bytes()
    assert stream.startswith(b"\x82SNAPPY\x00")
    assert decompress(2, stream, magic=0, max_size=len(text)) == text
    with pytest.raises(CompressionError):
        decompress(2, stream, magic=0, max_size=len(text) - 1)


# ------------------------------------------------------------------------------------ Java oracle:
# the JDK's gzip and the snappy-java / zstd-jni / lz4-java jars that ship with pyspark are the
# libraries Kafka's Java client uses. The LZ4 framing below follows Kafka's Lz4BlockOutputStream
# (FLG 0x60, BD 0x40, 64 KiB blocks through lz4-java's fast compressor, stored when not
# smaller, 0 end mark; HC over bytes [0,6) when useBrokenFlagDescriptorChecksum).

JAVA_ORACLE = r"""
import java.io.*;
import java.nio.file.*;
import java.util.zip.*;
import net.jpountz.lz4.*;
import net.jpountz.xxhash.*;

public class CodecOracle {
    static byte[] kafkaLz4(byte[] data, boolean broken) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] head = {0x04, 0x22, 0x4d, 0x18, 0x60, 0x40};
        XXHash32 xx = XXHashFactory.fastestInstance().hash32();
        int hc = broken ? xx.hash(head, 0, 6, 0) : xx.hash(head, 4, 2, 0);
        out.write(head, 0, 6);
        out.write((hc >> 8) & 0xFF);
        LZ4Compressor c = LZ4Factory.fastestInstance().fastCompressor();
        byte[] buf = new byte[c.maxCompressedLength(65536)];
        for (int off = 0; off < data.length; off += 65536) {
            int n = Math.min(65536, data.length - off);
            int m = c.compress(data, off, n, buf, 0);
            byte[] src = buf; int srcOff = 0; int flag = 0;
            if (m >= n) { src = data; srcOff = off; m = n; flag = 0x80000000; }
            int word = m | flag;
            out.write(word & 0xFF); out.write((word >> 8) & 0xFF);
            out.write((word >> 16) & 0xFF); out.write((word >>> 24) & 0xFF);
            out.write(src, srcOff, m);
        }
        out.write(new byte[4], 0, 4);  // end mark
        return out.toByteArray();
    }

    static byte[] readKafkaLz4(byte[] f, boolean ignoreHc) throws IOException {
        if (f[0] != 0x04 || f[1] != 0x22 || f[2] != 0x4d || f[3] != 0x18) throw new IOException("magic");
        if ((f[4] & 0xFF) != 0x60 || (f[5] & 0xFF) != 0x40) throw new IOException("descriptor");
        int hc = (XXHashFactory.fastestInstance().hash32().hash(f, 4, 2, 0) >> 8) & 0xFF;
        if (!ignoreHc && hc != (f[6] & 0xFF)) throw new IOException("Stream frame descriptor corrupted");
        LZ4SafeDecompressor d = LZ4Factory.fastestInstance().safeDecompressor();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] block = new byte[65536];
        int pos = 7;
        while (true) {
            int word = (f[pos] & 0xFF) | (f[pos + 1] & 0xFF) << 8
                | (f[pos + 2] & 0xFF) << 16 | (f[pos + 3] & 0xFF) << 24;
            pos += 4;
            if (word == 0) return out.toByteArray();
            int n = word & 0x7FFFFFFF;
            if ((word & 0x80000000) != 0) out.write(f, pos, n);
            else { int m = d.decompress(f, pos, n, block, 0); out.write(block, 0, m); }
            pos += n;
        }
    }

    static void writeChunked(OutputStream os, byte[] p) throws IOException {
        for (int off = 0; off < p.length; off += 100) os.write(p, off, Math.min(100, p.length - off));
        os.close();
    }

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args[0]);
        byte[] p = Files.readAllBytes(dir.resolve("payload"));
        ByteArrayOutputStream g = new ByteArrayOutputStream();
        writeChunked(new BufferedOutputStream(new GZIPOutputStream(g, 8 * 1024), 16 * 1024), p);
        Files.write(dir.resolve("java.gzip"), g.toByteArray());
        ByteArrayOutputStream s = new ByteArrayOutputStream();
        writeChunked(new org.xerial.snappy.SnappyOutputStream(s), p);
        Files.write(dir.resolve("java.snappy"), s.toByteArray());
        ByteArrayOutputStream z = new ByteArrayOutputStream();
        writeChunked(new BufferedOutputStream(
            new com.github.luben.zstd.ZstdOutputStreamNoFinalizer(z, 3), 16 * 1024), p);
        Files.write(dir.resolve("java.zstd"), z.toByteArray());
        Files.write(dir.resolve("java.lz4"), kafkaLz4(p, false));
        Files.write(dir.resolve("java0.lz4"), kafkaLz4(p, true));

        Files.write(dir.resolve("ours.gzip.out"), new GZIPInputStream(
            new ByteArrayInputStream(Files.readAllBytes(dir.resolve("ours.gzip")))).readAllBytes());
        Files.write(dir.resolve("ours.snappy.out"), new org.xerial.snappy.SnappyInputStream(
            new ByteArrayInputStream(Files.readAllBytes(dir.resolve("ours.snappy")))).readAllBytes());
        Files.write(dir.resolve("ours.zstd.out"), new com.github.luben.zstd.ZstdInputStreamNoFinalizer(
            new ByteArrayInputStream(Files.readAllBytes(dir.resolve("ours.zstd")))).readAllBytes());
        Files.write(dir.resolve("ours.lz4.out"), readKafkaLz4(Files.readAllBytes(dir.resolve("ours.lz4")), false));
        Files.write(dir.resolve("ours0.lz4.out"), readKafkaLz4(Files.readAllBytes(dir.resolve("ours0.lz4")), true));
        try {
            readKafkaLz4(Files.readAllBytes(dir.resolve("ours0.lz4")), false);
        } catch (IOException e) {
            Files.write(dir.resolve("ours0.lz4.strict"), e.getMessage().getBytes());
        }
    }
}
"""


def test_java_writers_and_readers_agree(tmp_path):
    import shutil
    import subprocess

    import pyspark

    java = shutil.which("java")
    if java is None:
        pytest.fail("the Java codec oracle needs Java 17 on PATH")
    jars = Path(pyspark.__file__).parent / "jars"
    classpath = os.pathsep.join(str(next(jars.glob(pattern))) for pattern in
                                ("snappy-java-*.jar", "zstd-jni-*.jar", "lz4-java-*.jar"))
    payload = PAYLOAD + bytes(70_000) + os.urandom(70_000)  # compressible and stored blocks
    (tmp_path / "payload").write_bytes(payload)
    for cid, name in COMPRESSION_NAMES.items():
        if cid:
            (tmp_path / f"ours.{name}").write_bytes(compress(cid, payload))
    (tmp_path / "ours0.lz4").write_bytes(compress(3, payload, magic=0))
    src = tmp_path / "CodecOracle.java"
    src.write_text(JAVA_ORACLE)
    subprocess.run([java, "-cp", classpath, str(src), str(tmp_path)], check=True, timeout=300,
                   env={**os.environ, "JAVA_TOOL_OPTIONS": "-Xmx256m"})

    for cid, name in COMPRESSION_NAMES.items():
        if not cid:
            continue
        java_bytes = (tmp_path / f"java.{name}").read_bytes()
        # Java's output decodes with ours, ours decodes with Java's libraries ...
        assert decompress(cid, java_bytes, max_size=len(payload)) == payload, name
        assert (tmp_path / f"ours.{name}.out").read_bytes() == payload, name
        # ... and we write the same bytes as the Java client
        assert compress(cid, payload) == java_bytes, name
    java0 = (tmp_path / "java0.lz4").read_bytes()
    assert compress(3, payload, magic=0) == java0
    assert decompress(3, java0, magic=0, max_size=len(payload)) == payload
    assert (tmp_path / "ours0.lz4.out").read_bytes() == payload
    assert (tmp_path / "ours0.lz4.strict").read_text() == "Stream frame descriptor corrupted"


def test_lz4_first_output_step_is_sized_from_the_input(monkeypatch):
    """python-lz4 allocates ``max_length`` on every call: a small batch must not ask for the
    whole 64 MiB bound (it cost 4x the decompression), and a large one still decodes whole."""
    asked: list[int] = []
    real = lz4.frame.LZ4FrameDecompressor

    class Recording(real):  # type: ignore[misc, valid-type]
        def decompress(self, data, max_length=-1):
            asked.append(max_length)
            return super().decompress(data, max_length=max_length)

    monkeypatch.setattr(lz4.frame, "LZ4FrameDecompressor", Recording)
    small = b"".join(b"record %d payload " % i for i in range(3000))
    assert decompress(3, compress(3, small), max_size=64 * MiB) == small
    assert asked and max(asked) <= 2 * MiB
    asked.clear()
    big = bytes(range(50)) * 200_000          # 10 MB that compresses far more than 32x
    assert decompress(3, compress(3, big), max_size=64 * MiB) == big
    assert len(asked) == 2 and asked[0] <= 2 * MiB
    with pytest.raises(CompressionError, match="more than"):
        decompress(3, compress(3, big), max_size=len(big) - 1)
