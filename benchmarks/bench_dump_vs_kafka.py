"""`segtools dump` against the real kafka-dump-log (Kafka 4.3.1) on the same segments.

Usage::

    python benchmarks/bench_dump_vs_kafka.py [--size-mb 256] [--keep DIR]

Two segments of ``--size-mb`` each are written with segtools' writer
(``segtools.writer.batch_builder.build_batch``) in a temporary folder:

* ``16k``: batches of about 16 KiB (uncompressed, 100-byte values, keys, one header);
* ``single``: one record per batch (the worst case for per-batch work).

Each is dumped once with ``--deep-iteration --print-data-log`` to /dev/null by

* the real tool, run the way ``kafka-dump-log.sh`` runs it (``-Xmx256M``, G1, full JIT);
* ``segtools dump`` as a fresh process, and again pinned to one CPU (``sched_setaffinity``):
  its column-wise text path (segtools/dump/fast_text.py) is single-threaded, and the pinned
  run shows it (the JVM is left free to use its JIT and GC threads, as users run it).

Records/s are given with start-up (wall time of the whole command) and without it (the
start-up measured on a one-batch file is subtracted), and per CPU-second (user + system of
all the command's threads), which stays comparable on a loaded machine. One run each: the
numbers are indicative, not a statistic. The outputs are also checked to be identical (sizes and
SHA-256 of stdout), so the speed compared is that of the same work.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

LOG_NAME = "00000000000000000000.log"
DUMP_LOG_MAIN = "org.apache.kafka.tools.DumpLogSegments"


def write_segment(path: str, size_bytes: int, per_batch: int) -> int:
    """Write ``size_bytes`` (about) of batches of ``per_batch`` records; returns records.
    A few template batches are built with segtools' writer; copies get consecutive base
    offsets (the base offset is outside the CRC)."""
    from segtools.writer.batch_builder import NewRecord, build_batch

    ts = 1_700_000_000_000
    templates = []
    for t in range(4):
        records = [NewRecord(key=f"key-{t}-{i}".encode(),
                             value=(f"value {t} {i} " * 10)[:100].encode(),
                             headers=[("trace", b"abc")], timestamp=ts + t * 1000 + i)
                   for i in range(per_batch)]
        templates.append(bytearray(build_batch(records, base_offset=0, producer_id=7,
                                               producer_epoch=0, base_sequence=0)))
    offset = written = 0
    with open(path, "wb") as f:
        i = 0
        while written < size_bytes:
            tpl = templates[i % len(templates)]
            struct.pack_into(">q", tpl, 0, offset)
            f.write(tpl)
            written += len(tpl)
            offset += per_batch
            i += 1
    return offset


def _records_per_16k() -> int:
    from segtools.writer.batch_builder import NewRecord, build_batch

    one = len(build_batch([NewRecord(b"key-0-0", b"v" * 100, [("trace", b"abc")], 1)],
                          base_offset=0)) - 61
    return max(1, (16 * 1024 - 61) // one)


def kafka_command(args: list[str]) -> list[str]:
    """kafka-run-class.sh's JVM options for the tools (heap 256M, G1), the pinned jars."""
    from segtools.realcluster.kafka_runtime import kafka_runtime

    rt = kafka_runtime()
    return [rt.java, "-Xmx256M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-Djava.awt.headless=true", "-cp", rt.classpath, DUMP_LOG_MAIN, *args]


def ours_command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "segtools", "dump", *args]


def _one_cpu() -> None:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def timed(cmd: list[str], cwd: str, one_cpu: bool = False) -> tuple[float, str, int, float]:
    """Wall seconds, sha256 of stdout, its size (streamed, never held whole) and the CPU
    seconds (user + system, all threads: the JVM's JIT and GC threads count) of the command."""
    digest = hashlib.sha256()
    size = 0
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, preexec_fn=_one_cpu if one_cpu else None)
    assert proc.stdout is not None
    while True:
        chunk = proc.stdout.read(1 << 20)
        if not chunk:
            break
        digest.update(chunk)
        size += len(chunk)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return (time.perf_counter() - start, digest.hexdigest(), size,
            usage.ru_utime + usage.ru_stime)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=int, default=256)
    ap.add_argument("--keep", help="write the segments here and keep them")
    args = ap.parse_args(argv)
    base = args.keep or tempfile.mkdtemp(prefix="segtools-bench-kafka-")
    os.makedirs(base, exist_ok=True)
    flags = ["--deep-iteration", "--print-data-log"]
    try:
        tiny_dir = os.path.join(base, "tiny-0")
        os.makedirs(tiny_dir, exist_ok=True)
        write_segment(os.path.join(tiny_dir, LOG_NAME), 1, 1)
        tiny = ["--files", os.path.join("tiny-0", LOG_NAME)]
        timed(kafka_command(tiny), base)  # warm the page cache and the JVM's CDS archive
        k_runs = [timed(kafka_command(flags + tiny), base) for _ in range(3)]
        o_runs = [timed(ours_command(flags + tiny), base) for _ in range(3)]
        k_start, k_start_cpu = min(r[0] for r in k_runs), min(r[3] for r in k_runs)
        o_start, o_start_cpu = min(r[0] for r in o_runs), min(r[3] for r in o_runs)
        print(f"start-up (one-batch file): kafka-dump-log {k_start:.2f} s wall "
              f"({k_start_cpu:.2f} s CPU), segtools dump {o_start:.2f} s wall "
              f"({o_start_cpu:.2f} s CPU); load average {os.getloadavg()[0]:.1f} on "
              f"{os.cpu_count()} CPUs", flush=True)
        rows = []
        for name, per_batch in (("16k", _records_per_16k()), ("single", 1)):
            d = os.path.join(base, f"{name}-0")
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, LOG_NAME)
            t0 = time.perf_counter()
            records = write_segment(path, args.size_mb * 1024 * 1024, per_batch)
            size = os.path.getsize(path)
            print(f"{name}: {size / 2**20:.0f} MiB, {records:,} records, {per_batch} per batch "
                  f"(written in {time.perf_counter() - t0:.0f} s)", flush=True)
            rel = ["--files", os.path.join(f"{name}-0", LOG_NAME)]
            kt, kh, ks, kc = timed(kafka_command(flags + rel), base)
            ot, oh, os_, oc = timed(ours_command(flags + rel), base)
            pt, ph, ps, pc = timed(ours_command(flags + rel), base, one_cpu=True)
            same = (kh, ks) == (oh, os_) == (ph, ps)
            rows.append((name, records, kt, ot, same))
            print(f"  kafka-dump-log: {kt:7.1f} s  {records / kt:12,.0f} rec/s  "
                  f"without start-up {records / max(kt - k_start, 1e-9):12,.0f} rec/s", flush=True)
            print(f"  segtools dump:  {ot:7.1f} s  {records / ot:12,.0f} rec/s  "
                  f"without start-up {records / max(ot - o_start, 1e-9):12,.0f} rec/s", flush=True)
            print(f"  CPU time: kafka-dump-log {kc:.1f} s ({records / kc:,.0f} rec/CPU-s, "
                  f"without start-up {records / max(kc - k_start_cpu, 1e-9):,.0f}), "
                  f"segtools dump {oc:.1f} s ({records / oc:,.0f} rec/CPU-s, without start-up "
                  f"{records / max(oc - o_start_cpu, 1e-9):,.0f})", flush=True)
            print(f"  speed-up {kt / ot:.2f}x wall (without start-up "
                  f"{(kt - k_start) / max(ot - o_start, 1e-9):.2f}x), {kc / oc:.2f}x CPU "
                  f"(without start-up {(kc - k_start_cpu) / max(oc - o_start_cpu, 1e-9):.2f}x); "
                  f"identical stdout: {same} ({ks:,} bytes)", flush=True)
            print(f"  segtools dump on one CPU: {pt:7.1f} s wall, {pc:.1f} s CPU; speed-up "
                  f"{kt / pt:.2f}x wall, {kc / pc:.2f}x CPU (without start-up "
                  f"{(kc - k_start_cpu) / max(pc - o_start_cpu, 1e-9):.2f}x); load average "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
            os.remove(path)
        return 0 if all(r[4] for r in rows) else 1
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
