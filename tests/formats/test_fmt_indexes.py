"""Index entry declarations: FORMATS.md 5-7 examples and real .index/.timeindex files."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from fmt_helpers import KRAFT, ZK_FINAL, roundtrip

from segtools.formats.indexes import (
    ABORTED_TXN_SIZE,
    AbortedTxnEntry,
    OffsetIndex,
    OffsetIndexEntry,
    TimeIndex,
    TimeIndexEntry,
    TransactionIndex,
)


def test_offset_index_example_section_5() -> None:
    data = bytes.fromhex("00000005 00001018 0000001e 0000203a".replace(" ", ""))
    entries = roundtrip(OffsetIndex, data)
    assert [(e.relative_offset + 100, e.position) for e in entries] == [(105, 4120), (130, 8250)]


def test_time_index_example_section_6() -> None:
    entry = roundtrip(TimeIndexEntry, bytes.fromhex("0000018bcfe56800 00000005".replace(" ", "")))
    assert (entry.timestamp, entry.relative_offset) == (1700000000000, 5)


def test_aborted_txn_entry_layout() -> None:
    data = struct.pack(">hqqqq", 0, 77, 10, 20, 21)
    entry = roundtrip(AbortedTxnEntry, data)
    assert len(data) == ABORTED_TXN_SIZE
    assert (entry.version, entry.producer_id, entry.first_offset, entry.last_offset,
            entry.last_stable_offset) == (0, 77, 10, 20, 21)
    assert len(roundtrip(TransactionIndex, data * 3)) == 3


@pytest.mark.parametrize("rel", [
    KRAFT + "/__cluster_metadata-0/00000000000000000000.index",
    KRAFT + "/customers-0/00000000000000000000.index",
    ZK_FINAL + "/__consumer_offsets-12/00000000000000000000.index",
])
def test_real_offset_index_roundtrip(realdata: Path, rel: str) -> None:
    data = (realdata / rel).read_bytes()
    entries = roundtrip(OffsetIndex, data)
    assert len(entries) == len(data) // 8
    plain = [struct.unpack_from(">ii", data, i * 8) for i in range(len(data) // 8)]
    assert [(e.relative_offset, e.position) for e in entries] == plain


@pytest.mark.parametrize("rel", [
    KRAFT + "/__cluster_metadata-0/00000000000000000000.timeindex",
    KRAFT + "/products-0/00000000000000000000.timeindex",
    ZK_FINAL + "/first_topic-0/00000000000000000000.timeindex",
])
def test_real_time_index_roundtrip(realdata: Path, rel: str) -> None:
    data = (realdata / rel).read_bytes()
    entries = roundtrip(TimeIndex, data)
    assert len(entries) == len(data) // 12
    timestamps = [e.timestamp for e in entries]
    assert timestamps == sorted(timestamps)
    assert OffsetIndexEntry.sizeof() == 8 and TimeIndexEntry.sizeof() == 12
