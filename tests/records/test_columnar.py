"""Columnar reader against kafka-python (oracle) and engine against engine."""

from __future__ import annotations

import random
import struct

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_columnar_gen import (
    CODECS,
    Rec,
    compressible,
    control_batch,
    fix_crc,
    kp_batch,
    oracle_batches,
    oracle_rows,
    random_records,
    random_segment,
    write_segment,
)

from segtools.errors import CorruptBatchError, FormatError, SegtoolsError, TruncatedBatchError
from segtools.records import columnar
from segtools.records.batches import iter_batches
from segtools.records.schema import BATCH_SCHEMA, RECORD_SCHEMA

ENGINES = columnar.available_engines()
ORACLE_COLUMNS = ["offset", "timestamp_ms", "timestampType", "key", "value", "headers",
                  "leader_epoch", "batch_base_offset", "producer_id", "producer_epoch",
                  "sequence", "is_transactional", "is_control", "crc_valid", "magic"]


def test_numba_engine_is_available_here():
    # the numba kernel is the point of this module; CI must exercise it, not only the fallback
    assert ENGINES == ["numba", "vectorised", "python"]


def _rows(table: pa.Table) -> list[dict]:
    return table.select(ORACLE_COLUMNS).to_pylist()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("codec", list(CODECS))
def test_records_match_kafka_python_per_codec(tmp_path, engine, codec):
    rng = random.Random(CODECS[codec])
    data = b"".join(
        kp_batch(random_records(rng, 40, compress=True), base_offset=100 + 50 * i,
                 codec=CODECS[codec], leader_epoch=i)
        for i in range(4))
    path = write_segment(tmp_path, data)
    table = columnar.read_records(path, engine=engine)
    assert table.schema == RECORD_SCHEMA
    assert _rows(table) == oracle_rows(data)
    assert set(table.column("compression").to_pylist()) == {codec}
    assert table.column("topic").to_pylist() == ["topic-a"] * table.num_rows
    assert table.column("partition").to_pylist() == [3] * table.num_rows


@pytest.mark.parametrize("seed", range(25))
def test_random_segments_match_oracle_and_engines_agree(tmp_path, seed):
    data = random_segment(random.Random(seed))
    path = write_segment(tmp_path, data)
    tables = {e: columnar.read_records(path, engine=e) for e in ENGINES}
    expected = oracle_rows(data)
    for engine, table in tables.items():
        assert _rows(table) == expected, engine
    assert tables["python"].equals(tables[ENGINES[0]])
    batches = {e: columnar.read_batch_table(path, engine=e) for e in ENGINES}
    assert batches["python"].equals(batches[ENGINES[0]])
    got = batches["python"].to_pylist()
    want = oracle_batches(data)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert {k: g[k] for k in w} == w


@pytest.mark.parametrize("engine", ENGINES)
def test_timestamp_columns_and_log_append_time(tmp_path, engine):
    recs = [Rec(b"a", b"1", [], 1_600_000_000_123), Rec(b"b", b"2", [], 1_600_000_000_456)]
    data = (kp_batch(recs, base_offset=0)
            + kp_batch(recs, base_offset=2, log_append_time=1_700_000_000_999))
    t = columnar.read_records(write_segment(tmp_path, data), engine=engine)
    assert t.column("timestamp_ms").to_pylist() == [1_600_000_000_123, 1_600_000_000_456,
                                                    1_700_000_000_999, 1_700_000_000_999]
    us = t.column("timestamp").cast(pa.int64()).to_pylist()
    assert us == [1_600_000_000_123_000, 1_600_000_000_456_000,
                  1_700_000_000_999_000, 1_700_000_000_999_000]
    assert t.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert t.column("timestampType").to_pylist() == [0, 0, 1, 1]


@pytest.mark.parametrize("engine", ENGINES)
def test_headers_null_when_absent_and_values_nullable(tmp_path, engine):
    recs = [Rec(None, None, []), Rec(b"k", b"", [("h1", None), ("h2", b"\x00\xff"), ("", b"")])]
    t = columnar.read_records(write_segment(tmp_path, kp_batch(recs, base_offset=5)), engine=engine)
    assert t.column("headers").to_pylist() == [
        None, [{"key": "h1", "value": None}, {"key": "h2", "value": b"\x00\xff"},
               {"key": "", "value": b""}]]
    assert t.column("key").to_pylist() == [None, b"k"]
    assert t.column("value").to_pylist() == [None, b""]


@pytest.mark.parametrize("engine", ENGINES)
def test_sequence_wraps_like_kafka(tmp_path, engine):
    recs = [Rec(b"k", b"v%d" % i) for i in range(4)]
    data = kp_batch(recs, base_offset=0, producer_id=9, producer_epoch=1,
                    base_sequence=2**31 - 2)
    t = columnar.read_records(write_segment(tmp_path, data), engine=engine)
    # incrementSequence: MAX-1, MAX, then wrap to 0, 1 (FORMATS.md 1.4)
    assert t.column("sequence").to_pylist() == [2**31 - 2, 2**31 - 1, 0, 1]
    assert t.column("producer_id").to_pylist() == [9] * 4


@pytest.mark.parametrize("engine", ENGINES)
def test_control_batches_and_include_control(tmp_path, engine):
    recs = [Rec(b"k", b"v")] * 3
    data = (kp_batch(recs, base_offset=0, producer_id=7, producer_epoch=0, base_sequence=0,
                     transactional=True)
            + control_batch(base_offset=3, producer_id=7, producer_epoch=0, commit=True))
    path = write_segment(tmp_path, data)
    t = columnar.read_records(path, engine=engine)
    assert t.column("is_control").to_pylist() == [False] * 3 + [True]
    assert t.column("is_transactional").to_pylist() == [True] * 4
    assert t.column("key").to_pylist()[3] == b"\x00\x00\x00\x01"        # COMMIT
    assert t.column("value").to_pylist()[3] == b"\x00\x00\x00\x00\x00\x03"
    t2 = columnar.read_records(path, engine=engine, include_control=False)
    assert t2.column("offset").to_pylist() == [0, 1, 2]


@pytest.mark.parametrize("engine", ENGINES)
def test_offset_and_timestamp_filters(tmp_path, engine):
    batches = []
    for b in range(5):
        recs = [Rec(b"k", b"v", [], 1_000 + 10 * (b * 4 + i)) for i in range(4)]
        batches.append(kp_batch(recs, base_offset=b * 4))
    path = write_segment(tmp_path, b"".join(batches))
    t = columnar.read_records(path, engine=engine, start_offset=6, end_offset=13)
    assert t.column("offset").to_pylist() == list(range(6, 13))
    t = columnar.read_records(path, engine=engine, start_timestamp=1_050, end_timestamp=1_100)
    assert t.column("timestamp_ms").to_pylist() == [1_050, 1_060, 1_070, 1_080, 1_090]
    t = columnar.read_records(path, engine=engine, start_offset=100)
    assert t.num_rows == 0 and t.schema == RECORD_SCHEMA


@pytest.mark.parametrize("engine", ENGINES)
def test_max_rows_chunks_concatenate_to_the_whole(tmp_path, engine):
    data = random_segment(random.Random(99), n_batches=20)
    path = write_segment(tmp_path, data)
    whole = columnar.read_records(path, engine=engine)
    chunks = list(columnar.iter_record_batches(path, engine=engine, max_rows=25))
    assert len(chunks) > 3
    # a chunk only exceeds max_rows when one batch alone is larger
    assert all(c.num_rows <= 25 or c.column("batch_base_offset").unique().__len__() == 1
               for c in chunks)
    assert pa.Table.from_batches(chunks).equals(whole)
    scans = list(columnar.iter_batch_batches(path, engine=engine, max_rows=3))
    assert all(s.num_rows <= 3 for s in scans)
    assert pa.Table.from_batches(scans, schema=BATCH_SCHEMA).equals(columnar.read_batch_table(path))


@pytest.mark.parametrize("engine", ENGINES)
def test_bad_crc_rows_still_emitted(tmp_path, engine):
    recs = [Rec(b"key", compressible(random.Random(1), 50)) for _ in range(3)]
    good = kp_batch(recs, base_offset=0)
    bad = bytearray(kp_batch(recs, base_offset=3))
    bad[-5] ^= 0x01        # inside the last value: structure intact, CRC wrong
    data = good + bytes(bad)
    t = columnar.read_records(write_segment(tmp_path, data), engine=engine)
    assert t.column("crc_valid").to_pylist() == [True] * 3 + [False] * 3
    assert _rows(t) == oracle_rows(data)
    s = columnar.read_batch_table(write_segment(tmp_path, data), engine=engine)
    assert s.column("crc_valid").to_pylist() == [True, False]


@pytest.mark.parametrize("engine", ENGINES)
def test_torn_tail_stops_silently(tmp_path, engine):
    data = b"".join(kp_batch([Rec(b"k", b"v%d" % i)], base_offset=i) for i in range(3))
    for cut in (1, 17, 40, len(data) // 3 - 1):
        path = write_segment(tmp_path, data[:len(data) - cut], name=f"t-{cut}")
        t = columnar.read_records(path, engine=engine)
        assert t.column("offset").to_pylist() == [0, 1]
        assert columnar.read_batch_table(path, engine=engine).num_rows == 2


@pytest.mark.parametrize("engine", ENGINES)
def test_zero_filled_tail_is_corrupt_with_location(tmp_path, engine):
    data = kp_batch([Rec(b"k", b"v")], base_offset=0)
    path = write_segment(tmp_path, data + bytes(64))
    with pytest.raises(CorruptBatchError) as info:
        columnar.read_records(path, engine=engine)
    assert info.value.position == len(data)
    assert info.value.field == "batch_length"
    assert "smaller than minimum record overhead (14)" in str(info.value)
    # rows before the damage are still yielded by the iterator
    it = columnar.iter_record_batches(path, engine=engine)
    assert next(it).num_rows == 1
    with pytest.raises(CorruptBatchError):
        next(it)


def _record_body_corruptions() -> list[tuple[str, bytes]]:
    """Uncompressed batches whose records are structurally broken (CRC fixed afterwards so
    only the structure is wrong)."""
    base = bytearray(kp_batch([Rec(b"key", b"value", [("h", b"x")])] * 2, base_offset=10))
    cases = []
    more = bytearray(base)
    struct.pack_into(">i", more, 57, 3)              # recordsCount larger than the records
    cases.append(("count_too_big", more))
    fewer = bytearray(base)
    struct.pack_into(">i", fewer, 57, 1)             # bytes left after the declared records
    cases.append(("count_too_small", fewer))
    negative = bytearray(base)
    struct.pack_into(">i", negative, 57, -1)
    cases.append(("count_negative", negative))
    huge = bytearray(base)
    struct.pack_into(">i", huge, 57, 2**31 - 1)     # must not size buffers by the count
    cases.append(("count_huge", huge))
    longer = bytearray(base)
    longer[61] = longer[61] + 2                      # first record length +1 (zig-zag)
    cases.append(("record_length", longer))
    overlong = bytearray(base)
    overlong[61:66] = b"\xff\xff\xff\xff\xff"        # varint that never terminates
    cases.append(("varint", overlong))
    out = []
    for name, buf in cases:
        fix_crc(buf)
        out.append((name, bytes(buf)))
    return out


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name,data", _record_body_corruptions(), ids=lambda v: v if isinstance(v, str) else "")
def test_broken_records_raise_located_format_error(tmp_path, engine, name, data):
    prefix = kp_batch([Rec(b"a", b"b")], base_offset=0)
    path = write_segment(tmp_path, prefix + data)
    with pytest.raises(FormatError) as info:
        columnar.read_records(path, engine=engine)
    err = info.value
    # the failing record's byte (or the count field) inside the broken batch, as the object
    # reader reports it: one decoder behind every entry point
    assert len(prefix) <= err.position <= len(prefix) + len(data) and err.base_offset == 10
    with pytest.raises(FormatError) as obj:
        for batch in iter_batches(path):
            list(batch.records())
    assert (type(obj.value), obj.value.position, obj.value.field, str(obj.value)) == (
        type(err), err.position, err.field, str(err))
    assert err.path == str(path) and err.field
    assert "00000000000000000000.log @ position" in str(err)


def test_engines_raise_the_same_error(tmp_path):
    for name, data in _record_body_corruptions():
        path = write_segment(tmp_path, data, name=f"e-{name}")
        messages = set()
        for engine in ENGINES:
            with pytest.raises(FormatError) as info:
                columnar.read_records(path, engine=engine)
            messages.add((type(info.value), str(info.value)))
        assert len(messages) == 1, messages


@pytest.mark.parametrize("seed", range(6))
def test_mutated_bytes_give_only_segtools_errors_and_engines_agree(tmp_path, seed):
    rng = random.Random(1000 + seed)
    data = bytearray(random_segment(rng, n_batches=6))
    for trial in range(40):
        buf = bytearray(data)
        for _ in range(rng.randrange(1, 6)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        if rng.random() < 0.3:
            buf = buf[:rng.randrange(len(buf))]
        path = write_segment(tmp_path, bytes(buf), name=f"m-{trial}")
        outcomes = []
        for engine in ENGINES:
            try:
                outcomes.append(("ok", columnar.read_records(path, engine=engine,
                                                             max_uncompressed_bytes=1 << 20)))
            except SegtoolsError as exc:
                outcomes.append(("err", (type(exc).__name__, exc.position)))
        if outcomes[0][0] == "ok" and outcomes[1][0] == "ok":
            assert outcomes[0][1].equals(outcomes[1][1])
        else:
            assert outcomes[0] == outcomes[1]


def test_crc_kernel_matches_segtools_crc():
    from segtools.primitives import crc
    from segtools.records import jit_kernel

    if not jit_kernel.HARDWARE_CRC_IN_KERNEL:
        pytest.skip("no hardware CRC routine here; the per-batch crc.crc32c path is used")
    rng = np.random.default_rng(5)
    buf = rng.integers(0, 256, 5000, dtype=np.uint8)
    starts = rng.integers(0, 2500, 200).astype(np.int64)
    ends = starts + rng.integers(0, 2500, 200)
    out = np.zeros(200, np.uint32)
    jit_kernel.crc_ranges(buf, starts, ends, out)
    raw = buf.tobytes()
    assert [int(v) for v in out] == [crc.crc32c(raw[s:e]) for s, e in zip(starts, ends)]


def test_invalid_utf8_header_key_replaced_like_python_engine(tmp_path):
    builder_data = bytearray(kp_batch([Rec(b"k", b"v", [("ab", b"1")])], base_offset=0))
    i = builder_data.index(b"ab")
    builder_data[i] = 0xFF                            # not UTF-8
    fix_crc(builder_data)
    path = write_segment(tmp_path, bytes(builder_data))
    tables = [columnar.read_records(path, engine=e) for e in ENGINES]
    assert tables[0].column("headers").to_pylist() == [[{"key": "\ufffdb", "value": b"1"}]]
    assert tables[0].equals(tables[-1])


def test_numba_missing_falls_back_to_python(tmp_path):
    import subprocess
    import sys

    path = write_segment(tmp_path, kp_batch([Rec(b"k", b"v")], base_offset=4))
    code = (
        "import sys; sys.modules['numba'] = None\n"
        "from segtools.records import columnar\n"
        "assert columnar.available_engines() == ['vectorised', 'python'], columnar.available_engines()\n"
        f"t = columnar.read_records({str(path)!r})\n"
        "print(t.column('offset').to_pylist())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[4]"


def test_input_files_are_not_modified(tmp_path):
    data = random_segment(random.Random(3))
    path = write_segment(tmp_path, data)
    path.chmod(0o444)
    before = path.stat().st_mtime_ns
    for engine in ENGINES:
        columnar.read_records(path, engine=engine)
        columnar.read_batch_table(path, engine=engine)
    assert path.read_bytes() == data and path.stat().st_mtime_ns == before


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("codec", ["lz4", "zstd", "gzip"])
def test_highly_compressed_batch_and_decompression_limit(tmp_path, engine, codec):
    from segtools.errors import CompressionError

    big = Rec(b"k", b"\x00" * (3 << 20))            # 3 MiB of zeros: ratio far above 32
    data = kp_batch([big, Rec(b"k2", b"tail")], base_offset=0, codec=CODECS[codec])
    path = write_segment(tmp_path, data)
    t = columnar.read_records(path, engine=engine)
    assert _rows(t) == oracle_rows(data)
    with pytest.raises(CompressionError) as info:
        columnar.read_records(path, engine=engine, max_uncompressed_bytes=1 << 20)
    assert info.value.position == 61 and info.value.base_offset == 0


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("window", [64, 150, 1000, 4096])
@pytest.mark.parametrize("prefetch", [True, False])
def test_small_read_windows_give_the_same_tables(tmp_path, monkeypatch, engine, window, prefetch):
    # batches straddle window ends and many are larger than the window
    data = random_segment(random.Random(77), n_batches=15)
    path = write_segment(tmp_path, data)
    want_rows = columnar.read_records(path, engine=engine)
    want_batches = columnar.read_batch_table(path, engine=engine)
    monkeypatch.setattr("segtools.records.columnar.window._SCAN_BYTES", window)
    monkeypatch.setattr("segtools.records.columnar.window._PREFETCH", prefetch)
    monkeypatch.setattr("segtools.records.columnar.window._HAVE_PREADV", prefetch)   # also cover the pread fallback
    assert columnar.read_records(path, engine=engine).equals(want_rows)
    assert columnar.read_batch_table(path, engine=engine).equals(want_batches)
    # torn tails and zero tails are judged at the file end, not at a window end
    last = want_batches.column("size")[-1].as_py()
    for cut in (1, last // 2, last - 1):
        torn = write_segment(tmp_path, data[:-cut], name=f"torn-{cut}")
        assert columnar.read_batch_table(torn, engine=engine).num_rows == want_batches.num_rows - 1
    zero = write_segment(tmp_path, data + bytes(100), name="zero-9")
    with pytest.raises(CorruptBatchError) as info:
        columnar.read_batch_table(zero, engine=engine)
    assert info.value.position == len(data)


def test_timestamp_filters_accept_datetimes_naive_as_utc(tmp_path):
    import datetime

    recs = [Rec(b"k", b"v", [], 1_700_000_000_000 + i * 1000) for i in range(5)]
    path = write_segment(tmp_path, kp_batch(recs, base_offset=0))
    start = datetime.datetime(2023, 11, 14, 22, 13, 21)                 # = ...001000 ms UTC
    end = datetime.datetime(2023, 11, 14, 22, 13, 23, tzinfo=datetime.UTC)
    t = columnar.read_records(path, start_timestamp=start, end_timestamp=end)
    assert t.column("offset").to_pylist() == [1, 2]
    with pytest.raises(SegtoolsError):
        columnar.read_records(path, start_timestamp="yesterday")
    with pytest.raises(SegtoolsError):
        columnar.read_records(path, engine="fortran")


def _repeated_segment(tmp_path, name: str, size: int):
    rng = random.Random(8)
    template = bytearray(kp_batch(random_records(rng, 50, compress=False), base_offset=0))
    out = bytearray()
    offset = 0
    while len(out) < size:
        struct.pack_into(">q", template, 0, offset)      # base offset: not under the CRC
        out += template
        offset += 50
    return write_segment(tmp_path, bytes(out), name=name), offset


def test_traced_memory_does_not_grow_with_the_segment(tmp_path, monkeypatch):
    import tracemalloc

    monkeypatch.setattr("segtools.records.columnar.window._SCAN_BYTES", 1 << 20)
    peaks = []
    for name, size in (("small-0", 4 << 20), ("large-0", 16 << 20)):
        path, records = _repeated_segment(tmp_path, name, size)
        for fn in (columnar.iter_record_batches, columnar.iter_batch_batches):
            next(iter(fn(path)))          # warm: kernels loaded, caches filled
        tracemalloc.start()
        seen = sum(b.num_rows for b in columnar.iter_record_batches(path, max_rows=4096))
        seen_batches = sum(b.num_rows for b in columnar.iter_batch_batches(path))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert seen == records and seen_batches == records // 50
    # numpy buffers (traced) are bounded by the window and max_rows, not by the file
    assert peaks[1] < peaks[0] * 1.5 + (1 << 20), peaks
    assert peaks[1] < 24 << 20, peaks


def test_read_ahead_works_in_a_forked_child(tmp_path, monkeypatch):
    import os
    import signal

    monkeypatch.setattr("segtools.records.columnar.window._SCAN_BYTES", 256)   # many windows: read-ahead in use
    data = random_segment(random.Random(12))
    path = write_segment(tmp_path, data)
    want = columnar.read_records(path).num_rows      # parent creates the reader thread
    pid = os.fork()
    if pid == 0:                                     # child: must not wait on a dead thread
        ok = False
        try:
            signal.signal(signal.SIGALRM, lambda *a: os._exit(3))
            signal.alarm(30)
            ok = columnar.read_records(path).num_rows == want
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_per_batch_crc_fallback_gives_the_same_tables(tmp_path, monkeypatch):
    from segtools.records import jit_kernel

    data = bytearray(random_segment(random.Random(21)))
    data[-3] ^= 0x40                       # one bad CRC among good ones
    path = write_segment(tmp_path, bytes(data))
    want = columnar.read_batch_table(path)
    assert not all(want.column("crc_valid").to_pylist())
    monkeypatch.setattr(jit_kernel, "HARDWARE_CRC_IN_KERNEL", False)
    assert columnar.read_batch_table(path).equals(want)


def test_broken_kernel_falls_back_with_a_warning(tmp_path, monkeypatch):
    def broken(kernel):
        raise RuntimeError("LLVM ERROR: simulated")

    monkeypatch.setattr("segtools.records.columnar.engines._KERNEL_TRIED", False)
    monkeypatch.setattr("segtools.records.columnar.engines._KERNEL", None)
    monkeypatch.setattr("segtools.records.columnar.engines._kernel_works", broken)
    with pytest.warns(RuntimeWarning, match="python engine"):
        assert columnar.available_engines() == ["vectorised", "python"]
    path = write_segment(tmp_path, kp_batch([Rec(b"k", b"v")], base_offset=2))
    assert columnar.read_records(path).column("offset").to_pylist() == [2]
    with pytest.raises(SegtoolsError):
        columnar.read_records(path, engine="numba")


def test_kernel_self_test_passes_on_the_spec_example():
    from segtools.records import jit_kernel
    from segtools.records.columnar import engines as columnar_engines

    assert columnar_engines._kernel_works(jit_kernel)


_FUZZ_BASES = [random_segment(random.Random(500 + i), n_batches=5) for i in range(3)]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_hypothesis_hostile_bytes_only_segtools_errors(tmp_path, data):
    base = bytearray(data.draw(st.sampled_from(_FUZZ_BASES)))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(base) - 1))
        base[at:at + 4] = data.draw(st.binary(min_size=1, max_size=4))
    if data.draw(st.booleans()):
        base = base[:data.draw(st.integers(0, len(base)))]
    path = write_segment(tmp_path, bytes(base), name="fz-0")
    outcomes = []
    for engine in ENGINES:
        try:
            t = columnar.read_records(path, engine=engine, max_uncompressed_bytes=1 << 20)
            s = columnar.read_batch_table(path, engine=engine)
            outcomes.append(("ok", t, s))
        except SegtoolsError as exc:
            assert exc.position is None or 0 <= exc.position <= len(base)
            outcomes.append(("err", type(exc).__name__, str(exc)))
    assert outcomes[0][0] == outcomes[1][0]
    if outcomes[0][0] == "ok":
        assert outcomes[0][1].equals(outcomes[1][1]) and outcomes[0][2].equals(outcomes[1][2])
    else:
        assert outcomes[0] == outcomes[1]


def _patched(data: bytes, **fields: int) -> bytes:
    """A v2 batch with header fields overwritten (FORMATS.md 1.1 offsets), CRC recomputed."""
    where = {"magic": (16, ">b"), "attributes": (21, ">h"), "base_timestamp": (27, ">q"),
             "max_timestamp": (35, ">q"), "records_count": (57, ">i")}
    buf = bytearray(data)
    for name, value in fields.items():
        off, fmt = where[name]
        struct.pack_into(fmt, buf, off, value)
    fix_crc(buf)
    return bytes(buf)


@pytest.mark.parametrize("engine", ENGINES)
def test_empty_batch_after_compaction(tmp_path, engine):
    one = kp_batch([Rec(b"k", b"v")], base_offset=0)
    # header only: recordsCount 0 and no record bytes (batch_length 49)
    empty = bytearray(one[:61])
    struct.pack_into(">qi", empty, 0, 1, 49)
    struct.pack_into(">i", empty, 57, 0)
    fix_crc(empty)
    path = write_segment(tmp_path, one + bytes(empty) + kp_batch([Rec(b"k", b"w")], base_offset=2))
    t = columnar.read_records(path, engine=engine)
    assert t.column("offset").to_pylist() == [0, 2]
    s = columnar.read_batch_table(path, engine=engine)
    assert s.column("records_count").to_pylist() == [1, 0, 1]
    assert s.column("size").to_pylist()[1] == 61 and all(s.column("crc_valid").to_pylist())


@pytest.mark.parametrize("engine", ENGINES)
def test_delete_horizon_batch(tmp_path, engine):
    recs = [Rec(b"k", b"v", [], 1_700_000_000_000 + i) for i in range(3)]
    data = _patched(kp_batch(recs, base_offset=0), attributes=0x40)
    t = columnar.read_records(write_segment(tmp_path, data), engine=engine)
    assert _rows(t) == oracle_rows(data)
    s = columnar.read_batch_table(write_segment(tmp_path, data), engine=engine)
    assert s.column("has_delete_horizon").to_pylist() == [True]


@pytest.mark.parametrize("engine", ENGINES)
def test_unknown_codec_and_magic_raise_located_errors(tmp_path, engine):
    from segtools.errors import CompressionError

    good = kp_batch([Rec(b"k", b"v")], base_offset=0)
    bad_codec = _patched(kp_batch([Rec(b"k", b"v")], base_offset=1), attributes=6)
    path = write_segment(tmp_path, good + bad_codec, name="codec-0")
    with pytest.raises(CompressionError) as info:
        columnar.read_records(path, engine=engine)
    # where the compressed records start, as the object reader reports it
    assert info.value.position == len(good) + 61 and info.value.base_offset == 1
    assert columnar.read_batch_table(path, engine=engine).column("compression").to_pylist() == [
        "none", "unknown(6)"]
    magic3 = _patched(kp_batch([Rec(b"k", b"v")], base_offset=1), magic=3)
    path = write_segment(tmp_path, good + magic3, name="magic-0")
    # any magic >= 2 is a v2 batch whose records Kafka decodes (FileLogInputStream)
    assert columnar.read_records(path, engine=engine).column("offset").to_pylist() == [0, 1]
    assert columnar.read_batch_table(path, engine=engine).column("magic").to_pylist() == [2, 3]


@pytest.mark.parametrize("engine", ENGINES)
def test_v2_batch_shorter_than_its_header(tmp_path, engine):
    good = kp_batch([Rec(b"k", b"v")], base_offset=0)
    short = bytearray(good[:40])
    struct.pack_into(">i", short, 8, 28)           # 40 bytes in all: magic 2, < 61
    path = write_segment(tmp_path, good + bytes(short))
    # Kafka loads the 61-byte header past the batch's end; the file ends first
    with pytest.raises(TruncatedBatchError, match="Failed to load record batch") as info:
        columnar.read_batch_table(path, engine=engine)
    assert info.value.position == len(good) and info.value.field == "batch_length"
    # with bytes after it, the header is read from them and the walk resumes 12+28 later
    path = write_segment(tmp_path, good + bytes(short) + good, name="t-9")
    t = columnar.read_batch_table(path, engine=engine)
    assert t.column("position").to_pylist() == [0, len(good), len(good) + 40]
    assert t.column("crc_valid").to_pylist()[1] is False


@pytest.mark.parametrize("engine", ENGINES)
def test_garbage_timestamps_stay_visible(tmp_path, engine):
    recs = [Rec(b"k", b"v", [], 0)]
    data = _patched(kp_batch(recs, base_offset=0), base_timestamp=2**62)
    t = columnar.read_records(write_segment(tmp_path, data), engine=engine)
    assert t.column("timestamp_ms").to_pylist() == [2**62]
    assert t.column("timestamp").to_pylist() == [None]     # not representable in microseconds
