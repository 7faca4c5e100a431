"""A batch of very many records (a decompression bomb with a valid CRC, or a broken producer
repeating offsets): the dump streams it. Every record repeats offset 0, so Kafka's
"Non-consecutive offsets" block has one pair per record; the pairs, the JSON findings and
the JSON records of the batch must not all sit in memory (issue 9)."""

from __future__ import annotations

import io
import json
import struct
import tracemalloc
from pathlib import Path

import crc32c
import pytest
import zstandard

from segtools.dump import json_out, pairs
from segtools.dump.options import DumpOptions
from segtools.dump.pairs import PairStore
from segtools.dump.runner import run_dump

#: length 6, attributes 0, timestampDelta 0, offsetDelta 0, key null, value null, no headers
SEVEN_BYTE_RECORD = bytes([0x0C, 0x00, 0x00, 0x00, 0x01, 0x01, 0x00])


def record_bomb(path: Path, n_records: int) -> Path:
    """One zstd v2 batch of ``n_records`` seven-byte records, CRC-32C valid (FORMATS.md 1)."""
    payload = zstandard.ZstdCompressor(level=3).compress(SEVEN_BYTE_RECORD * n_records)
    head = bytearray(struct.pack(">qiibIhiqqqhii", 0, 49 + len(payload), 0, 2, 0, 4,
                                 n_records - 1, 1_700_000_000_000, 1_700_000_000_000,
                                 -1, -1, -1, n_records))
    crc = crc32c.crc32c(bytes(head[21:]) + payload) & 0xFFFFFFFF
    struct.pack_into(">I", head, 17, crc)
    path.write_bytes(bytes(head) + payload)
    return path


class _Null(io.TextIOBase):
    def write(self, text: str) -> int:
        return len(text)


def test_pair_store_spills_and_reads_back_newest_first() -> None:
    store = PairStore(in_memory=3)
    for i in range(10):
        store.append(i, i + 100)
    assert len(store) == 10 and store._spill is not None
    assert list(store.newest_first()) == [(i, i + 100) for i in reversed(range(10))]
    store.close()


@pytest.mark.parametrize("output", ["text", "json", "ndjson"])
def test_spilled_output_is_identical(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     output: str) -> None:
    log = record_bomb(tmp_path / f"{0:020d}.log", 3000)

    def dump() -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        status = run_dump([str(log)], DumpOptions(deep_iteration=True, output=output),
                          out=out, err=err)
        return status, out.getvalue(), err.getvalue()

    whole = dump()
    monkeypatch.setattr(pairs, "_IN_MEMORY", 100)
    monkeypatch.setattr(pairs, "_READ_PAIRS", 64)
    monkeypatch.setattr(json_out, "_FINDINGS_IN_MEMORY", 50)
    spilled = dump()
    assert spilled == whole
    assert whole[0] == 1
    if output == "text":
        assert whole[2].count("  0 is followed by 0\n") == 2999
    if output == "json":
        doc = json.loads(whole[1])
        assert len(doc["batches"][0]["records"]) == 3000 and len(doc["findings"]) == 2999
        # streamed, yet exactly json.dumps(indent=2) of the document
        assert json.dumps(doc, indent=2, ensure_ascii=False) + "\n" == whole[1]


@pytest.mark.parametrize("output, n_records", [("text", 20000), ("json", 8000)])
def test_memory_does_not_grow_with_records_of_one_batch(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, output: str, n_records: int) -> None:
    """Peak Python allocations while dumping one batch of many records stay under 2.5 MiB;
    before streaming, the pairs (text) and the findings and records (json) of the batch took
    4 MiB and 16 MiB here, growing linearly (1.6 GB for 8,000,000 records)."""
    log = record_bomb(tmp_path / f"{0:020d}.log", n_records)
    monkeypatch.setattr(pairs, "_IN_MEMORY", 1024, raising=False)
    monkeypatch.setattr(json_out, "_FINDINGS_IN_MEMORY", 500, raising=False)
    tracemalloc.start()
    try:
        status = run_dump([str(log)], DumpOptions(deep_iteration=True, output=output),
                          out=_Null(), err=_Null())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert status == 1
    assert peak < 2.5 * 1024 * 1024, f"{output}: peak {peak / 1024:.0f} KiB"
