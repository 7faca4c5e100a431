"""A remote segment's other objects checked against its ``.log`` and its metadata: the
offset, time and transaction indexes, the producer snapshot and the leader-epoch file that
the broker uploaded with it (LocalTieredStorage's ``.index``, ``.timeindex``, ``.txnindex``,
``.snapshot``, ``.leader_epoch_checkpoint``; the same after Aiven's objects are read back).

Kafka reads them instead of the ``.log`` to find where an offset or a timestamp is, which
aborted transactions a read must skip, and the producers' state; a wrong one makes a read
start at the wrong batch or let aborted records through, with the ``.log`` intact. What is
checked is what Kafka 4.3.1 writes (``LogSegment.append``: one offset-index entry per
``index.interval.bytes``, the last offset of a batch at that batch's position; the time index
the largest timestamp so far at the last offset of its batch; ``RemoteLogManager``: the
leader-epoch entries up to the next segment, the producer snapshot at the next segment's base
offset), loosened to what a lookup needs, so that older brokers' files pass too."""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass

from segtools.errors import SegtoolsError
from segtools.files.checkpoints import read_leader_epoch_checkpoint
from segtools.files.indexes import read_offset_index, read_time_index, read_txn_index
from segtools.files.snapshots import read_producer_snapshot
from segtools.records.batches import iter_batches
from segtools.tier.lineage import epoch_for_offset


@dataclass(frozen=True)
class _Batch:
    position: int
    base: int
    last: int
    epoch: int
    max_timestamp: int
    control_pid: int | None   # the producer id of a control batch, else None


def _batches(log_path: str) -> list[_Batch]:
    return [_Batch(b.position, b.base_offset, b.last_offset, b.partition_leader_epoch,
                   b.max_timestamp, b.producer_id if b.is_control else None)
            for b in iter_batches(log_path)]


def _offset_index(path: str, start: int, end: int, batches: list[_Batch]) -> list[str]:
    """Each entry points at a batch start of the ``.log`` whose base offset is at or below the
    entry's offset (a lookup of that offset scans from there), within the segment, both
    increasing."""
    at = {b.position: b for b in batches}
    out: list[str] = []
    prev = (-1, -1)
    for i, (rel, pos) in enumerate(read_offset_index(path, strict=False).tolist()):
        offset = start + int(rel)
        where = f"{path}: entry {i} (byte {8 * i}) offset {offset} position {pos}"
        batch = at.get(int(pos))
        if batch is None:
            out.append(f"{where}: no batch of the .log starts at that position")
        elif batch.base > offset:
            out.append(f"{where}: the batch there starts at offset {batch.base}, above it "
                       "(a lookup of the offset would start past it)")
        elif not start <= offset <= end:
            out.append(f"{where}: outside the segment's offsets [{start}, {end}]")
        elif (offset, int(pos)) <= prev or offset <= prev[0] or int(pos) <= prev[1]:
            out.append(f"{where}: not above the previous entry ({prev[0]}, {prev[1]})")
        prev = (offset, int(pos))
        if len(out) >= 5:
            break
    return out


def _time_index(path: str, start: int, end: int, batches: list[_Batch]) -> list[str]:
    """Each entry's offset is held by a batch of the segment, its timestamp is reached by a
    record at or below that offset, and both never go down."""
    bases = [b.base for b in batches]
    running: list[int] = []
    top = -1
    for b in batches:
        top = max(top, b.max_timestamp)
        running.append(top)
    out: list[str] = []
    prev_ts, prev_off = -1, -1
    for i, (ts, rel) in enumerate(read_time_index(path, strict=False).tolist()):
        offset = start + int(rel)
        where = f"{path}: entry {i} (byte {12 * i}) timestamp {ts} offset {offset}"
        k = bisect.bisect_right(bases, offset) - 1
        if not start <= offset <= end or k < 0 or batches[k].last < offset:
            out.append(f"{where}: no batch of the .log holds that offset")
        elif int(ts) > running[k]:
            out.append(f"{where}: no record at or below that offset has that timestamp (the "
                       f"largest is {running[k]})")
        elif int(ts) < prev_ts or offset < prev_off:
            out.append(f"{where}: below the previous entry ({prev_ts}, {prev_off})")
        prev_ts, prev_off = max(prev_ts, int(ts)), max(prev_off, offset)
        if len(out) >= 5:
            break
    return out


def _txn_index(path: str, start: int, end: int, batches: list[_Batch]) -> list[str]:
    """Each aborted transaction ends at a control batch of its producer in the segment."""
    markers = {b.base: b.control_pid for b in batches if b.control_pid is not None}
    out: list[str] = []
    for i, txn in enumerate(read_txn_index(path, strict=False)):
        where = (f"{path}: entry {i} (byte {34 * i}) producer {txn.producer_id} "
                 f"[{txn.first_offset}, {txn.last_offset}]")
        if not start <= txn.last_offset <= end or txn.first_offset > txn.last_offset:
            out.append(f"{where}: its abort marker is outside the segment's [{start}, {end}]")
        elif markers.get(txn.last_offset) != txn.producer_id:
            out.append(f"{where}: no control batch of that producer at offset "
                       f"{txn.last_offset} in the .log")
        if len(out) >= 5:
            break
    return out


def _epochs(path: str, start: int, end: int, seg_epochs: Mapping[int, int],
            batches: list[_Batch]) -> list[str]:
    """The leader-epoch file (the broker's chain up to the next segment) truncated to the
    segment is the metadata's segment epochs, and every batch carries the epoch it gives."""
    chain = {e.epoch: e.start_offset for e in read_leader_epoch_checkpoint(path)}
    inside = {e: o for e, o in chain.items() if start <= o <= end}
    holder = epoch_for_offset(chain, start)
    if holder is not None and start not in inside.values():
        inside[holder] = start
    out: list[str] = []
    if inside != dict(seg_epochs):
        out.append(f"{path}: epochs {dict(sorted(inside.items()))} within [{start}, {end}], "
                   f"the metadata's segment epochs are {dict(sorted(seg_epochs.items()))}")
    for b in batches:
        want = epoch_for_offset(chain, b.base)
        if want is not None and b.epoch != want:
            out.append(f"{path}: the batch at offset {b.base} (byte {b.position} of the .log) "
                       f"carries epoch {b.epoch}, the file says {want}")
            break
    return out


def _snapshot(path: str, end: int) -> list[str]:
    """The producer snapshot is taken at the next segment's base offset: no producer's last
    offset lies past the segment."""
    snap = read_producer_snapshot(path)
    if not snap.crc_valid:
        return [f"{path}: CRC {snap.crc} does not match the content ({snap.computed_crc})"]
    late = [e for e in snap.entries if e.last_offset > end]
    if late:
        return [f"{path}: producer {late[0].producer_id}'s last offset {late[0].last_offset} "
                f"is past the segment's end {end}"]
    return []


def check(files: Mapping[str, str], start: int, end: int, seg_epochs: Mapping[int, int]
          ) -> list[str]:
    """What is wrong with a remote segment's index, snapshot and epoch objects (``files``:
    suffix -> path, the ``.log`` among them), one message each, naming the object, the entry
    and its byte position. An object that cannot be read is one message too."""
    log = files.get(".log")
    if log is None:
        return []
    batches = _batches(log)
    checks = {
        ".index": lambda p: _offset_index(p, start, end, batches),
        ".timeindex": lambda p: _time_index(p, start, end, batches),
        ".txnindex": lambda p: _txn_index(p, start, end, batches),
        ".leader_epoch_checkpoint": lambda p: _epochs(p, start, end, seg_epochs, batches),
        ".snapshot": lambda p: _snapshot(p, end),
    }
    out: list[str] = []
    for suffix, run in checks.items():
        path = files.get(suffix)
        if path is None:
            continue
        try:
            out.extend(run(path))
        except SegtoolsError as e:
            out.append(f"{path}: unreadable: {e}")
    return out
