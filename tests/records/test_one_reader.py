"""One record reader, every entry point: equal rows AND equal errors.

Entry points (the engines behind one decoder interface, issue 24): the object reader
(``iter_batches`` + ``records()``), the Arrow tables with ``engine="python"``,
``engine="numba"`` (the JIT kernel, a hard dependency: never skipped) and
``engine="vectorised"`` (numpy columns, the engine of dump's text), ``read_batch_table``
(batch level), and dump's vectorised text engine (``dump/fast_text.py``, forced on for every
file, no fallback). On every input they must give the same rows, or the same error: class,
byte position, base offset, field and message; the vectorised text must be byte for byte the
object path's text, and its error line the object reader's error. Inputs: hand-built edge
files (expected errors written here from Kafka's rules, FORMATS.md 1.6-1.8), and Hypothesis
mutants (bit flips, truncations, hostile lengths) of segments written by kafka-python (an
independent writer) and of real broker files in tests/data/realdata.
"""

from __future__ import annotations

import io
import random
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batches import record_body, v2_batch, zz
from test_columnar_gen import Rec, fix_crc, kp_batch

from segtools.dump import log_dump
from segtools.dump.options import DumpOptions
from segtools.dump.runner import run_dump
from segtools.errors import CorruptBatchError, FormatError, TruncatedBatchError
from segtools.primitives.varint import encode_varint
from segtools.records import batches as batches_module
from segtools.records import columnar
from segtools.records.batches import iter_batches

REALDATA = Path(__file__).resolve().parents[1] / "data" / "realdata"
ENTRY_POINTS = ["objects", "python", "numba", "vectorised"]


@pytest.fixture(autouse=True)
def _no_settle_wait(monkeypatch):
    """Files here are damaged on purpose and never change: skip the readers' 0.15 s wait
    for a concurrent writer before reporting damage (tested in test_fifo_inputs etc.)."""
    monkeypatch.setattr(batches_module, "_SETTLE_SECONDS", 0.0)
    # dump's vectorised engine on every file however small, and an exception in it fails the
    # test instead of handing the file to the object reader
    monkeypatch.setattr(log_dump, "FAST_MIN_BYTES", 0)
    monkeypatch.setattr(log_dump, "FAST_FALLBACK", False)


def test_the_numba_engine_is_there():
    """The numba entry point is never silently the python engine."""
    assert columnar.available_engines()[0] == "numba"


def _error(exc: FormatError) -> tuple:
    return (type(exc).__name__, exc.position, exc.base_offset, exc.field, str(exc))


def _rows_objects(path: Path) -> tuple[str, object]:
    rows = []
    try:
        for batch in iter_batches(path):
            for r in batch.records():
                rows.append((r.offset, r.timestamp, r.sequence, r.key, r.value,
                             r.headers or None))
    except FormatError as exc:
        return "error", _error(exc)
    return "rows", rows


def _rows_arrow(path: Path, engine: str) -> tuple[str, object]:
    try:
        t = columnar.read_records(path, engine=engine)
    except FormatError as exc:
        return "error", _error(exc)
    # not to_pylist() of the whole table: garbage timestamps do not fit a datetime
    t = t.select(["offset", "timestamp_ms", "sequence", "key", "value", "headers"])
    return "rows", [(r["offset"], r["timestamp_ms"], r["sequence"], r["key"], r["value"],
                     [(h["key"], h["value"]) for h in r["headers"]] if r["headers"] else None)
                    for r in t.to_pylist()]


def _batches_objects(path: Path) -> tuple[str, object]:
    out = []
    try:
        for b in iter_batches(path):
            out.append((b.position, b.base_offset, b.last_offset, b.magic, b.crc_valid,
                        b.records_count, b.size))
    except FormatError as exc:
        return "error", _error(exc)
    return "batches", out


def _batches_scan(path: Path) -> tuple[str, object]:
    try:
        t = columnar.read_batch_table(path)
    except FormatError as exc:
        return "error", _error(exc)
    t = t.select(["position", "base_offset", "last_offset", "magic", "crc_valid",
                  "records_count", "size"])
    return "batches", [(r["position"], r["base_offset"], r["last_offset"], r["magic"],
                        r["crc_valid"], r["records_count"], r["size"]) for r in t.to_pylist()]


def _dump_text(path: Path, fast: bool) -> tuple[str, str, int]:
    """``dump --deep-iteration --print-data-log`` text, through the vectorised engine or not."""
    log_dump.FAST_PATH = fast
    # a UTF-8 byte stream, as a terminal's: the vectorised engine writes only to one
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", newline="")
    err = io.StringIO()
    try:
        rc = run_dump([str(path)], DumpOptions(deep_iteration=True, print_data_log=True),
                      out=out, err=err)
        out.flush()
    finally:
        log_dump.FAST_PATH = True
    return raw.getvalue().decode("utf-8", "surrogateescape"), err.getvalue(), rc


#: batches dump's vectorised engine printed itself (the rest it handed to the object reader)
FAST_PRINTED = [0]


def _counting_emit(emit):  # type: ignore[no-untyped-def]
    def counting(self, cols, starts, *rest):  # type: ignore[no-untyped-def]
        FAST_PRINTED[0] += len(starts)
        return emit(self, cols, starts, *rest)
    return counting


def assert_fast_text_agrees(path: Path, expected: tuple[str, object]) -> None:
    """Dump's vectorised text engine prints what the object path prints, and the error it
    reports is the object reader's (file, position, base offset, field, message)."""
    from segtools.dump import fast_text

    emit = fast_text.FastLogText._emit
    fast_text.FastLogText._emit = _counting_emit(emit)
    try:
        fast = _dump_text(path, True)
    finally:
        fast_text.FastLogText._emit = emit
    assert fast == _dump_text(path, False), "fast_text"
    kind, err = expected
    if kind == "error":
        assert isinstance(err, tuple)
        line = next((ln for ln in fast[1].splitlines() if ln.startswith("Error: ")), "")
        assert line.startswith(f"Error: {err[4]}"), (line, err)


def outcome(path: Path, entry: str) -> tuple[str, object]:
    if entry == "objects":
        return _rows_objects(path)
    return _rows_arrow(path, entry)


def assert_one_reader(path: Path) -> tuple[str, object]:
    """Every entry point gives the object reader's answer; returns it."""
    expected = _rows_objects(path)
    for entry in ENTRY_POINTS[1:]:
        assert _rows_arrow(path, entry) == expected, entry
    assert _batches_scan(path) == _batches_objects(path), "read_batch_table"
    assert_fast_text_agrees(path, expected)
    return expected


def _write(tmp_path: Path, data: bytes, name: str = "00000000000000000000.log") -> Path:
    d = tmp_path / "t-0"
    d.mkdir(exist_ok=True)
    p = d / name
    p.write_bytes(data)
    return p


# ------------------------------------------------------------------ hand-built edge files

def _one_record_batch(raw_records: bytes, count: int = 1) -> bytes:
    return v2_batch(raw_records, count=count, base_offset=7)


_BODY = record_body(key=b"k", value=b"v")
EDGES = {
    # length varint overstates the record by 50 bytes (issue 11's example)
    "length_overstated": (_one_record_batch(zz(len(_BODY) + 50) + _BODY),
                          TruncatedBatchError, 61, "records[0].length",
                          f"expected {len(_BODY) + 50} bytes in record payload, but instead the "
                          f"buffer has only {len(_BODY)} remaining bytes"),
    "length_understated": (_one_record_batch(zz(len(_BODY) - 1) + _BODY),
                           CorruptBatchError, 61, "records[0].length",
                           f"expected to read {len(_BODY) - 1} bytes in record payload, but "
                           f"instead read {len(_BODY)}"),
    "length_negative": (_one_record_batch(zz(-5) + _BODY), CorruptBatchError, 61,
                        "records[0].length", "Invalid record size -5"),
    "varint_overlong": (_one_record_batch(b"\xff" * 5 + _BODY), CorruptBatchError, 61,
                        "records[0].length", "varint is too long"),
    "count_too_big": (_one_record_batch(zz(len(_BODY)) + _BODY, count=2), TruncatedBatchError,
                      61 + 1 + len(_BODY), "records[1].length", "premature EOF"),
    "count_too_small": (_one_record_batch((zz(len(_BODY)) + _BODY) * 2, count=1),
                        CorruptBatchError, 61, "records_count", "records still remaining"),
    "count_negative": (_one_record_batch(zz(len(_BODY)) + _BODY, count=-3), CorruptBatchError,
                       57, "records_count", "Found invalid record count -3"),
    "headers_count_negative": (
        _one_record_batch(zz(6) + b"\x00\x00\x00" + zz(-1) + zz(-1) + zz(-2)),
        CorruptBatchError, 61, "records[0].headers_count", "invalid number of record headers -2"),
    "header_key_negative": (
        _one_record_batch(zz(8) + b"\x00\x00\x00" + zz(-1) + zz(-1) + zz(1) + zz(-4) + zz(-1)),
        CorruptBatchError, 61, "records[0].headers[0].key_length",
        "Invalid negative header key size -4"),
    "key_past_record_end": (
        _one_record_batch(zz(6) + b"\x00\x00\x00" + zz(40) + zz(-1) + zz(0) + b"x" * 40),
        CorruptBatchError, 61, "records[0].key_length", "key length 40 runs past the record end"),
    "timestamp_varlong_overlong": (
        _one_record_batch(zz(14) + b"\x00" + b"\xff" * 10 + zz(0) + zz(-1) + zz(-1) + zz(0)),
        CorruptBatchError, 61, "records[0].timestamp_delta", "varlong is too long"),
}


@pytest.mark.parametrize("name", sorted(EDGES))
def test_edge_files_give_one_error_from_every_entry_point(tmp_path, name):
    data, cls, rel_pos, field, words = EDGES[name]
    prefix = v2_batch(zz(len(_BODY)) + _BODY, count=1, base_offset=0)
    path = _write(tmp_path, prefix + data)
    printed = FAST_PRINTED[0]
    kind, err = assert_one_reader(path)
    assert FAST_PRINTED[0] - printed == 1   # the plain batch before the damage: fast_text's
    assert kind == "error"
    assert err[0] == cls.__name__
    assert err[1] == len(prefix) + rel_pos
    assert err[2] == 7
    assert err[3] == field
    assert words in err[4]


def test_good_file_rows_equal_kafka_python_everywhere(tmp_path):
    data = b"".join(kp_batch([Rec(b"k%d" % i, b"v" * i, [("h", b"x"), ("n", None)])] * 3,
                             base_offset=10 * i, codec=c, require_codec=False)
                    for i, c in enumerate([0, 1, 3, 4, 0]))
    printed = FAST_PRINTED[0]
    kind, rows = assert_one_reader(_write(tmp_path, data))
    assert FAST_PRINTED[0] - printed == 5   # every batch (none, gzip, lz4, zstd): fast_text
    assert kind == "rows" and len(rows) == 15
    assert rows[0][3:] == (b"k0", b"", [("h", b"x"), ("n", None)])


# ------------------------------------------------------------------ Hypothesis mutants

def _kp_segment(seed: int) -> bytes:
    rng = random.Random(seed)
    out = []
    offset = 0
    for _ in range(rng.randint(1, 4)):
        n = rng.randint(1, 4)
        recs = [Rec(rng.choice([None, b"key", b"k" * rng.randint(0, 30)]),
                    rng.choice([None, b"", b"v" * rng.randint(0, 80)]),
                    [(f"h{j}", rng.choice([None, b"hv"])) for j in range(rng.randint(0, 2))])
                for _ in range(n)]
        out.append(kp_batch(recs, base_offset=offset, codec=rng.choice([0, 0, 0, 1, 3, 4]),
                            base_sequence=rng.choice([-1, 0, 2**31 - 2]), require_codec=False))
        offset += n
    return b"".join(out)


def _kp_many(seed: int) -> bytes:
    """40-70 batches of 1-12 records, some with 2- and 3-byte length prefixes: windows where
    the vectorised engine walks length prefixes in lockstep across batches and finishes the
    longer batches one by one (records/columnar/vectorised.py _record_bounds)."""
    rng = random.Random(seed)
    out = []
    offset = 0
    for _ in range(rng.randint(40, 70)):
        n = rng.choice([1, 1, 2, 3, rng.randint(4, 12)])
        recs = [Rec(rng.choice([None, b"key", b"k" * rng.randint(0, 30)]),
                    rng.choice([None, b"", b"v" * rng.randint(0, 80), b"w" * rng.randint(100, 300),
                                b"x" * (20_000 if rng.random() < 0.05 else 9)]),
                    [(f"h{j}", rng.choice([None, b"hv"])) for j in range(rng.choice([0, 0, 1, 2]))])
                for _ in range(n)]
        out.append(kp_batch(recs, base_offset=offset, codec=rng.choice([0, 0, 0, 0, 1, 3]),
                            require_codec=False))
        offset += n
    return b"".join(out)


def _real_segments() -> list[bytes]:
    files = sorted(REALDATA.glob("*/*/*/00000000000000000000.log"))
    picked = [p.read_bytes()[:8192] for p in files if 0 < p.stat().st_size <= 64 * 1024]
    assert picked, f"no real broker segments under {REALDATA}"
    return picked[:12]


REAL = _real_segments()


def _batch_starts(data: bytes) -> list[int]:
    starts, pos = [], 0
    while pos + 17 <= len(data):
        starts.append(pos)
        size = struct.unpack_from(">i", data, pos + 8)[0]
        if size < 14:
            break
        pos += 12 + size
    return starts


def mutate(data: bytes, op: str, a: int, b: int, refix_crc: bool) -> bytes:
    buf = bytearray(data)
    if not buf:
        return bytes(buf)
    if op == "flip":
        i = a % len(buf)
        buf[i] ^= 1 << (b % 8)
    elif op == "truncate":
        del buf[a % len(buf):]
    elif op == "hostile_length":
        # a record length, key length or count overwritten with a hostile value
        starts = _batch_starts(data)
        s = starts[a % len(starts)]
        if s + 61 < len(buf):
            value = [-1, -2, 0, 1, 2**31 - 1, -2**31, 50, 100000][b % 8]
            if b % 3 == 0:
                struct.pack_into(">i", buf, s + 57, value)          # recordsCount
            else:
                at = s + 61 + (b // 8) % 12
                enc = encode_varint(value)
                buf[at:at + len(enc)] = enc
                del buf[len(data):]
    elif op == "batch_length":
        starts = _batch_starts(data)
        s = starts[a % len(starts)]
        struct.pack_into(">i", buf, s + 8, [14, 20, 48, 49, 60, 2**31 - 1, -1, 0][b % 8])
    elif op == "magic":
        starts = _batch_starts(data)
        s = starts[a % len(starts)]
        buf[s + 16] = [0, 1, 3, 0x7F, 0x80, 0xFF][b % 6]
    if refix_crc and op != "magic":
        for s in _batch_starts(bytes(buf)):
            size = struct.unpack_from(">i", buf, s + 8)[0]
            if buf[s + 16] == 2 and 49 <= size and s + 12 + size <= len(buf):
                view = bytearray(buf[s:s + 12 + size])
                fix_crc(view)
                buf[s:s + 12 + size] = view
    return bytes(buf)


OPS = st.sampled_from(["flip", "flip", "truncate", "hostile_length", "batch_length", "magic"])


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), op=OPS, a=st.integers(0, 1 << 20), b=st.integers(0, 255),
       refix=st.booleans())
def test_mutants_of_kafka_python_segments(tmp_path, seed, op, a, b, refix):
    path = _write(tmp_path, mutate(_kp_segment(seed), op, a, b, refix))
    assert_one_reader(path)


@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), op=OPS, a=st.integers(0, 1 << 20), b=st.integers(0, 255),
       refix=st.booleans())
def test_mutants_of_many_batch_segments(tmp_path, seed, op, a, b, refix):
    """Damage inside one of many batches: the vectorised engine's lockstep walk declines the
    right batch (the good batches before it print; the error is the object reader's)."""
    path = _write(tmp_path, mutate(_kp_many(seed), op, a, b, refix))
    assert_one_reader(path)


@settings(max_examples=250, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(which=st.integers(0, 100), op=OPS, a=st.integers(0, 1 << 20), b=st.integers(0, 255),
       refix=st.booleans())
def test_mutants_of_real_broker_segments(tmp_path, which, op, a, b, refix):
    path = _write(tmp_path, mutate(REAL[which % len(REAL)], op, a, b, refix))
    assert_one_reader(path)
