"""segtools against the real tools on segments written by a real Kafka producer, in one command.

Usage::

    python benchmarks/bench_real_segments.py [--size-mib 64] [--runs 3] [--cases none,lz4,...]
                                             [--keep DIR] [--reuse DIR]

1. Makes the segments with real Kafka (the Maven jars of ``segtools.realcluster.kafka_runtime``):
   a one-node KRaft broker (combined broker + controller, free loopback ports, 1 GiB segments so
   each topic is one segment) and ``org.apache.kafka.tools.ProducerPerformance`` with 100-byte
   values, ``acks=1``, one topic per case:

   * ``none``, ``gzip``, ``snappy``, ``lz4``, ``zstd``: ``batch.size=16384``, ``linger.ms=5``;
   * ``single``: ``batch.size=0`` (one record per batch), uncompressed;
   * ``1mib``: ``batch.size=1048576``, ``linger.ms=200``, uncompressed;
   * ``txn``: as ``none``, from a transactional producer (``acks=all``, a commit every 100 ms,
     each a COMMIT control batch in the segment).

   A probe of 20,000 records measures the bytes per record of each case, then the rest is produced
   until the segment is about ``--size-mib``. The broker is stopped cleanly and each ``.log`` is
   copied out twice (one copy per tool, so kafka-dump-log only ever reads a copy, and neither
   tool reads what the other may have written).
2. ``dump``: the real kafka-dump-log (run as ``kafka-dump-log.sh`` runs it: ``-Xmx256M``, G1) and
   ``segtools dump``, both ``--deep-iteration --print-data-log``, stdout to /dev/null, interleaved
   (the order alternates per run), ``--runs`` runs, medians of wall time, of CPU time (user +
   system of the child and its threads, from ``wait4``) and of peak RSS (``ru_maxrss``). One
   extra untimed run of each (which also warms the page cache) hashes stdout: the outputs must be
   byte-identical, or the row says so and the exit status is 1.
3. ``read``: in this process, interleaved rounds of ``read_records`` (segtools'
   ``iter_record_batches``), aiokafka's compiled reader, kafka-python's ``DefaultRecordBatch``
   (every record's offset, timestamp, key, value, headers), ``read_batch_table``
   (``iter_batch_batches``) and the floor of a batch scan: reading the bytes into a reused buffer
   plus CRC-32C over all of them (the ``crc32c`` C extension), and ``export`` (``segtools
   export`` of the segment's partition dir to Parquet in a temporary folder, removed after each
   round). Medians of wall and CPU time (``time.process_time``: segtools' helper threads
   count). Record counts must agree.

Each row carries ``os.getloadavg()`` before and after it: on a shared machine the wall figures
are noisy, CPU-time ratios much less so. Prints Markdown tables and which targets of issue 25 are
met (dump ≥ 2× kafka-dump-log on every codec, ≥ 3× uncompressed; read_records ≥ 2× aiokafka;
read_batch_table ≥ 0.9× the floor).
"""

from __future__ import annotations

import argparse
import base64
import gc
import hashlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

LOG_NAME = "00000000000000000000.log"
DUMP_LOG_MAIN = "org.apache.kafka.tools.DumpLogSegments"
PERF_MAIN = "org.apache.kafka.tools.ProducerPerformance"
PROBE_RECORDS = 20_000
FLAGS = ["--deep-iteration", "--print-data-log"]


@dataclass(frozen=True)
class Case:
    name: str
    props: dict[str, str]
    note: str
    #: more ProducerPerformance arguments
    args: tuple[str, ...] = ()


CASES = [Case(c, {"compression.type": c, "batch.size": "16384", "linger.ms": "5"},
              f"{c}, batch.size 16384, linger.ms 5")
         for c in ("none", "gzip", "snappy", "lz4", "zstd")] + [
    Case("single", {"compression.type": "none", "batch.size": "0", "linger.ms": "0"},
         "uncompressed, batch.size 0 (one record per batch)"),
    Case("1mib", {"compression.type": "none", "batch.size": "1048576", "linger.ms": "200",
                  "max.request.size": "4194304", "buffer.memory": "67108864"},
         "uncompressed, batch.size 1048576, linger.ms 200"),
    # an exactly-once producer: a transaction every 100 ms, each closed by a COMMIT marker (a
    # control batch) in the segment
    Case("txn", {"compression.type": "none", "batch.size": "16384", "linger.ms": "5", "acks": "all"},
         "uncompressed, batch.size 16384, linger.ms 5, transactional (a commit every 100 ms)",
         ("--transactional-id", "segtools-bench", "--transaction-duration-ms", "100")),
]


def load() -> float:
    return os.getloadavg()[0]


# --------------------------------------------------------------------------------------------
# making the segments with real Kafka


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Broker:
    """A one-node KRaft Kafka (broker and controller in one JVM) on loopback."""

    def __init__(self, workdir: str) -> None:
        from segtools.realcluster.config import LOG4J2
        from segtools.realcluster.kafka_runtime import kafka_runtime

        self.rt = kafka_runtime()
        self.dir = os.path.join(workdir, "kafka")
        self.log_dir = os.path.join(self.dir, "data")
        os.makedirs(self.log_dir, exist_ok=True)
        self.port, cport = _free_port(), _free_port()
        props = {
            "process.roles": "broker,controller", "node.id": 1,
            "controller.quorum.voters": f"1@127.0.0.1:{cport}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{cport}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": self.log_dir, "num.partitions": 1, "auto.create.topics.enable": "true",
            "log.segment.bytes": 1 << 30, "message.max.bytes": 4 << 20,
            "offsets.topic.replication.factor": 1, "transaction.state.log.replication.factor": 1,
            "transaction.state.log.min.isr": 1,
            "share.coordinator.state.topic.replication.factor": 1,
            "share.coordinator.state.topic.min.isr": 1, "group.initial.rebalance.delay.ms": 0,
            "num.io.threads": 2, "num.network.threads": 2, "background.threads": 2,
        }
        self.props = os.path.join(self.dir, "server.properties")
        with open(self.props, "w") as fh:
            fh.write("".join(f"{k}={v}\n" for k, v in props.items()))
        self.log4j = os.path.join(self.dir, "log4j2.properties")
        with open(self.log4j, "w") as fh:
            fh.write(LOG4J2)
        self.proc: object | None = None

    def _argv(self, main: str, *args: str, heap: str) -> list[str]:
        argv = self.rt.command(main, *args, heap=heap)
        argv[1:1] = [f"-Dlog4j2.configurationFile={self.log4j}", "-Djava.awt.headless=true",
                     f"-Dkafka.logs.dir={self.dir}"]
        return argv

    def start(self) -> None:
        from segtools.realcluster.processes import JvmProcess, run_tool

        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        res = run_tool(self._argv("kafka.tools.StorageTool", "format", f"--cluster-id={cid}", "-c", self.props,
                                  heap="128m"), timeout=180)
        if res.returncode != 0:
            raise SystemExit(f"kafka-storage format failed: {(res.stdout + res.stderr)[-500:]}")
        self.proc = JvmProcess("broker", self._argv("kafka.Kafka", self.props, heap="1g"),
                               os.path.join(self.dir, "broker.log"))
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.5)
        raise SystemExit("the broker did not open its port within 180 s")

    def produce(self, topic: str, records: int, props: dict[str, str],
                args: tuple[str, ...] = ()) -> None:
        from segtools.realcluster.processes import run_tool

        pp = {"bootstrap.servers": f"127.0.0.1:{self.port}", "acks": "1", **props}
        res = run_tool(self._argv(PERF_MAIN, "--topic", topic, "--num-records", str(records),
                                  "--record-size", "100", "--throughput", "-1", *args,
                                  "--producer-props", *(f"{k}={v}" for k, v in pp.items()),
                                  heap="512m"),
                       timeout=1800)
        if res.returncode != 0:
            raise SystemExit(f"ProducerPerformance on {topic} failed: {(res.stdout + res.stderr)[-800:]}")

    def segment(self, topic: str) -> str:
        return os.path.join(self.log_dir, f"{topic}-0", LOG_NAME)

    def stop(self) -> None:
        from segtools.realcluster.processes import JvmProcess

        if isinstance(self.proc, JvmProcess) and self.proc.alive():
            self.proc.terminate(60.0)


def make_segments(workdir: str, cases: list[Case], size: int) -> dict[str, str]:
    """Produce each case's topic, stop the broker, copy the segments out: name -> relative path
    (the same under ``workdir/k`` and ``workdir/o``)."""
    broker = Broker(workdir)
    out: dict[str, str] = {}
    try:
        broker.start()
        for c in cases:
            t0 = time.perf_counter()
            broker.produce(c.name, PROBE_RECORDS, c.props, c.args)
            per = os.path.getsize(broker.segment(c.name)) / PROBE_RECORDS
            rest = max(0, int((size - PROBE_RECORDS * per) / per))
            if rest:
                broker.produce(c.name, rest, c.props, c.args)
            print(f"  produced {c.name}: {PROBE_RECORDS + rest:,} records, "
                  f"{os.path.getsize(broker.segment(c.name)) / 2**20:.0f} MiB in "
                  f"{time.perf_counter() - t0:.0f} s (load {load():.1f})", flush=True)
    finally:
        broker.stop()
    for c in cases:
        rel = os.path.join(f"{c.name}-0", LOG_NAME)
        for side in ("k", "o"):
            os.makedirs(os.path.join(workdir, side, f"{c.name}-0"), exist_ok=True)
            shutil.copyfile(broker.segment(c.name), os.path.join(workdir, side, rel))
        out[c.name] = rel
    shutil.rmtree(broker.dir, ignore_errors=True)
    return out


# --------------------------------------------------------------------------------------------
# dump: segtools against kafka-dump-log


def kafka_dump_argv(args: list[str]) -> list[str]:
    """kafka-run-class.sh's JVM options for the tools (heap 256M, G1), the pinned jars."""
    from segtools.realcluster.kafka_runtime import kafka_runtime

    rt = kafka_runtime()
    return [rt.java, "-Xmx256M", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
            "-Djava.awt.headless=true", "-cp", rt.classpath, DUMP_LOG_MAIN, *args]


def ours_argv(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "segtools", "dump", *args]


@dataclass
class Run:
    wall: float
    cpu: float
    rss_mib: float
    rc: int


#: the tools' environment: Python may keep its bytecode (an installed package has it; without
#: it every run of segtools compiles its modules again, ~0.1 s)
_CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run_dev_null(argv: list[str], cwd: str) -> Run:
    start = time.perf_counter()
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=null, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, env=_CHILD_ENV)
        _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Run(time.perf_counter() - start, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024,
               proc.returncode)


def stdout_digest(argv: list[str], cwd: str) -> tuple[str, int]:
    """SHA-256 and size of stdout, streamed (never held whole)."""
    h = hashlib.sha256()
    n = 0
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env=_CHILD_ENV)
    assert proc.stdout is not None
    while chunk := proc.stdout.read(1 << 20):
        h.update(chunk)
        n += len(chunk)
    proc.wait()
    return h.hexdigest(), n


@dataclass
class DumpRow:
    case: str
    mib: float
    kafka: list[Run] = field(default_factory=list)
    ours: list[Run] = field(default_factory=list)
    identical: bool = False
    out_bytes: int = 0
    load: tuple[float, float] = (0.0, 0.0)

    def med(self, runs: list[Run], attr: str) -> float:
        return statistics.median(getattr(r, attr) for r in runs)


def bench_dump(workdir: str, name: str, rel: str, runs: int) -> DumpRow:
    args = FLAGS + ["--files", rel]
    kdir, odir = os.path.join(workdir, "k"), os.path.join(workdir, "o")
    row = DumpRow(name, os.path.getsize(os.path.join(odir, rel)) / 2**20)
    l0 = load()
    kd = stdout_digest(kafka_dump_argv(args), kdir)
    od = stdout_digest(ours_argv(args), odir)
    row.identical, row.out_bytes = kd == od, od[1]
    for i in range(runs):
        pair = [("k", kafka_dump_argv(args), kdir), ("o", ours_argv(args), odir)]
        for side, argv, cwd in (pair if i % 2 == 0 else pair[::-1]):
            r = run_dev_null(argv, cwd)
            (row.kafka if side == "k" else row.ours).append(r)
    row.load = (l0, load())
    return row


# --------------------------------------------------------------------------------------------
# read: read_records / read_batch_table against aiokafka, kafka-python and the copy+CRC floor


# the same readers as benchmarks/bench.py measures (one definition of each peer)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import (  # noqa: E402
    aiokafka_records,
    copy_crc_floor,
    kafka_python_records,
    segtools_records,
    segtools_scan,
)


def segtools_export(path: str) -> int:
    """``segtools export`` of the segment's partition dir to Parquet (snappy, the default) in a
    temporary folder, removed afterwards: the rows written."""
    from segtools.export import export

    out = tempfile.mkdtemp(prefix="segtools-bench-export-")
    try:
        return export([os.path.dirname(path)], os.path.join(out, "pq")).rows
    finally:
        shutil.rmtree(out, ignore_errors=True)


READERS: dict[str, Callable[[str], int]] = {
    "read_records": segtools_records, "aiokafka": aiokafka_records,
    "kafka-python": kafka_python_records, "read_batch_table": segtools_scan,
    "copy+crc32c": copy_crc_floor, "export": segtools_export,
}


@dataclass
class ReadRow:
    case: str
    wall: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)
    records: int = 0
    load: tuple[float, float] = (0.0, 0.0)

    def ratio(self, fast: str, slow: str, which: str) -> float:
        """Median over rounds of slow/fast (so load hits both sides of each ratio alike)."""
        d = self.wall if which == "wall" else self.cpu
        return statistics.median(s / max(f, 1e-9) for f, s in zip(d[fast], d[slow]))


def bench_read(path: str, name: str, runs: int) -> ReadRow:
    row = ReadRow(name)
    l0 = load()
    names = list(READERS)
    counts: dict[str, int] = {}
    for r in names:  # untimed: compiles segtools' kernels (numba) once, warms the page cache
        READERS[r](path)
    for i in range(runs):
        for r in (names if i % 2 == 0 else names[::-1]):
            gc.collect()
            w0, c0 = time.perf_counter(), time.process_time()
            n = READERS[r](path)
            row.wall.setdefault(r, []).append(time.perf_counter() - w0)
            row.cpu.setdefault(r, []).append(time.process_time() - c0)
            counts[r] = n
    recs = {counts[r] for r in ("read_records", "aiokafka", "kafka-python", "export")}
    if len(recs) != 1:
        raise SystemExit(f"{name}: the readers disagree on the record count: {counts}")
    row.records = recs.pop()
    row.load = (l0, load())
    return row


# --------------------------------------------------------------------------------------------


def _table(header: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mib", type=int, default=64, help="about this size per segment")
    ap.add_argument("--runs", type=int, default=3, help="interleaved runs per tool (medians)")
    ap.add_argument("--cases", default=",".join(c.name for c in CASES))
    ap.add_argument("--keep", help="make the segments here and keep them")
    ap.add_argument("--reuse", help="a --keep folder of an earlier run: skip making segments")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: dump, read")
    args = ap.parse_args(argv)
    wanted = args.cases.split(",")
    unknown = set(wanted) - {c.name for c in CASES}
    if unknown:
        ap.error(f"unknown case(s): {', '.join(sorted(unknown))}")
    cases = [c for c in CASES if c.name in wanted]
    workdir = args.reuse or args.keep or tempfile.mkdtemp(prefix="segtools-bench-real-")
    os.makedirs(workdir, exist_ok=True)
    skip = set(filter(None, args.skip.split(",")))
    from segtools.realcluster.kafka_runtime import kafka_runtime

    print(f"Kafka {kafka_runtime().version}; python {sys.version.split()[0]}; "
          f"{os.cpu_count()} CPUs; load {load():.1f}; {args.runs} interleaved runs, medians\n",
          flush=True)
    try:
        if args.reuse:
            segs = {c.name: os.path.join(f"{c.name}-0", LOG_NAME) for c in cases}
        else:
            segs = make_segments(workdir, cases, args.size_mib << 20)
        ok = True
        if "dump" not in skip:
            drows = []
            for c in cases:
                row = bench_dump(workdir, c.name, segs[c.name], args.runs)
                ok &= row.identical and all(r.rc == 0 for r in row.kafka + row.ours)
                drows.append(row)
                print(f"  dump {c.name}: kafka {row.med(row.kafka, 'wall'):.1f} s, "
                      f"segtools {row.med(row.ours, 'wall'):.1f} s (load {row.load[1]:.1f})",
                      flush=True)
            print()
            out = []
            for r in drows:
                kw, ow = r.med(r.kafka, "wall"), r.med(r.ours, "wall")
                kc, oc = r.med(r.kafka, "cpu"), r.med(r.ours, "cpu")
                target = 3.0 if r.case == "none" else 2.0
                met = "yes" if min(kw / ow, kc / oc) >= target else "no"
                out.append([r.case, f"{r.mib:.0f}",
                            f"{kw:.1f} s / {kc:.1f} s / {r.med(r.kafka, 'rss_mib'):.0f} MiB",
                            f"{ow:.1f} s / {oc:.1f} s / {r.med(r.ours, 'rss_mib'):.0f} MiB",
                            f"{kw / ow:.2f}×", f"{kc / oc:.2f}×",
                            f"{'yes' if r.identical else 'NO'} ({r.out_bytes / 2**20:.0f} MiB)",
                            f"≥ {target:.0f}×: {met}", f"{r.load[0]:.1f} / {r.load[1]:.1f}"])
            _table(["segment", "MiB", "kafka-dump-log wall / CPU / RSS",
                    "segtools dump wall / CPU / RSS", "ratio wall", "ratio CPU",
                    "identical stdout", "target (wall and CPU)", "load before / after"], out)
        if "read" not in skip:
            out = []
            for c in cases:
                rd = bench_read(os.path.join(workdir, "o", segs[c.name]), c.name, args.runs)
                med = {k: statistics.median(v) for k, v in rd.cpu.items()}
                rr_w, rr_c = (rd.ratio("read_records", "aiokafka", w) for w in ("wall", "cpu"))
                sc_w, sc_c = (rd.ratio("read_batch_table", "copy+crc32c", w) for w in ("wall", "cpu"))
                ex_c = 1 / rd.ratio("export", "read_records", "cpu")   # export's CPU / read_records'
                out.append([c.name, f"{rd.records:,}",
                            " / ".join(f"{med[k]:.2f}" for k in READERS),
                            f"{rr_w:.2f}× / {rr_c:.2f}×",
                            f"{rd.ratio('read_records', 'kafka-python', 'cpu'):.1f}×",
                            f"{'yes' if min(rr_w, rr_c) >= 2 else 'no'}",
                            f"{sc_w:.2f}× / {sc_c:.2f}×",
                            f"{'yes' if min(sc_w, sc_c) >= 0.9 else 'no'}",
                            f"{ex_c:.2f}× ({'yes' if ex_c <= 1.5 else 'no'})",
                            f"{rd.load[0]:.1f} / {rd.load[1]:.1f}"])
                print(f"  read {c.name}: done (load {rd.load[1]:.1f})", flush=True)
            print()
            _table(["segment", "records", "CPU s: " + " / ".join(READERS),
                    "read_records vs aiokafka (wall / CPU)", "vs kafka-python (CPU)",
                    "≥ 2×", "read_batch_table vs copy+CRC (wall / CPU)", "≥ 0.9×",
                    "export CPU / read_records CPU (≤ 1.5×)", "load before / after"], out)
        for c in cases:
            print(f"- {c.name}: {c.note}")
        return 0 if ok else 1
    finally:
        if not (args.keep or args.reuse):
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
