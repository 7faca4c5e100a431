"""The column-wise text path (segtools/dump/fast_text.py) prints exactly what the object path
prints: stdout, stderr and exit status byte for byte, on generated segments that mix every
kind of batch (kafka-python's builders, an independent writer) and on the real broker files in
tests/data/realdata. The window is shrunk so that batches straddle window ends, and every case
checks that the fast path really printed batches (a test that never took it would prove
nothing). The object path itself is held to the real kafka-dump-log by
tests/realkafka/test_dump_parity.py; tests/realkafka/test_dump_fast_parity.py holds the fast
path to it directly."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import crc32c as _crc32c
import pytest
from click.testing import CliRunner
from dump_builders import SEG, control_batch, legacy_set, v2_batch, with_attributes

from segtools.cli.dump import dump
from segtools.dump import fast_text, log_dump

REALDATA = Path(__file__).resolve().parents[1] / "data" / "realdata"
TS = 1_700_000_000_000


def _resign(batch: bytes | bytearray) -> bytes:
    buf = bytearray(batch)
    struct.pack_into(">I", buf, 17, _crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


#: batch kinds a healthy log may hold (tests/realkafka/test_dump_fast_parity.py feeds these to
#: the real tool too); the rest are damage
HEALTHY_KINDS = ["plain", "plain", "plain", "plain", "tiny", "producer", "txn", "control",
                 "gzip", "lz4", "zstd", "snappy", "not_utf8", "not_utf8_key", "not_utf8_header",
                 "log_append", "horizon", "gap", "backwards", "legacy", "seq_wrap", "big_varint",
                 "many_headers"]
DAMAGED_KINDS = ["crc_bad", "corrupt_record", "empty"]


def varied_batches(rng: random.Random, kinds: list[str] | None = None,
                   count: int = 60) -> list[bytes]:
    """Every shape the fast path takes or must hand over, in a random order of kinds."""
    out: list[bytes] = []
    offset = 0

    def plain(n: int, **kw: object) -> bytes:
        nonlocal offset
        recs = []
        headers = []
        for i in range(n):
            key = None if rng.random() < 0.2 else f"k{offset + i}-é".encode()
            value = None if rng.random() < 0.1 else rng.choice(
                [b"", b"v" * rng.randint(1, 300), "caf\u00e9 \u2603 \U0001F600".encode(),
                 b"line\nbreak\r\n", b"comma,semi;", bytes(range(32, 127))])
            recs.append((key, value, TS + offset + i))
            headers.append([(f"h{j}", None if j == 1 else b"x" * j)
                            for j in range(rng.choice([0, 0, 1, 3]))])
        batch = v2_batch(recs, base_offset=offset, headers=headers, **kw)  # type: ignore[arg-type]
        offset += n
        return batch

    kinds = HEALTHY_KINDS + DAMAGED_KINDS if kinds is None else kinds
    for _ in range(count):
        kind = rng.choice(kinds)
        if kind == "plain":
            out.append(plain(rng.randint(1, 40), leader_epoch=rng.randint(0, 5)))
        elif kind == "tiny":
            out.extend(plain(1) for _ in range(rng.randint(1, 30)))
        elif kind == "producer":
            out.append(plain(rng.randint(1, 9), producer_id=4242, producer_epoch=3,
                             base_sequence=rng.randint(0, 1000)))
        elif kind == "seq_wrap":
            out.append(plain(6, producer_id=9, producer_epoch=0, base_sequence=2**31 - 3))
        elif kind == "txn":
            out.append(plain(rng.randint(1, 5), producer_id=77, producer_epoch=1,
                             base_sequence=0, transactional=True))
        elif kind == "control":
            out.append(control_batch(rng.choice([0, 1]), base_offset=offset, producer_id=77,
                                     producer_epoch=1, coordinator_epoch=5, timestamp=TS))
            offset += 1
        elif kind in ("gzip", "lz4", "zstd", "snappy"):
            codec = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}[kind]
            out.append(plain(rng.randint(1, 20), compression=codec))
        elif kind == "not_utf8":
            out.append(v2_batch([(b"k", b"\xff\xfe bad", TS), (None, b"\xed\xa0\x80", TS),
                                 (b"ok", b"\xc3", TS)], base_offset=offset))
            offset += 3
        elif kind == "not_utf8_key":
            out.append(v2_batch([(b"\xf0\x28\x8c\x28", b"v", TS)], base_offset=offset))
            offset += 1
        elif kind == "not_utf8_header":
            batch = v2_batch([(b"k", b"v", TS)], base_offset=offset,
                             headers=[[("h\u00e9", b"1")]])
            out.append(_resign(batch.replace("h\u00e9".encode(), b"h\xff\xfe")))  # same length
            offset += 1
        elif kind == "log_append":
            out.append(with_attributes(plain(rng.randint(1, 5)), 0x08))
        elif kind == "horizon":
            out.append(with_attributes(plain(rng.randint(1, 5)), 0x40))
        elif kind == "crc_bad":
            batch = bytearray(plain(3))
            batch[-2] ^= 0x01
            out.append(bytes(batch))
        elif kind == "corrupt_record":
            batch = bytearray(plain(2))
            batch[61] ^= 0x04  # first record's length +-2: its fields no longer end there
            out.append(_resign(batch))
        elif kind == "gap":
            offset += rng.randint(2, 1000)
            out.append(plain(3))
        elif kind == "backwards":
            offset = max(0, offset - rng.randint(1, 50))
            out.append(plain(3))
        elif kind == "legacy":
            magic = rng.choice([0, 1])
            out.append(legacy_set([(offset + i, b"lk", b"lv", TS) for i in range(3)],
                                  magic=magic))
            offset += 3
        elif kind == "empty":
            batch = bytearray(plain(1))
            struct.pack_into(">i", batch, 57, 0)  # records_count 0 over one record's bytes
            out.append(_resign(batch))
        elif kind == "many_headers":  # past fast_text._MAX_HEADERS: the object path's
            out.append(v2_batch([(b"k", b"v", TS)], base_offset=offset,
                                headers=[[(f"h{j}", b"") for j in range(70)]]))
            offset += 1
        elif kind == "big_varint":
            # a timestamp delta of 8 varint bytes and an offset jump near the int32 edge
            batch = v2_batch([(b"a", b"b", TS), (b"c", b"d", TS + 2**50)], base_offset=offset)
            out.append(batch)
            offset += 2
    return out


def _dump(monkeypatch: pytest.MonkeyPatch, fast: bool, *args: str) -> tuple[bytes, bytes, int]:
    monkeypatch.setattr(log_dump, "FAST_PATH", fast)
    result = CliRunner().invoke(dump, list(args), catch_exceptions=False)
    return result.stdout_bytes, result.stderr_bytes, result.exit_code


@pytest.fixture()
def fast_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every file takes the fast path whatever its size; returns a list that counts the
    batches the fast path printed."""
    monkeypatch.setattr(log_dump, "FAST_MIN_BYTES", 0)
    monkeypatch.setattr(log_dump, "FAST_FALLBACK", False)
    printed: list[int] = []
    emit = fast_text.FastLogText._emit

    def counting(self: fast_text.FastLogText, cols: dict, starts, *rest) -> None:  # type: ignore[no-untyped-def]
        printed.append(len(starts))
        emit(self, cols, starts, *rest)

    monkeypatch.setattr(fast_text.FastLogText, "_emit", counting)
    return printed


FLAG_SETS = [["--deep-iteration"], ["--print-data-log"],
             ["--print-data-log", "--kafka-version", "3.9"]]


@pytest.fixture()
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """4 KiB windows: batches straddle window ends all the time."""
    monkeypatch.setattr(fast_text, "WINDOW", 4096)
    monkeypatch.setattr(fast_text, "_DECOMPRESSED_WINDOW", 4096)  # and decompressed windows


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_fast_path_prints_what_the_object_path_prints(tmp_path: Path, seed: int,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      fast_batches: list[int],
                                                      small_windows: None) -> None:
    rng = random.Random(seed)
    batches = varied_batches(rng)
    log = tmp_path / f"{SEG}.log"
    tail = rng.choice([b"", b"\x00" * 10, batches[0][:40]])  # clean end, short junk, torn batch
    log.write_bytes(b"".join(batches) + tail)
    for flags in FLAG_SETS:
        fast_batches.clear()
        slow = _dump(monkeypatch, False, *flags, str(log))
        fast = _dump(monkeypatch, True, *flags, str(log))
        assert fast == slow, flags
        assert sum(fast_batches) > 20, (flags, fast_batches)
    assert b"Error: " in slow[1] or b"isvalid: false" in slow[0]  # the hand-overs were met


def test_fast_path_stops_where_the_object_path_stops(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     fast_batches: list[int],
                                                     small_windows: None) -> None:
    """A frame that ends the walk (size below 14) after plain batches, and --max-bytes cutting
    a batch: same lines, same trailer, same exit status."""
    rng = random.Random(7)
    plain = [v2_batch([(b"k", b"v" * rng.randint(1, 200), TS + i)], base_offset=i)
             for i in range(200)]
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(b"".join(plain) + struct.pack(">qi", 200, 3) + b"\x00" * 40)
    size = len(b"".join(plain))
    statuses = []
    for flags in (["--print-data-log"], ["--print-data-log", "--max-bytes", str(size // 2)],
                  ["--deep-iteration", "--max-bytes", str(size + 5)]):
        fast_batches.clear()
        slow = _dump(monkeypatch, False, *flags, str(log))
        fast = _dump(monkeypatch, True, *flags, str(log))
        assert fast == slow, flags
        assert sum(fast_batches) >= 50
        statuses.append(slow[2])
    # the broken frame is an error; cut off by --max-bytes it is not read at all
    assert statuses == [1, 0, 0]


def _real_files() -> list[Path]:
    return sorted(p for p in REALDATA.rglob("*")
                  if p.is_file() and p.suffix in (".log", ".checkpoint"))


def test_fast_path_on_the_real_broker_files(monkeypatch: pytest.MonkeyPatch,
                                            fast_batches: list[int]) -> None:
    """Every segment and snapshot of the four real broker data sets (Kafka 0.8 to 3.6),
    the first 128 KiB of each (--max-bytes: the object path is slow on the 3.6 MB one)."""
    files = _real_files()
    assert len(files) > 50
    args = ["--print-data-log", "--max-bytes", str(128 * 1024),
            "--files", ",".join(map(str, files))]
    slow = _dump(monkeypatch, False, *args)
    fast = _dump(monkeypatch, True, *args)
    assert fast == slow
    assert sum(fast_batches) > 1000
    assert b"endTxnMarker" in slow[0] or b"isControl: true" in slow[0]  # hand-overs met


def test_fast_path_is_taken_only_for_what_it_prints_exactly(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast_batches: list[int]) -> None:
    """A decoder other than Kafka's StringDecoder, --skip-record-metadata and the JSON outputs
    keep the object path (their text is not built column-wise)."""
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(b"".join(v2_batch([(b"k", b"v", TS)], base_offset=i) for i in range(50)))
    for flags in (["--print-data-log", "--value-decoder-class", "IntegerDecoder"],
                  ["--print-data-log", "--skip-record-metadata"],
                  ["--print-data-log", "--output", "ndjson"], ["--offsets-decoder"]):
        _dump(monkeypatch, True, *flags, str(log))
    assert fast_batches == []
    _dump(monkeypatch, True, "--print-data-log", str(log))
    assert sum(fast_batches) == 50


def test_fast_path_loads_no_heavy_module(tmp_path: Path) -> None:
    """A segment big enough for the fast path by default (4 MB) dumps without pandas, numba or
    pyspark in the process (pyarrow's conversions of Python objects import pandas when it is
    installed; the fast path builds its arrays from buffers to avoid that)."""
    import os
    import subprocess
    import sys
    import textwrap

    # null keys too: the text of a null key must not reach for pandas (numpy of an Arrow array)
    template = bytearray(v2_batch([(None if i % 3 == 0 else b"k%d" % i, b"v" * 100, TS + i)
                                   for i in range(120)]))
    log = tmp_path / f"{SEG}.log"
    with open(log, "wb") as f:
        for n in range(320):
            struct.pack_into(">q", template, 0, n * 120)
            f.write(template)
    assert log.stat().st_size >= log_dump.FAST_MIN_BYTES
    code = textwrap.dedent(f"""
        import io, sys
        from segtools.dump import DumpOptions, run_dump
        from segtools.dump import fast_text
        out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
        status = run_dump([{str(log)!r}], DumpOptions(print_data_log=True), out=out,
                          err=io.StringIO())
        out.flush()
        assert status == 0
        assert "segtools.dump.fast_text" in sys.modules
        lines = out.buffer.getvalue().count(b"\\n")
        heavy = sorted(m for m in sys.modules if m.split('.')[0] in
                       ('pyspark', 'pandas', 'numba'))
        print(lines, ','.join(heavy))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.stdout.split() == [str(2 + 320 + 320 * 120)]


def _small_windows_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                       ) -> tuple[Path, tuple[bytes, bytes, int]]:
    """200 small batches read through 4 KiB windows (every file on the fast path), and the
    object path's output for them."""
    monkeypatch.setattr(log_dump, "FAST_MIN_BYTES", 0)
    monkeypatch.setattr(fast_text, "WINDOW", 4096)
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(b"".join(v2_batch([(b"k", b"v" * 50, TS + i)] * 3, base_offset=3 * i)
                             for i in range(200)))
    slow = _dump(monkeypatch, False, "--print-data-log", str(log))
    return log, slow


def test_a_fast_path_bug_costs_no_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An unexpected exception inside the fast path hands the rest of the file to the object
    reader from the first batch not yet printed: the output is still complete and right."""
    log, slow = _small_windows_log(tmp_path, monkeypatch)
    calls = []
    emit = fast_text.FastLogText._emit

    def failing_later(self: fast_text.FastLogText, *args: object) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise ValueError("a bug")
        emit(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(fast_text.FastLogText, "_emit", failing_later)
    assert _dump(monkeypatch, True, "--print-data-log", str(log)) == slow
    assert len(calls) == 3


def test_a_decode_bug_while_a_window_prints_costs_no_line(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The text of a window is printed on a second thread while the next one is decoded: a
    bug in that decode lets the window in print finish first, then the object reader prints
    the rest from the first batch not yet printed, in order."""
    log, slow = _small_windows_log(tmp_path, monkeypatch)
    calls = []
    decode = fast_text.FastLogText._decode
    emit = fast_text.FastLogText._emit

    def slow_emit(self: fast_text.FastLogText, *args: object) -> None:
        import time
        time.sleep(0.05)   # still printing when the next decode fails
        emit(self, *args)  # type: ignore[arg-type]

    def failing_later(self: fast_text.FastLogText, *args: object) -> object:
        calls.append(1)
        if len(calls) == 4:
            raise ValueError("a bug")
        return decode(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(fast_text.FastLogText, "_emit", slow_emit)
    monkeypatch.setattr(fast_text.FastLogText, "_decode", failing_later)
    assert _dump(monkeypatch, True, "--print-data-log", str(log)) == slow
    assert len(calls) == 4


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_compressed_batches_take_the_fast_path(tmp_path: Path, codec: int,
                                               monkeypatch: pytest.MonkeyPatch,
                                               fast_batches: list[int],
                                               small_windows: None) -> None:
    """Every codec's batches (plain, transactional, one-record, with headers and null keys) are
    printed column-wise, byte for byte as the object path prints them; a compressed batch
    whose payload does not decompress is handed to the object path, which reports it."""
    rng = random.Random(codec)
    batches: list[bytes] = []
    offset = 0
    for i in range(60):
        n = rng.choice([1, 1, 5, 30])
        recs = [(None if rng.random() < 0.2 else f"k{j}".encode(),
                 # repetitive: the builder keeps a batch uncompressed when that is smaller
                 f"value {j} {rng.randrange(99)} ".encode() * rng.randint(0, 12), TS + j)
                for j in range(n)]
        headers = [[(f"h{j}", b"x")] if j % 3 == 0 else [] for j in range(n)]
        kw: dict[str, object] = {"compression": codec}
        if i % 7 == 3:
            kw.update(producer_id=77, producer_epoch=1, base_sequence=offset,
                      transactional=True)
        batches.append(v2_batch(recs, base_offset=offset, headers=headers, **kw))  # type: ignore[arg-type]
        offset += n
    broken = bytearray(batches[40])
    broken[61:] = b"\xff" * (len(broken) - 61)  # the compressed payload: no longer decodes
    batches[40] = _resign(broken)
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(b"".join(batches))
    outputs = []
    for flags in FLAG_SETS:
        fast_batches.clear()
        slow = _dump(monkeypatch, False, *flags, str(log))
        fast = _dump(monkeypatch, True, *flags, str(log))
        assert fast == slow, flags
        assert sum(fast_batches) == 59, flags  # all but the broken one
        outputs.append(slow[0])
    deep = outputs[0]  # --deep-iteration, 4.x: every batch line
    name = ["gzip", "snappy", "lz4", "zstd"][codec - 1]
    assert sum(b[22] & 7 == codec for b in batches) >= 40  # the builder did compress
    assert deep.count(f"compresscodec: {name} ".encode()) >= 40
    assert b"isTransactional: true" in deep


def test_fast_path_header_layout_reads_kafka_python_fields() -> None:
    """The fast path's header dtype (formats.record_batch.HEADER_NUMPY_DTYPE) reads a real
    4.4.0 broker's first batch as kafka-python's DefaultRecordBatch does (the independent
    oracle). (Written by fast24 for its version of the derivation.)"""
    import numpy as np
    from kafka.record.default_records import DefaultRecordBatch

    data = (Path(__file__).parents[1] / "data/realcluster/controller-fencing-4.4.0.log").read_bytes()
    head = np.frombuffer(data[:61], dtype=fast_text._HEADER)[0]
    batch = DefaultRecordBatch(data[:12 + int.from_bytes(data[8:12], "big")])
    assert int(head["base_offset"]) == batch.base_offset
    assert int(head["producer_id"]) == batch.producer_id
    assert int(head["producer_epoch"]) == batch.producer_epoch
    assert int(head["base_sequence"]) == batch.base_sequence
    assert int(head["last_offset_delta"]) == batch.last_offset_delta
    assert int(head["max_timestamp"]) == batch.max_timestamp
    assert int(head["crc"]) == batch.crc
    assert int(head["attributes"]) & 0x20 == (0x20 if batch.is_control_batch else 0)
    assert int(head["records_count"]) == batch.records_count


def test_transaction_markers_stay_on_the_fast_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   fast_batches: list[int]) -> None:
    """An exactly-once producer writes a COMMIT or ABORT marker after every transaction: the
    fast path prints the markers itself (one hand-over to the object reader per marker made
    such a segment slower than the object path). A marker the decoder refuses and a control
    type other than a transaction marker are still the object reader's, with its text."""
    rng = random.Random(5)
    parts: list[bytes] = []
    offset = 0
    for txn in range(60):
        for _ in range(rng.randint(1, 4)):
            n = rng.randint(1, 5)
            parts.append(v2_batch([(None, b"v%d" % i, TS + offset + i) for i in range(n)],
                                  base_offset=offset, producer_id=9, producer_epoch=0,
                                  base_sequence=offset, transactional=True))
            offset += n
        parts.append(control_batch(txn % 2, base_offset=offset, producer_id=9, producer_epoch=0,
                                   coordinator_epoch=7, timestamp=TS + offset))
        offset += 1
    log = tmp_path / f"{SEG}.log"
    log.write_bytes(b"".join(parts))
    for flags in (["--print-data-log"], ["--deep-iteration"]):
        fast_batches.clear()
        slow = _dump(monkeypatch, False, *flags, str(log))
        fast = _dump(monkeypatch, True, *flags, str(log))
        assert fast == slow, flags
        assert sum(fast_batches) == len(parts)   # every batch, markers included
    assert slow[0].count(b"isControl: true") == 60
    assert slow[0].count(b" endTxnMarker: COMMIT coordinatorEpoch: 7\n") == 30
    assert slow[0].count(b" endTxnMarker: ABORT coordinatorEpoch: 7\n") == 30

    # a marker whose value is cut short, and a LEADER_CHANGE control record: not printed here
    short = with_attributes(v2_batch([(struct.pack(">hh", 0, 1), b"\x00\x00\x00", TS)],
                                     base_offset=offset, producer_id=9, producer_epoch=0,
                                     transactional=True), 0x20)
    leader_change = with_attributes(v2_batch([(struct.pack(">hh", 0, 2), b"\x00\x00", TS)],
                                             base_offset=offset + 1), 0x20)
    log.write_bytes(b"".join(parts) + short + leader_change + parts[0])
    fast_batches.clear()
    slow = _dump(monkeypatch, False, "--print-data-log", str(log))
    assert _dump(monkeypatch, True, "--print-data-log", str(log)) == slow
    # the two odd control batches (and the batch after them) went through the object reader
    assert sum(fast_batches) == len(parts)
    assert b"Invalid value size found for end transaction marker" in slow[1] + slow[0]
