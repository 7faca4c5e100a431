"""Issues 9 and 16 at the library level: one ``max_batch_bytes`` limit for every reader,
decompression bombs and sparse giants under a fixed memory cap (measured in a subprocess),
big legal batches checked in streamed windows, files changing while read, non-UTF-8 names and
OS-level errors as ``SegtoolsError``.

Every hostile file is generated at test time by ``hostile_files`` (a few KB to a few hundred
KB on disk; the giants are sparse).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import hostile_files as H
import pytest

import segtools
from segtools.errors import (
    BatchTooLargeError,
    CompressionError,
    CorruptBatchError,
    FileChangedError,
    FormatError,
    InputError,
    SegtoolsError,
)
from segtools.files.snapshots import read_producer_snapshot
from segtools.primitives.limits import DEFAULT_MAX_BATCH_BYTES, parse_size, resolve_max_batch_bytes
from segtools.records import columnar
from segtools.records.batches import SegmentReader, iter_batches

MiB = 1 << 20
#: peak RSS allowed in a reader subprocess (numba + pyarrow alone take about 220 MB here);
#: before the limit, the same calls took 0.6-2 GB or died with MemoryError
MEMORY_CAP_MB = 400

# One child process runs a list of reader calls on one file and prints, after each, the
# error (class, message) and its peak RSS so far. RLIMIT_AS is a safety net so that a
# regression fails with MemoryError instead of eating the shared machine.
_CHILD = textwrap.dedent("""
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    import segtools
    from segtools.records import columnar
    from segtools.files.snapshots import read_producer_snapshot
    jobs = json.loads(sys.argv[1])

    def rss_mb():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024

    def peak_mb():
        # VmHWM: this process's peak RSS (ru_maxrss would carry the parent's over exec)
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024

    for path, call, kw in jobs:
        out = {"path": path, "call": call, "error": None, "message": None, "rows": None}
        try:
            if call == "iter_batches":
                n, crc_ok = 0, True
                for b in segtools.iter_batches(path, **kw):
                    n += 1
                    crc_ok = crc_ok and b.crc_valid
                out["rows"], out["crc_ok"] = n, crc_ok
            elif call == "records":
                out["rows"] = sum(1 for b in segtools.iter_batches(path, **kw)
                                  for _ in b.records())
            elif call == "iter_records":
                from segtools.records.batches import iter_records
                out["rows"] = sum(1 for _ in iter_records(path, **kw))
            elif call == "read_batch_table":
                t = segtools.read_batch_table(path, **kw)
                out["rows"], out["crc_ok"] = t.num_rows, all(t.column("crc_valid").to_pylist())
            elif call == "read_records":
                out["rows"] = segtools.read_records(path, **kw).num_rows
            elif call == "iter_record_batches":
                out["rows"] = sum(rb.num_rows for rb in columnar.iter_record_batches(path, **kw))
            elif call == "dump_text":
                # dump's vectorised text engine forced on (no fallback), to a UTF-8 byte sink;
                # dump prints a reader error as its "Error: " line
                import io, os
                from segtools.dump import log_dump
                from segtools.dump.options import DumpOptions
                from segtools.dump.runner import run_dump
                log_dump.FAST_MIN_BYTES, log_dump.FAST_FALLBACK = 0, False
                printed = [0]
                from segtools.dump import fast_text
                emit = fast_text.FastLogText._emit
                def counting(self, cols, starts, *rest):
                    printed[0] += len(starts)
                    return emit(self, cols, starts, *rest)
                fast_text.FastLogText._emit = counting
                err = io.StringIO()
                with open(os.devnull, "wb") as sink:
                    outw = io.TextIOWrapper(sink, encoding="utf-8", newline="")
                    rc = run_dump([path], DumpOptions(deep_iteration=True, print_data_log=True),
                                  out=outw, err=err)
                    outw.flush()
                line = next((l for l in err.getvalue().splitlines() if l.startswith("Error: ")),
                            None)
                if line is not None:
                    out["error"], out["message"] = "dump", line[len("Error: "):]
                out["rows"], out["rc"], out["fast_batches"] = 0, rc, printed[0]
            elif call == "snapshot":
                s = read_producer_snapshot(path)
                out["rows"], out["crc_ok"] = len(s.entries), s.crc_valid
        except BaseException as exc:
            out["error"], out["message"] = type(exc).__name__, str(exc)
            out["segtools"] = isinstance(exc, segtools.SegtoolsError)
        out["peak_mb"] = peak_mb()
        out["rss_mb"] = rss_mb()
        print(json.dumps(out), flush=True)
""")


def run_child(path: Path | str | None, calls: list[tuple], ) -> list[dict]:
    """Run ``calls`` ((call, kwargs) on ``path``, or (path, call, kwargs)) in one child."""
    jobs = [(str(path), *c) if path is not None else (str(c[0]), *c[1:]) for c in calls]
    proc = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(jobs)],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.fixture(scope="module")
def bombs(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bombs")
    files = {
        # issue 9: 5 KB zstd batch of 8,000,000 seven-byte records (1.3 GB before)
        "records-8M": H.record_bomb(str(d / "rec8m.log"), 8_000_000),
        # 36,000,000 records (5.3-7 GB and 170-190 s before)
        "records-36M": H.record_bomb(str(d / "rec36m.log"), 36_000_000),
        # 40 zstd batches of 250 MiB of zeros (4.3-4.9 GB before)
        "zstd-zeros-40x250MiB": H.zero_bomb(str(d / "zstd40.log"), "zstd", 250 * MiB, 40),
        "gzip-zeros-100MiB": H.zero_bomb(str(d / "gzip.log"), "gzip", 100 * MiB),
        # issue 16: 2 GiB sparse file whose first header claims length 2**31-1
        "sparse-length-2^31-1": H.sparse_hostile(str(d / "hostile.log")),
    }
    for name, path in files.items():
        size_on_disk = os.stat(path).st_blocks * 512
        assert size_on_disk < 400 * 1024, (name, size_on_disk)
    return {k: Path(v) for k, v in files.items()}


READERS = [("iter_batches", {}), ("records", {}), ("iter_records", {}),
           ("read_records", {"engine": "python"}), ("read_records", {"engine": "auto"}),
           ("iter_record_batches", {"engine": "auto"}), ("read_batch_table", {}),
           ("dump_text", {})]


def test_every_reader_stops_every_bomb_with_the_same_error_under_a_memory_cap(bombs):
    # one child per bomb: its peak RSS bounds every reader on that bomb (a child shared by all
    # bombs adds what earlier bombs left in the allocators' pools to later bombs' figures)
    results = [r for path in bombs.values() for r in run_child(path, READERS)]
    assert len(results) == len(READERS) * len(bombs)
    by_path = {str(p): name for name, p in bombs.items()}
    for r in results:
        bomb = by_path[r["path"]]
        assert r["peak_mb"] < MEMORY_CAP_MB, (bomb, r)
        if r["call"] in ("read_batch_table", "iter_batches") and bomb != "sparse-length-2^31-1":
            # header readers do not expand records: a bomb's header is a valid batch
            assert r["error"] is None and r["rows"] >= 1 and r["crc_ok"], r
            continue
        msg = r["message"]
        if r["call"] == "dump_text":
            # dump's vectorised engine hands the bomb to the object reader, whose error it prints
            assert r["error"] == "dump" and r["rc"] == 2, r
            same = next(o for o in results if o["path"] == r["path"] and o["call"] == "records")
            assert msg.startswith(same["message"]), (msg, same["message"])
            continue
        assert r["error"] == "BatchTooLargeError", r
        assert bombs[bomb].name in msg and "@ position" in msg and "baseOffset=0" in msg, msg
        assert f"max_batch_bytes is {DEFAULT_MAX_BATCH_BYTES} bytes" in msg, msg
        assert "--max-batch-bytes" in msg, msg


def test_bomb_error_class_fits_the_hierarchy():
    assert issubclass(BatchTooLargeError, CompressionError)
    assert issubclass(BatchTooLargeError, CorruptBatchError)


def test_the_limit_is_one_keyword_with_the_old_names_as_aliases(tmp_path):
    path = H.zero_bomb(str(tmp_path / "00000000000000000000.log"), "gzip", 3 * MiB)
    for call in (lambda **kw: list(iter_batches(path, **kw))[0].records().__next__(),
                 lambda **kw: next(iter(SegmentReader(path, **kw))).records().__next__()):
        with pytest.raises(BatchTooLargeError, match="max_batch_bytes is 1048576 bytes"):
            call(max_batch_bytes=MiB)
        with pytest.raises(BatchTooLargeError, match="max_batch_bytes is 1048576 bytes"):
            call(max_decompressed_size=MiB)
    for engine in ("python", "auto"):
        with pytest.raises(BatchTooLargeError, match="max_batch_bytes is 1048576 bytes"):
            columnar.read_records(path, engine=engine, max_batch_bytes=MiB)
        with pytest.raises(BatchTooLargeError, match="max_batch_bytes is 1048576 bytes"):
            columnar.read_records(path, engine=engine, max_uncompressed_bytes=MiB)
    with pytest.raises(InputError):
        resolve_max_batch_bytes(MiB, max_decompressed_size=2 * MiB)
    # raised above the payload, the batch is decompressed and its (zero) bytes decoded: the
    # limit was the only stop
    for engine in ("python", "auto"):
        with pytest.raises(FormatError) as info:
            columnar.read_records(path, engine=engine, max_batch_bytes=4 * MiB)
        assert not isinstance(info.value, BatchTooLargeError)


def test_on_disk_size_is_refused_before_reading_it(tmp_path):
    # a legal 3 MiB uncompressed batch: refused under a 1 MiB limit by every reader
    path = tmp_path / "00000000000000000000.log"
    H.sparse_giant(str(path), 3 * MiB, n_batches=2)
    for read in (lambda: list(iter_batches(path, max_batch_bytes=MiB)),
                 lambda: segtools.read_batch_table(path, max_batch_bytes=MiB),
                 lambda: segtools.read_records(path, max_batch_bytes=MiB, engine="python"),
                 lambda: segtools.read_records(path, max_batch_bytes=MiB, engine="auto")):
        with pytest.raises(BatchTooLargeError, match=r"batch of \d+ bytes on disk") as info:
            read()
        assert info.value.position == 0 and info.value.base_offset == 0
        assert info.value.limit == MiB
    assert len(list(iter_batches(path, max_batch_bytes=4 * MiB))) == 2
    assert segtools.read_records(path, max_batch_bytes=4 * MiB, engine="auto").num_rows == 2


def test_legal_giant_batches_are_verified_with_memory_flat_in_batch_size(tmp_path):
    """Two 160 MiB batches (sparse): CRC and framing over streamed windows when the user
    raises the limit (before: read_batch_table and iter_batches held a whole batch)."""
    path = tmp_path / "00000000000000000000.log"
    H.sparse_giant(str(path), 160 * MiB, n_batches=2)
    small = tmp_path / "small" / "00000000000000000000.log"
    small.parent.mkdir()
    H.sparse_giant(str(small), 1 * MiB, n_batches=2)
    raised = {"max_batch_bytes": 512 * MiB}
    calls = [("iter_batches", raised), ("read_batch_table", raised)]
    run_child(small, calls)   # the first child of a fresh checkout compiles (and caches) the JIT kernel
    baseline = run_child(small, calls)
    results = run_child(path, calls)
    for r in results:
        assert r["error"] is None and r["rows"] == 2 and r["crc_ok"], r
    # the same calls on 1 MiB batches are the baseline (imports, allocator pools): holding one
    # 160 MiB batch would add at least 160 MB; streamed windows (two of 16 MiB) add far less
    for big, base in zip(results, baseline):
        assert big["peak_mb"] - base["peak_mb"] < 100, (results, baseline)
    assert results[0]["peak_mb"] < 200, results      # iter_batches: numba not imported yet
    # the default limit refuses them, naming the limit
    with pytest.raises(BatchTooLargeError, match="--max-batch-bytes"):
        segtools.read_batch_table(path)


def test_a_corrupted_giant_batch_is_reported_crc_invalid(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    H.sparse_giant(str(path), 20 * MiB, n_batches=1)
    with open(path, "r+b") as f:   # one byte inside the hole, far past the 1 MiB read window
        f.seek(15 * MiB)
        f.write(b"\x01")
    [batch] = iter_batches(path, max_batch_bytes=32 * MiB)
    assert batch.crc_valid is False and batch.size == os.path.getsize(path)
    assert batch.raw() == path.read_bytes()
    t = segtools.read_batch_table(path, max_batch_bytes=32 * MiB)
    assert t.column("crc_valid").to_pylist() == [False]


def test_sparse_producer_snapshot_is_read_in_steps(tmp_path):
    path = tmp_path / "00000000000000000000.snapshot"
    H.sparse_snapshot(str(path), 256 * MiB)
    [r] = run_child(path, [("snapshot", {})])
    assert r["error"] is None and r["rows"] == 0 and r["crc_ok"] is False, r
    assert r["peak_mb"] < 160, r      # about 390 MB before (1049 MB on 1 GiB)
    # same answer as reading it whole: the CRC of a small snapshot with trailing bytes
    small = tmp_path / "small.snapshot"
    H.sparse_snapshot(str(small), 9 * MiB)
    snap = read_producer_snapshot(small)
    import crc32c

    with open(small, "rb") as f:
        data = f.read()
    assert snap.computed_crc == crc32c.crc32c(data[6:]) and snap.trailing_bytes == len(data) - 10


# ---------------------------------------------------------------- files changing while read

_WRITER = textwrap.dedent("""
    import os, sys, time
    path, healthy, seconds = sys.argv[1], open(sys.argv[2], "rb").read(), float(sys.argv[3])
    end = time.time() + seconds
    half = len(healthy) // 2
    rounds = 0
    while time.time() < end:
        rounds += 1
        with open(path, "r+b") as f:
            f.truncate(0)
            if rounds % 2:   # preallocated first (Kafka's file.preallocate): zeros, then data
                f.truncate(len(healthy))
                time.sleep(0.002)
            f.write(healthy[:half])
            f.flush()
            f.write(healthy[half:])
""")


def _healthy_segment(path: Path, n: int = 400) -> bytes:
    rec = bytes([0x14, 0, 0, 0, 0x01, 0x08]) + b"valu" + b"\x00"   # value "valu"
    parts = [H.batch(rec, 1, 0, base_offset=i) for i in range(min(n, 400))]
    data = b"".join(parts) * max(1, n // 400)
    path.write_bytes(data)
    return data


@pytest.mark.usefixtures("real_settle_wait")  # a file changes while read: the wait is part of it
def test_a_file_rewritten_while_read_is_reported_as_changed_never_as_corrupt(tmp_path):
    seg = tmp_path / "00000000000000000000.log"
    healthy = _healthy_segment(seg)
    copy = tmp_path / "healthy.bin"
    copy.write_bytes(healthy)
    assert all(b.crc_valid for b in iter_batches(seg))    # healthy on disk
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(seg), str(copy), "4"])
    outcomes: dict[str, int] = {}
    try:
        readers = [
            lambda: [b.crc_valid for b in iter_batches(seg)],
            lambda: segtools.read_batch_table(seg).column("crc_valid").to_pylist(),
            lambda: [True] * segtools.read_records(seg, engine="python").num_rows,
            lambda: [True] * segtools.read_records(seg, engine="auto").num_rows,
        ]
        rounds = 0
        while writer.poll() is None and rounds < 1500:
            rounds += 1
            read = readers[rounds % len(readers)]
            try:
                flags = read()
            except FileChangedError as exc:
                assert "file changed while reading" in str(exc)
                outcomes["changed"] = outcomes.get("changed", 0) + 1
                continue
            except SegtoolsError as exc:   # any other finding would be a false corruption
                pytest.fail(f"round {rounds}: {type(exc).__name__}: {exc}")
            assert all(flags), f"round {rounds}: a CRC-invalid batch that is not on disk"
            outcomes["ok"] = outcomes.get("ok", 0) + 1
    finally:
        writer.kill()
        writer.wait()
    print("race outcomes", rounds, outcomes)
    assert outcomes.get("ok", 0) + outcomes.get("changed", 0) >= 20, outcomes


def test_file_changed_is_an_input_error_not_a_finding():
    assert issubclass(FileChangedError, InputError)


@pytest.mark.usefixtures("real_settle_wait")  # a file changes while read: the wait is part of it
def test_a_batch_changed_between_two_reads_is_detected(tmp_path, monkeypatch):
    # deterministic form of the race: the file shrinks under a reader (the file is larger
    # than one read window, so later bytes are read after the change)
    seg = tmp_path / "00000000000000000000.log"
    _healthy_segment(seg, 20_000)
    reader = SegmentReader(seg)
    it = iter(reader)
    next(it)
    with open(seg, "r+b") as f:
        f.truncate(100)
    with pytest.raises(FileChangedError, match="file changed while reading"):
        list(it)
    # the columnar reader, same change between its first window and the next (read-ahead
    # off: a window read ahead before the change would be a consistent old version)
    monkeypatch.setattr("segtools.records.columnar.window._PREFETCH", False)
    _healthy_segment(seg, 400_000)    # 28 MB: more than one 16 MiB window
    chunks = columnar.iter_batch_batches(seg, max_rows=1000)
    next(chunks)
    with open(seg, "r+b") as f:
        f.truncate(20 << 20)
    with pytest.raises(FileChangedError, match="file changed while reading"):
        list(chunks)
    # a byte changed inside a batch: the CRC mismatch is read again and differs
    _healthy_segment(seg, 400)
    data = bytearray(seg.read_bytes())
    data[72 * 5 + 70] ^= 0xFF
    seg.write_bytes(bytes(data))
    assert [b.crc_valid for b in iter_batches(seg)].count(False) == 1   # genuine: reported


# ---------------------------------------------------------------- names and OS errors


def _partition_with_odd_names(root: Path) -> bytes:
    broker = os.fsencode(root)
    pdir = broker + b"/top\xffic-0"
    os.mkdir(pdir)
    data = b"".join(H.batch(bytes([0x14, 0, 0, 0, 0x01, 0x08]) + b"valu" + b"\x00", 1, 0,
                            base_offset=i) for i in range(3))
    with open(pdir + b"/00000000000000000000.log", "wb") as f:
        f.write(data)
    return pdir


def test_non_utf8_partition_dir_names_are_read(tmp_path):
    pdir = _partition_with_odd_names(tmp_path)
    for path in (pdir, os.fsdecode(pdir), os.fsdecode(pdir + b"/00000000000000000000.log"),
                 str(tmp_path)):
        t = segtools.read_records(path)
        assert t.num_rows == 3, path
        topics = set(t.column("topic").to_pylist())
        assert topics <= {"top\ufffdic", None}, topics
        s = segtools.read_batch_table(path)
        assert s.num_rows == 3
        assert set(s.column("segment").to_pylist()) == {"00000000000000000000.log"}
        assert len(list(iter_batches(path))) == 3


def test_non_utf8_segment_name_gives_a_printable_error(tmp_path):
    name = os.fsencode(tmp_path) + b"/0000\xff.log"
    with open(name, "wb") as f:
        f.write(b"\x00" * 8 + b"\x00\x00\x00\x05" + b"\x00" * 20)   # size 5 < 14
    for read in (lambda: list(iter_batches(name)), lambda: segtools.read_batch_table(name),
                 lambda: segtools.read_records(os.fsdecode(name))):
        with pytest.raises(CorruptBatchError) as info:
            read()
        text = str(info.value)
        text.encode("utf-8")    # printable: no lone surrogates
        assert "0000\\xff.log" in text


def _all_readers(path):
    return [lambda: list(iter_batches(path)), lambda: segtools.read_batch_table(path),
            lambda: segtools.read_records(path, engine="python"),
            lambda: segtools.read_records(path), lambda: list(SegmentReader(path))]


def test_symlink_loop_and_long_names_are_input_errors(tmp_path):
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    long_name = tmp_path / ("x" * 300)
    for path in (loop, long_name, tmp_path / "missing"):
        for read in _all_readers(path):
            with pytest.raises(InputError) as info:
                read()
            assert str(path.name)[:20] in str(info.value)


def test_fifo_is_not_called_missing(tmp_path):
    fifo = tmp_path / "00000000000000000000.log"
    os.mkfifo(fifo)
    for read in _all_readers(fifo):
        with pytest.raises(InputError) as info:
            read()
        assert "no such file" not in str(info.value).lower(), str(info.value)


def test_bytes_paths_are_accepted(tmp_path):
    seg = tmp_path / "00000000000000000000.log"
    _healthy_segment(seg)
    raw = os.fsencode(seg)
    assert len(list(iter_batches(raw))) == 400
    assert len(list(SegmentReader(raw))) == 400
    assert segtools.read_batch_table(raw).num_rows == 400
    assert segtools.read_records(raw).num_rows == 400
    with pytest.raises(InputError):
        list(iter_batches(12345))     # not a path at all: no TypeError


def test_unlistable_partition_dir_is_an_input_error(tmp_path, monkeypatch):
    pdir = tmp_path / "topic-0"
    pdir.mkdir()
    _healthy_segment(pdir / "00000000000000000000.log")
    if os.geteuid() == 0:
        # root ignores directory permissions: make listing this dir fail as it would for a user
        real_listdir, real_scandir = os.listdir, os.scandir

        def deny(fn):
            def wrapped(p=".", *a, **kw):
                if os.fspath(p).rstrip("/").endswith("topic-0"):
                    raise PermissionError(13, "Permission denied", os.fspath(p))
                return fn(p, *a, **kw)
            return wrapped
        monkeypatch.setattr(os, "listdir", deny(real_listdir))
        monkeypatch.setattr(os, "scandir", deny(real_scandir))
    else:
        pdir.chmod(0)
    try:
        for path in (pdir, tmp_path):
            for read in _all_readers(path)[:4]:
                try:
                    read()
                except InputError as exc:
                    assert "Permission denied" in str(exc) or "cannot" in str(exc)
                except SegtoolsError:
                    pass
    finally:
        pdir.chmod(0o755)


def test_format_error_without_expected_value_does_not_say_expected_none():
    exc = CorruptBatchError("Found record size 0 smaller than minimum record overhead (14)",
                            path="x.log", position=0, actual=0)
    assert "expected None" not in str(exc)
    assert str(exc).endswith("(14)")
    exc = CorruptBatchError("bad", expected=1, actual=0)
    assert str(exc).endswith("expected 1, got 0")


# ---------------------------------------------------------------- sizes


@pytest.mark.parametrize("text,value", [("256MiB", 256 * MiB), ("1048576", MiB), ("64 MB", 64_000_000),
                                        ("1.5GiB", 3 << 29), ("16mib", 16 * MiB), ("2KiB", 2048)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["", "abc", "12 parsecs", "-5", "0"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_default_limit_is_far_above_kafka_defaults():
    # message.max.bytes = 1048588, max.request.size = 1048576 (Kafka defaults)
    assert DEFAULT_MAX_BATCH_BYTES >= 8 * 1048588


def test_env_variable_sets_the_default(monkeypatch):
    monkeypatch.setenv("SEGTOOLS_MAX_BATCH_BYTES", "2MiB")
    assert resolve_max_batch_bytes() == 2 * MiB
    assert resolve_max_batch_bytes(5) == 5
    monkeypatch.setenv("SEGTOOLS_MAX_BATCH_BYTES", "lots")
    with pytest.raises(InputError):
        resolve_max_batch_bytes()


@pytest.mark.parametrize("engine", ["python", "auto"])
def test_rows_of_one_large_batch_come_max_rows_at_a_time(tmp_path, engine):
    path = H.record_bomb(str(tmp_path / "00000000000000000000.log"), 100_000)
    chunks = list(columnar.iter_record_batches(path, engine=engine, max_rows=1000))
    assert len(chunks) == 100 and all(c.num_rows == 1000 for c in chunks)
    whole = segtools.read_records(path, engine=engine)
    assert whole.num_rows == 100_000
    import pyarrow as pa

    assert pa.Table.from_batches(chunks).equals(whole)
    # filters apply to each slice
    some = list(columnar.iter_record_batches(path, engine=engine, max_rows=1000,
                                             start_timestamp=0))
    assert sum(c.num_rows for c in some) == 100_000
