"""`segtools tier --remote s3://...` against the real S3-compatible server of conftest.py: the
remote tier in Aiven's format (objects from tests/tier/aiven_encoder.py, written from the
plugin's published format) and in LocalTieredStorage's, uploaded with boto3. The answers must
be the ones the same objects give on local disk, with the objects named by their URIs, and the
bucket must be left as it was."""

from __future__ import annotations

from pathlib import Path

from segtools.tier import audit
from tests.objectstore.conftest import BUCKET, S3Server
from tests.tier.test_aiven_audit import PREFIX, build, main_path
from tests.tier.test_tier_audit import _log_bytes, _sid, broker_dir, kinds, remote_object, start, update


def test_aiven_tier_on_s3(s3: S3Server, tmp_path: Path) -> None:
    t = build(tmp_path)
    obj1 = t.bucket / (PREFIX + main_path(1, 10) + ".log")
    data = bytearray(obj1.read_bytes())
    data[20] ^= 1                       # the first chunk's ciphertext
    obj1.write_bytes(bytes(data))
    uri = s3.upload(t.bucket, "tier-aiven")
    before = s3.keys("tier-aiven/")
    local = audit([str(t.broker)], remote_root=str(t.bucket), private_key=str(t.pem))
    remote = audit([str(t.broker)], remote_root=uri, private_key=str(t.pem))
    assert kinds(remote) == kinds(local) == ["unreadable_object"]
    assert remote.findings[0].message == local.findings[0].message.replace(str(t.bucket), uri)
    assert f"{uri}/{PREFIX}{main_path(1, 10)}.log: chunk 0 at byte 0" in remote.findings[0].message
    assert s3.keys("tier-aiven/") == before


def test_local_tiered_storage_on_s3(s3: S3Server, tmp_path: Path) -> None:
    seg0 = _log_bytes(0, [b"x"] * 10)
    md = [start(0, 0, 9, {0: 0}, size=len(seg0)), update(0, 1), start(1, 10, 19, {0: 0}),
          update(1, 1)]
    d = broker_dir(tmp_path, md, local_start=20, log_end=30, epochs={0: 0})
    remote_object(tmp_path / "tiered", 0, 0, seg0)
    remote_object(tmp_path / "tiered", 5, 40, _log_bytes(40, [b"y"]))
    uri = s3.upload(tmp_path / "tiered", "tier-lts")
    r = audit([str(d)], remote_root=uri)
    assert kinds(r) == ["metadata_without_objects", "object_without_metadata"]
    assert {f.segment_id for f in r.findings} == {_sid(1), _sid(5)}
    leak = next(f for f in r.findings if f.kind == "object_without_metadata")
    assert leak.message.startswith(f"s3://{BUCKET}/tier-lts/kafka-tiered-storage/t-0-")
