"""Records/s the simulator appends with RF 3 and acks=all (every batch waits for the HW).

Usage::

    python benchmarks/bench_simulate.py [--records N] [--batch-size B ...] [--out]

Prints a Markdown table: for each batch size, the in-memory replication model alone and the
full run that also writes the three brokers' log dirs (segments, indexes, checkpoints).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time

from segtools.simulate import run


def scenario(records: int, batch_size: int) -> dict:
    return {
        "name": "bench", "seed": 1,
        "cluster": {"brokers": [1, 2, 3], "segment_bytes": 16 * 1024 * 1024,
                    "segment_index_bytes": 1024 * 1024},
        "topics": [{"name": "bench", "partitions": 3, "replication_factor": 3,
                    "min_insync_replicas": 2}],
        "steps": [{"produce": {"topic": "bench", "acks": "all", "count": records,
                               "value_bytes": 100, "batch_size": batch_size}}],
    }


def measure(records: int, batch_size: int, write_files: bool) -> float:
    out = tempfile.mkdtemp(prefix="bench-simulate-") if write_files else None
    try:
        start = time.perf_counter()
        result = run(scenario(records, batch_size), f"{out}/o" if out else None)
        elapsed = time.perf_counter() - start
        assert all(a["ok"] for a in result.acks)
        return records / elapsed
    finally:
        if out:
            shutil.rmtree(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=20000)
    ap.add_argument("--batch-size", type=int, nargs="*", default=[1, 10, 100])
    args = ap.parse_args()
    print(f"RF 3, acks=all, min.insync 2, 3 partitions, 100-byte values, {args.records} records\n")
    print("| batch size | model only (records/s) | with log dirs (records/s) |")
    print("|---:|---:|---:|")
    for bs in args.batch_size:
        mem = measure(args.records, bs, False)
        full = measure(args.records, bs, True)
        print(f"| {bs} | {mem:,.0f} | {full:,.0f} |")


if __name__ == "__main__":
    main()
