"""`segtools tier --remote` on Aiven's object format: objects written by tests/tier/aiven_encoder.py
(from the plugin's published format; the plugin is not on Maven Central), evidence built here,
each expected finding following from how the evidence was built or damaged."""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from segtools import schemas
from segtools.cli.main import cli
from segtools.errors import InputError
from segtools.files.snapshots import producer_snapshot_bytes
from segtools.internal_topics.remote_log_metadata import encode_record
from segtools.tier import audit
from tests.tier import aiven_encoder as enc
from tests.tier.test_tier_audit import TOPIC_ID, _log_bytes, _sid, _tip, broker_dir, kinds

PREFIX = "tiered/"


def main_path(n: int, lo: int) -> str:
    return f"t-{TOPIC_ID}/0/{lo:020d}-{_sid(n)}"


def start_aiven(n: int, lo: int, hi: int, size: int) -> bytes:
    return encode_record(0, 0, {
        "remoteLogSegmentId": {"topicIdPartition": _tip(), "id": _sid(n)},
        "startOffset": lo, "endOffset": hi, "brokerId": 1, "maxTimestampMs": 1,
        "eventTimestampMs": 1, "segmentLeaderEpochs": [{"leaderEpoch": 0, "offset": lo}],
        "segmentSizeInBytes": size, "customMetadata": None, "remoteLogSegmentState": 0,
        "txnIndexEmpty": True})


def finished_aiven(n: int, state: int = 1, custom: bytes | None = None) -> bytes:
    return encode_record(1, 0, {
        "remoteLogSegmentId": {"topicIdPartition": _tip(), "id": _sid(n)},
        "brokerId": 1, "eventTimestampMs": 2, "customMetadata": custom,
        "remoteLogSegmentState": state})


@dataclass
class Tier:
    broker: Path
    bucket: Path
    pem: Path
    public_key: object


@functools.cache
def _key() -> rsa.RSAPrivateKey:
    # one key for the module: generating a 2048-bit key takes 0.3-0.7 s on a loaded machine
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def build(tmp: Path, *, encrypted: bool = True, custom_size_delta: int = 0) -> Tier:
    """Segments 0 [0, 9] and 1 [10, 19] uploaded by Aiven's plugin (zstd, chunks of 150 bytes,
    AES-GCM when ``encrypted``), FINISHED; the replica holds [20, 30) locally."""
    key = _key()
    pem = tmp / "rsm.pem"
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    bucket = tmp / "bucket"
    md = []
    for n, lo in ((0, 0), (1, 10)):
        log = _log_bytes(lo, [b"v%d" % i for i in range(10)])
        e = enc.encode_segment(bucket, PREFIX + main_path(n, lo), log,
                               {".index": b"", ".timeindex": b"",
                                ".snapshot": producer_snapshot_bytes([]),
                                ".leader_epoch_checkpoint": b"0\n1\n0 %d\n" % lo},
                               chunk_size=150, compression=True,
                               public_key=key.public_key() if encrypted else None)
        custom = enc.custom_metadata(sum(e.sizes.values()) + custom_size_delta, PREFIX,
                                     main_path(n, lo))
        # the plugin's copyLogSegmentData returns the custom metadata: Kafka writes it in the
        # COPY_SEGMENT_FINISHED update
        md += [start_aiven(n, lo, lo + 9, len(log)), finished_aiven(n, 1, custom)]
    d = broker_dir(tmp, md, local_start=20, log_end=30, epochs={0: 0})
    return Tier(d, bucket, pem, key.public_key())


@pytest.fixture
def tier(tmp_path: Path) -> Tier:
    return build(tmp_path)


def test_clean_aiven_tier_has_no_finding(tier: Tier) -> None:
    r = audit([str(tier.broker)], remote_root=str(tier.bucket), private_key=str(tier.pem))
    assert kinds(r) == []
    assert [(p.earliest_offset, p.latest_tiered_offset, p.log_end_offset)
            for p in r.partitions] == [(0, 19, 30)]
    seg = {s.segment_id: s for s in r.segments}[_sid(1)]
    assert seg.custom_metadata is not None


def test_without_the_key_is_cannot_tell(tier: Tier) -> None:
    r = audit([str(tier.broker)], remote_root=str(tier.bucket))
    assert kinds(r) == ["cannot_tell", "cannot_tell"]
    assert r.to_json()["remote"] == {"root": str(tier.bucket), "format": "aiven",
                                     "segments_read": 0, "segments_unreadable": 2}
    assert all("encrypted (key id 'key1') and no --private-key" in f.message for f in r.findings)


def test_damage_is_found(tier: Tier, tmp_path: Path) -> None:
    obj1 = tier.bucket / (PREFIX + main_path(1, 10) + ".log")
    data = bytearray(obj1.read_bytes())
    data[-5] ^= 0xFF          # inside the last chunk's GCM tag
    obj1.write_bytes(bytes(data))
    (tier.bucket / (PREFIX + main_path(0, 0) + ".rsm-manifest")).unlink()
    leak = _log_bytes(40, [b"y"])
    # the plugin copies the segment's metadata into the manifest (its Jackson mixin's names)
    enc.encode_segment(tier.bucket, PREFIX + main_path(5, 40), leak,
                       {".index": b"", ".timeindex": b"", ".snapshot": b"",
                        ".leader_epoch_checkpoint": b""}, public_key=tier.public_key,
                       segment_metadata={"startOffset": 40, "endOffset": 40, "brokerId": 3,
                                         "eventTimestampMs": 1700000000000})
    r = audit([str(tier.broker)], remote_root=str(tier.bucket), private_key=str(tier.pem))
    by = {f.segment_id: f for f in r.findings if f.kind != "object_size_mismatch"}
    # segment 0 lost its manifest: unreadable, and its objects no longer hold what the
    # plugin recorded it uploaded
    assert kinds(r) == ["object_size_mismatch", "object_without_metadata", "unreadable_object",
                        "unreadable_object"]
    assert [f.segment_id for f in r.findings if f.kind == "object_size_mismatch"] == [_sid(0)]
    assert by[_sid(0)].message.endswith(
        f"{tier.bucket}/{PREFIX}{main_path(0, 0)}: has no .rsm-manifest object (an upload that "
        "died before it was written, or an object deleted): the segment cannot be read")
    assert f"{tier.bucket}/{PREFIX}{main_path(1, 10)}.log: chunk" in by[_sid(1)].message
    assert "AES-GCM tag mismatch" in by[_sid(1)].message
    assert by[_sid(5)].message.startswith(f"{tier.bucket}/{PREFIX}t-{TOPIC_ID}/0: objects of "
                                          f"segment {_sid(5)} that no metadata record names")
    assert by[_sid(5)].message.endswith("; its manifest says offsets [40, 40], uploaded by "
                                        "broker 3 at 1700000000000 ms")
    assert "segtools-tier-" not in json.dumps([f.message for f in r.findings])


def test_decoded_object_is_compared_with_metadata_and_custom_size(tmp_path: Path) -> None:
    t = build(tmp_path, custom_size_delta=7)
    r = audit([str(t.broker)], remote_root=str(t.bucket), private_key=str(t.pem),
              remote_format="aiven")
    assert kinds(r) == ["object_size_mismatch", "object_size_mismatch"]
    assert all("custom metadata says the plugin uploaded" in f.message for f in r.findings)


def test_cli(tier: Tier, tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["tier", str(tier.broker), "--remote", str(tier.bucket),
                              "--private-key", str(tier.pem)])
    assert res.exit_code == 0, res.output
    assert res.output.endswith(f"remote tier {tier.bucket} (Aiven layout): 2 segments read "
                               "back\n0 findings\n")
    res = runner.invoke(cli, ["tier", str(tier.broker), "--remote", str(tier.bucket),
                              "--remote-format", "aiven", "--private-key", str(tier.broker /
                                                                               "meta.properties")])
    assert res.exit_code == 2 and "not an unencrypted PEM private key" in res.output
    assert "Traceback" not in res.output
    res = runner.invoke(cli, ["tier", str(tier.broker), "--remote", str(tmp_path / "nope")])
    assert res.exit_code == 2 and "not a folder" in res.output
    res = runner.invoke(cli, ["tier", str(tier.broker), "--private-key", str(tier.pem)])
    assert res.exit_code == 2 and "give --remote too" in res.output


def test_unencrypted_tier_needs_no_key_nor_cryptography(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    t = build(tmp_path, encrypted=False)
    for mod in ("cryptography.hazmat.primitives.ciphers.aead",
                "cryptography.hazmat.primitives.serialization"):
        monkeypatch.setitem(sys.modules, mod, None)   # as if the `tier` extra were absent
    r = audit([str(t.broker)], remote_root=str(t.bucket))
    assert kinds(r) == []
    with pytest.raises(InputError, match=r"needs the cryptography package \(pip install "
                                         r"'segtools\[tier\]'\)"):
        audit([str(t.broker)], remote_root=str(t.bucket), private_key=str(t.pem))


def test_extract_remote_writes_the_plain_segments(tier: Tier, tmp_path: Path) -> None:
    out = tmp_path / "extracted"
    r = audit([str(tier.broker)], remote_root=str(tier.bucket), private_key=str(tier.pem),
              extract_to=str(out))
    assert kinds(r) == []
    folder = out / f"t-0-{TOPIC_ID}"
    assert (folder / f"{10:020d}-{_sid(1)}.log").read_bytes() == \
        _log_bytes(10, [b"v%d" % i for i in range(10)])
    assert (folder / f"{10:020d}-{_sid(1)}.leader_epoch_checkpoint").read_bytes() == b"0\n1\n0 10\n"
    assert not (out / "_PARTIAL").exists()
    success = json.loads((out / "_SUCCESS").read_text())
    jsonschema.validate(success, schemas.load("success"))
    assert (success["command"], success["segments"]) == ("segtools tier --extract-remote", 2)
    runner = CliRunner()
    for target, why in ((out, "exists and is not empty"),
                        (tier.bucket / "x", "is inside the input")):
        res = runner.invoke(cli, ["tier", str(tier.broker), "--remote", str(tier.bucket),
                                  "--private-key", str(tier.pem), "--extract-remote", str(target)])
        assert res.exit_code == 2 and why in res.output, res.output
    assert not (tier.bucket / "x").exists()
