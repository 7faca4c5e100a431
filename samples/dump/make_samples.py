"""Rebuild the small golden inputs of `segtools dump` (see README.md here).

    python samples/dump/make_samples.py [OUT_DIR]      # default: this folder

Inputs come from the byte strings in FORMATS.md (sections 1.9, 2.3) or from kafka-python's
record builders -- never from segtools' writer -- so the dump tests check segtools against an
independent producer of the format. Output is deterministic (fixed timestamps).
"""

from __future__ import annotations

import os
import struct
import sys

import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder, DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatchBuilder

SEG = "00000000000000000000"
TS = 1700000000000

SPEC_V2_BATCH = bytes.fromhex(
    "0000000000000000" "00000039" "00000000" "02" "965a94b1" "0000" "00000000"
    "0000018bcfe56800" "0000018bcfe56800" "ffffffffffffffff" "ffff" "ffffffff" "00000001"
    "0e000000010261" "00")
SPEC_V1_MESSAGE = bytes.fromhex(
    "00 00 00 00 00 00 00 00 00 00 00 18 39 26 8c 33 01 00 00 00 01 8b cf e5 68 00 00 00 00 01"
    " 6b 00 00 00 01 76")
SPEC_V0_MESSAGE = bytes.fromhex(
    "00 00 00 00 00 00 00 07 00 00 00 0f d2 0c bf f5 00 00 ff ff ff ff 00 00 00 01 76")


def v2_batch(records, *, base_offset=0, leader_epoch=0, codec=0, producer_id=-1,
             producer_epoch=-1, base_sequence=-1, transactional=False, attrs=0) -> bytes:
    builder = DefaultRecordBatchBuilder(2, codec, transactional, producer_id, producer_epoch,
                                        base_sequence, 1 << 24)
    for i, (key, value, ts) in enumerate(records):
        builder.append(i, timestamp=ts, key=key, value=value, headers=[])
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base_offset)       # outside the CRC
    struct.pack_into(">i", buf, 12, leader_epoch)     # outside the CRC
    if attrs:
        struct.pack_into(">h", buf, 21, struct.unpack_from(">h", buf, 21)[0] | attrs)
        struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def marker(kind: int, base_offset: int, pid: int, epoch: int, coordinator_epoch: int,
           leader_epoch: int) -> bytes:
    """COMMIT (1) / ABORT (0) control batch: control + transactional attributes."""
    return v2_batch([(struct.pack(">hh", 0, kind), struct.pack(">hi", 0, coordinator_epoch), TS)],
                    base_offset=base_offset, leader_epoch=leader_epoch, producer_id=pid,
                    producer_epoch=epoch, transactional=True, attrs=0x20)


def simple_batches() -> list[bytes]:
    """DumpLogSegmentsTest.addSimpleRecords."""
    return [
        v2_batch([(f"message key {i}".encode(), f"message value {i}".encode(), TS + i)
                  for i in range(10)], base_offset=0),
        v2_batch([(f"message key {i}".encode(), None, TS + i) for i in range(10, 30)],
                 base_offset=10),
        v2_batch([(None, f"message value {i}".encode(), TS + i) for i in range(30, 50)],
                 base_offset=30),
        v2_batch([(None, None, TS + i) for i in range(50, 60)], base_offset=50),
    ]


def indexes(batches: list[bytes], zero_slots: int) -> tuple[bytes, bytes]:
    idx, tidx, position, max_ts, max_off = b"", b"", 0, -1, 0
    for raw in batches:
        b = DefaultRecordBatch(raw)
        last = b.base_offset + b.last_offset_delta
        if b.max_timestamp > max_ts:
            max_ts, max_off = b.max_timestamp, last
        idx += struct.pack(">ii", last, position)
        tidx += struct.pack(">qi", max_ts, max_off)
        position += len(raw)
    return idx + b"\0" * 8 * zero_slots, tidx + b"\0" * 12 * zero_slots


def producer_snapshot(entries: list[tuple[int, ...]]) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


def build() -> dict[str, bytes]:
    files: dict[str, bytes] = {
        f"spec-v2-0/{SEG}.log": SPEC_V2_BATCH,
        f"spec-v1-0/{SEG}.log": SPEC_V1_MESSAGE,
        f"spec-v0-0/{SEG}.log": SPEC_V0_MESSAGE,
    }
    txn = [
        v2_batch([(None, b"a", TS), (None, b"b", TS)], base_offset=0),
        v2_batch([(b"c", b"c" * 100, TS), (None, b"d" * 100, TS)], base_offset=2,
                 leader_epoch=3, codec=1),
        v2_batch([(b"e", None, TS), (None, b"f", TS), (None, b"g", TS)], base_offset=4,
                 leader_epoch=3),
        v2_batch([(None, b"h", TS)], base_offset=7, leader_epoch=3, producer_id=29342342,
                 producer_epoch=15, base_sequence=234123),
        v2_batch([(None, b"i" * 100, TS), (None, b"j" * 100, TS)], base_offset=8, leader_epoch=5,
                 codec=1, producer_id=98323, producer_epoch=99, base_sequence=266,
                 transactional=True),
        marker(1, 10, 98323, 99, 100, 7),
        v2_batch([(None, b"k", TS)], base_offset=11, leader_epoch=7, producer_id=98323,
                 producer_epoch=99, base_sequence=268, transactional=True),
        marker(0, 12, 98323, 99, 100, 7),
    ]
    files[f"txn-0/{SEG}.log"] = b"".join(txn)
    files[f"txn-0/{SEG}.txnindex"] = struct.pack(">hqqqq", 0, 98323, 11, 12, 11)
    files["txn-0/00000000000000000013.snapshot"] = producer_snapshot(
        [(29342342, 15, 234123, 7, 0, TS, -1, -1), (98323, 99, 268, 11, 0, TS, 100, -1)])

    simple = simple_batches()
    files[f"simple-0/{SEG}.log"] = b"".join(simple)
    idx, tidx = indexes(simple, zero_slots=16)    # flushed, not closed: zero-filled tails
    files[f"simple-0/{SEG}.index"] = idx
    files[f"simple-0/{SEG}.timeindex"] = tidx

    legacy = LegacyRecordBatchBuilder(magic=1, compression_type=1, batch_size=1 << 20)
    for i in range(5):
        legacy.append(i, timestamp=TS + i, key=f"k{i}".encode(), value=(f"v{i}" * 30).encode())
    wrapper = bytearray(legacy.build())
    # the broker stores the wrapper at the absolute offset of its last inner message (relative
    # inner offsets 0..4 -> 100..104); the offset field is outside the legacy CRC
    struct.pack_into(">q", wrapper, 0, 104)
    files[f"legacy-v1-gzip-0/{SEG}.log"] = bytes(wrapper)

    # corrupt variants (README.md says what each is)
    whole = b"".join(simple)
    files[f"corrupt-torn-tail-0/{SEG}.log"] = whole[:-40]
    flipped = bytearray(whole)
    flipped[len(simple[0]) + len(simple[1]) - 3] ^= 0xFF
    files[f"corrupt-crc-flip-0/{SEG}.log"] = bytes(flipped)
    files[f"corrupt-zero-tail-0/{SEG}.log"] = whole + b"\0" * 512
    files[f"corrupt-index-past-eof-0/{SEG}.log"] = whole
    files[f"corrupt-index-past-eof-0/{SEG}.index"] = (struct.pack(">ii", 9, 0)
                                                     + struct.pack(">ii", 29, 1 << 20))
    files[f"corrupt-non-monotonic-0/{SEG}.log"] = (
        v2_batch([(None, b"x", TS), (None, b"y", TS)], base_offset=10)
        + v2_batch([(None, b"z", TS)], base_offset=5))
    files[f"corrupt-garbage-0/{SEG}.log"] = bytes(range(256)) * 4
    return files


def main(out_dir: str) -> None:
    for name, data in sorted(build().items()):
        path = os.path.join(out_dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
