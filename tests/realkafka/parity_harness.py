"""`segtools dump` side by side with the real kafka-dump-log of one Kafka release (4.0.0-4.4.0;
the default is the newest, jvm/pom.xml).

Shared by the parity tests (tests/realkafka/test_dump_parity*.py) and the full report
(tests/realkafka/parity_report.py). Nothing here reads outside the repository or writes
inside it: every input is first copied into a work directory (the real tool itself creates
a missing ``.index`` next to a ``.timeindex`` it dumps, so it must never see the originals).

Two ways to run the real tool:

* ``KafkaDumpLog.run_jobs``: ParityDriver.java calls the unmodified
  ``org.apache.kafka.tools.DumpLogSegments.main`` once per job inside one JVM and frames each
  job's stdout, stderr and uncaught exception, so hundreds of files cost one JVM start-up;
* ``KafkaDumpLog.run_cli``: the tool exactly as users run it (its own JVM, ``--files a,b,c``),
  for the whole-run behaviour (end-of-run summaries across files, exit status).

``run_ours`` runs ``segtools dump`` in-process through click (same argument parsing, error
handling and exit status as the console script). ``compare`` judges one job.
"""

from __future__ import annotations

import hashlib
import os
import random
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from segtools.realcluster.kafka_runtime import dump_log_main

REPO = Path(__file__).resolve().parents[2]
DRIVER_SOURCE = Path(__file__).with_name("ParityDriver.java")

#: the file kinds kafka-dump-log reads (anything else: "Ignoring unknown file")
KAFKA_SUFFIXES = (".log", ".index", ".timeindex", ".snapshot", ".txnindex", ".checkpoint")


# --------------------------------------------------------------------------- outcomes


@dataclass
class Outcome:
    """What one run printed. ``exception`` is the Java stack trace of an uncaught exception
    (real tool only, empty otherwise)."""

    stdout: str
    stderr: str
    status: int
    exception: str = ""
    #: what the real tool wrote to its inputs ("created <path>" / "modified <path>" lines);
    #: the harness undoes it after each job
    changes: str = ""

    @property
    def crashed(self) -> bool:
        return bool(self.exception)


class KafkaUnavailable(RuntimeError):
    pass


class KafkaDumpLog:
    """The real kafka-dump-log of one Kafka release (``segtools.realcluster.kafka_runtime``;
    default ``KAFKA_VERSION``). ``release`` is the matching ``segtools dump --kafka-version``
    ("4.4" for 4.4.0), which ``run_ours`` passes when given."""

    def __init__(self, workdir: Path, version: str | None = None) -> None:
        from segtools.realcluster.kafka_runtime import kafka_runtime

        self.runtime = kafka_runtime(version=version)
        self.version = self.runtime.version
        self.release = ".".join(self.version.split(".")[:2])
        self.workdir = Path(workdir)
        self.driver_dir = self._compile_driver()

    def _compile_driver(self) -> Path:
        source = DRIVER_SOURCE.read_bytes()
        digest = hashlib.sha256(source + self.runtime.classpath.encode()).hexdigest()[:12]
        out = self.workdir / f"driver-{self.runtime.version}-{digest}"
        if (out / "ParityDriver.class").is_file():
            return out
        out.mkdir(parents=True, exist_ok=True)
        javac = shutil.which("javac", path=str(Path(self.runtime.java).parent)) or \
            shutil.which("javac")
        if javac is None:
            raise KafkaUnavailable("javac not found: the parity driver needs a JDK 17 "
                                   "(apt-get install openjdk-17-jdk-headless)")
        proc = subprocess.run([javac, "-d", str(out), "-cp", self.runtime.classpath,
                               str(DRIVER_SOURCE)], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise KafkaUnavailable(f"cannot compile {DRIVER_SOURCE.name}: {proc.stderr}")
        return out

    def _java(self, main: str, *args: str, classpath: str | None = None) -> list[str]:
        argv = self.runtime.command(main, *args, heap="512m")
        if classpath is not None:
            argv[argv.index("-cp") + 1] = classpath
        # UTF-8 output whatever the locale, as we print it
        return argv[:1] + ["-Dfile.encoding=UTF-8", "-Dsun.stdout.encoding=UTF-8",
                           "-Dsun.stderr.encoding=UTF-8"] + argv[1:]

    def run_jobs(self, jobs: Sequence[Sequence[str]], cwd: Path,
                 timeout: float = 900) -> list[Outcome]:
        """Each job (the tool's arguments) through DumpLogSegments.main in ONE JVM."""
        if not jobs:
            return []
        for job in jobs:
            for arg in job:
                if "\t" in arg or "\n" in arg:
                    raise ValueError(f"argument not representable in the job file: {arg!r}")
        job_file = self.workdir / f"jobs-{os.getpid()}-{id(jobs)}.txt"
        job_file.write_text("".join("\t".join(job) + "\n" for job in jobs), encoding="utf-8")
        classpath = os.pathsep.join([str(self.driver_dir), self.runtime.classpath])
        try:
            proc = subprocess.run(self._java("ParityDriver", str(job_file), classpath=classpath),
                                  cwd=cwd, capture_output=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        finally:
            job_file.unlink(missing_ok=True)
        outcomes = _parse_frames(proc.stdout)
        if len(outcomes) != len(jobs):
            raise RuntimeError(f"parity driver answered {len(outcomes)} of {len(jobs)} jobs "
                               f"(exit {proc.returncode}): {proc.stderr.decode()[-2000:]}")
        return outcomes

    def run_cli(self, args: Sequence[str], cwd: Path, timeout: float = 600) -> Outcome:
        """kafka-dump-log as users run it: its own JVM, uncaught exceptions kill it."""
        created, saved = _inputs_of(args, cwd)
        changes = []
        try:
            proc = subprocess.run(self._java(dump_log_main(self.version), *args), cwd=cwd,
                                  capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
        finally:
            for path in created:  # the .index the tool creates next to a .timeindex
                if path.exists():
                    path.unlink()
                    changes.append(f"created {path}")
            for path, data in saved.items():  # the indexes it truncates to whole entries
                if not path.exists() or path.read_bytes() != data:
                    path.write_bytes(data)
                    changes.append(f"modified {path}")
        stdout = proc.stdout.decode("utf-8", "replace")
        stderr = proc.stderr.decode("utf-8", "replace")
        exception = ""
        marker = 'Exception in thread "main" '
        if marker in stderr:
            head, _, exception = stderr.partition(marker)
            stderr = head
        return Outcome(stdout, stderr, proc.returncode, exception,
                       "".join(c + "\n" for c in changes))


def _inputs_of(args: Sequence[str], cwd: Path) -> tuple[list[Path], dict[Path, bytes]]:
    """The files a run may touch: (absent .index/.log/.timeindex siblings, bytes of the
    present ones and of the inputs themselves)."""
    absent: list[Path] = []
    saved: dict[Path, bytes] = {}
    for i, arg in enumerate(args[:-1]):
        if arg != "--files":
            continue
        for name in args[i + 1].split(","):
            p = Path(cwd, name)
            for f in [p] + [p.with_name(p.name.split(".")[0] + s)
                            for s in (".index", ".log", ".timeindex")]:
                if not f.exists():
                    if f != p:
                        absent.append(f)
                elif f.is_file() and f.stat().st_size < (64 << 20):
                    saved[f] = f.read_bytes()
    return absent, saved


_FRAME = re.compile(rb"@@PARITY@@ (\d+) (\d+) (\d+) (\d+)\n")


def _parse_frames(data: bytes) -> list[Outcome]:
    outcomes = []
    pos = 0
    while pos < len(data):
        m = _FRAME.match(data, pos)
        if m is None:
            raise RuntimeError(f"parity driver output is not framed at byte {pos}")
        sizes = [int(g) for g in m.groups()]
        pos = m.end()
        blocks = []
        for n in sizes:
            blocks.append(data[pos:pos + n].decode("utf-8", "replace"))
            pos += n
        out, err, exc, changes = blocks
        outcomes.append(Outcome(out, err, 1 if exc else 0, exc, changes))
    return outcomes


def run_ours(args: Sequence[str], cwd: Path, release: str | None = None) -> Outcome:
    """`segtools dump ARGS` in-process (click parses the same argv as the console script);
    ``release`` adds ``--kafka-version`` (the default is the newest release's text)."""
    if release is not None:
        args = ["--kafka-version", release, *args]
    from click.testing import CliRunner

    from segtools.cli.dump import dump

    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(dump, list(args), catch_exceptions=True)
    finally:
        os.chdir(old)
    # the raw bytes: click's Result.stdout turns "\r\n" into "\n" (payloads hold any byte)
    stdout = result.stdout_bytes.decode("utf-8", "replace")
    stderr = result.stderr_bytes.decode("utf-8", "replace")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        stderr += "".join(traceback.format_exception(result.exception))
    return Outcome(stdout, stderr, result.exit_code)


# --------------------------------------------------------------------------- judging

#: stderr lines only segtools prints (its findings); Kafka's stderr lines must all be there
_OUR_ONLY_STDERR = re.compile(
    r"^(Error: |Warning: |segtools: |Non-monotonic offsets in |No base offset in the file name )")

IDENTICAL = "identical"
CLEAN_ERROR = "kafka_crashed_clean_error"
DIFFERENT = "different"


@dataclass
class Verdict:
    kind: str                 # IDENTICAL, CLEAN_ERROR or DIFFERENT
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.kind != DIFFERENT


def kafka_stderr_lines(text: str) -> list[str]:
    return [line for line in text.splitlines()]


def our_kafka_like_stderr(text: str) -> list[str]:
    return [line for line in text.splitlines() if not _OUR_ONLY_STDERR.match(line)]


_BATCH_POS = re.compile(r"(?:^baseOffset: .* |^offset: -?\d+ )position: (\d+) \S+: -?\d+ size: (\d+) ")
_OUR_POSITION = re.compile(r"@ position (\d+)")


def expected_crash_positions(kind: str, kafka: Outcome) -> range | None:
    """Byte positions at which Kafka's crash happened, from what it printed before dying
    (Kafka's record exceptions carry no stack trace, so the printed lines are the evidence):
    inside the last batch it printed (its records), or the header of the batch after it.
    ``range(0, 62)`` when no batch was printed; None for files without batch positions."""
    if kind not in ("log", "checkpoint"):
        return None
    last = None
    for line in kafka.stdout.splitlines():
        m = _BATCH_POS.match(line)
        if m:
            last = (int(m.group(1)), int(m.group(2)))
    if last is None:
        return range(0, 62)
    return range(last[0], last[0] + last[1] + 62)


def file_kind(path: str) -> str:
    name = os.path.basename(path)
    dot = name.rfind(".")
    return {".log": "log", ".checkpoint": "checkpoint", ".index": "index",
            ".timeindex": "timeindex", ".snapshot": "snapshot",
            ".txnindex": "txnindex"}.get(name[dot:] if dot >= 0 else "", "unknown")


def compare(kafka: Outcome, ours: Outcome, kind: str = "log") -> Verdict:
    """Kafka printed its lines: ours are the same (stdout exactly, Kafka's stderr lines in
    order, exit 0 or 1 where Kafka exits 0). Kafka died with a stack trace: ours printed the
    same lines up to that point, then a clean one-line error (no traceback) at the same byte
    position, and exits non-zero."""
    if "Traceback (most recent call last)" in ours.stderr:
        return Verdict(DIFFERENT, "segtools printed a Python traceback: "
                       + ours.stderr.strip().splitlines()[-1])
    if not kafka.crashed:
        if ours.stdout != kafka.stdout:
            return Verdict(DIFFERENT, "stdout differs: " + first_difference(kafka.stdout, ours.stdout))
        k_err = kafka_stderr_lines(kafka.stderr)
        o_err = our_kafka_like_stderr(ours.stderr)
        if k_err != o_err:
            return Verdict(DIFFERENT, "stderr differs: " + first_difference(
                "\n".join(k_err), "\n".join(o_err)))
        if ours.status not in (0, 1) or (kafka.status != 0 and ours.status == 0):
            return Verdict(DIFFERENT, f"exit status {ours.status}, Kafka {kafka.status}")
        return Verdict(IDENTICAL)
    # Kafka crashed
    if not ours.stdout.startswith(kafka.stdout):
        return Verdict(DIFFERENT, "before Kafka's crash ("
                       + exception_head(kafka.exception) + "): stdout differs: "
                       + first_difference(kafka.stdout, ours.stdout[:len(kafka.stdout) + 200]))
    errors = [line for line in ours.stderr.splitlines() if line.startswith("Error: ")]
    warnings = [line for line in ours.stderr.splitlines() if line.startswith("Warning: ")]
    if warnings and not errors:
        # what Kafka dies on but is not corruption (a missing offset index): a clean warning
        return Verdict(CLEAN_ERROR)
    if ours.status == 0 or not errors:
        return Verdict(DIFFERENT, "Kafka crashed (" + exception_head(kafka.exception)
                       + f") but segtools reported no error (exit {ours.status})")
    positions = expected_crash_positions(kind, kafka)
    if positions is not None:
        ours_at = {int(p) for line in errors for p in _OUR_POSITION.findall(line)}
        if not any(p in positions for p in ours_at):
            return Verdict(DIFFERENT, f"Kafka crashed in bytes [{positions.start}, "
                           f"{positions.stop}) ("
                           + exception_head(kafka.exception) + f"), segtools' error names "
                           f"{sorted(ours_at) or 'no position'}: {errors[0]}")
    return Verdict(CLEAN_ERROR)


#: differences kept on purpose or owned by the batch readers (segtools/records/batches.py,
#: segtools/records/legacy.py), each with its reason; ``known_difference`` recognises them from what
#: the real tool printed, so a new kind of difference is never hidden behind them
KNOWN_DIFFERENCES = {
    "treeified_bucket": (
        "order of the files in a multi-file summary when 8 or more of their absolute paths fall "
        "in one bucket of Kafka's java.util.HashMap (64+ buckets): Java makes that bucket a "
        "red-black tree, whose iteration order segtools does not model; the lines are the same"),
    "legacy_sizes": (
        "legacy (magic 0/1) message with hostile key/value size fields or a flipped magic: "
        "Kafka prints the record line with the raw size fields (or a timestamp read from the "
        "wrong bytes) and then dies on the size (newLimit > capacity); segtools' legacy reader "
        "reports the message as corrupt before printing it"),
}

_ANY_BATCH_MAGIC = re.compile(r" size: \d+ magic: (\d+) compresscodec: ", re.M)


def known_difference(case: Case, kafka: Outcome, ours: Outcome, verdict: Verdict) -> str | None:
    """The KNOWN_DIFFERENCES key explaining ``verdict``, or None."""
    if verdict.ok:
        return None
    exc = kafka.exception
    if case.kind == "multi" and verdict.reason.startswith("stderr differs"):
        from segtools.dump.scala_order import java_hashmap_order_is_modelled

        k_lines, o_lines = sorted(kafka.stderr.splitlines()), sorted(
            our_kafka_like_stderr(ours.stderr))
        heads = ("Found timestamp mismatch in :", "Mismatches in :",
                 "Found out of order timestamp in :",
                 "The following indexed offsets are not found in :", "Non-consecutive offsets in ")
        paths = [line[len(head):] for line in kafka.stderr.splitlines() for head in heads
                 if line.startswith(head)]
        if k_lines == o_lines and not java_hashmap_order_is_modelled(paths):
            return "treeified_bucket"
    if case.kind not in ("log", "checkpoint"):
        return None
    # fixed in the reader (no longer known differences): an index next to an empty log,
    # magic above 2 or below 0, v2 batches shorter than their header (issue 11)
    magics = {int(m) for m in _ANY_BATCH_MAGIC.findall(kafka.stdout)}
    if "newLimit > capacity" in exc or (magics & {0, 1} and (
            "isValid: false" in kafka.stdout or "isvalid: false" in kafka.stdout)):
        return "legacy_sizes"
    return None


def exception_head(trace: str) -> str:
    return trace.strip().splitlines()[0][:300] if trace.strip() else ""


def first_difference(expected: str, actual: str) -> str:
    e_lines = expected.splitlines()
    a_lines = actual.splitlines()
    for i, (e, a) in enumerate(zip(e_lines, a_lines)):
        if e != a:
            return f"line {i + 1}: kafka {e[:400]!r} vs ours {a[:400]!r}"
    if len(e_lines) != len(a_lines):
        i = min(len(e_lines), len(a_lines))
        extra_e = e_lines[i] if i < len(e_lines) else None
        extra_a = a_lines[i] if i < len(a_lines) else None
        return (f"{len(e_lines)} lines vs ours {len(a_lines)}; first extra: kafka "
                f"{(extra_e or '')[:300]!r} ours {(extra_a or '')[:300]!r}")
    return "trailing newline / whitespace"


# --------------------------------------------------------------------------- inputs


def copy_inputs(dest: Path, sources: Iterable[Path]) -> Path:
    """Copy the given repository folders into ``dest`` (same relative paths) and return it.
    The real tool may create files next to what it dumps, so it only ever sees copies."""
    for src in sources:
        target = dest / src.relative_to(REPO)
        if not target.exists():
            shutil.copytree(src, target, symlinks=False)
    return dest


def kafka_files(root: Path) -> list[Path]:
    """Every file under ``root`` kafka-dump-log reads, sorted."""
    return sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in KAFKA_SUFFIXES)


@dataclass
class Case:
    """One comparison: ``args`` for both tools (``--files`` included), the file it is about."""

    name: str
    args: list[str]
    kind: str
    group: str = "file"


def partition_of(path: Path) -> str:
    return path.parent.name


def cases_for(files: Sequence[Path], root: Path) -> list[Case]:
    """The flag combinations of issue 10 for each file kind."""
    cases: list[Case] = []
    for p in files:
        rel = str(p.relative_to(root))
        kind = file_kind(rel)
        part = partition_of(p)

        def add(*flags: str) -> None:   # called at once, for this file
            cases.append(Case(f"{rel} {' '.join(flags)}".strip(), [*flags, "--files", rel], kind))  # noqa: B023

        if kind in ("log", "checkpoint"):
            add()
            add("--deep-iteration", "--print-data-log")
            add("--print-data-log", "--skip-record-metadata")
            if kind == "checkpoint" or part.startswith("__cluster_metadata"):
                add("--cluster-metadata-decoder")
                add("--cluster-metadata-decoder", "--skip-record-metadata")
            if part.startswith("__consumer_offsets"):
                add("--offsets-decoder")
            if part.startswith("__transaction_state"):
                add("--transaction-log-decoder")
            if kind == "log" and p.stat().st_size > 0:
                add("--max-bytes", str(max(1, p.stat().st_size // 2)))
        elif kind in ("index", "timeindex"):
            add()
            add("--verify-index-only")
            add("--index-sanity-check")
        else:
            add()
    return cases


# --------------------------------------------------------------------------- built inputs


def stage_legacy_message_sets(parent: Path) -> list[Path]:
    """The real 0.8/0.9 brokers' message sets (``*.records.bin``: on-disk magic 0 bytes cut out
    of Fetch responses) as segment files ``legacy-<name>-0/00000000000000000000.log``."""
    out = []
    src_dir = REPO / "tests" / "data" / "realdata" / "kafka-0.8-0.9-legacy-messages"
    for src in sorted(src_dir.glob("*.records.bin")):
        stem = re.sub(r"[^A-Za-z0-9]+", "_", src.name.replace(".records.bin", ""))
        folder = parent / f"legacy_{stem}-0"
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / "00000000000000000000.log"
        shutil.copyfile(src, target)
        out.append(target)
    return out


def build_transaction_state(parent: Path) -> Path:
    """A ``__transaction_state-0`` partition written with segtools' writer (no real broker
    file of that topic is in the repository): every transaction state, value versions 0
    and 1 (flexible, with and without tagged fields, NextProducerEpoch included), several
    topics and partitions, a tombstone, a state id no release knows, and one record whose
    value version is unknown."""
    from segtools.internal_topics import transaction_state as ts
    from segtools.writer import LogWriter
    from segtools.writer.batch_builder import NewRecord, build_batch

    part = parent / "__transaction_state-0"
    records = []
    t0 = 1_700_000_000_000
    for status in range(8):
        partitions = [] if status == 0 else [
            {"topic": "orders", "partitionIds": [0, 2, 1]},
            {"topic": "payments", "partitionIds": [status]}]
        data = {"producerId": 1000 + status, "producerEpoch": status,
                "transactionTimeoutMs": 60000, "transactionStatus": status,
                "transactionPartitions": partitions,
                "transactionLastUpdateTimestampMs": t0 + status,
                "transactionStartTimestampMs": -1 if status == 0 else t0}
        records.append(NewRecord(ts.encode_key(f"txn-{status}"), ts.encode_value(0, data),
                                 timestamp=t0 + status))
        flexible = dict(data)
        if status % 2:
            flexible.update(previousProducerId=900 + status, nextProducerId=-1,
                            clientTransactionVersion=2)
        if status in (2, 3, 7):  # KIP-890's epoch bump at the end (tag 3, Kafka 4.1+)
            flexible.update(nextProducerEpoch=status + 10, clientTransactionVersion=2)
        records.append(NewRecord(ts.encode_key(f"txn-flex-{status}"),
                                 ts.encode_value(1, flexible), timestamp=t0 + status))
    records.append(NewRecord(ts.encode_key("txn-gone"), None, timestamp=t0 + 9))
    # a state id no release knows: 4.4 prints it as the string "9", 4.1-4.3 the number, the
    # Scala text of 4.0 dies on it
    unknown = dict(data, transactionStatus=9)
    records.append(NewRecord(ts.encode_key("txn-state-9"), ts.encode_value(1, unknown),
                             timestamp=t0 + 9))
    records.append(NewRecord(ts.encode_key("txn-bad"), b"\x00\x07\x00", timestamp=t0 + 10))
    with LogWriter(part) as writer:
        offset = 0
        for i in range(0, len(records), 4):
            chunk = records[i:i + 4]
            writer.append(build_batch(chunk, base_offset=offset))
            offset += len(chunk)
    return part


# --------------------------------------------------------------------------- mutants

#: hostile values written over a batch's length field
_HOSTILE_LENGTHS = (0, 1, 13, 14, 15, 48, 49, 60, -1, -14, 0x7FFFFFFF, 0x7FFFFFF0, 1 << 20)


def batch_positions(data: bytes) -> list[int]:
    """Where each complete batch (or legacy message) starts, walking the length fields."""
    out = []
    pos = 0
    while pos + 12 <= len(data):
        length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        if length < 14 or pos + 12 + length > len(data):
            break
        out.append(pos)
        pos += 12 + length
    return out


@dataclass
class Mutant:
    name: str            # e.g. m0042-bitflip
    path: Path           # the mutated file (siblings copied next to it)
    source: Path
    operator: str
    detail: str


def _mutate(data: bytes, kind: str, rng: random.Random) -> tuple[str, str, bytes]:
    buf = bytearray(data)
    batches = batch_positions(data) if kind in ("log", "checkpoint") else []
    ops = ["bitflip", "truncate", "append_garbage", "overwrite_bytes"]
    if batches:
        ops += ["hostile_length"] * 3 + ["bad_crc"] * 2 + ["record_bytes"] * 3 + ["bad_magic"]
    if kind in ("index", "timeindex") and len(buf) >= 8:
        ops += ["index_entry"] * 3
    op = rng.choice(ops)
    if op == "bitflip" and buf:
        i = rng.randrange(len(buf))
        bit = 1 << rng.randrange(8)
        buf[i] ^= bit
        return op, f"byte {i} ^= {bit:#x}", bytes(buf)
    if op == "truncate" and buf:
        n = rng.randrange(len(buf))
        return op, f"to {n} bytes", bytes(buf[:n])
    if op == "append_garbage":
        extra = bytes(rng.randrange(256) for _ in range(rng.choice((1, 5, 12, 17, 61, 300))))
        return op, f"+{len(extra)} bytes", bytes(buf) + extra
    if op == "hostile_length":
        pos = rng.choice(batches)
        value = rng.choice(_HOSTILE_LENGTHS)
        buf[pos + 8:pos + 12] = (value & 0xFFFFFFFF).to_bytes(4, "big")
        return op, f"batch @{pos} length={value}", bytes(buf)
    if op == "bad_crc":
        pos = rng.choice(batches)
        magic = buf[pos + 16]
        at = pos + 17 if magic >= 2 else pos + 12
        buf[at:at + 4] = rng.randrange(1 << 32).to_bytes(4, "big")
        return op, f"batch @{pos} crc", bytes(buf)
    if op == "bad_magic":
        pos = rng.choice(batches)
        buf[pos + 16] = rng.choice((3, 4, 0x7F, 0xFF, 1, 0))
        return op, f"batch @{pos} magic={buf[pos + 16]}", bytes(buf)
    if op == "record_bytes":
        # inside a batch's records (v2 header is 61 bytes): hostile varints / lengths
        pos = rng.choice(batches)
        length = int.from_bytes(buf[pos + 8:pos + 12], "big")
        start = pos + (61 if buf[pos + 16] >= 2 else 26)
        end = pos + 12 + length
        if end > start:
            i = rng.randrange(start, end)
            value = rng.choice((b"\xff", b"\x7f", b"\x00", b"\xff\xff\xff\xff\x0f", b"\x01"))
            buf[i:i + len(value)] = value
            buf = buf[:len(data)]
            return op, f"batch @{pos} byte {i} := {value.hex()}", bytes(buf)
        op = "overwrite_bytes"
    if op == "index_entry":
        size = 12 if kind == "timeindex" else 8
        n = len(buf) // size
        i = rng.randrange(n)
        field_at = i * size + rng.choice((0, size - 4))
        value = rng.choice((0, 1, -1, 0x7FFFFFFF, rng.randrange(1 << 31), 17, 1 << 20))
        buf[field_at:field_at + 4] = (value & 0xFFFFFFFF).to_bytes(4, "big")
        return op, f"entry {i} field @{field_at} := {value}", bytes(buf)
    # overwrite_bytes (also the fallback for empty files)
    if not buf:
        return "append_garbage", "+8 bytes", bytes(rng.randrange(256) for _ in range(8))
    i = rng.randrange(len(buf))
    n = rng.choice((1, 2, 4, 8))
    buf[i:i + n] = bytes(rng.randrange(256) for _ in range(n))
    return "overwrite_bytes", f"{n} bytes @{i}", bytes(buf[:len(data)])


def make_mutants(sources: Sequence[Path], count: int, seed: int, dest: Path) -> list[Mutant]:
    """``count`` deterministic mutants (seeded) of ``sources``, each in its own partition-like
    folder under ``dest`` with unmutated copies of the siblings the real tool opens."""
    rng = random.Random(seed)
    mutants = []
    for i in range(count):
        src = sources[i % len(sources)] if i < len(sources) else rng.choice(sources)
        kind = file_kind(str(src))
        op, detail, data = _mutate(src.read_bytes(), kind, rng)
        folder = dest / f"m{i:04d}" / src.parent.name
        folder.mkdir(parents=True, exist_ok=True)
        base = src.name.split(".")[0]
        for suffix in {"index": (".log",), "timeindex": (".log", ".index")}.get(kind, ()):
            sibling = src.with_name(base + suffix)
            if sibling.exists():
                shutil.copyfile(sibling, folder / sibling.name)
        target = folder / src.name
        target.write_bytes(data)
        mutants.append(Mutant(f"m{i:04d}-{op}", target, src, op, detail))
    return mutants


def mutant_cases(mutants: Sequence[Mutant], root: Path) -> list[tuple[Mutant, Case]]:
    """Each mutant with the flag sets its kind is dumped with (logs shallow and deep, with
    their topic's decoder; indexes plain, verify-only and sanity check)."""
    out = []
    for m in mutants:
        rel = str(m.path.relative_to(root))
        kind = file_kind(rel)
        part = m.path.parent.name
        if kind in ("log", "checkpoint"):
            flag_sets: list[list[str]] = [[], ["--deep-iteration", "--print-data-log"]]
            if kind == "checkpoint" or part.startswith("__cluster_metadata"):
                flag_sets.append(["--cluster-metadata-decoder"])
            if part.startswith("__consumer_offsets"):
                flag_sets.append(["--offsets-decoder"])
            if part.startswith("__transaction_state"):
                flag_sets.append(["--transaction-log-decoder"])
        elif kind in ("index", "timeindex"):
            flag_sets = [[], ["--verify-index-only"], ["--index-sanity-check"]]
        else:
            flag_sets = [[]]
        for flags in flag_sets:
            out.append((m, Case(f"{m.name} {rel} {' '.join(flags)}".strip(),
                                [*flags, "--files", rel], kind, group="mutant")))
    return out


def mutant_sources(root: Path, max_size: int = 64 * 1024) -> list[Path]:
    """The inputs mutants are made of: every kind the real tool reads, small files only so
    that a thousand mutants stay cheap; one file per (folder kind, file kind, codec family)."""
    chosen: dict[tuple[str, str, int], Path] = {}
    for p in kafka_files(root):
        size = p.stat().st_size
        if size == 0 or size > max_size:
            continue
        kind = file_kind(str(p))
        data = p.read_bytes()
        flavour = 0
        if kind in ("log", "checkpoint") and len(data) > 22:
            magic = data[16]
            codec = data[22] & 7 if magic >= 2 else data[17] & 7
            flavour = magic * 10 + codec
        topic = re.sub(r"-\d+$", "", p.parent.name)
        if topic not in ("__consumer_offsets", "__cluster_metadata", "__transaction_state"):
            topic = "user"
        chosen.setdefault((topic, kind, flavour), p)
    # plus every samples/dump corrupt-* and spec-* file: hand-made edge cases
    extra = [p for p in kafka_files(root) if "samples/dump" in str(p) and p.stat().st_size > 0]
    out = list(dict.fromkeys(list(chosen.values()) + extra))
    return sorted(out)
