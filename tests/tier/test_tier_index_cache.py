"""The brokers' remote-log-index-cache/ in `segtools tier`: entries named as Kafka's
RemoteIndexCache names them (``<startOffset>_<segmentId>.index`` etc.: the names of Kafka 4.3.1's
kafka-storage jar), evidence built here, each finding following from how it was built."""

from __future__ import annotations

from pathlib import Path

import jsonschema

from segtools import schemas
from segtools.files.indexes import offset_index_entry, time_index_entry
from segtools.files.snapshots import producer_snapshot_bytes
from segtools.tier import audit
from tests.tier.test_tier_audit import TOPIC_ID, _log_bytes, _sid, broker_dir, kinds, start, update

OFFSETS = {0: (0, 9), 1: (10, 19)}


#: the segments are one-record batches of one size: offset o starts at (o - start) * this
BATCH = len(_log_bytes(0, [b"x"]))


def _index(start_offset: int, offsets: list[int]) -> bytes:
    return b"".join(offset_index_entry(o - start_offset, BATCH * (o - start_offset))
                    for o in offsets)


def build(tmp: Path, *, meta_part: int | None = None) -> Path:
    md = []
    for n, (lo, hi) in OFFSETS.items():
        md += [start(n, lo, hi, {0: lo}, size=len(_log_bytes(lo, [b"x"] * 10))), update(n, 1)]
    return broker_dir(tmp, md, local_start=20, log_end=30, epochs={0: 0}, meta_part=meta_part)


def cache(broker: Path, n: int, start_offset: int, index: bytes, suffix: str = "") -> None:
    d = broker / "remote-log-index-cache"
    d.mkdir(exist_ok=True)
    name = f"{start_offset}_{_sid(n)}"
    (d / f"{name}.index{suffix}").write_bytes(index)
    (d / f"{name}.timeindex{suffix}").write_bytes(time_index_entry(1, 0))
    (d / f"{name}.txnindex{suffix}").write_bytes(b"")


def remote(root: Path, n: int, index: bytes) -> None:
    lo, _ = OFFSETS[n]
    d = root / "kafka-tiered-storage" / f"t-0-{TOPIC_ID}"
    d.mkdir(parents=True, exist_ok=True)
    files = {".log": _log_bytes(lo, [b"x"] * 10), ".index": index,
             ".timeindex": time_index_entry(1, 0), ".leader_epoch_checkpoint": b"0\n1\n0 0\n",
             ".snapshot": producer_snapshot_bytes([])}
    for suffix, data in files.items():
        (d / f"{lo:020d}-{_sid(n)}{suffix}").write_bytes(data)


def test_consistent_cache_is_listed_without_finding(tmp_path: Path) -> None:
    b = build(tmp_path)
    for n, (lo, _) in OFFSETS.items():
        cache(b, n, lo, _index(lo, [lo, lo + 5]))
        remote(tmp_path / "tiered", n, _index(lo, [lo, lo + 5]))
    cache(b, 1, 10, b"", ".deleted")      # an evicted copy waiting for removal
    r = audit([str(b)], remote_root=str(tmp_path / "tiered"))
    assert kinds(r) == []
    assert [(e.segment_id, e.start_offset, sorted(e.files), e.pending) for e in r.index_cache] == [
        (_sid(0), 0, [".index", ".timeindex", ".txnindex"], []),
        (_sid(1), 10, [".index", ".timeindex", ".txnindex"],
         [f"10_{_sid(1)}.index.deleted", f"10_{_sid(1)}.timeindex.deleted",
          f"10_{_sid(1)}.txnindex.deleted"])]
    jsonschema.validate(r.to_json(), schemas.load("tier"))


def test_cache_against_metadata_and_remote(tmp_path: Path) -> None:
    b = build(tmp_path)
    cache(b, 0, 0, _index(0, [0, 15]))                  # points past segment 0's end (9)
    cache(b, 1, 12, _index(12, [12]))                   # the metadata says segment 1 starts at 10
    remote(tmp_path / "tiered", 0, _index(0, [0, 15]))
    remote(tmp_path / "tiered", 1, _index(10, [10]))
    r = audit([str(b)], remote_root=str(tmp_path / "tiered"))
    # the remote index of segment 0 points past its end as well (the cache is its copy)
    assert kinds(r) == ["index_cache_mismatch", "index_cache_mismatch", "remote_index_mismatch"]
    (wrong,) = [f for f in r.findings if f.kind == "remote_index_mismatch"]
    assert wrong.segment_id == _sid(0) and "entry 1 (byte 8) offset 15" in wrong.message
    f0, f1 = sorted((f for f in r.findings if f.kind == "index_cache_mismatch"),
                    key=lambda f: f.segment_id)
    assert f"points at offset 15, outside t-0 segment {_sid(0)} [0, 9]" in f0.message
    assert f"named for start offset 12, the metadata says t-0 segment {_sid(1)} starts at 10" \
        in f1.message


def test_cache_differs_from_remote_index(tmp_path: Path) -> None:
    b = build(tmp_path)
    cache(b, 0, 0, _index(0, [0, 5]))
    remote(tmp_path / "tiered", 0, _index(0, [0, 6]))
    remote(tmp_path / "tiered", 1, _index(10, [10]))
    r = audit([str(b)], remote_root=str(tmp_path / "tiered"))
    assert kinds(r) == ["index_cache_mismatch"]
    assert r.findings[0].message.endswith(
        f"-{_sid(0)}.index: the broker served reads of that segment with another index")
    assert str(tmp_path / "tiered" / "kafka-tiered-storage") in r.findings[0].message


def test_unknown_segment_only_when_every_metadata_partition_is_here(tmp_path: Path) -> None:
    b = build(tmp_path, meta_part=0)
    cache(b, 7, 40, _index(40, [40]))
    assert kinds(audit([str(b)], metadata_partitions=1)) == ["index_cache_unknown_segment"]
    # with 50 metadata partitions, 49 are not on the evidence: the record may be in one of them
    assert "index_cache_unknown_segment" not in kinds(audit([str(b)], metadata_partitions=50))
