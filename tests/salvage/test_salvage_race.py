"""Salvage (and every walker that used to map its input) while another thread or process
truncates the segment (issue 23: salvage mapped the whole file and died of SIGBUS, exit 135,
in 4 of 6 runs).

The segment is built by kafka-python (an independent writer), so its batch boundaries are
known without our reader. Each run must end either with a clean result -- the rebuilt segment
is the original's bytes up to a batch boundary (a truncation before the open is a torn tail,
nothing else) -- or with one ``FileChangedError``; never a signal."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from segtools.errors import FileChangedError, InputError
from segtools.files.read_window import ReadWindow

N_BATCHES = 20000

# these tests change files while they are read: the production settle wait is part of it
pytestmark = pytest.mark.usefixtures("real_settle_wait")


def _segment(n_batches: int = N_BATCHES) -> tuple[bytes, list[int]]:
    """kafka-python's v2 batches of one record each, offsets 0.. in order; and the batch ends."""
    from kafka.record.memory_records import MemoryRecordsBuilder

    parts: list[bytes] = []
    ends: list[int] = []
    total = 0
    for off in range(n_batches):
        builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
        builder.append(timestamp=1_700_000_000_000 + off, key=b"k%d" % off,
                       value=bytes([65 + off % 26]) * 100, headers=[])
        builder.close()
        raw = bytearray(builder.buffer())
        raw[0:8] = off.to_bytes(8, "big")    # baseOffset: not covered by the CRC
        parts.append(bytes(raw))
        total += len(raw)
        ends.append(total)
    return b"".join(parts), ends


@pytest.fixture(scope="module")
def segment() -> tuple[bytes, list[int]]:
    return _segment()


def _truncate_later(path: Path, delay: float, size: int) -> threading.Thread:
    def run() -> None:
        time.sleep(delay)
        os.truncate(path, size)

    t = threading.Thread(target=run)
    t.start()
    return t


def _check_clean(rebuilt: bytes, data: bytes, ends: list[int]) -> None:
    """A clean result is the original up to a batch boundary."""
    assert rebuilt == data[:len(rebuilt)]
    assert len(rebuilt) == 0 or len(rebuilt) in set(ends)


def test_salvage_with_the_segment_truncated_mid_read_20_times(tmp_path: Path,
                                                              segment: tuple[bytes, list[int]]) -> None:
    from segtools.salvage import salvage

    data, ends = segment
    rng = random.Random(23)
    outcomes = {"clean": 0, "changed": 0}
    part = tmp_path / "in" / "orders-0"
    part.mkdir(parents=True)
    seg = part / "00000000000000000000.log"
    for run in range(20):
        seg.write_bytes(data)
        cut = rng.randrange(len(data) // 4, 3 * len(data) // 4)
        t = _truncate_later(seg, rng.uniform(0.0, 0.35), cut)
        out = tmp_path / f"out{run}"
        try:
            result = salvage(part, out)
        except FileChangedError as exc:
            assert "changed while reading" in str(exc) and "\n" not in str(exc)
            outcomes["changed"] += 1
        else:
            rebuilt = (out / "orders-0" / "00000000000000000000.log").read_bytes()
            _check_clean(rebuilt, data, ends)
            # the file was already cut when it was opened: the cut is a torn tail, not damage
            seg_result = result.segments[0]
            assert seg_result.file_size in (len(data), cut)
            assert [d.reason for d in seg_result.dropped] in ([], ["torn_tail"])
            outcomes["clean"] += 1
        finally:
            t.join()
    assert sum(outcomes.values()) == 20
    assert outcomes["changed"] > 0, outcomes   # the race was really run


def test_salvage_cli_in_a_subprocess_never_dies_of_a_signal(tmp_path: Path) -> None:
    """The issue's reproducer: `segtools salvage` while another process truncates the file;
    exit 0/1 with a clean result or exit 2 with one line, never 135 (SIGBUS)."""
    data, ends = _segment(100_000)    # about 1.5 s of scanning: the cut lands in it
    part = tmp_path / "in" / "orders-0"
    part.mkdir(parents=True)
    seg = part / "00000000000000000000.log"
    rng = random.Random(6)
    codes = []
    for run in range(6):
        seg.write_bytes(data)
        out = tmp_path / f"out{run}"
        proc = subprocess.Popen([sys.executable, "-m", "segtools", "salvage", str(seg), "--out", str(out), "-q"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # the interpreter takes most of a second to start: cut while it reads, at a random point
        time.sleep(rng.uniform(0.8, 2.0))
        os.truncate(seg, rng.randrange(len(data) // 4, 3 * len(data) // 4))
        stdout, stderr = proc.communicate(timeout=120)
        codes.append(proc.returncode)
        assert proc.returncode in (0, 1, 2), (proc.returncode, stderr)
        if proc.returncode == 2:
            lines = stderr.strip().splitlines()
            assert len(lines) == 1 and "changed while reading" in lines[0], stderr
        else:
            _check_clean((out / "orders-0" / "00000000000000000000.log").read_bytes(), data, ends)
    assert all(c >= 0 for c in codes)


def test_the_writer_recovery_walk_reads_a_window_not_a_map(tmp_path: Path) -> None:
    """No module of segtools maps a file (the last three did: salvage, the batch walk's type,
    the log writer's recovery walk)."""
    import segtools

    root = Path(segtools.__file__).parent
    users = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                   if "import mmap" in p.read_text() or "mmap.mmap(" in p.read_text())
    assert users == []


def test_read_window_shrunk_file_is_file_changed_error(tmp_path: Path) -> None:
    f = tmp_path / "x.log"
    f.write_bytes(bytes(range(256)) * 64)
    with ReadWindow(str(f), window=64) as win:
        buf, rel = win.get(0, 16)
        assert buf[rel:rel + 16] == bytes(range(16))
        os.truncate(f, 1000)
        with pytest.raises(FileChangedError, match="shrank"):
            win.get(4000, 16)
        with pytest.raises(FileChangedError, match="size 16384 -> 1000"):
            win.check_unchanged()


def test_read_window_grown_or_replaced_file_is_file_changed_error(tmp_path: Path) -> None:
    f = tmp_path / "x.log"
    f.write_bytes(b"a" * 100)
    with ReadWindow(str(f)) as win:
        with open(f, "ab") as fh:
            fh.write(b"b")
        with pytest.raises(FileChangedError, match="size 100 -> 101"):
            win.check_unchanged()
    with ReadWindow(str(f)) as win:
        other = tmp_path / "y.log"
        other.write_bytes(b"a" * 101)
        os.replace(other, f)
        with pytest.raises(FileChangedError, match="another file"):
            win.check_unchanged()


def test_a_proc_file_is_refused_not_read_as_empty(tmp_path: Path) -> None:
    """/proc files say 0 bytes by stat but give bytes when read: an empty segment would be a
    silent 0 rows."""
    from segtools.salvage import salvage

    with pytest.raises(InputError, match="size is 0 by stat but reading it gives bytes"):
        salvage("/proc/self/status", tmp_path / "out")
    # a real empty file is still an empty segment
    empty = tmp_path / "orders-0"
    empty.mkdir()
    (empty / "00000000000000000000.log").write_bytes(b"")
    assert salvage(empty, tmp_path / "out2").segments[0].kept == []
