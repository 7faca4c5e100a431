"""Inputs for the dump tests, built with kafka-python's record builders (an independent
implementation) or from raw bytes given in the spec -- never with segtools' own writer."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Callable, Sequence

import crc32c as _crc32c
from click.testing import CliRunner, Result
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from segtools.cli.dump import dump

SEG = "00000000000000000000"

# FORMATS.md 1.9: one v2 batch, offset 0, epoch 0, CreateTime 1700000000000, null key, value "a"
SPEC_V2_BATCH = bytes.fromhex(
    "0000000000000000" "00000039" "00000000" "02" "965a94b1" "0000" "00000000"
    "0000018bcfe56800" "0000018bcfe56800" "ffffffffffffffff" "ffff" "ffffffff" "00000001"
    "0e000000010261" "00")
# FORMATS.md 2.3
SPEC_V1_MESSAGE = bytes.fromhex(
    "00 00 00 00 00 00 00 00 00 00 00 18 39 26 8c 33 01 00 00 00 01 8b cf e5 68 00 00 00 00 01"
    " 6b 00 00 00 01 76")
SPEC_V0_MESSAGE = bytes.fromhex(
    "00 00 00 00 00 00 00 07 00 00 00 0f d2 0c bf f5 00 00 ff ff ff ff 00 00 00 01 76")


def v2_batch(records: Sequence[tuple[bytes | None, bytes | None, int]], *, base_offset: int = 0,
             leader_epoch: int = 0, compression: int = 0, producer_id: int = -1,
             producer_epoch: int = -1, base_sequence: int = -1, transactional: bool = False,
             headers: Sequence[Sequence[tuple[str, bytes | None]]] | None = None) -> bytes:
    """A magic-2 batch from kafka-python; (key, value, timestamp) per record. Base offset and
    partition leader epoch are outside the CRC, so they are patched in afterwards."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=transactional,
        producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence,
        batch_size=1 << 24)
    for i, (key, value, ts) in enumerate(records):
        hdrs = list(headers[i]) if headers else []
        assert builder.append(i, timestamp=ts, key=key, value=value, headers=hdrs) is not None
    buf = bytearray(builder.build())
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, leader_epoch)
    return bytes(buf)


def with_attributes(batch: bytes, set_bits: int) -> bytes:
    """Set attribute bits (e.g. 0x20 control, 0x08 LogAppendTime) and re-sign the CRC-32C with
    the independent ``crc32c`` package."""
    buf = bytearray(batch)
    attrs = struct.unpack_from(">h", buf, 21)[0] | set_bits
    struct.pack_into(">h", buf, 21, attrs)
    struct.pack_into(">I", buf, 17, _crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


def control_batch(control_type: int, *, base_offset: int, producer_id: int, producer_epoch: int,
                  coordinator_epoch: int, timestamp: int, leader_epoch: int = 0) -> bytes:
    """A COMMIT (1) / ABORT (0) marker batch as the transaction coordinator writes it."""
    key = struct.pack(">hh", 0, control_type)
    value = struct.pack(">hi", 0, coordinator_epoch)
    batch = v2_batch([(key, value, timestamp)], base_offset=base_offset, leader_epoch=leader_epoch,
                     producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=-1,
                     transactional=True)
    return with_attributes(batch, 0x20)


def legacy_set(records: Sequence[tuple[int, bytes | None, bytes | None, int]], *, magic: int,
               compression: int = 0) -> bytes:
    """kafka-python legacy message set; (offset, key, value, timestamp) per message."""
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=compression,
                                       batch_size=1 << 24)
    for offset, key, value, ts in records:
        builder.append(offset, timestamp=ts, key=key, value=value)
    return bytes(builder.build())


def oracle_batches(data: bytes) -> list:
    """kafka-python's view of the batches in ``data`` (the independent oracle)."""
    records = MemoryRecords(data)
    out = []
    while True:
        batch = records.next_batch()
        if batch is None:
            return out
        out.append(batch)


def simple_batches(*, ts: int = 1700000000000) -> list[bytes]:
    """DumpLogSegmentsTest.addSimpleRecords: four batches A (0-9 key+value), B (10-29 key only),
    C (30-49 value only), D (50-59 neither), leader epoch 0, no compression."""
    return [
        v2_batch([(f"message key {i}".encode(), f"message value {i}".encode(), ts + i)
                  for i in range(10)], base_offset=0),
        v2_batch([(f"message key {i}".encode(), None, ts + i) for i in range(10, 30)],
                 base_offset=10),
        v2_batch([(None, f"message value {i}".encode(), ts + i) for i in range(30, 50)],
                 base_offset=30),
        v2_batch([(None, None, ts + i) for i in range(50, 60)], base_offset=50),
    ]


def simple_records_log(directory: Path, *, ts: int = 1700000000000) -> tuple[Path, list[bytes]]:
    """:func:`simple_batches` written to ``directory/<SEG>.log``."""
    batches = simple_batches(ts=ts)
    log = directory / f"{SEG}.log"
    log.write_bytes(b"".join(batches))
    return log, batches


def index_bytes(batches: Sequence[bytes], *, base: int = 0, zero_slots: int = 0,
                every: int = 1) -> tuple[bytes, bytes]:
    """Offset and time index contents: (batch lastOffset, batch position) / (max ts so far,
    lastOffset) for every ``every``-th batch, with ``zero_slots`` zero-filled preallocated
    slots appended, as an unclosed segment has. Values come from kafka-python's reader."""
    idx = bytearray()
    tidx = bytearray()
    position = 0
    max_ts = -1
    for i, raw in enumerate(batches):
        (ob,) = oracle_batches(raw)
        last = ob.base_offset + ob.last_offset_delta
        if ob.max_timestamp > max_ts:
            max_ts = ob.max_timestamp
            max_ts_offset = last
        if i % every == 0:
            idx += struct.pack(">ii", last - base, position)
            tidx += struct.pack(">qi", max_ts, max_ts_offset - base)
        position += len(raw)
    return bytes(idx) + b"\0" * (8 * zero_slots), bytes(tidx) + b"\0" * (12 * zero_slots)


def write_indexes(directory: Path, batches: Sequence[bytes], *, base: int = 0,
                  zero_slots: int = 0, every: int = 1) -> tuple[Path, Path]:
    """:func:`index_bytes` written to ``directory/<base>.index`` and ``.timeindex``."""
    idx, tidx = index_bytes(batches, base=base, zero_slots=zero_slots, every=every)
    name = f"{base:020d}"
    (directory / f"{name}.index").write_bytes(idx)
    (directory / f"{name}.timeindex").write_bytes(tidx)
    return directory / f"{name}.index", directory / f"{name}.timeindex"


def producer_snapshot(entries: Sequence[tuple[int, ...]], *, corrupt: bool = False) -> bytes:
    """A version-1 producer-state ``.snapshot``: (producerId, epoch, lastSequence, lastOffset,
    offsetDelta, timestamp, coordinatorEpoch, currentTxnFirstOffset) per entry, CRC-32C of
    everything after the CRC field (FORMATS.md section 8) from the independent ``crc32c``;
    ``corrupt`` flips the stored CRC's lowest bit."""
    body = struct.pack(">i", len(entries)) + b"".join(
        struct.pack(">qhiqiqiq", *e) for e in entries)
    crc = _crc32c.crc32c(body) ^ (1 if corrupt else 0)
    return struct.pack(">hI", 1, crc) + body


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(dump, [str(a) for a in args], catch_exceptions=False)


def kafka_err(text: str) -> str:
    """stderr without segtools' own ``segtools: `` lines (per-file notes and the run summary),
    i.e. what kafka-dump-log itself would print."""
    return "".join(line for line in text.splitlines(keepends=True)
                   if not line.startswith("segtools: "))


def lines(text: str) -> list[str]:
    """Kafka's stderr lines (segtools' own ``segtools: `` lines dropped)."""
    return kafka_err(text).splitlines()


def tokens_alternate(line: str) -> bool:
    """Kafka's test: whitespace-split tokens alternate ``name:`` and value."""
    toks = line.split()
    return len(toks) % 2 == 0 and all(t.endswith(":") for t in toks[0::2]) and \
        not any(t.endswith(":") for t in toks[1::2])


_TS_NAMES = {0: "CreateTime", 1: "LogAppendTime"}
_CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def _sequence(base_sequence: int, delta: int) -> int:
    if base_sequence < 0:
        return -1
    return base_sequence + delta if base_sequence <= 2147483647 - delta else \
        delta - (2147483647 - base_sequence) - 1


def kafka_python_lines(data: bytes, decode: "Callable[[bytes], str] | None" = None) -> list[str]:
    """The DUMP_LOG.md 3.3/3.4 templates filled with kafka-python's view of each batch.

    ``decode`` renders key/value bytes (Java's StringDecoder); by default only valid UTF-8 is
    accepted, so a test must pass a JVM-backed decoder for binary payloads."""
    decode = decode or (lambda raw: raw.decode("utf-8"))
    out: list[str] = []
    position = 0
    for b in oracle_batches(data):
        size = b.size_in_bytes
        last = b.base_offset + b.last_offset_delta
        ts_name = _TS_NAMES[b.timestamp_type]
        horizon = b.first_timestamp if b.attributes & 0x40 else None
        out.append(
            f"baseOffset: {b.base_offset} lastOffset: {last} count: {b.records_count} "
            f"baseSequence: {b.base_sequence} lastSequence: {_sequence(b.base_sequence, b.last_offset_delta)} "
            f"producerId: {b.producer_id} producerEpoch: {b.producer_epoch} "
            f"partitionLeaderEpoch: {b.leader_epoch} "
            f"isTransactional: {str(b.is_transactional).lower()} "
            f"isControl: {str(b.is_control_batch).lower()} deleteHorizonMs: {'OptionalLong.empty' if horizon is None else f'OptionalLong[{horizon}]'} "
            f"position: {position} {ts_name}: {b.max_timestamp} size: {size} magic: {b.magic} "
            f"compresscodec: {_CODECS[b.compression_type]} crc: {b.crc} "
            f"isvalid: {str(b.validate_crc()).lower()}")
        for r in b:
            ks = -1 if r.key is None else len(r.key)
            vs = -1 if r.value is None else len(r.value)
            keys = ",".join(k for k, _ in r.headers)
            line = (f"| offset: {r.offset} {ts_name}: {r.timestamp} keySize: {ks} valueSize: {vs} "
                    f"sequence: {_sequence(b.base_sequence, r.offset - b.base_offset)} "
                    f"headerKeys: [{keys}]")
            if b.is_control_batch:
                version, type_id = struct.unpack_from(">hh", r.key)
                if type_id in (0, 1):
                    epoch = struct.unpack_from(">i", r.value, 2)[0]
                    line += f" endTxnMarker: {['ABORT', 'COMMIT'][type_id]} coordinatorEpoch: {epoch}"
                elif type_id == 2:
                    line += " controlType: LEADER_CHANGE(2)"
            else:
                if r.key is not None:
                    line += " key: " + decode(bytes(r.key))
                if r.value is not None:
                    line += " payload: " + decode(bytes(r.value))
            out.append(line)
        position += size
    return out


JAVA_STRING_ORACLE = """
import java.nio.charset.StandardCharsets;
import java.nio.file.*;

public class Utf8Oracle {
    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder();
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            byte[] bytes = java.util.HexFormat.of().parseHex(line.trim());
            String s = new String(bytes, StandardCharsets.UTF_8);
            for (int i = 0; i < s.length(); i++) out.append(String.format("%04x", (int) s.charAt(i)));
            out.append('\\n');
        }
        Files.writeString(Paths.get(args[1]), out.toString());
    }
}
"""


def java_strings(values: Sequence[bytes], workdir: Path) -> dict[bytes, str]:
    """``new String(bytes, UTF_8)`` computed by the JVM itself, for each distinct value."""
    import shutil
    import subprocess

    java = shutil.which("java")
    if java is None:
        raise AssertionError("Java 17 must be on PATH for the StringDecoder oracle")
    distinct = sorted(set(values))
    (workdir / "Utf8Oracle.java").write_text(JAVA_STRING_ORACLE)
    (workdir / "in.txt").write_text("".join(v.hex() + "\n" for v in distinct))
    subprocess.run([java, str(workdir / "Utf8Oracle.java"), str(workdir / "in.txt"),
                    str(workdir / "out.txt")], check=True, timeout=300, capture_output=True)
    units = (workdir / "out.txt").read_text().split("\n")[:-1]
    assert len(units) == len(distinct)
    return {v: bytes.fromhex(u).decode("utf-16-be", "surrogatepass") for v, u in zip(distinct, units)}
