"""How much of a log dir a `--where` filter reads (segtools/filters.py pushdown).

    python benchmarks/bench_filters.py                 # ~1 GB in /tmp, kept for reruns
    python benchmarks/bench_filters.py --size-mb 256 --dir /tmp/bench-filters

Writes one topic ("orders", 8 partitions, 16 MiB segments, Kafka's index/time-index rules via
segtools.writer.LogWriter) with keys placed by Kafka's default partitioner
(toPositive(murmur2(key)) % 8) and timestamps rising one second per batch. Then times, from a
cold-ish start (each query in a fresh pass over the files):

- no filter (every record decoded, the baseline),
- ``key=<one key>`` with ``key_partitions=8`` (only that key's partition is read),
- ``timestamp>=<last 5%>`` (rolled segments whose .timeindex ends earlier are not opened),
- ``offset>=<last 5%>`` (segments below it are skipped by their file names),
and prints bytes read, segments read, rows and seconds (a Markdown table).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

PARTITIONS = 8
RECORDS_PER_BATCH = 50
VALUE_BYTES = 4000
T0 = 1_700_000_000_000
SEGMENT_BYTES = 16 << 20   # segment.bytes: 8 segments per partition at 1 GB


def generate(root: str, size_mb: int) -> dict[str, int]:
    from segtools.filters import partition_for_key
    from segtools.writer import LogWriter, NewRecord, build_batch

    marker = os.path.join(root, "_DONE")
    info = os.path.join(root, "_INFO")
    if os.path.exists(marker):
        key_count, batches = (int(x) for x in open(info).read().split())
        return {"keys": key_count, "batches": batches}
    os.makedirs(root, exist_ok=True)
    writers = {p: LogWriter(os.path.join(root, f"orders-{p}"), segment_bytes=SEGMENT_BYTES) for p in range(PARTITIONS)}
    pending: dict[int, list[NewRecord]] = {p: [] for p in range(PARTITIONS)}
    next_offset = dict.fromkeys(range(PARTITIONS), 0)
    filler = os.urandom(VALUE_BYTES // 2).hex().encode()
    target = size_mb << 20
    written = i = batches = 0
    while written < target:
        key = b"key-%d" % i
        p = partition_for_key(key, PARTITIONS)
        pending[p].append(NewRecord(key, b"%d:" % i + filler, timestamp=T0 + i // RECORDS_PER_BATCH * 1000))
        i += 1
        if len(pending[p]) == RECORDS_PER_BATCH:
            batch = build_batch(pending[p], base_offset=next_offset[p])
            writers[p].append(batch)
            next_offset[p] += RECORDS_PER_BATCH
            written += len(batch)
            batches += 1
            pending[p] = []
    for w in writers.values():
        w.close()
    with open(info, "w") as fh:
        fh.write(f"{i} {batches}\n")
    open(marker, "w").close()
    return {"keys": i, "batches": batches}


def run(root: str, where: list[str], **options: int) -> tuple[float, object, int]:
    from segtools.filters import FilterStats, read_filtered

    stats = FilterStats()
    t = time.perf_counter()
    table = read_filtered(root, where, stats=stats, **options)
    return time.perf_counter() - t, stats, table.num_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--dir", default="/tmp/segtools-bench-filters")
    args = ap.parse_args()
    root = os.path.join(args.dir, f"{args.size_mb}mb")
    t = time.perf_counter()
    meta = generate(root, args.size_mb)
    print(f"data: {root} ({meta['keys']} records, {meta['batches']} batches; "
          f"ready in {time.perf_counter() - t:.1f} s)\n")
    n = meta["keys"]
    last_ts = T0 + (n // RECORDS_PER_BATCH) * 1000
    first_ts = T0
    cut_ts = last_ts - (last_ts - first_ts) // 20
    per_partition = n // PARTITIONS
    queries = [
        ("no filter", [], {}),
        (f"key=key-{n // 2}", [f"key=key-{n // 2}"], {"key_partitions": PARTITIONS}),
        (f"key=key-{n // 2} (partition count not given)", [f"key=key-{n // 2}"], {}),
        ("timestamp >= last 5%", [f"timestamp>={cut_ts}"], {}),
        ("offset >= last 5%", [f"offset>={per_partition - per_partition // 20}"], {}),
    ]
    run(root, ["offset<1"])   # warm-up: imports and the numba kernel's compilation are not timed
    print("| query | rows | segments read | bytes read | of total | seconds |")
    print("|---|---|---|---|---|---|")
    for name, where, opts in queries:
        secs, st, rows = run(root, where, **opts)
        print(f"| `{name}` | {rows} | {st.segments_read}/{st.segments_total} | "  # type: ignore[attr-defined]
              f"{st.bytes_read / 1e6:.0f} MB | {st.bytes_read / max(st.bytes_total, 1):.1%} | "  # type: ignore[attr-defined]
              f"{secs:.2f} |")


if __name__ == "__main__":
    main()
