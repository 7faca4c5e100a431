"""Peak memory and time of the readers on hostile and giant files (issues 9 and 16).

Creates, in a temporary folder (sparse files: a few hundred KB on disk in all):

* decompression bombs with valid CRCs: one zstd batch of 8,000,000 seven-byte records, one of
  36,000,000, 40 zstd batches of 250 MiB of zeros, one gzip batch of 300 MiB of zeros;
* a 2 GiB sparse segment whose first header claims length 2**31-1;
* a legal 2.2 GiB segment of two 1.1 GiB batches (one record each, its value a hole), read
  with the default limit (refused) and with ``max_batch_bytes`` raised to 2 GiB;
* a 1 GiB sparse producer ``.snapshot``.

Each call runs in its own subprocess; the table shows its peak RSS (``VmHWM``) and seconds.

    python benchmarks/bench_hostile.py            # all
    python benchmarks/bench_hostile.py --quick    # bombs and the sparse header only
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "builders"))

import hostile_files as H  # noqa: E402

_CHILD = r"""
import json, sys, time
path, call, kw = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
t0 = time.perf_counter()
err = None
try:
    import segtools
    if call == "iter_batches":
        n = sum(1 for b in segtools.iter_batches(path, **kw) if b.crc_valid is not None)
    elif call == "iter_batches+records":
        n = sum(1 for b in segtools.iter_batches(path, **kw) for _ in b.records())
    elif call == "read_batch_table":
        n = segtools.read_batch_table(path, **kw).num_rows
    elif call.startswith("read_records"):
        n = segtools.read_records(path, engine=call.split(":")[1], **kw).num_rows
    elif call.startswith("iter_record_batches"):
        from segtools.records import columnar
        n = sum(rb.num_rows for rb in columnar.iter_record_batches(path, engine=call.split(":")[1], **kw))
    elif call == "snapshot":
        from segtools.files.snapshots import read_producer_snapshot
        n = len(read_producer_snapshot(path).entries)
except BaseException as exc:
    err = f"{type(exc).__name__}: {str(exc)[:90]}"
peak = 0
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            peak = int(line.split()[1]) / 1024
print(json.dumps({"peak_mb": peak, "seconds": time.perf_counter() - t0, "error": err}))
"""

LOG_CALLS = ["iter_batches", "iter_batches+records", "read_batch_table", "read_records:auto",
             "read_records:python"]


def measure(path: str, call: str, kw: dict) -> dict:
    proc = subprocess.run([sys.executable, "-c", _CHILD, path, call, json.dumps(kw)],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        return {"peak_mb": float("nan"), "seconds": float("nan"),
                "error": f"exit {proc.returncode}: {proc.stderr.strip()[-90:]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="bombs and the sparse header only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="segtools-hostile-") as tmp:
        d = Path(tmp)
        t0 = time.perf_counter()
        cases: list[tuple[str, str, list[str], dict]] = [
            ("zstd 8M records", H.record_bomb(str(d / "rec8m.log"), 8_000_000), LOG_CALLS, {}),
            ("zstd 36M records", H.record_bomb(str(d / "rec36m.log"), 36_000_000), LOG_CALLS, {}),
            ("zstd 40x250MiB 0s", H.zero_bomb(str(d / "zstd40.log"), "zstd", 250 * H.MiB, 40),
             LOG_CALLS, {}),
            ("gzip 300MiB 0s", H.zero_bomb(str(d / "gzip.log"), "gzip", 300 * H.MiB), LOG_CALLS, {}),
            ("sparse len 2^31-1", H.sparse_hostile(str(d / "hostile.log")), LOG_CALLS, {}),
        ]
        if not args.quick:
            giant = H.sparse_giant(str(d / "giant.log"), int(1.1 * H.GiB))
            cases += [
                ("2x1.1GiB default", giant, LOG_CALLS, {}),
                ("2x1.1GiB raised", giant,
                 ["iter_batches", "read_batch_table", "iter_record_batches:auto"],
                 {"max_batch_bytes": 2 << 30}),
                ("1GiB .snapshot", H.sparse_snapshot(str(d / "00000000000000000000.snapshot")),
                 ["snapshot"], {}),
            ]
        print(f"files created in {time.perf_counter() - t0:.1f} s under {d}")
        print(f"{'file':20} {'call':26} {'peak RSS':>9} {'seconds':>8}  outcome")
        for name, path, calls, kw in cases:
            for call in calls:
                r = measure(path, call, kw)
                outcome = r["error"] or "ok"
                print(f"{name:20} {call:26} {r['peak_mb']:7.0f}MB {r['seconds']:8.2f}  {outcome}",
                      flush=True)


if __name__ == "__main__":
    main()
