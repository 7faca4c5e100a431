"""One batch walk, every walker: equal batch positions, stop position and errors.

Walkers: the object reader (``SegmentReader``), the columnar walk with each engine
(``iter_batch_batches``: ``engine="python"`` and ``engine="numba"``), dump's index peek
(``_first_batch_last_offset``: one step at each batch position), the writer's recovery walk
(``_Segment.read_batches``, like ``LogSegment.recover``), the segment-file object
(``SegmentFile.batches_from``) and salvage's "is there a valid batch
at pos" decision (``check_batch_at`` + ``_why_bad``).

Expected values never come from a walker: the edge files below spell their batch positions and
stop as written (size fields laid down by hand), checked against ``kafka_walk``, a few lines
that follow the size fields the way Kafka's FileLogInputStream.nextBatch does; the mutants
(bit flips, truncations, hostile size fields and magic bytes of kafka-python segments and real
broker files) are judged by ``kafka_walk`` alone. tests/realkafka/test_walk_realkafka.py
checks the edge files against the real kafka-dump-log.
"""

from __future__ import annotations

import mmap
import struct
import zlib
from pathlib import Path

import crc32c as crc32c_lib
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batches import record_body, v2_batch, zz
from test_one_reader import EDGES as RECORD_EDGES
from test_one_reader import OPS, REAL, _kp_segment, mutate

from segtools.dump.index_dump import _first_batch_last_offset
from segtools.errors import FormatError
from segtools.primitives.limits import DEFAULT_MAX_BATCH_BYTES
from segtools.records import batches as batches_module
from segtools.records import columnar
from segtools.records.batches import SegmentReader
from segtools.records.segment_file import SegmentFile
from segtools.salvage import _why_bad, check_batch_at
from segtools.writer.log_writer import _Segment

INT32_MAX = 2**31 - 1
END = ("end",)   # the walk stops without an error (no batch left, or a torn tail)


@pytest.fixture(autouse=True)
def _no_settle_wait(monkeypatch):
    """Damaged on purpose and never changing: skip the readers' wait for a concurrent writer."""
    monkeypatch.setattr(batches_module, "_SETTLE_SECONDS", 0.0)


# ------------------------------------------------------------------ the oracle (Kafka's rule)

def _size_field(data: bytes, pos: int) -> int:
    return int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)


def kafka_walk(data: bytes, limit: int | None = None) -> tuple[list[int], int, tuple]:
    """(batch positions, stop position, outcome) by the size fields as written, following
    FileLogInputStream.nextBatch: <= 17 bytes left ends; size < 14 is CorruptRecordException;
    a batch past the end ends (torn tail); a v2 batch (magic >= 2, a Java byte) shorter than 61
    bytes has its header loaded from the file, which fails when the file ends first. ``limit``:
    the readers' max_batch_bytes (ours, not Kafka's)."""
    positions: list[int] = []
    pos, end = 0, len(data)
    while True:
        if end - pos <= 17:
            return positions, pos, END
        size = _size_field(data, pos)
        if size < 14:
            return positions, pos, ("error", "CorruptBatchError", pos, "batch_length")
        if pos + 12 + size > end:
            return positions, pos, END
        if limit is not None and 12 + size > limit:
            return positions, pos, ("error", "BatchTooLargeError", pos, "batch_length")
        magic = struct.unpack_from(">b", data, pos + 16)[0]
        if magic >= 2 and 12 + size < 61 and pos + 61 > end:
            return positions, pos, ("error", "TruncatedBatchError", pos, "batch_length")
        positions.append(pos)
        pos += 12 + size


def _u32(data: bytes, pos: int) -> int:
    return struct.unpack_from(">I", data, pos)[0]


def _v2_crc_ok(data: bytes, p: int, size: int) -> bool:
    return size >= 61 and crc32c_lib.crc32c(data[p + 21:p + size]) == _u32(data, p + 17)


def _legacy_crc_ok(data: bytes, p: int, size: int) -> bool:
    return zlib.crc32(data[p + 16:p + size]) == _u32(data, p + 12)


def writer_keeps(data: bytes, p: int) -> bool:
    """LogSegment.recover keeps the batch at ``p``: ensureValid (v2: >= 61 bytes and CRC-32C;
    legacy: CRC-32) and ensureOffsetInRange (segment base offset 0). Magic above 2 is refused by
    our writer (Kafka's recover would check only size and CRC: see the report)."""
    size = 12 + _size_field(data, p)
    magic = data[p + 16]
    base = struct.unpack_from(">q", data, p)[0]
    if magic == 2:
        last = base + struct.unpack_from(">i", data, p + 23)[0]
        return _v2_crc_ok(data, p, size) and 0 <= last <= INT32_MAX
    if magic in (0, 1):
        return _legacy_crc_ok(data, p, size) and 0 <= base <= INT32_MAX
    return False


def salvage_keeps(data: bytes, p: int) -> bool:
    """Salvage's own plausibility on top of the walk: v2 valid with lastOffsetDelta and
    recordsCount not negative; legacy of at least 14 (magic 0) / 22 (magic 1) bytes, CRC-32."""
    size = 12 + _size_field(data, p)
    magic = data[p + 16]
    if magic == 2:
        lod, count = struct.unpack_from(">i", data, p + 23)[0], struct.unpack_from(">i", data, p + 57)[0]
        return _v2_crc_ok(data, p, size) and lod >= 0 and count >= 0
    if magic in (0, 1):
        return size - 12 >= (14, 22)[magic] and _legacy_crc_ok(data, p, size)
    return False


def stopping_walk(data: bytes, keeps, limit: int | None) -> tuple[list[int], int, tuple]:
    """What a walk that stops at the first batch failing ``keeps`` must give (silently)."""
    positions, stop, _outcome = kafka_walk(data, limit)
    for i, p in enumerate(positions):
        if not keeps(data, p):
            return positions[:i], p, END
    return positions, stop, END


# ------------------------------------------------------------------ the walkers

def _error(exc: FormatError) -> tuple:
    return ("error", type(exc).__name__, exc.position, exc.field)


def walk_objects(path: Path, limit: int | None) -> tuple[list[int], int, tuple]:
    positions: list[int] = []
    reader = SegmentReader(path, max_batch_bytes=limit)
    try:
        for b in reader:
            positions.append(b.position)
    except FormatError as exc:
        return positions, exc.position, _error(exc)
    return positions, reader.valid_bytes, END


def _walk_columnar(engine: str):
    def walk(path: Path, limit: int | None) -> tuple[list[int], int, tuple]:
        positions: list[int] = []
        stop = 0
        try:
            for rb in columnar.iter_batch_batches(path, engine=engine, max_batch_bytes=limit):
                for p, size in zip(rb.column("position").to_pylist(),
                                   rb.column("size").to_pylist()):
                    positions.append(p)
                    stop = p + size
        except FormatError as exc:
            return positions, exc.position, _error(exc)
        return positions, stop, END
    return walk


def walk_index_peek(path: Path, limit: int | None) -> tuple[list[int], int, tuple]:
    """dump's index peek at each position the size fields lead to (it reads one batch)."""
    data = path.read_bytes()
    positions: list[int] = []
    pos = 0
    with SegmentFile(str(path), window=64) as log:
        while True:
            try:
                _first_batch_last_offset(log, pos, 1 << 30)
            except FormatError as exc:
                if str(exc.reason).startswith("no complete batch"):
                    return positions, pos, END
                return positions, pos, _error(exc)
            positions.append(pos)
            pos += 12 + _size_field(data, pos)


def walk_writer(path: Path, limit: int | None) -> tuple[list[int], int, tuple]:
    seg_dir = path.parent / f"writer-{path.stem}"
    seg_dir.mkdir()
    (seg_dir / "00000000000000000000.log").write_bytes(path.read_bytes())
    headers, valid = _Segment(str(seg_dir), 0, index_bytes=4096, active=False).read_batches()
    return [h.position for h in headers], valid, END


def walk_salvage(path: Path, limit: int | None) -> tuple[list[int], int, tuple]:
    """check_batch_at from 0 until it says no; _why_bad must agree on a silent stop."""
    size = path.stat().st_size
    max_batch = DEFAULT_MAX_BATCH_BYTES if limit is None else limit
    positions: list[int] = []
    if size == 0:
        return positions, 0, END
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        pos = 0
        while pos < size:
            n = check_batch_at(buf, pos, size, max_batch_bytes=max_batch)
            if not n:
                break
            positions.append(pos)
            pos += n
        silent = pos >= size or _why_bad(buf, pos, size, max_batch)[1]
    return positions, pos, ("end",) if silent else ("stop",)


def walk_segment_file(path: Path, limit: int | None) -> tuple[list[int], int, tuple]:
    """SegmentFile.batches_from (the file object dump, the writer and forensics read through),
    with a window smaller than most batches so its reloads are walked too."""
    with SegmentFile(str(path), window=64) as log:
        positions = [step.position for step in log.batches_from(0, limit=limit)]
        assert log.stop is not None
        error = log.stop_error(limit)
        return positions, log.stop.position, END if error is None else _error(error)


READERS = {"objects": walk_objects, "columnar_python": _walk_columnar("python"),
           "columnar_numba": _walk_columnar("numba"), "segment_file": walk_segment_file}
WALKERS = [*READERS, "index_peek", "writer", "salvage"]


def expected_for(walker: str, data: bytes, limit: int | None) -> tuple[list[int], int, tuple]:
    if walker in READERS:
        return kafka_walk(data, limit)
    if walker == "index_peek":   # no batch-size limit: --max-message-size is a slice
        return kafka_walk(data, None)
    if walker == "writer":       # LogSegment.recover: no limit either
        return stopping_walk(data, writer_keeps, None)
    positions, stop, outcome = kafka_walk(data, limit)
    kept, kept_stop, _ = stopping_walk(data, salvage_keeps, limit)
    if kept_stop != stop or kept != positions:
        return kept, kept_stop, ("stop",)     # an invalid batch: salvage resyncs from here
    return kept, stop, END if outcome == END else ("stop",)


def run_walker(walker: str, path: Path, limit: int | None) -> tuple[list[int], int, tuple]:
    if walker in READERS:
        return READERS[walker](path, limit)
    return {"index_peek": walk_index_peek, "writer": walk_writer,
            "salvage": walk_salvage}[walker](path, limit)


def assert_one_walk(path: Path, limit: int | None = None) -> None:
    data = path.read_bytes()
    for walker in WALKERS:
        assert run_walker(walker, path, limit) == expected_for(walker, data, limit), walker


# ------------------------------------------------------------------ edge files

def _legacy(magic: int, offset: int, value: bytes, key: bytes | None = None) -> bytes:
    """One uncompressed magic 0/1 message, from the v0/v1 message layout."""
    body = bytes([magic, 0]) + (struct.pack(">q", 1_700_000_000_000) if magic == 1 else b"")
    body += struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key
    body += struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


def _v2(base_offset: int, value: bytes = b"v") -> bytes:
    body = record_body(key=b"k", value=value)
    return v2_batch(zz(len(body)) + body, count=1, base_offset=base_offset)


def _short_v2(size_field: int, magic: int = 2) -> bytes:
    """A batch whose size field says it is shorter than the 61-byte v2 header."""
    return struct.pack(">qiib", 3, size_field, 0, magic) + b"\x01" * (size_field - 5)


A, B, C = _v2(0), _v2(1), _v2(2, b"w" * 200)
L0, L1 = _legacy(0, 0, b"zero"), _legacy(1, 1, b"one")

# name: (bytes, batch positions as written, stop, outcome, limit)
WALK_EDGES = {
    "two_batches": (A + B, [0, len(A)], len(A + B), END, None),
    "torn_tail": (A + B[:40], [0], len(A), END, None),
    "trailing_17_bytes": (A + b"\x00" * 17, [0], len(A), END, None),
    "trailing_10_bytes": (A + b"\xff" * 10, [0], len(A), END, None),
    "zero_size_after_a_batch": (A + b"\x00" * 40, [0], len(A),
                                ("error", "CorruptBatchError", len(A), "batch_length"), None),
    "size_13": (A + struct.pack(">qi", 5, 13) + b"\x02" * 30, [0], len(A),
                ("error", "CorruptBatchError", len(A), "batch_length"), None),
    "size_negative_18_bytes_left": (A + struct.pack(">qi", 5, -7) + b"\x02" * 6, [0], len(A),
                                    ("error", "CorruptBatchError", len(A), "batch_length"), None),
    "short_v2_then_batch": (_short_v2(40) + A, [0, 52], 52 + len(A), END, None),
    "short_v2_at_end": (A + _short_v2(30), [0], len(A),
                        ("error", "TruncatedBatchError", len(A), "batch_length"), None),
    "short_magic_3_then_batch": (_short_v2(20, magic=3) + A, [0, 32], 32 + len(A), END, None),
    "short_magic_negative_is_legacy": (_short_v2(20, magic=-1) + A, [0, 32], 32 + len(A), END,
                                       None),
    "legacy_then_v2": (L0 + L1 + A, [0, len(L0), len(L0 + L1)], len(L0 + L1 + A), END, None),
    "magic_3_batch": (A + v2_batch(B[61:], count=1, base_offset=1, magic=3), [0, len(A)],
                      len(A + B), END, None),
    "too_large_for_limit": (A + C, [0], len(A),
                            ("error", "BatchTooLargeError", len(A), "batch_length"), 120),
    "too_large_and_torn": (A + C[:150], [0], len(A), END, 120),
    "first_batch_too_large": (C + A, [], 0, ("error", "BatchTooLargeError", 0, "batch_length"),
                              120),
    # the limit is checked before the short v2 header is loaded (both columnar engines raised
    # TruncatedBatchError here before the one walk, the object reader BatchTooLargeError)
    "short_v2_at_end_over_limit": (_short_v2(30), [], 0,
                                   ("error", "BatchTooLargeError", 0, "batch_length"), 40),
    "empty": (b"", [], 0, END, None),
}
# the record-level edge files of test_one_reader: two batches each, the walk has no finding
for _name, (_data, *_rest) in RECORD_EDGES.items():
    WALK_EDGES[f"records_{_name}"] = (A + _data, [0, len(A)], len(A + _data), END, None)


def _write(tmp_path: Path, data: bytes) -> Path:
    d = tmp_path / "t-0"
    d.mkdir(parents=True, exist_ok=True)
    p = d / "00000000000000000000.log"
    p.write_bytes(data)
    return p


def test_oracle_follows_the_edge_files_as_written():
    for name, (data, positions, stop, outcome, limit) in WALK_EDGES.items():
        assert kafka_walk(data, limit) == (positions, stop, outcome), name


@pytest.mark.parametrize("walker", WALKERS)
@pytest.mark.parametrize("name", sorted(WALK_EDGES))
def test_edge_files_walk_the_same_in_every_walker(tmp_path, name, walker):
    data, _positions, _stop, _outcome, limit = WALK_EDGES[name]
    path = _write(tmp_path, data)
    assert run_walker(walker, path, limit) == expected_for(walker, data, limit)


def test_walk_errors_carry_the_same_message(tmp_path):
    """Same class, position and field above; the words are one text too."""
    for name in ("zero_size_after_a_batch", "short_v2_at_end", "too_large_for_limit"):
        data, *_rest, limit = WALK_EDGES[name]
        path = _write(tmp_path / name, data)
        messages = set()
        for engine in ("python", "numba"):
            with pytest.raises(FormatError) as info:
                for _ in columnar.iter_batch_batches(path, engine=engine, max_batch_bytes=limit):
                    pass
            messages.add(str(info.value))
        with pytest.raises(FormatError) as info:
            list(SegmentReader(path, max_batch_bytes=limit))
        messages.add(str(info.value))
        assert len(messages) == 1, messages


@pytest.mark.parametrize("name", ["trailing_10_bytes", "trailing_17_bytes", "torn_tail",
                                  "too_large_and_torn"])
def test_salvage_calls_every_silent_end_of_the_walk_a_torn_tail(tmp_path, name):
    """Where Kafka's walk just ends (<= 17 bytes left, or a batch past the end, whatever its
    size) salvage's manifest says torn_tail (it said "corrupt" for <= 16 trailing bytes and
    for a cut batch above the limit before the one walk)."""
    from segtools.salvage import scan_segment

    data, positions, stop, outcome, limit = WALK_EDGES[name]
    assert outcome == END and stop < len(data)
    result = scan_segment(_write(tmp_path, data), max_batch_bytes=limit or DEFAULT_MAX_BATCH_BYTES)
    assert [b.position for b in result.kept] == positions
    assert [(d.start, d.end, d.reason) for d in result.dropped] == [(stop, len(data), "torn_tail")]


# ------------------------------------------------------------------ Hypothesis mutants

@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), op=OPS, a=st.integers(0, 1 << 20), b=st.integers(0, 255),
       refix=st.booleans(), limit=st.sampled_from([None, None, 100, 300]))
def test_mutants_of_kafka_python_segments_walk_the_same(tmp_path_factory, seed, op, a, b, refix,
                                                         limit):
    path = _write(tmp_path_factory.mktemp("kp"), mutate(_kp_segment(seed), op, a, b, refix))
    assert_one_walk(path, limit)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(which=st.integers(0, 100), op=OPS, a=st.integers(0, 1 << 20), b=st.integers(0, 255),
       refix=st.booleans())
def test_mutants_of_real_broker_segments_walk_the_same(tmp_path_factory, which, op, a, b, refix):
    path = _write(tmp_path_factory.mktemp("real"), mutate(REAL[which % len(REAL)], op, a, b, refix))
    assert_one_walk(path)
