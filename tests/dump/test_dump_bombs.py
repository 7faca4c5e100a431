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
from segtools.primitives.varint import encode_varlong

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
        # Kafka 3.x keeps every pair (4.x's TreeMap keeps one per previous offset)
        status = run_dump([str(log)], DumpOptions(deep_iteration=True, output=output,
                                                  kafka_version="3.9"), out=out, err=err)
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


def sparse_giant(path: Path, value_bytes: int) -> Path:
    """One uncompressed v2 batch holding one record whose value is ``value_bytes`` zeros; the
    zeros (and the record's final headers count, 0) are a hole: a few bytes on disk."""
    body_head = b"\x00" + encode_varlong(0) + encode_varlong(0) + encode_varlong(-1) + encode_varlong(value_bytes)
    body_len = len(body_head) + value_bytes + 1
    record_head = encode_varlong(body_len) + body_head
    records_len = len(record_head) + value_bytes + 1
    head = bytearray(struct.pack(">qiibIhiqqqhii", 0, 49 + records_len, 0, 2, 0, 0, 0,
                                 1_700_000_000_000, 1_700_000_000_000, -1, -1, -1, 1))
    crc = crc32c.crc32c(bytes(head[21:]) + record_head)
    zeros = bytes(1 << 20)
    left = value_bytes + 1
    while left:
        step = min(left, len(zeros))
        crc = crc32c.crc32c(zeros[:step], crc)
        left -= step
    struct.pack_into(">I", head, 17, crc & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(bytes(head) + record_head)
        f.truncate(len(head) + records_len)
    return path


def test_max_batch_bytes_bounds_dump_and_can_be_raised(tmp_path: Path) -> None:
    """segtools.primitives.limits' one batch limit (16 MiB default) applies to dump as to export: a batch
    above it is unusable input (exit 2, one line naming the batch and the flag), and
    --max-batch-bytes raises it."""
    from dump_builders import run

    log = sparse_giant(tmp_path / f"{0:020d}.log", 17 * 1024 * 1024)
    refused = run(log)
    assert refused.exit_code == 2
    errors = [line for line in refused.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "--max-batch-bytes" in errors[0]
    assert "position 0" in errors[0] and "16 MiB" in errors[0]
    assert "baseOffset:" not in refused.stdout

    raised = run("--max-batch-bytes", "32MiB", "--deep-iteration", log)
    assert raised.exit_code == 0, raised.stderr
    assert f"size: {log.stat().st_size} magic: 2" in raised.stdout
    assert f"valueSize: {17 * 1024 * 1024} " in raised.stdout

    bad = run("--max-batch-bytes", "lots", log)
    assert bad.exit_code == 2 and "--max-batch-bytes" in bad.stderr


def test_record_bomb_is_refused_before_decompressing(tmp_path: Path) -> None:
    """3,000,000 seven-byte records need 21 MB, above the default limit: refused from the
    record count alone, with the limit named."""
    from dump_builders import run

    log = record_bomb(tmp_path / f"{0:020d}.log", 3_000_000)
    assert log.stat().st_size < 100_000
    result = run("--deep-iteration", log)
    assert result.exit_code == 2
    assert "max_batch_bytes is 16777216 bytes" in result.stderr
    assert "| offset:" not in result.stdout
