"""Aiven's tiered-storage object format read back (segtools.tier.aiven).

The plugin is not on Maven Central (no io.aiven artifact there), so the objects come from
tests/tier/aiven_encoder.py, an encoder written from the plugin's published format; the oracle
is the real broker's segment and indexes in tests/data, which decoding must give back byte for
byte. The OAEP decoding is checked on its own against OpenSSL's OAEP (through cryptography)
with SHA-256, the one thing OpenSSL cannot do being SHA-3 inside OAEP.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tracemalloc
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from segtools.errors import InputError
from segtools.tier import aiven
from tests.tier import aiven_encoder as enc

REAL = (Path(__file__).resolve().parent.parent / "data" / "realdata" /
        "kafka-3.6-kraft-flink-stack" / "logdir" / "customers_keyed-0")
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAA"
SID = "BBBBBBBBBBBBBBBBBBBBBB"
BASE = f"tiered/customers_keyed-{TOPIC_ID}/0/{0:020d}-{SID}"


def _real() -> tuple[bytes, dict[str, bytes]]:
    log = (REAL / "00000000000000000000.log").read_bytes()
    idx = {".index": (REAL / "00000000000000000000.index").read_bytes(),
           ".timeindex": (REAL / "00000000000000000000.timeindex").read_bytes(),
           ".snapshot": (REAL / "00000000000000027482.snapshot").read_bytes(),
           ".leader_epoch_checkpoint": (REAL / "leader-epoch-checkpoint").read_bytes()}
    return log, idx


@pytest.fixture(scope="module")
def rsa_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[rsa.RSAPrivateKey, Path]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = tmp_path_factory.mktemp("keys") / "private.pem"
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return key, path


@pytest.mark.parametrize("compression,encrypted", [(False, False), (True, False),
                                                    (False, True), (True, True)])
def test_real_segment_round_trip(tmp_path: Path, rsa_key: tuple[rsa.RSAPrivateKey, Path],
                                 compression: bool, encrypted: bool) -> None:
    log, idx = _real()
    key, pem = rsa_key
    e = enc.encode_segment(tmp_path / "bucket", BASE, log, idx, chunk_size=65536,
                           compression=compression,
                           public_key=key.public_key() if encrypted else None)
    assert e.manifest["chunkIndex"]["type"] == ("variable" if compression else "fixed")
    out = tmp_path / "out"
    out.mkdir()
    m = aiven.decode_segment(aiven.local_opener(str(tmp_path / "bucket")), BASE,
                             str(out / "seg"), aiven.PrivateKey(str(pem)) if encrypted else None)
    assert (out / "seg.log").read_bytes() == log
    for suffix, data in idx.items():
        assert (out / ("seg" + suffix)).read_bytes() == data
    assert not (out / "seg.txnindex").exists()
    assert m.log_object_size == e.sizes[".log"]
    assert len(list(m.chunks())) == -(-len(log) // 65536)


def test_decoding_holds_one_chunk_in_memory(tmp_path: Path,
                                            rsa_key: tuple[rsa.RSAPrivateKey, Path]) -> None:
    log, idx = _real()
    enc.encode_segment(tmp_path, BASE, log, idx, chunk_size=32768, compression=True,
                       public_key=rsa_key[0].public_key())
    m = aiven.parse_manifest((tmp_path / (BASE + ".rsm-manifest")).read_bytes(), "m")
    dkey = aiven.data_key(m, aiven.PrivateKey(str(rsa_key[1])))
    tracemalloc.start()
    try:
        with open(tmp_path / (BASE + ".log"), "rb") as src:
            total = sum(len(b) for b in aiven.iter_log(src, m, dkey, "log"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert total == len(log)
    # the segment is 2.9 MB; one chunk (32 KiB plain, its transformed copy) is in memory
    assert peak < 512 * 1024, peak


def test_oaep_decoding_equals_openssls(rsa_key: tuple[rsa.RSAPrivateKey, Path]) -> None:
    key, pem = rsa_key
    mine = aiven.PrivateKey(str(pem))
    secret = bytes(range(32))
    wrapped = key.public_key().encrypt(secret, padding.OAEP(
        mgf=padding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None))
    assert mine.unwrap(wrapped, hashlib.sha256) == secret
    assert mine.unwrap(wrapped) is None          # SHA3-512 is not what wrapped it
    assert mine.unwrap(enc.oaep_sha3_wrap(key.public_key(), secret)) == secret


def test_variable_chunk_index_codec() -> None:
    for values in ([], [7], [5, 5, 3], [100, 300, 70000, 1], [2**24 + 5, 3, 9, 2**31 - 1]):
        assert tuple(aiven.decode_chunk_sizes(enc.pack_sizes(values), "x")) == tuple(values)
    with pytest.raises(InputError, match="truncated at byte"):
        aiven.decode_chunk_sizes(enc.pack_sizes([1, 2, 3])[:-2], "x")


def test_custom_metadata() -> None:
    raw = enc.custom_metadata(123456789, "tiered/", f"t-{TOPIC_ID}/0/{0:020d}-{SID}")
    assert aiven.decode_custom_metadata(raw) == {
        "remote_size": 123456789, "object_prefix": "tiered/",
        "object_key": f"t-{TOPIC_ID}/0/{0:020d}-{SID}"}
    assert aiven.decode_custom_metadata(None) == {}
    with pytest.raises(InputError, match="does not decode at object_key"):
        aiven.decode_custom_metadata(raw[:-3])


def _encoded(tmp_path: Path, key: rsa.RSAPrivateKey) -> tuple[Path, bytes]:
    log, idx = _real()
    enc.encode_segment(tmp_path, BASE, log[:200000], idx, chunk_size=65536, compression=True,
                       public_key=key.public_key())
    return tmp_path / (BASE + ".log"), log[:200000]


def test_bad_tag_names_object_chunk_and_byte(tmp_path: Path,
                                             rsa_key: tuple[rsa.RSAPrivateKey, Path]) -> None:
    path, _ = _encoded(tmp_path, rsa_key[0])
    m = aiven.parse_manifest(Path(str(path)[:-4] + ".rsm-manifest").read_bytes(), "m")
    chunk2 = list(m.chunks())[2]
    data = bytearray(path.read_bytes())
    data[chunk2.transformed_position + 40] ^= 1
    dkey = aiven.data_key(m, aiven.PrivateKey(str(rsa_key[1])))
    with pytest.raises(InputError) as e:
        list(aiven.iter_log(io.BytesIO(bytes(data)), m, dkey, "s3://b/x.log"))
    assert str(e.value) == (f"s3://b/x.log: chunk 2 at byte {chunk2.transformed_position} "
                            f"({chunk2.transformed_size} bytes): AES-GCM tag mismatch (the "
                            "bytes were changed, or another data key encrypted them)")
    with pytest.raises(InputError, match=r"x.log: chunk 3 at byte \d+ \(\d+ bytes\): "
                                         r"truncated, the object ends at byte \d+"):
        list(aiven.iter_log(io.BytesIO(path.read_bytes()[:-10]), m, dkey, "x.log"))
    with pytest.raises(InputError, match="bytes after the last chunk"):
        list(aiven.iter_log(io.BytesIO(path.read_bytes() + b"\0"), m, dkey, "x.log"))


def test_wrong_or_missing_key(tmp_path: Path, rsa_key: tuple[rsa.RSAPrivateKey, Path]) -> None:
    path, _ = _encoded(tmp_path, rsa_key[0])
    m = aiven.parse_manifest(Path(str(path)[:-4] + ".rsm-manifest").read_bytes(), "m.rsm")
    other = tmp_path / "other.pem"
    other.write_bytes(rsa.generate_private_key(public_exponent=65537, key_size=2048)
                      .private_bytes(serialization.Encoding.PEM,
                                     serialization.PrivateFormat.TraditionalOpenSSL,
                                     serialization.NoEncryption()))
    with pytest.raises(InputError, match=r"^m.rsm: the data key \(key id 'key1'\) does not "
                                         r"unwrap with .*other.pem: wrong private key"):
        aiven.data_key(m, aiven.PrivateKey(str(other)))
    with pytest.raises(InputError, match=r"m.rsm: encrypted \(key id 'key1'\): give"):
        aiven.data_key(m, None)
    with pytest.raises(InputError, match="not an unencrypted PEM private key"):
        aiven.PrivateKey(str(path))


def test_bad_manifests() -> None:
    good = {"version": "1", "compression": False,
            "chunkIndex": {"type": "fixed", "originalChunkSize": 10, "originalFileSize": 25,
                           "transformedChunkSize": 10, "finalTransformedChunkSize": 5},
            "segmentIndexes": {k: {"position": 0, "size": 0} for k in
                               ("offset", "timestamp", "producerSnapshot", "leaderEpoch")}}
    m = aiven.parse_manifest(json.dumps(good).encode(), "m")
    assert [(c.original_size, c.transformed_position) for c in m.chunks()] == \
        [(10, 0), (10, 10), (5, 20)]
    for change, msg in [({"version": "2"}, "version '2' is not known"),
                        ({"chunkIndex": {"type": "odd"}}, "originalChunkSize is missing"),
                        ({"compression": "yes"}, "compression is not a boolean"),
                        ({"segmentIndexes": {}}, "segmentIndexes.offset is missing"),
                        ({"encryption": {"dataKey": "nokey", "aad": ""}}, "dataKey is not")]:
        with pytest.raises(InputError, match=msg):
            aiven.parse_manifest(json.dumps({**good, **change}).encode(), "m")
    for garbage in (b"\x00garbage", b"[" * 200000, b"\xff\xfe{}"):
        with pytest.raises(InputError, match="^m: not an Aiven segment manifest: not JSON"):
            aiven.parse_manifest(garbage, "m")


def test_hostile_sizes_are_refused_before_allocating(tmp_path: Path) -> None:
    # two billion one-byte chunks: the index is not materialised, the object is just short
    bomb = {"version": "1", "compression": False,
            "chunkIndex": {"type": "fixed", "originalChunkSize": 1,
                           "originalFileSize": 2**31 - 1, "transformedChunkSize": 1,
                           "finalTransformedChunkSize": 1},
            "segmentIndexes": {k: {"position": 0, "size": 0} for k in
                               ("offset", "timestamp", "producerSnapshot", "leaderEpoch")}}
    m = aiven.parse_manifest(json.dumps(bomb).encode(), "m")
    assert m.log_object_size == 2**31 - 1
    with pytest.raises(InputError, match="chunk 3 at byte 3 .*truncated"):
        list(aiven.iter_log(io.BytesIO(b"abc"), m, None, "x.log"))
    # a zstd frame claiming 1 MiB where the manifest says 10 bytes
    import zstandard
    frame = zstandard.ZstdCompressor(write_content_size=True).compress(b"\0" * (1 << 20))
    comp = {**bomb, "compression": True, "chunkIndex": {
        "type": "variable", "originalChunkSize": 10, "originalFileSize": 10,
        "transformedChunks": base64.b64encode(
            zstandard.ZstdCompressor(write_content_size=True).compress(
                enc.pack_sizes([len(frame)]))).decode()}}
    m = aiven.parse_manifest(json.dumps(comp).encode(), "m")
    with pytest.raises(InputError, match="the zstd frame says 1048576 bytes, the manifest "
                                         "says 10"):
        list(aiven.iter_log(io.BytesIO(frame), m, None, "x.log"))


@pytest.mark.parametrize("compression,encrypted", [(True, True), (True, False), (False, False)])
def test_damaged_objects_give_only_one_line_errors(tmp_path: Path, compression: bool,
                                                   encrypted: bool,
                                                   rsa_key: tuple[rsa.RSAPrivateKey, Path]) -> None:
    import random

    from segtools.errors import SegtoolsError

    log, idx = _real()
    src = tmp_path / "src"
    enc.encode_segment(src, "s", log[:30000], idx, chunk_size=4096, compression=compression,
                       public_key=rsa_key[0].public_key() if encrypted else None)
    key = aiven.PrivateKey(str(rsa_key[1])) if encrypted else None
    originals = {s: (src / ("s" + s)).read_bytes() for s in aiven.SUFFIXES}
    rng = random.Random(27)
    outcomes = {"ok": 0, "error": 0}
    for i in range(40):
        objs = dict(originals)
        target = rng.choice(aiven.SUFFIXES)
        data = bytearray(objs[target])
        how = rng.choice(("flip", "cut", "grow"))
        if how == "flip" and data:
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif how == "cut":
            del data[rng.randrange(len(data) + 1):]
        else:
            data[rng.randrange(len(data) + 1):0] = rng.randbytes(rng.randint(1, 40))
        objs[target] = bytes(data)
        d = tmp_path / f"case{i}"
        d.mkdir()
        for s, b in objs.items():
            (d / ("s" + s)).write_bytes(b)
        try:
            aiven.decode_segment(aiven.local_opener(str(d)), "s", str(d / "out"), key)
            outcomes["ok"] += 1
            # AES-GCM authenticates every byte of the .log and .indexes objects
            assert not (encrypted and target != aiven.MANIFEST), (target, how)
        except SegtoolsError as e:
            assert "\n" not in str(e) and str(e).startswith("s"), str(e)
            outcomes["error"] += 1
    # with encryption every change to .log or .indexes is caught; every case ends one way
    assert outcomes["error"] > 0 and sum(outcomes.values()) == 40
