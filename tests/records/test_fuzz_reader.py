"""Hostile input: truncations and bit flips of valid segments (real broker files and
kafka-python batches, every codec) only ever raise SegtoolsError subclasses, terminate, and
hostile length fields allocate nothing big; decompression bombs raise CompressionError."""

from __future__ import annotations

import gzip
import os
import signal
import struct
import tempfile
import tracemalloc
from contextlib import contextmanager
from pathlib import Path

import crc32c as crc32c_lib
import pytest
import zstandard
from fuzz_budget import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from segtools.errors import CompressionError, FormatError, SegtoolsError
from segtools.records.batches import SegmentBatch, SegmentReader

REALDATA = Path(__file__).resolve().parents[1] / "data" / "realdata"
MiB = 1 << 20


def _kp_v2(codec: int, n: int = 8) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=True,
                                  producer_id=77, producer_epoch=1, base_sequence=10,
                                  batch_size=10**7)
    for i in range(n):
        b.append(i, 1_700_000_000_000 + i, b"key%d" % i if i % 2 else None,
                 b"value %d " % i * 20, [("h", b"%d" % i), ("n", None)])
    return bytes(b.build())


def _kp_legacy(magic: int, codec: int) -> bytes:
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=10**7)
    for i in range(6):
        b.append(i, 1_500_000_000_000 + i, b"k%d" % i, b"legacy value %d " % i * 10)
    return bytes(b.build())


def _control_marker() -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=True,
                                  producer_id=77, producer_epoch=1, base_sequence=-1,
                                  batch_size=10**6)
    b.append(0, 1_700_000_000_100, struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 5), [])
    raw = bytearray(b.build())
    struct.pack_into(">h", raw, 21, struct.unpack_from(">h", raw, 21)[0] | 0x20)
    struct.pack_into(">I", raw, 17, crc32c_lib.crc32c(bytes(raw[21:])))
    return bytes(raw)


def _corpus() -> list[bytes]:
    kraft = REALDATA / "kafka-3.6-kraft-flink-stack/logdir"
    legacy = REALDATA / "kafka-0.8-0.9-legacy-messages"
    real = [
        kraft / "_confluent-command-0/00000000000000000000.log",            # lz4
        kraft / "connect-status-2/00000000000000000000.log",
        REALDATA / "kafka-2.0-zk-small/logdir/subhash-0/00000000000000000000.log",
        legacy / "fetch1.mytopic.1p.gzip.kafka.0821.tmy-topic.p0.records.bin",
        legacy / "fetch1.mytopic.1p.snappy.kafka.0822.tmy-topic.p0.records.bin",
    ]
    out = [p.read_bytes() for p in real]
    # first batches of an LZ4 + LogAppendTime log and of the KRaft metadata log (control batch)
    out.append((kraft / "_confluent-controlcenter-7-6-0-1-monitoring-trigger-event-rekey-0"
                / "00000000000000000000.log").read_bytes()[:1500])
    out.append((kraft / "__cluster_metadata-0/00000000000000000000.log").read_bytes()[:1500])
    snap = sorted((kraft / "__cluster_metadata-0").glob("*.checkpoint"))[0].read_bytes()
    out.append(snap[:800] + snap[-300:])
    out.append(b"".join(_kp_v2(c) for c in range(5)) + _control_marker())
    out.append(_kp_legacy(1, 1) + _kp_legacy(1, 3) + _kp_legacy(0, 2) + _kp_legacy(0, 0))
    return out


CORPUS = _corpus()
_TMP = tempfile.mkdtemp(prefix="segtools-fuzz-")


class _Hang(Exception):
    pass


@contextmanager
def _time_limit(seconds: int):
    def on_alarm(signum, frame):
        raise _Hang(f"reader did not finish within {seconds}s")
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _exercise(data: bytes) -> int:
    """Read everything the way a forensic caller does; return the number of items seen."""
    path = os.path.join(_TMP, "00000000000000000000.log")
    with open(path, "wb") as f:
        f.write(data)
    seen = 0
    with _time_limit(20):
        reader = SegmentReader(path, max_decompressed_size=8 * MiB)
        try:
            for batch in reader:
                seen += 1
                batch.as_dict()
                try:
                    for rec in batch.records():
                        seen += 1
                        assert rec.key is None or isinstance(rec.key, bytes)
                    batch.control_records()
                except SegtoolsError as exc:
                    _check_located(exc, path)
        except SegtoolsError as exc:
            _check_located(exc, path)
        # every step of the walk advances by at least 26 bytes (12 + minimum size 14)
        assert reader.batches_read <= len(data) // 26 + 1
    return seen


def _check_located(exc: SegtoolsError, path: str) -> None:
    if isinstance(exc, FormatError):
        assert exc.path == path
        assert exc.position is not None and 0 <= exc.position <= os.path.getsize(path)
        assert exc.field


def test_corpus_reads_cleanly():
    for data in CORPUS:
        path = os.path.join(_TMP, "clean.log")
        Path(path).write_bytes(data)
        reader = SegmentReader(path)
        batches = list(reader)
        assert batches and all(b.crc_valid for b in batches)
        assert sum(1 for b in batches for _ in b.records()) > 0


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_truncations_raise_only_segtools_errors(data):
    sample = data.draw(st.sampled_from(CORPUS))
    cut = data.draw(st.integers(0, len(sample)))
    _exercise(sample[:cut])


@settings(max_examples=examples(1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_bit_flips_raise_only_segtools_errors(data):
    sample = bytearray(data.draw(st.sampled_from(CORPUS)))
    flips = data.draw(st.lists(st.tuples(st.integers(0, len(sample) - 1), st.integers(0, 7)),
                               min_size=1, max_size=6))
    for pos, bit in flips:
        sample[pos] ^= 1 << bit
    _exercise(bytes(sample))


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_overwritten_int_fields_raise_only_segtools_errors(data):
    """Length/count-like fields replaced by extreme 32-bit values anywhere in the file."""
    sample = bytearray(data.draw(st.sampled_from(CORPUS)))
    pos = data.draw(st.integers(0, max(0, len(sample) - 4)))
    value = data.draw(st.sampled_from([0, 1, 13, 14, 61, -1, -2, 2**31 - 1, -2**31, 2**30]))
    struct.pack_into(">i", sample, pos, value)
    _exercise(bytes(sample))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes(blob):
    _exercise(blob)


# ------------------------------------------------------------------------- hostile lengths

def zz(n: int) -> bytes:
    u = ((n << 1) ^ (n >> 63)) & ((1 << 64) - 1)
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def _v2(records: bytes, count: int, attributes: int = 0) -> bytes:
    after_crc = struct.pack(">hiqqqhii", attributes, max(count - 1, 0), 0, 0, -1, -1, -1,
                            count) + records
    return struct.pack(">qiibI", 0, 9 + len(after_crc), 0, 2,
                       crc32c_lib.crc32c(after_crc)) + after_crc


HOSTILE = {
    "batch size 2 GiB": struct.pack(">qi", 0, 2**31 - 1) + bytes(64),
    "record length 2 GiB": _v2(zz(2**31 - 1) + bytes(8), 1),
    "record length negative": _v2(zz(-2**31) + bytes(8), 1),
    "key length 2 GiB": _v2(zz(8) + b"\x00\x00\x00" + zz(2**31 - 1) + bytes(4), 1),
    "value length 2 GiB": _v2(zz(8) + b"\x00\x00\x00" + zz(-1) + zz(2**31 - 1) + bytes(3), 1),
    "header count 2^31-1": _v2(zz(9) + b"\x00\x00\x00" + zz(-1) + zz(-1) + zz(2**31 - 1)
                               + bytes(2), 1),
    "records count 2^31-1": _v2(zz(6) + b"\x00\x00\x00" + zz(-1) + zz(-1) + zz(0), 2**31 - 1),
    "legacy key length 2 GiB": (lambda m: struct.pack(">qiI", 0, len(m) + 4, 0) + m)(
        b"\x00\x00" + struct.pack(">i", 2**31 - 1) + bytes(8)),
    "snappy block claims 4 GiB": _v2(b"\xff\xff\xff\xff\x0f\x00" * 2, 1, attributes=2),
    "xerial block length 2 GiB": _v2(b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, 2**31 - 1)
                                     + bytes(10), 1, attributes=2),
    "legacy inner size 2 GiB": (lambda v: (lambda m: struct.pack(">qiI", 0, len(m) + 4, 0) + m)(
        b"\x00\x01" + struct.pack(">i", -1) + struct.pack(">i", len(v)) + v))(
        gzip.compress(struct.pack(">qi", 0, 2**31 - 1) + bytes(40))),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_lengths_allocate_nothing_big(name):
    data = HOSTILE[name]
    tracemalloc.start()
    try:
        _exercise(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * MiB, f"{name}: peak {peak} bytes"


# ------------------------------------------------------------------------- bombs

@pytest.mark.parametrize("codec", ["gzip", "zstd"])
def test_bomb_inside_a_batch_raises_compression_error(codec, tmp_path):
    zeros = bytes(64 * MiB)
    if codec == "gzip":
        payload, attrs = gzip.compress(zeros, compresslevel=9), 1
    else:
        payload, attrs = zstandard.ZstdCompressor(level=3).compress(zeros), 4
    del zeros
    raw = _v2(payload, 1, attributes=attrs)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(raw)
    [batch] = list(SegmentReader(path, max_decompressed_size=2 * MiB))
    assert batch.crc_valid
    tracemalloc.start()
    try:
        with pytest.raises(CompressionError) as info:
            list(batch.records())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 12 * MiB
    assert info.value.position == 61 and info.value.field == "records"
    assert "more than" in str(info.value)


def test_bomb_with_default_limit_is_refused():
    payload = zstandard.ZstdCompressor(level=3).compress(bytes(80 * MiB))  # default limit is 64 MiB
    batch = SegmentBatch.from_bytes(_v2(payload, 1, attributes=4))
    with pytest.raises(CompressionError):
        list(batch.records())


# ------------------------------------------------------------------------- decoders on their own

from segtools.primitives.codecs import compress as _compress  # noqa: E402
from segtools.primitives.codecs import decompress as _decompress  # noqa: E402
from segtools.records.control import decode_control_key, decode_control_value  # noqa: E402

_COMPRESSED = {cid: _compress(cid, b"some payload " * 500) for cid in (1, 2, 3, 4)}


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_mutated_compressed_payloads_raise_only_compression_error(data):
    cid = data.draw(st.sampled_from([1, 2, 3, 4]))
    payload = bytearray(_COMPRESSED[cid])
    for pos, value in data.draw(st.lists(st.tuples(st.integers(0, len(payload) - 1),
                                                   st.integers(0, 255)), min_size=1,
                                         max_size=4)):
        payload[pos] = value
    cut = data.draw(st.integers(0, len(payload)))
    magic = data.draw(st.sampled_from([0, 1, 2]))
    try:
        out = _decompress(cid, bytes(payload[:cut]), magic=magic, max_size=64 * 1024)
    except CompressionError:
        return
    assert len(out) <= 64 * 1024


@settings(max_examples=300, deadline=None)
@given(type_id=st.integers(-2, 8), value=st.one_of(st.none(), st.binary(max_size=80)))
def test_random_control_values_raise_only_corrupt_batch_error(type_id, value):
    from segtools.errors import CorruptBatchError

    try:
        decoded = decode_control_value(type_id, value)
    except CorruptBatchError as exc:
        assert exc.field and exc.field.startswith("control.")
        return
    assert decoded is None or isinstance(decoded, dict)


@given(st.one_of(st.none(), st.binary(max_size=6)))
def test_random_control_keys(key):
    from segtools.errors import CorruptBatchError

    try:
        k = decode_control_key(key)
    except CorruptBatchError:
        assert key is None or len(key) < 4 or key[0] >= 0x80  # short, or negative version
        return
    assert key is not None and len(key) >= 4 and k.version >= 0
