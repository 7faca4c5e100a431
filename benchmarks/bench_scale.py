"""Scale with segment count: compare (in process and on Spark), export and dump over many
small segments, time and peak RSS per row.

    python benchmarks/bench_scale.py                        # 1,000 and 10,000 segments, no Spark
    python benchmarks/bench_scale.py --sizes 1000,10000,100000 --spark --cluster
    python benchmarks/bench_scale.py --sizes 200 --only export,dump --keep --workdir /tmp/scale
    python benchmarks/bench_scale.py --sizes 100000 --only spark    # Spark alone (slow)
    python benchmarks/bench_scale.py --cluster --only export,dump --workdir /dev/shm/scale

``--workdir`` on tmpfs (the last line) keeps the disk's own costs out of the rows: on ext4,
the cluster row's export creates 2,000 folders and files, and the kernel's inode allocation
took 0.3-2.0 s of system time from run to run, depending on what the disk deleted before.

Rows:

On 2 cores ``local[*]`` is ``local[2]``. The Spark row's RSS is the driver's Python process
(``ru_maxrss``), and in brackets ("all") the peak of the summed PSS of the driver and every
process below it (the JVM, Spark's Python daemon, planner and workers), sampled every 0.5 s.

- ``1p x N``: two brokers (replicas), each with one partition of N one-batch segments
  (identical copies, one record of 100 bytes per batch). compare reads both replicas; export
  and dump read broker 1's partition dir.
- ``10b x 2000p`` (``--cluster``): ten brokers, each holding 2,000 partition replicas of one
  one-batch segment (topic of 10,000 partitions, replication factor 2): 20,000 segments.

Every command runs in a fresh child process (``python -m segtools ...``); its peak RSS is
the child's own ``ru_maxrss`` (from ``os.wait4`` on that child), its time wall-clock. The
1-minute load average is printed beside each row (the machine is shared). The data is
generated at run time in a temp dir and deleted afterwards unless ``--keep``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

RECORD_VALUE = b"v" * 100


def _template() -> bytes:
    from segtools.writer import NewRecord
    from segtools.writer.batch_builder import build_batch

    return build_batch([NewRecord(b"key", RECORD_VALUE, (), 1_700_000_000_000)], base_offset=0,
                       partition_leader_epoch=0)


def _write_meta(broker_dir: str, broker: int) -> None:
    os.makedirs(broker_dir, exist_ok=True)
    with open(os.path.join(broker_dir, "meta.properties"), "w") as fh:
        fh.write(f"version=0\nbroker.id={broker}\n")


def _write_partition(pdir: str, segments: int, template: bytes) -> None:
    """``segments`` one-batch segments, offsets 0..segments-1 (the base offset is not covered
    by the CRC, so one template serves every file)."""
    os.makedirs(pdir, exist_ok=True)
    body = template[8:]
    for off in range(segments):
        with open(os.path.join(pdir, f"{off:020d}.log"), "wb") as fh:
            fh.write(off.to_bytes(8, "big") + body)


def make_single(root: str, segments: int) -> list[str]:
    """Two brokers, one partition of ``segments`` one-batch segments each."""
    template = _template()
    brokers = []
    for b in (1, 2):
        d = os.path.join(root, f"broker-{b}")
        _write_meta(d, b)
        _write_partition(os.path.join(d, "scale-0"), segments, template)
        brokers.append(d)
    return brokers


def make_cluster(root: str, brokers: int = 10, per_broker: int = 2000, rf: int = 2) -> list[str]:
    """``brokers`` brokers of ``per_broker`` partition replicas each (one one-batch segment)."""
    template = _template()
    dirs = [os.path.join(root, f"broker-{b}") for b in range(1, brokers + 1)]
    for b, d in enumerate(dirs, 1):
        _write_meta(d, b)
    partitions = brokers * per_broker // rf
    for p in range(partitions):
        for r in range(rf):
            b = (p + r) % brokers
            _write_partition(os.path.join(dirs[b], f"scale-{p}"), 1, template)
    return dirs


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


def _tree(root: int) -> list[int]:
    """``root`` and every process below it (from /proc/*/stat's parent ids)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        # the field after ") state " is the parent id (the name in parentheses may hold spaces)
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def _pss_kb(pid: int) -> int:
    """Proportional set size of ``pid`` (forked Python workers share their daemon's pages; PSS
    counts a shared page once over all of them, RSS once per process)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as fh:
            for line in fh:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class TreeSampler:
    """Peak over time of the summed PSS of a process and all its descendants (the Spark JVM,
    its Python daemon and workers), sampled every ``interval`` seconds."""

    def __init__(self, pid: int, interval: float = 0.5) -> None:
        import threading

        self.pid, self.interval, self.peak_kb = pid, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak_kb = max(self.peak_kb, sum(_pss_kb(p) for p in _tree(self.pid)))

    def stop(self) -> float:
        """The peak in MB."""
        self._stop.set()
        self._thread.join()
        return self.peak_kb / 1024


def run_child(args: list[str], env: dict[str, str] | None = None,
              timeout: float | None = None, tree: bool = False) -> tuple[float, float, int, float | None]:
    """(seconds, peak RSS MB, exit code, peak tree PSS MB or None) of ``python -m segtools
    <args>`` in a fresh child; the peak RSS is that child's own ``ru_maxrss`` from ``wait4``
    (its children, the Spark JVM and Python workers, are not counted); with ``tree``, the
    sampled peak of the PSS summed over the child and every process below it."""
    import threading

    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "segtools", *args],
                                stdout=subprocess.DEVNULL, stderr=err, env=env)
        sampler = TreeSampler(proc.pid) if tree else None
        timer = threading.Timer(timeout, proc.kill) if timeout else None
        if timer is not None:
            timer.start()
        _pid, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
        if timer is not None:
            timer.cancel()
        total = sampler.stop() if sampler is not None else None
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            err.seek(0)
            tail = err.read().decode(errors="replace")[-400:]
            sys.stderr.write(f"  [{args[0]} exit {proc.returncode}] {tail}\n")
    return seconds, usage.ru_maxrss / 1024, proc.returncode, total


def bench_row(label: str, brokers: list[str], segments: int, what: list[str], spark: bool,
              workdir: str, timeout: float) -> list[str]:
    out = os.path.join(workdir, "out")
    cells: dict[str, tuple[float, float, int, float | None]] = {}
    pdirs = [os.path.join(brokers[0], d) for d in sorted(os.listdir(brokers[0]))
             if os.path.isdir(os.path.join(brokers[0], d))]
    if "dump" in what:
        # dump of broker 1's segments (the floor): --print-data-log off, headers and CRCs
        cells["dump"] = run_child(["dump", *pdirs[:1]] if len(pdirs) == 1 else ["dump", brokers[0]],
                                  timeout=timeout)
    if "export" in what:
        shutil.rmtree(out, ignore_errors=True)
        cells["export"] = run_child(["export", "--out", out, brokers[0]], timeout=timeout)
        shutil.rmtree(out, ignore_errors=True)
    if "compare" in what:
        cells["compare"] = run_child(["compare", "--no-spark", *brokers], timeout=timeout)
    if spark:
        env = dict(os.environ, SEGTOOLS_SPARK_MASTER="local[*]")
        cells["spark"] = run_child(["compare", "--spark", "--master", "local[*]", *brokers],
                                   env=env, timeout=timeout, tree=True)
    # export and dump read broker 1; compare (both runners) every broker
    mine = sum(1 for p in pdirs for f in os.listdir(p) if f.endswith(".log"))
    total = sum(1 for b in brokers for d, _, fs in os.walk(b) for f in fs if f.endswith(".log"))
    row = [label, f"{total:,} ({mine:,} in broker 1)"]
    for name in ("compare", "spark", "export", "dump"):
        if name not in cells:
            row += ["", ""]
            continue
        s, rss, rc, tree = cells[name]
        per = s / (total if name in ("compare", "spark") else mine) * 1000
        row += [f"{s:.1f} s ({per:.2f} ms/seg){'' if rc in (0, 1) else f' exit {rc}'}",
                f"{rss:.0f}" if tree is None else f"{rss:.0f} (all {tree:.0f})"]
    if "export" in cells and "dump" in cells:
        row.append(f"{cells['export'][0] / cells['dump'][0]:.1f}x")
    else:
        row.append("")
    row.append(_load())
    return row


def _byte_compile() -> None:
    """Byte-compile the project's modules once, as an installed package is: with
    PYTHONDONTWRITEBYTECODE set (some machines set it) every child would otherwise compile each
    edited module from source, ~10 ms a module in every command's start."""
    import compileall

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for package in ("segtools", "formats", "spark", "cli"):
        if os.path.isdir(os.path.join(repo, package)):
            compileall.compile_dir(os.path.join(repo, package), quiet=1)


HEADER = ["input", "segments", "compare in process", "RSS MB", "compare Spark local[*]",
          "RSS MB: driver (all: JVM + workers, PSS)",
          "export", "RSS MB", "dump", "RSS MB", "export/dump", "load"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000", help="segment counts of the 1-partition rows")
    ap.add_argument("--cluster", action="store_true", help="also the 10 brokers x 2,000 partitions row")
    ap.add_argument("--spark", action="store_true", help="also compare on Spark local[*] (as --only ...,spark)")
    ap.add_argument("--spark-max", type=int, default=None,
                    help="run Spark only on rows of at most this many segments")
    ap.add_argument("--only", default="compare,export,dump",
                    help="commands to run, of compare (in process), spark, export, dump")
    ap.add_argument("--workdir", default=None, help="where to generate (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated data")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per command")
    args = ap.parse_args(argv)
    what = args.only.split(",")
    _byte_compile()
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
    base = tempfile.mkdtemp(prefix="segscale-", dir=args.workdir)
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    try:
        rows: list[tuple[str, int, bool]] = [(f"1p x {int(n):,}", int(n), False)
                                             for n in args.sizes.split(",") if n]
        if args.cluster:
            rows.append(("10b x 2,000p", 20000, True))
        for label, n, cluster in rows:
            root = os.path.join(base, label.replace(" ", "").replace(",", ""))
            brokers = make_cluster(root) if cluster else make_single(root, n)
            # the data just written (and the last row's deletion) is flushed before the row is
            # timed: otherwise its writeback competes with the commands (export writes files;
            # the cluster row's export took 2.7 s instead of 2.0 s, its system time 1.8 s)
            os.sync()
            spark = (args.spark or "spark" in what) and (args.spark_max is None or n <= args.spark_max)
            print("| " + " | ".join(bench_row(label, brokers, n, what, spark, root,
                                              args.timeout)) + " |", flush=True)
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
