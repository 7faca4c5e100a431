"""`segtools compare`: the local runner against the Spark runner on the same data, the same
cores and the same run, with `read_batch_table` over the same bytes as the floor.

    python benchmarks/bench_compare.py                 # --quick sizes (24, 48, 96 MB total)
    python benchmarks/bench_compare.py --full          # 1 and 4 GB total (3 replicas)
    python benchmarks/bench_compare.py --sizes 1024,4096,16384 --master local[2] --json out.json
    python benchmarks/bench_compare.py --cold-cli --sizes 512,2048,6144   # the runner threshold

Data: per partition, broker 1 leads (epoch 0 then epoch 2), broker 2 lags by a few batches,
broker 3 holds a divergent uncommitted tail in epoch 1 (so stage 3 decodes records); all the
rest agrees (batch headers and CRCs are all compare needs there). Inputs are written under
--workdir (default $TMPDIR) and deleted after each size unless --keep.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

PARTITIONS = 4
RECORDS_PER_BATCH = 64
VALUE_BYTES = 1000
TAIL_BATCHES = 5


def _write_cluster(root: str, total_bytes: int) -> dict[str, int]:
    from segtools.files.checkpoints import (
        write_leader_epoch_checkpoint,
        write_meta_properties,
        write_offset_checkpoint,
    )
    from segtools.writer import LogWriter, NewRecord, build_batch

    per_partition = total_bytes // 3 // PARTITIONS
    batch_bytes = RECORDS_PER_BATCH * (VALUE_BYTES + 20) + 61
    n_batches = max(2 * TAIL_BATCHES + 2, per_partition // batch_bytes)
    hw: dict[int, dict[tuple[str, int], int]] = {1: {}, 2: {}, 3: {}}
    for broker in (1, 2, 3):
        d = os.path.join(root, f"broker-{broker}")
        os.makedirs(d, exist_ok=True)
        write_meta_properties(os.path.join(d, "meta.properties"), {"version": "0", "broker.id": str(broker)})
    ts = 1_700_000_000_000
    pool = [os.urandom(VALUE_BYTES // 2).hex().encode() for _ in range(997)]   # values, reused
    for p in range(PARTITIONS):
        tp = ("bench", p)
        writers = {b: LogWriter(os.path.join(root, f"broker-{b}", f"bench-{p}"), segment_bytes=128 << 20)
                   for b in (1, 2, 3)}
        offset = 0
        prefix = n_batches - 2 * TAIL_BATCHES
        for i in range(n_batches):
            base = offset
            if i < prefix:
                targets, epoch = (1, 2, 3), 0
            else:
                targets, epoch = ((1, 2) if i < n_batches - TAIL_BATCHES else (1,)), 2
            recs = [NewRecord(f"k{base + j}".encode(), pool[(base + j) % len(pool)], (), ts + base + j)
                    for j in range(RECORDS_PER_BATCH)]
            raw = build_batch(recs, base_offset=base, partition_leader_epoch=epoch)
            for b in targets:
                writers[b].append(raw)
            if i == prefix:
                # broker 3's divergent tail: epoch 1 at the same offsets, never replicated
                for t in range(TAIL_BATCHES):
                    b3 = base + t * RECORDS_PER_BATCH
                    trecs = [NewRecord(f"x{b3 + j}".encode(), b"divergent", (), ts + b3 + j)
                             for j in range(RECORDS_PER_BATCH)]
                    writers[3].append(build_batch(trecs, base_offset=b3, partition_leader_epoch=1))
            offset += RECORDS_PER_BATCH
        leo = {b: w.log_end_offset for b, w in writers.items()}
        for w in writers.values():
            w.close()
        common = prefix * RECORDS_PER_BATCH
        hw[1][tp], hw[2][tp], hw[3][tp] = leo[2], leo[2], common
        lec = {1: [(0, 0), (2, common)], 2: [(0, 0), (2, common)], 3: [(0, 0), (1, common)]}
        for b in (1, 2, 3):
            write_leader_epoch_checkpoint(
                os.path.join(root, f"broker-{b}", f"bench-{p}", "leader-epoch-checkpoint"), lec[b])
    for b in (1, 2, 3):
        d = os.path.join(root, f"broker-{b}")
        write_offset_checkpoint(os.path.join(d, "replication-offset-checkpoint"), hw[b])
        write_offset_checkpoint(os.path.join(d, "recovery-point-offset-checkpoint"), hw[b])
        write_offset_checkpoint(os.path.join(d, "log-start-offset-checkpoint"), {})
        if b != 3:
            open(os.path.join(d, ".kafka_cleanshutdown"), "w").close()
    return {"batches_per_partition": n_batches}


def _dir_bytes(root: str) -> int:
    return sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(root) for f in fs if f.endswith(".log"))


def _warm(root: str) -> None:
    for dirpath, _, files in os.walk(root):           # the page cache, for every contestant
        for f in files:
            with open(os.path.join(dirpath, f), "rb") as fh:
                while fh.read(1 << 22):
                    pass


def _scan_floor(root: str) -> float:
    """Seconds for segtools.read_batch_table over every segment (headers + CRCs, nothing else)."""
    import segtools

    t0 = time.perf_counter()
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".log"):
                segtools.read_batch_table(os.path.join(dirpath, f))
    return time.perf_counter() - t0


def _reset_peak() -> None:
    """Start a new peak-RSS (VmHWM) window for this process (Linux)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def _rss_mb(pid: int | str = "self", field: str = "VmRSS:") -> float | None:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(field):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def main(argv: list[str] | None = None) -> int:
    global RECORDS_PER_BATCH
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="1 and 4 GB total (default: --quick sizes)")
    ap.add_argument("--sizes", help="comma-separated total sizes in MB")
    ap.add_argument("--master", default="local[2]", help="Spark master (default %(default)s)")
    ap.add_argument("--workdir", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "segtools-bench-compare"))
    ap.add_argument("--json", help="write results as JSON to this file")
    ap.add_argument("--keep", action="store_true", help="keep generated inputs")
    ap.add_argument("--records-per-batch", type=int, default=RECORDS_PER_BATCH,
                    help="smaller batches = more headers to scan per GB (default %(default)s)")
    ap.add_argument("--cold-cli", action="store_true",
                    help="time whole `segtools compare` runs (a fresh process each: JVM start "
                         "included) with --no-spark and with --spark; what the default runner "
                         "threshold (segtools/forensics/api.py IN_PROCESS_MAX_BYTES) is set from")
    args = ap.parse_args(argv)
    RECORDS_PER_BATCH = args.records_per_batch
    if args.cold_cli:
        return _cold_cli(args)
    sizes = ([int(s) for s in args.sizes.split(",")] if args.sizes
             else ([1024, 4096] if args.full else [24, 48, 96]))

    import segtools
    from segtools.spark.session import get_spark

    spark = get_spark(master=args.master, app_name="segtools-bench-compare",
                      config={"spark.driver.memory": "2g", "spark.ui.enabled": "false"})
    cores = spark.sparkContext.defaultParallelism
    # Warm-up: JVM JIT and Python worker start-up are paid once per session, not per size.
    warm = os.path.join(args.workdir, "warmup")
    if not os.path.isdir(os.path.join(warm, "broker-3")):
        shutil.rmtree(warm, ignore_errors=True)
        _write_cluster(warm, 4 << 20)
    t0 = time.perf_counter()
    segtools.compare(warm, engine="spark", spark=spark, progress=False)
    segtools.compare(warm, progress=False)
    print(f"warm-up (cold session) {time.perf_counter() - t0:.1f}s", file=sys.stderr)
    results = []
    for mb in sizes:
        root = os.path.join(args.workdir, f"{mb}MB-{RECORDS_PER_BATCH}rpb")
        if not os.path.isdir(os.path.join(root, "broker-3")):
            shutil.rmtree(root, ignore_errors=True)
            t0 = time.perf_counter()
            _write_cluster(root, mb << 20)
            print(f"generated {mb} MB in {time.perf_counter() - t0:.1f}s under {root}", file=sys.stderr)
        data = _dir_bytes(root)
        _warm(root)
        load_before = os.getloadavg()
        scan_s = _scan_floor(root)
        # driver memory: how far this process's RSS rose above where it stood before each run
        before = _rss_mb() or 0
        _reset_peak()
        t0 = time.perf_counter()
        distributed = segtools.compare(root, engine="spark", spark=spark, progress=False)
        spark_s = time.perf_counter() - t0
        py_peak_spark = (_rss_mb(field="VmHWM:") or 0) - before
        before = _rss_mb() or 0
        _reset_peak()
        t0 = time.perf_counter()
        local = segtools.compare(root, progress=False)
        local_s = time.perf_counter() - t0
        py_peak_local = (_rss_mb(field="VmHWM:") or 0) - before
        statuses = sorted({r.status for p in local.partitions for r in p.verdict.replicas})
        results.append({
            "total_mb": round(data / 2**20, 1), "records_per_batch": RECORDS_PER_BATCH, "cores": cores,
            "scan_batches_s": round(scan_s, 2), "local_s": round(local_s, 2), "spark_s": round(spark_s, 2),
            "spark_vs_local": round(spark_s / local_s, 2), "local_vs_scan": round(local_s / scan_s, 2),
            "local_mb_per_s": round(data / 2**20 / local_s, 1),
            "spark_driver_py_growth_mb": round(py_peak_spark, 1), "local_py_growth_mb": round(py_peak_local, 1),
            "driver_jvm_rss_mb": _jvm_rss_mb(spark),
            "load_avg_1m": [round(load_before[0], 1), round(os.getloadavg()[0], 1)],
            "statuses": statuses, "lost_records": sum(len(p.lost) for p in local.partitions),
            "same_report": distributed.to_json() == local.to_json(),
        })
        print(json.dumps(results[-1]), file=sys.stderr)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    header = (f"{'total MB':>9} {'scan s':>7} {'local s':>8} {'Spark s':>8} {'Spark/local':>11} "
              f"{'local/scan':>10} {'local +MB':>9} {'Spark driver py +MB':>19} "
              f"{'JVM RSS MB':>11} {'load 1m':>11} same")
    print(header)
    for r in results:
        print(f"{r['total_mb']:>9} {r['scan_batches_s']:>7} {r['local_s']:>8} {r['spark_s']:>8} "
              f"{r['spark_vs_local']:>11} {r['local_vs_scan']:>10} {r['local_py_growth_mb']:>9} "
              f"{r['spark_driver_py_growth_mb']:>19} "
              f"{round(r['driver_jvm_rss_mb'] or 0):>11} {'/'.join(map(str, r['load_avg_1m'])):>11} "
              f"{r['same_report']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    spark.stop()
    return 0


def _jvm_rss_mb(spark) -> float | None:
    try:
        return _rss_mb(spark.sparkContext._gateway.proc.pid)   # local mode: the driver JVM
    except AttributeError:
        return None


def _cold_cli(args: argparse.Namespace) -> int:
    """Cold CLI wall time of each runner per size (inputs in the page cache for both)."""
    import subprocess

    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [512, 2048, 6144]
    rows = []
    for mb in sizes:
        root = os.path.join(args.workdir, f"{mb}MB-{RECORDS_PER_BATCH}rpb")
        if not os.path.isdir(os.path.join(root, "broker-3")):
            shutil.rmtree(root, ignore_errors=True)
            _write_cluster(root, mb << 20)
        for dirpath, _, files in os.walk(root):           # warm the page cache for both runners
            for f in files:
                with open(os.path.join(dirpath, f), "rb") as fh:
                    while fh.read(1 << 22):
                        pass
        row = {"total_mb": round(_dir_bytes(root) / 2**20, 1)}
        for name, extra in (("in_process_s", ["--no-spark"]),
                            ("spark_s", ["--spark"] + (["--master", args.master] if args.master else []))):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "segtools", "compare", root, *extra],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            row[name] = round(time.perf_counter() - t0, 2)
        rows.append(row)
        print(json.dumps(row), file=sys.stderr)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(f"{'total MB':>9} {'in-process s':>13} {'Spark s':>9}")
    for r in rows:
        print(f"{r['total_mb']:>9} {r['in_process_s']:>13} {r['spark_s']:>9}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
