"""Segment generators and the kafka-python oracle for the columnar tests (no tests here).

Batches are built by kafka-python's ``DefaultRecordBatchBuilder`` (an independent writer);
fields it cannot set (base offset, leader epoch, control / LogAppendTime attributes) are patched
in the raw bytes per FORMATS.md 1.1 and the CRC recomputed with the ``crc32c`` package directly.
Expected values come from kafka-python's ``MemoryRecords`` reader, never from segtools.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field
from pathlib import Path

import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

LOG_NAME = "00000000000000000000.log"
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@dataclass
class Rec:
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)
    timestamp: int = 1_700_000_000_000


def fix_crc(buf: bytearray) -> None:
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))


def kp_batch(records: list[Rec], *, base_offset: int, codec: int = 0, leader_epoch: int = 0,
             producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
             transactional: bool = False, control: bool = False,
             log_append_time: int | None = None, require_codec: bool = True) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=transactional,
        producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
        batch_size=1 << 30)
    for i, r in enumerate(records):
        builder.append(i, timestamp=r.timestamp, key=r.key, value=r.value, headers=r.headers)
    buf = bytearray(builder.build())
    if require_codec:
        assert struct.unpack_from(">h", buf, 21)[0] & 7 == codec, "builder skipped compression"
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, leader_epoch)
    attrs = struct.unpack_from(">h", buf, 21)[0]
    if control:
        attrs |= 0x20
    if log_append_time is not None:
        attrs |= 0x08
        struct.pack_into(">q", buf, 35, log_append_time)
    struct.pack_into(">h", buf, 21, attrs)
    fix_crc(buf)
    return bytes(buf)


def control_batch(*, base_offset: int, producer_id: int, producer_epoch: int, commit: bool,
                  coordinator_epoch: int = 3, timestamp: int = 1_700_000_000_500) -> bytes:
    """A transaction marker (FORMATS.md section 4): key (version 0, type), value (0, epoch)."""
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return kp_batch([Rec(key, value, [], timestamp)], base_offset=base_offset,
                    producer_id=producer_id, producer_epoch=producer_epoch, transactional=True,
                    control=True)


def compressible(rng: random.Random, n: int) -> bytes:
    words = [b"alpha", b"beta", b"gamma", b"delta", b"kafka", b"segment"]
    out = b" ".join(rng.choice(words) for _ in range(max(1, n // 5)))
    return out[:n]


def random_records(rng: random.Random, n: int, *, compress: bool) -> list[Rec]:
    recs = []
    ts = 1_700_000_000_000 + rng.randrange(10**6)
    for _ in range(n):
        key = None if rng.random() < 0.2 else (b"k%d" % rng.randrange(1000))
        if rng.random() < 0.15:
            value = None
        elif compress:
            value = compressible(rng, rng.randrange(20, 200))
        else:
            value = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 60)))
        headers: list[tuple[str, bytes | None]] = []
        if rng.random() < 0.4:
            for j in range(rng.randrange(1, 4)):
                hk = rng.choice(["trace", "ü-ñ", "", f"k{j}"])
                hv = None if rng.random() < 0.3 else bytes(rng.randrange(256) for _ in range(rng.randrange(0, 8)))
                headers.append((hk, hv))
        recs.append(Rec(key, value, headers, ts + rng.randrange(-5, 50)))
    return recs


def random_segment(rng: random.Random, n_batches: int = 12) -> bytes:
    """Mixed segment: every codec, producers, transactions with markers, LogAppendTime."""
    out = []
    offset = rng.randrange(0, 1000)
    pid = rng.randrange(1, 10**6)
    for b in range(n_batches):
        kind = rng.random()
        if kind < 0.12:
            out.append(control_batch(base_offset=offset, producer_id=pid, producer_epoch=2,
                                     commit=rng.random() < 0.5))
            offset += 1
            continue
        codec_name = rng.choice(list(CODECS))
        codec = CODECS[codec_name]
        recs = random_records(rng, rng.randrange(1, 30), compress=codec != 0)
        idempotent = rng.random() < 0.4
        lat = 1_700_000_999_000 + b if rng.random() < 0.2 else None
        out.append(kp_batch(
            recs, base_offset=offset, codec=codec, leader_epoch=rng.randrange(0, 5),
            producer_id=pid if idempotent else -1, producer_epoch=2 if idempotent else -1,
            base_sequence=rng.randrange(0, 2**31 - 1) if idempotent else -1,
            transactional=idempotent and rng.random() < 0.5, log_append_time=lat,
            require_codec=False))
        offset += len(recs) + rng.randrange(0, 3)   # gaps, as after compaction
    return b"".join(out)


def write_segment(dir_path: Path, data: bytes, name: str = "topic-a-3") -> Path:
    d = dir_path / name
    d.mkdir(parents=True, exist_ok=True)
    p = d / LOG_NAME
    p.write_bytes(data)
    return p


def oracle_rows(data: bytes) -> list[dict]:
    """Every record as kafka-python decodes it, with the batch fields the columns carry."""
    rows = []
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        crc_ok = batch.validate_crc()
        for r in batch:
            delta = r.offset - batch.base_offset
            seq = -1 if batch.base_sequence < 0 else (batch.base_sequence + delta) % (2**31)
            rows.append({
                "offset": r.offset, "timestamp_ms": r.timestamp,
                "timestampType": r.timestamp_type, "key": r.key, "value": r.value,
                "headers": [{"key": k, "value": v} for k, v in r.headers] or None,
                "leader_epoch": batch.leader_epoch, "batch_base_offset": batch.base_offset,
                "producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
                "sequence": seq, "is_transactional": batch.is_transactional,
                "is_control": batch.is_control_batch, "crc_valid": crc_ok, "magic": 2,
            })
    return rows


def oracle_batches(data: bytes) -> list[dict]:
    out = []
    records = MemoryRecords(data)
    pos = 0
    while (batch := records.next_batch()) is not None:
        size = batch.size_in_bytes
        out.append({
            "position": pos, "size": size, "base_offset": batch.base_offset,
            "last_offset": batch.base_offset + batch.last_offset_delta,
            "partition_leader_epoch": batch.leader_epoch, "crc": batch.crc,
            "crc_valid": batch.validate_crc(), "attributes": batch.attributes,
            "is_transactional": batch.is_transactional, "is_control": batch.is_control_batch,
            "producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
            "base_sequence": batch.base_sequence, "records_count": batch.records_count,
            "max_timestamp": batch.max_timestamp,
        })
        pos += size
    return out
