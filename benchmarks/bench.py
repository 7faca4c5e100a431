"""Throughput and memory of segtools' columnar reader against raw IO and two Kafka clients.

Usage::

    python benchmarks/bench.py [--quick] [--size-mb N] [--repeat R] [--keep DIR]

Generates segment files in a temp dir (kafka-python's batch builder makes a few template
batches; copies get consecutive base offsets, which the CRC does not cover), then prints
Markdown tables:

1. throughput per file: raw read (``readinto`` and mmap + numpy sum), ``read_batch_table``
   (GB/s, ratio to raw readinto), ``iter_record_batches`` (records/s) and the same records
   decoded by aiokafka's compiled reader and by kafka-python (offset, timestamp, key, value,
   headers of every record);
2. peak RSS (``VmHWM`` of a fresh subprocess) per reader as the segment grows.

Peers are measured in the same run, interleaved: each round runs every reader of a file once
(the order reversed every other round, so no reader always follows the same one), and a cell
shows the median over the rounds. A ratio is the median of the ratios within each round, so
load from other jobs on a shared machine hits both sides of a ratio alike. Next to the
wall-clock ratios, the ``CPU`` columns give the same ratios from CPU time
(``time.process_time``: every thread of the process, so segtools' decompression and
read-ahead threads count), which moves far less with the machine's load; the load average
before and after each file is printed too.

Both tables are driven by lists of named cases (``FILE_CASES``, ``THROUGHPUT_CASES``,
``MEMORY_CASES``): add a row by appending one.
"""

from __future__ import annotations

import argparse
import gc
import json
import mmap
import os
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

LOG_NAME = "00000000000000000000.log"


# --------------------------------------------------------------------------------------------
# segment generation


def _template_batch(records: list[tuple[bytes | None, bytes | None]], codec: int, ts: int) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 30)
    for i, (key, value) in enumerate(records):
        builder.append(i, timestamp=ts + i, key=key, value=value, headers=[])
    return bytes(builder.build())


def _write_segment(path: str, templates: list[bytes], size_bytes: int) -> tuple[int, int]:
    """Copies of ``templates`` (cycled) with consecutive offsets up to ``size_bytes``."""
    batches = records = 0
    offset = 0
    written = 0
    with open(path, "wb") as out:
        while written < size_bytes:
            t = templates[batches % len(templates)]
            count = struct.unpack_from(">i", t, 57)[0]
            buf = bytearray(t)
            struct.pack_into(">q", buf, 0, offset)   # baseOffset: not covered by the CRC
            struct.pack_into(">i", buf, 12, 7)       # partitionLeaderEpoch: neither
            out.write(buf)
            written += len(buf)
            offset += count
            batches += 1
            records += count
    return batches, records


def _text(rng: random.Random, n: int) -> bytes:
    """JSON-ish payload of about n bytes: compressible like real events, not constant."""
    parts = []
    while sum(map(len, parts)) < n:
        parts.append(f'"f{rng.randint(0, 20)}":{rng.randint(0, 10**6)},')
    return ("{" + "".join(parts))[:n].encode()


def gen_16k_batches(path: str, size: int, rng: random.Random) -> tuple[int, int]:
    """~16 KB uncompressed batches of ~100 keyed records of ~150 B."""
    templates = []
    for t in range(16):
        recs = [(b"key-%08d" % rng.randrange(10**8), _text(rng, 150)) for _ in range(100)]
        templates.append(_template_batch(recs, 0, 1_700_000_000_000 + t * 1000))
    return _write_segment(path, templates, size)


def gen_tiny_batches(path: str, size: int, rng: random.Random) -> tuple[int, int]:
    """One ~100 B record (null key) per batch: header-dominated."""
    templates = [_template_batch([(None, _text(rng, 100))], 0, 1_700_000_000_000 + t)
                 for t in range(64)]
    return _write_segment(path, templates, size)


def _gen_compressed(codec: int) -> Callable[[str, int, random.Random], tuple[int, int]]:
    def gen(path: str, size: int, rng: random.Random) -> tuple[int, int]:
        templates = []
        for t in range(8):
            recs = [(b"key-%08d" % rng.randrange(10**8), _text(rng, 150)) for _ in range(500)]
            batch = _template_batch(recs, codec, 1_700_000_000_000 + t * 1000)
            assert struct.unpack_from(">h", batch, 21)[0] & 7 == codec, "builder did not compress"
            templates.append(batch)
        return _write_segment(path, templates, size)
    gen.__doc__ = f"500 keyed ~150 B records per batch, codec {codec}"
    return gen


@dataclass
class FileCase:
    name: str
    generate: Callable[[str, int, random.Random], tuple[int, int]]
    description: str


FILE_CASES: list[FileCase] = [
    FileCase("16k-batches", gen_16k_batches, "16 KB batches, ~100 keyed records of ~150 B"),
    FileCase("tiny-batches", gen_tiny_batches, "one ~100 B record per batch"),
    FileCase("lz4-500", _gen_compressed(3), "lz4, 500 records per batch"),
    FileCase("zstd-500", _gen_compressed(4), "zstd, 500 records per batch"),
]


# --------------------------------------------------------------------------------------------
# readers (each returns the number of items it saw, so the work cannot be skipped)


def _chunks(path: str) -> Iterator[memoryview]:
    """The file's bytes in 1 MiB reads into one reused buffer (the floor readers' loop)."""
    view = memoryview(bytearray(1 << 20))
    with open(path, "rb", buffering=0) as f:
        while n := f.readinto(view):
            yield view[:n]


def raw_readinto(path: str) -> int:
    return sum(len(chunk) for chunk in _chunks(path))


def copy_crc_floor(path: str) -> int:
    """The least a batch scan that checks CRCs must do: bring every byte in and CRC it."""
    import crc32c

    crc = 0
    for chunk in _chunks(path):
        crc = crc32c.crc32c(chunk, crc)
    return crc & 0


def raw_mmap_sum(path: str) -> int:
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        arr = np.frombuffer(m, dtype=np.uint64, count=len(m) // 8)
        total = int(arr.sum(dtype=np.uint64))   # touches every page
        del arr
    return total


def segtools_scan(path: str) -> int:
    from segtools.records.columnar import iter_batch_batches

    return sum(b.num_rows for b in iter_batch_batches(path))


def segtools_records(path: str) -> int:
    from segtools.records.columnar import iter_record_batches

    return sum(b.num_rows for b in iter_record_batches(path))


def _client_records(memory_records_cls: type, path: str) -> int:
    with open(path, "rb") as f:
        data = f.read()
    records = memory_records_cls(data)
    n = 0
    while (batch := records.next_batch()) is not None:
        for r in batch:
            # touch every field the columnar reader produces
            r.offset, r.timestamp, r.key, r.value, r.headers  # noqa: B018
            n += 1
    return n


def aiokafka_records(path: str) -> int:
    from aiokafka.record._crecords.memory_records import MemoryRecords

    return _client_records(MemoryRecords, path)


def kafka_python_records(path: str) -> int:
    from kafka.record.memory_records import MemoryRecords

    return _client_records(MemoryRecords, path)


READERS: dict[str, Callable[[str], int]] = {
    "raw_readinto": raw_readinto, "raw_mmap_sum": raw_mmap_sum,
    "segtools_scan": segtools_scan, "segtools_records": segtools_records,
    "aiokafka": aiokafka_records, "kafka_python": kafka_python_records,
}


def _count(path: str) -> tuple[int, int]:
    """Batches and records of a generated file, from the headers (kafka-python's view)."""
    batches = records = 0
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos + 61 <= len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0]
        records += struct.unpack_from(">i", data, pos + 57)[0]
        batches += 1
        pos += 12 + size
    return batches, records


def timed(fn: Callable[[str], int], path: str) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of every thread of this process, items seen) of one call."""
    gc.collect()   # garbage of the previous reader is not charged to this one
    w0, c0 = time.perf_counter(), time.process_time()
    n = fn(path)
    return time.perf_counter() - w0, time.process_time() - c0, n


def load_average() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:   # pragma: no cover - platforms without getloadavg
        return "?"


# --------------------------------------------------------------------------------------------
# cases


@dataclass
class ThroughputCase:
    """One column of the throughput table: ``reader`` timed on each file, shown in ``unit``
    (GB/s of file bytes, or records/s), with its ratios to the readers in ``ratio_to``.
    ``max_bytes``: a slow peer is timed on the whole batches of this prefix of the file."""

    name: str
    reader: str
    unit: str
    ratio_to: tuple[str, ...] = ()
    max_bytes: int | None = None

    def target(self, path: str) -> str:
        if self.max_bytes is None or os.path.getsize(path) <= self.max_bytes:
            return path
        target = path + ".prefix"
        if not os.path.exists(target):
            _copy_prefix(path, target, self.max_bytes)
        return target


def _copy_prefix(path: str, target: str, max_bytes: int) -> None:
    """The whole batches of ``path`` that fit in ``max_bytes``."""
    with open(path, "rb") as f:
        data = f.read(max_bytes)
    pos = 0
    while pos + 12 <= len(data):
        size = struct.unpack_from(">i", data, pos + 8)[0]
        if pos + 12 + size > max_bytes:
            break
        pos += 12 + size
    with open(target, "wb") as out:
        out.write(data[:pos])


THROUGHPUT_CASES: list[ThroughputCase] = [
    ThroughputCase("raw readinto", "raw_readinto", "GB/s"),
    ThroughputCase("raw mmap sum", "raw_mmap_sum", "GB/s"),
    ThroughputCase("read_batch_table (x readinto / x mmap sum)", "segtools_scan", "GB/s",
                   ("raw_readinto", "raw_mmap_sum")),
    ThroughputCase("aiokafka (C)", "aiokafka", "rec/s"),
    ThroughputCase("kafka-python", "kafka_python", "rec/s", max_bytes=32 << 20),
    ThroughputCase("read_records (x aiokafka / x kafka-python)", "segtools_records", "rec/s",
                   ("aiokafka", "kafka_python")),
]


def measure_file(path: str, rounds: int) -> tuple[list[str], list[str]]:
    """Every throughput case on one file, interleaved over ``rounds`` rounds: the cells of
    the wall-clock columns, then one CPU-time ratio cell per case that has ratios."""
    by_reader = {c.reader: c for c in THROUGHPUT_CASES}
    targets = {c.reader: c.target(path) for c in THROUGHPUT_CASES}
    sizes = {r: os.path.getsize(t) for r, t in targets.items()}
    for c in THROUGHPUT_CASES:   # warm: imports, JIT cache, page cache
        READERS[c.reader](targets[c.reader])
    wall: dict[str, list[float]] = {c.reader: [] for c in THROUGHPUT_CASES}
    cpu: dict[str, list[float]] = {c.reader: [] for c in THROUGHPUT_CASES}
    for r in range(rounds):
        order = THROUGHPUT_CASES if r % 2 == 0 else THROUGHPUT_CASES[::-1]
        for c in order:
            w, t, n = timed(READERS[c.reader], targets[c.reader])
            amount = sizes[c.reader] if c.unit == "GB/s" else n
            wall[c.reader].append(amount / w)
            cpu[c.reader].append(amount / max(t, 1e-9))

    def ratios(c: ThroughputCase, rates: dict[str, list[float]]) -> list[str]:
        return [f"{statistics.median(a / b for a, b in zip(rates[c.reader], rates[o])):.2f}x"
                for o in c.ratio_to if o in by_reader]

    cells, cpu_cells = [], []
    for c in THROUGHPUT_CASES:
        value = statistics.median(wall[c.reader])
        text = f"{value / 1e9:.2f} GB/s" if c.unit == "GB/s" else f"{value / 1e6:.2f} M rec/s"
        if c.ratio_to:
            text += f" ({' / '.join(ratios(c, wall))})"
            cpu_cells.append(" / ".join(ratios(c, cpu)))
        cells.append(text)
    return cells, cpu_cells


@dataclass
class MemoryCase:
    """One row of the memory table: a reader run alone in a fresh interpreter."""

    name: str
    reader: str


MEMORY_CASES: list[MemoryCase] = [
    MemoryCase("segtools read_batch_table (iter)", "segtools_scan"),
    MemoryCase("segtools read_records (iter)", "segtools_records"),
    MemoryCase("aiokafka (C)", "aiokafka"),
    MemoryCase("kafka-python", "kafka_python"),
]

# VmHWM (peak RSS of this process image): ru_maxrss would carry the parent's peak across exec
_CHILD = """
import json, sys
sys.path.insert(0, {here!r})
import bench
{warm}
n = bench.READERS[{reader!r}]({path!r})
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(json.dumps({{"n": n, "peak_kb": int(hwm)}}))
"""


def peak_rss_mb(reader: str, path: str) -> float:
    # import the reader's modules first so the baseline is the same whatever the file size
    warm = {"segtools_scan": "import segtools.records.columnar, segtools.records.jit_kernel",
            "segtools_records": ("import segtools.records.columnar, segtools.records.jit_kernel, "
                                 "segtools.primitives.codecs"),
            "aiokafka": "import aiokafka.record._crecords.memory_records",
            "kafka_python": "import kafka.record.memory_records"}.get(reader, "")
    code = _CHILD.format(here=os.path.dirname(os.path.abspath(__file__)), reader=reader,
                         path=path, warm=warm)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    return result["peak_kb"] / 1024


# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small files, one repetition")
    parser.add_argument("--size-mb", type=int, default=None, help="size of each throughput file")
    parser.add_argument("--repeat", type=int, default=None,
                        help="interleaved rounds per file, median shown (default 5; quick 3)")
    parser.add_argument("--memory-sizes", default=None,
                        help="comma list of MB for the memory table; 0 = one batch, the baseline "
                             "(default 0,64,256; quick 0,16,64)")
    parser.add_argument("--keep", default=None, help="write files here and keep them")
    parser.add_argument("--files", default=None,
                        help="comma list of file cases to run (default all: "
                             + ",".join(c.name for c in FILE_CASES) + ")")
    args = parser.parse_args(argv)
    size_mb = args.size_mb or (32 if args.quick else 256)
    repeat = args.repeat or (3 if args.quick else 5)
    mem_sizes = [int(s) for s in (args.memory_sizes or ("0,16,64" if args.quick else "0,64,256")).split(",")]

    workdir = args.keep or tempfile.mkdtemp(prefix="segtools-bench-")
    os.makedirs(workdir, exist_ok=True)
    try:
        # compile/load the numba kernels once so no timing includes JIT work
        from segtools.records.columnar import available_engines
        print(f"engines: {available_engines()}; python {sys.version.split()[0]}; "
              f"cpus {os.cpu_count()}; file size {size_mb} MB; median of {repeat} interleaved "
              f"rounds; load average {load_average()}\n")
        rows = []
        wanted = args.files.split(",") if args.files else [c.name for c in FILE_CASES]
        unknown = set(wanted) - {c.name for c in FILE_CASES}
        if unknown:
            parser.error(f"unknown file case(s): {', '.join(sorted(unknown))}")
        cases = [c for c in FILE_CASES if c.name in wanted]
        for case in cases:
            d = os.path.join(workdir, case.name + "-0")
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, LOG_NAME)
            if not os.path.exists(path):
                case.generate(path, size_mb << 20, random.Random(42))
            batches, records = _count(path)
            load_before = load_average()
            cells, cpu_cells = measure_file(path, repeat)
            rows.append([case.name, f"{os.path.getsize(path) / 2**20:.0f} MB",
                         str(batches), str(records)] + cells + cpu_cells
                        + [f"{load_before} / {load_average()}"])
        header = (["file", "size", "batches", "records"] + [c.name for c in THROUGHPUT_CASES]
                  + [f"CPU time: {c.name.split(' (')[0]} ({c.name.split(' (')[1]}"
                     for c in THROUGHPUT_CASES if c.ratio_to]
                  + ["load avg (before / after)"])
        _print_table(header, rows)
        print()
        for case in cases:
            print(f"- {case.name}: {case.description}")
        print()

        mem_case = FILE_CASES[0]
        mem_rows = []
        paths = []
        for mb in mem_sizes:
            d = os.path.join(workdir, f"mem{mb}-0")
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, LOG_NAME)
            if not os.path.exists(path):
                mem_case.generate(path, max(1, mb << 20), random.Random(7))
            paths.append(path)
        for mc in MEMORY_CASES:
            mem_rows.append([mc.name] + [f"{peak_rss_mb(mc.reader, p):.0f} MB" for p in paths])
        _print_table([f"peak RSS ({mem_case.name})"]
                     + [f"{mb} MB segment" if mb else "1 batch (baseline)" for mb in mem_sizes],
                     mem_rows)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _print_table(header: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    sys.exit(main())
