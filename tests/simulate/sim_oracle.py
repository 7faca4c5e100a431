"""Read simulated log dirs back with kafka-python (an independent reader) for the simulate tests."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from kafka.record.memory_records import MemoryRecords


@dataclass
class OracleBatch:
    segment: str
    position: int
    base_offset: int
    last_offset: int
    epoch: int
    crc_valid: bool
    max_timestamp: int
    is_control: bool
    records: list[tuple[int, bytes | None, bytes | None]]


def read_segment(path: str) -> tuple[list[OracleBatch], int]:
    """All complete batches of one .log file and the number of bytes they cover."""
    with open(path, "rb") as fh:
        data = fh.read()
    out = []
    pos = 0
    while len(data) - pos >= 12:
        (length,) = struct.unpack_from(">i", data, pos + 8)
        size = length + 12
        if pos + size > len(data):
            break  # torn tail
        b = MemoryRecords(data[pos:pos + size]).next_batch()
        crc_valid = b.validate_crc()  # before iterating, as kafka-python requires
        recs = [(r.offset, r.key, r.value) for r in b]
        out.append(OracleBatch(os.path.basename(path), pos, b.base_offset, b.last_offset,
                               b.leader_epoch, crc_valid, b.max_timestamp,
                               b.is_control_batch, recs))
        pos += size
    return out, pos


def read_partition(pdir: str) -> list[OracleBatch]:
    batches: list[OracleBatch] = []
    for name in sorted(n for n in os.listdir(pdir) if n.endswith(".log")):
        batches.extend(read_segment(os.path.join(pdir, name))[0])
    return batches


def records_by_offset(pdir: str) -> dict[int, tuple[int, bytes | None, bytes | None]]:
    """offset -> (partition leader epoch, key, value) for every data record in the partition."""
    out = {}
    for b in read_partition(pdir):
        if b.is_control:
            continue
        for offset, key, value in b.records:
            out[offset] = (b.epoch, key, value)
    return out


def index_problems(pdir: str) -> list[str]:
    """kafka-dump-log --index-sanity-check style: every .index entry points at the start of a
    batch whose last offset is the entry's offset; .timeindex entries name batch last offsets
    with that batch's running max timestamp, non-decreasing."""
    problems = []
    for name in sorted(n for n in os.listdir(pdir) if n.endswith(".log")):
        base = int(name[:20])
        batches, _ = read_segment(os.path.join(pdir, name))
        by_pos = {b.position: b for b in batches}
        by_last = {b.last_offset: b for b in batches}
        running, max_so_far = {}, -1
        for b in batches:
            max_so_far = max(max_so_far, b.max_timestamp)
            running[b.last_offset] = max_so_far
        idx = os.path.join(pdir, name[:20] + ".index")
        if os.path.exists(idx):
            data = open(idx, "rb").read()
            if len(data) % 8:
                problems.append(f"{idx}: size {len(data)} not a multiple of 8")
            for i in range(len(data) // 8):
                rel, position = struct.unpack_from(">ii", data, i * 8)
                if i > 0 and rel == 0:
                    break
                if i == 0 and rel == 0 and position == 0 and not batches:
                    break
                b = by_pos.get(position)
                if b is None or b.last_offset != base + rel:
                    if not (i == 0 and rel == 0 and position == 0):
                        problems.append(f"{idx}: entry {i} ({base + rel}, {position}) "
                                        "is not a batch start with that last offset")
        tidx = os.path.join(pdir, name[:20] + ".timeindex")
        if os.path.exists(tidx):
            data = open(tidx, "rb").read()
            if len(data) % 12:
                problems.append(f"{tidx}: size {len(data)} not a multiple of 12")
            last_ts = -1
            for i in range(len(data) // 12):
                ts, rel = struct.unpack_from(">qi", data, i * 12)
                if i > 0 and ts == 0 and rel == 0:
                    break
                if i == 0 and ts == 0 and rel == 0:
                    break
                if ts < last_ts:
                    problems.append(f"{tidx}: entry {i} timestamp goes backwards")
                last_ts = ts
                if base + rel not in by_last:
                    problems.append(f"{tidx}: entry {i} offset {base + rel} is not a batch last offset")
                elif running[base + rel] != ts:
                    problems.append(f"{tidx}: entry {i} timestamp {ts} is not the max so far {running[base + rel]}")
    return problems


def partition_dirs(out_dir: str):
    """(broker id, topic-partition name, path) for every partition dir of every broker."""
    for broker_name in sorted(os.listdir(out_dir)):
        if not broker_name.startswith("broker-"):
            continue
        bdir = os.path.join(out_dir, broker_name)
        for pname in sorted(os.listdir(bdir)):
            p = os.path.join(bdir, pname)
            if os.path.isdir(p):
                yield int(broker_name.split("-")[1]), pname, p
