"""Export benchmark: segtools export vs decode-only vs aiokafka decode + pyarrow write.

    python benchmarks/bench_export.py [--quick]

Each case runs in a fresh subprocess so its peak RSS (ru_maxrss) is its own; peak memory is
reported for two input sizes to show whether it grows with the input.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_partition(folder: Path, megabytes: int) -> tuple[int, int]:
    """~16 KB batches of 100 records of ~150 B with keys, zstd every 4th batch."""
    from segtools.writer import NewRecord, build_batch

    pdir = folder / "bench-0"
    pdir.mkdir(parents=True)
    target = megabytes * 1024 * 1024
    offset = written = 0
    pool = os.urandom(1 << 20)   # values are distinct windows of random bytes
    with open(pdir / f"{0:020d}.log", "wb") as f:
        while written < target:
            recs = [NewRecord(key=b"key-%08d" % (offset + i),
                              value=pool[(offset + i) * 7 % 900_000:][:150],
                              timestamp=1_700_000_000_000 + offset + i)
                    for i in range(100)]
            batch = build_batch(recs, base_offset=offset,
                                compression="zstd" if (offset // 100) % 4 == 3 else "none")
            f.write(batch)
            written += len(batch)
            offset += 100
    return offset, written


def _case(name: str, pdir: str, out: str, warmup: str | None = None) -> dict:
    """Run one case; with ``warmup`` first run it on that small input (imports, JIT)."""
    if warmup is not None:
        _case(name, warmup, out + "-warmup")
    os.makedirs(out, exist_ok=True)
    start = time.perf_counter()
    rows = 0
    if name == "segtools export":
        from segtools.export import export

        rows = export([pdir], out).rows
    elif name == "segtools decode only":
        from segtools.records.columnar import iter_record_batches

        for rb in iter_record_batches(pdir):
            rows += rb.num_rows
    elif name == "aiokafka decode + pyarrow write":
        import pyarrow as pa
        import pyarrow.parquet as pq
        from aiokafka.record.memory_records import MemoryRecords

        writer = None
        seg = next(Path(pdir).glob("*.log"))
        data = seg.read_bytes()          # aiokafka needs the whole buffer in memory
        records = MemoryRecords(data)
        cols: dict[str, list] = {k: [] for k in ("key", "value", "topic", "partition", "offset",
                                                 "timestamp", "timestampType", "headers")}

        def flush() -> int:
            nonlocal writer
            # the same Spark Kafka columns our export starts with
            table = pa.table({**cols, "timestamp": pa.array(cols["timestamp"], pa.timestamp("ms", tz="UTC"))})
            writer = writer or pq.ParquetWriter(os.path.join(out, "x.parquet"), table.schema)
            writer.write_table(table)
            return table.num_rows

        while True:
            batch = records.next_batch()
            if batch is None:
                break
            ts_type = batch.timestamp_type
            for rec in batch:
                cols["key"].append(rec.key)
                cols["value"].append(rec.value)
                cols["topic"].append("bench")
                cols["partition"].append(0)
                cols["offset"].append(rec.offset)
                cols["timestamp"].append(rec.timestamp)
                cols["timestampType"].append(ts_type)
                cols["headers"].append([{"key": k, "value": v} for k, v in rec.headers] or None)
            if len(cols["offset"]) >= 65536:
                rows += flush()
                cols = {k: [] for k in cols}
        if cols["offset"]:
            rows += flush()
        if writer:
            writer.close()
    elapsed = time.perf_counter() - start
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"rows": rows, "seconds": elapsed, "peak_mb": peak_kb / 1024}


def run_case(name: str, pdir: Path, out: Path, warmup: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    code = (f"import json,sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import bench_export as b; "
            f"print(json.dumps(b._case({name!r}, {str(pdir)!r}, {str(out / 'o')!r}, {str(warmup)!r})))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="64 and 256 MB inputs instead of 256 MB and 1 GB")
    args = parser.parse_args()
    sizes = (64, 256) if args.quick else (256, 1024)
    cases = ["segtools export", "segtools decode only", "aiokafka decode + pyarrow write"]
    print("| case | input MB | records/s | MB/s | ratio vs aiokafka+pyarrow | peak RSS MB |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        make_partition(Path(tmp) / "warm", 1)
        for size in sizes:
            folder = Path(tmp) / f"in{size}"
            n, nbytes = make_partition(folder, size)
            results = {c: run_case(c, folder / "bench-0", Path(tmp) / f"out{size}-{i}", Path(tmp) / "warm/bench-0")
                       for i, c in enumerate(cases)}
            peer = results["aiokafka decode + pyarrow write"]
            for case, r in results.items():
                assert r["rows"] == n, (case, r["rows"], n)
                rate = r["rows"] / r["seconds"]
                print(f"| {case} | {nbytes / 2**20:.0f} | {rate:,.0f} | {nbytes / 2**20 / r['seconds']:,.1f} | "
                      f"{rate / (peer['rows'] / peer['seconds']):.2f}x | {r['peak_mb']:.0f} |")


if __name__ == "__main__":
    main()
