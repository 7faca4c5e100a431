"""Producer snapshot declaration: every real .snapshot file rebuilds byte for byte; its CRC
(computed with the crc32c package, not ours) matches."""

from __future__ import annotations

from pathlib import Path

import construct
import crc32c
import pytest
from fmt_helpers import roundtrip

from segtools.formats.producer_snapshot import (
    PRODUCER_ENTRIES_OFFSET,
    PRODUCER_ENTRY_SIZE,
    ProducerSnapshot,
    ProducerSnapshotEntry,
)


def _snapshots(realdata: Path) -> list[Path]:
    return sorted(realdata.rglob("*.snapshot"))


def test_every_real_snapshot_roundtrips(realdata: Path) -> None:
    files = _snapshots(realdata)
    assert len(files) >= 37
    with_entries = 0
    for path in files:
        data = path.read_bytes()
        snap = roundtrip(ProducerSnapshot, data)
        assert snap.version == 1
        assert snap.crc == crc32c.crc32c(data[PRODUCER_ENTRIES_OFFSET:])
        assert len(data) == 10 + PRODUCER_ENTRY_SIZE * len(snap.entries)
        with_entries += bool(snap.entries)
    assert with_entries > 0


def test_entry_is_46_bytes() -> None:
    assert ProducerSnapshotEntry.sizeof() == PRODUCER_ENTRY_SIZE == 46


def test_known_entry_values(realdata: Path) -> None:
    path = realdata / "kafka-3.6-kraft-flink-stack/logdir/promotions-0/00000000000000000029.snapshot"
    snap = ProducerSnapshot.parse(path.read_bytes())
    # the same producers as the last idempotent batches of promotions-0's .log (checked against
    # the log in tests/files/test_snapshots.py); here: field order and widths
    assert [(e.producer_id, e.epoch, e.coordinator_epoch, e.current_txn_first_offset)
            for e in snap.entries] == [(45, 0, -1, -1), (46, 0, -1, -1)]
    with pytest.raises(construct.StreamError):
        ProducerSnapshot.parse(path.read_bytes()[:-1])
