"""Speed of `segtools dump`: records printed per second and start-up time.

Usage::

    python benchmarks/bench_dump.py [--size-mb N] [--repeat R]

Measures, on a generated segment (kafka-python builds template batches, copies get
consecutive base offsets, which the CRC does not cover):

1. ``--deep-iteration --print-data-log`` text to /dev/null, in process (records/s);
2. ``--output ndjson --print-data-log`` to /dev/null, in process (records/s);
3. the same text dump as a fresh ``segtools dump`` process (records/s, start-up included);
4. start-up: wall time of ``python -m segtools dump`` on a one-batch file (median).

``bench_dump()`` returns the numbers as a dict so benchmarks/bench.py can include them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

LOG_NAME = "00000000000000000000.log"


def _template(codec: int, ts: int, n: int = 50) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 30)
    for i in range(n):
        builder.append(i, timestamp=ts + i, key=f"key-{i}".encode(),
                       value=(f"value {i} " * 8).encode(), headers=[])
    return bytes(builder.build())


def write_segment(directory: str, size_bytes: int, codec: int = 0) -> tuple[str, int]:
    """A segment of ``size_bytes`` (about) made of 50-record batches; returns (path, records)."""
    template = bytearray(_template(codec, 1_700_000_000_000))
    path = os.path.join(directory, LOG_NAME)
    offset = records = 0
    with open(path, "wb") as f:
        written = 0
        while written < size_bytes:
            struct.pack_into(">q", template, 0, offset)
            f.write(template)
            written += len(template)
            offset += 50
            records += 50
    return path, records


def _in_process(path: str, output: str) -> float:
    from segtools.dump.options import DumpOptions
    from segtools.dump.runner import run_dump

    with open(os.devnull, "w") as sink:
        start = time.perf_counter()
        status = run_dump([path], DumpOptions(print_data_log=True, output=output), out=sink,
                          err=sys.stderr)
        elapsed = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"dump exited {status}")
    return elapsed


def _process(args: list[str]) -> float:
    with open(os.devnull, "wb") as sink:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "segtools", "dump", *args], stdout=sink,
                       check=True)
        return time.perf_counter() - start


def bench_dump(size_mb: float = 16, repeat: int = 3, startup_runs: int = 7) -> dict[str, float]:
    """Best-of-``repeat`` throughputs (records/s) and median start-up seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        path, records = write_segment(tmp, int(size_mb * 1024 * 1024))
        text = min(_in_process(path, "text") for _ in range(repeat))
        ndjson = min(_in_process(path, "ndjson") for _ in range(repeat))
        proc = min(_process(["--print-data-log", path]) for _ in range(repeat))
        small_dir = os.path.join(tmp, "small")
        os.mkdir(small_dir)
        with open(os.path.join(small_dir, LOG_NAME), "wb") as f:
            f.write(_template(0, 1_700_000_000_000, n=1))
        startup = statistics.median(
            _process([os.path.join(small_dir, LOG_NAME)]) for _ in range(startup_runs))
    return {
        "records": records,
        "size_mb": size_mb,
        "text_records_per_s": records / text,
        "ndjson_records_per_s": records / ndjson,
        "process_text_records_per_s": records / proc,
        "startup_s": startup,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-mb", type=float, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    r = bench_dump(args.size_mb, args.repeat)
    print(f"| segtools dump ({r['size_mb']:g} MiB, {r['records']:,} records) | value |")
    print("|---|---|")
    print(f"| --deep-iteration --print-data-log, text, in process | "
          f"{r['text_records_per_s']:,.0f} records/s |")
    print(f"| --print-data-log --output ndjson, in process | "
          f"{r['ndjson_records_per_s']:,.0f} records/s |")
    print(f"| --print-data-log, text, fresh process | "
          f"{r['process_text_records_per_s']:,.0f} records/s |")
    print(f"| start-up on a one-batch file | {r['startup_s'] * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
