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

# the builders the dump tests use (one implementation for both)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                                "tests", "dump"))
from dump_builders import (  # noqa: E402
    SEG,
    SPEC_V0_MESSAGE,
    SPEC_V1_MESSAGE,
    SPEC_V2_BATCH,
    control_batch,
    index_bytes,
    producer_snapshot,
    simple_batches,
    v2_batch,
)
from kafka.record.legacy_records import LegacyRecordBatchBuilder  # noqa: E402

TS = 1700000000000


def marker(kind: int, base_offset: int, pid: int, epoch: int, coordinator_epoch: int,
           leader_epoch: int) -> bytes:
    """COMMIT (1) / ABORT (0) control batch written at ``TS``."""
    return control_batch(kind, base_offset=base_offset, producer_id=pid, producer_epoch=epoch,
                         coordinator_epoch=coordinator_epoch, timestamp=TS,
                         leader_epoch=leader_epoch)


def build() -> dict[str, bytes]:
    files: dict[str, bytes] = {
        f"spec-v2-0/{SEG}.log": SPEC_V2_BATCH,
        f"spec-v1-0/{SEG}.log": SPEC_V1_MESSAGE,
        f"spec-v0-0/{SEG}.log": SPEC_V0_MESSAGE,
    }
    txn = [
        v2_batch([(None, b"a", TS), (None, b"b", TS)], base_offset=0),
        v2_batch([(b"c", b"c" * 100, TS), (None, b"d" * 100, TS)], base_offset=2,
                 leader_epoch=3, compression=1),
        v2_batch([(b"e", None, TS), (None, b"f", TS), (None, b"g", TS)], base_offset=4,
                 leader_epoch=3),
        v2_batch([(None, b"h", TS)], base_offset=7, leader_epoch=3, producer_id=29342342,
                 producer_epoch=15, base_sequence=234123),
        v2_batch([(None, b"i" * 100, TS), (None, b"j" * 100, TS)], base_offset=8, leader_epoch=5,
                 compression=1, producer_id=98323, producer_epoch=99, base_sequence=266,
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
    idx, tidx = index_bytes(simple, zero_slots=16)    # flushed, not closed: zero-filled tails
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
