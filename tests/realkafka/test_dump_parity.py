"""`segtools dump` against the real kafka-dump-log of the default (newest) Kafka release, in full;
the other releases' smoke set is test_dump_releases.py.

Same flags, same files (copies): stdout must be identical, Kafka's stderr lines must be ours,
and where Kafka dies with a stack trace ours prints a one-line error at the same place.
The real tool runs in few JVMs (ParityDriver batches the jobs); the full set of files and
1,000+ mutants is tests/realkafka/parity_report.py.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import parity_harness as h

#: logs (and the logs of indexes) above this size are left to parity_report.py: the real
#: tool's time-index check is quadratic and would cost minutes on the 1.2 MB metadata log
SUITE_MAX_LOG = 160 * 1024


def _log_of(ws: Path, case: h.Case) -> Path:
    p = ws / case.args[-1]
    return p.with_name(p.name.split(".")[0] + ".log")


def _suite_cases(ws: Path) -> list[h.Case]:
    cases = []
    for case in h.cases_for(h.kafka_files(ws), ws):
        log = _log_of(ws, case)
        if case.kind in ("log", "index", "timeindex") and log.exists() \
                and log.stat().st_size > SUITE_MAX_LOG:
            continue
        cases.append(case)
    return cases


def _judge(kafka: list[h.Outcome], ours: list[h.Outcome], cases: list[h.Case]):
    tally = {h.IDENTICAL: 0, h.CLEAN_ERROR: 0, h.DIFFERENT: 0}
    unexplained = []
    explained = []
    for case, k, o in zip(cases, kafka, ours):
        verdict = h.compare(k, o, case.kind)
        tally[verdict.kind] += 1
        if not verdict.ok:
            why = h.known_difference(case, k, o, verdict)
            (explained if why else unexplained).append(f"{case.name}: [{why}] {verdict.reason}")
    return tally, explained, unexplained


def test_real_tool_stderr_is_clean(kafka_dump_log: h.KafkaDumpLog, parity_ws: Path) -> None:
    """kafka-dump-log as users run it prints nothing on stderr for a healthy segment (no SLF4J
    binding warnings: jvm/pom.xml resolves slf4j-api 2 with the log4j2 binding)."""
    out = kafka_dump_log.run_cli(["--files", "samples/dump/simple-0/00000000000000000000.log"],
                                 parity_ws)
    assert out.status == 0, out.stderr
    assert out.stderr == ""
    assert out.stdout.startswith("Dumping samples/dump/simple-0/00000000000000000000.log\n"
                                 "Log starting offset: 0\nbaseOffset: 0 lastOffset: 9 ")
    from segtools.dump.options import DEFAULT_KAFKA_VERSION
    from segtools.realcluster.kafka_runtime import KAFKA_VERSION

    assert kafka_dump_log.version == KAFKA_VERSION
    assert kafka_dump_log.release == DEFAULT_KAFKA_VERSION  # dump's default text is its text


def test_the_real_tool_writes_to_its_inputs_and_the_harness_undoes_it(
        kafka_dump_log_of: Callable[[str], h.KafkaDumpLog], parity_ws: Path) -> None:
    """Why ours runs first and the driver restores inputs: kafka-dump-log truncates an index
    to whole entries when it opens it, and creates a missing .index next to a .timeindex.
    Shown with Kafka 4.3.1's tool (4.4.0's no longer trims the index it opens)."""
    kafka_dump_log = kafka_dump_log_of("4.3.1")
    part = parity_ws / "writes-0"
    part.mkdir()
    src = parity_ws / "samples" / "dump" / "simple-0"
    for name in ("00000000000000000000.log", "00000000000000000000.index",
                 "00000000000000000000.timeindex"):
        (part / name).write_bytes((src / name).read_bytes())
    index = part / "00000000000000000000.index"
    index.write_bytes(index.read_bytes() + b"\x07\x07\x07")
    before = index.read_bytes()
    ours = h.run_ours(["--files", "writes-0/00000000000000000000.index"], parity_ws, release="4.3")
    assert index.read_bytes() == before  # segtools never writes
    kafka = kafka_dump_log.run_jobs([["--files", "writes-0/00000000000000000000.index"]],
                                    parity_ws)[0]
    assert kafka.changes == f"modified {index}\n"
    assert index.read_bytes() == before  # restored by the driver
    assert h.compare(kafka, ours, "index").ok
    (part / "00000000000000000000.index").unlink()
    kafka = kafka_dump_log.run_jobs([["--files", "writes-0/00000000000000000000.timeindex"]],
                                    parity_ws)[0]
    assert kafka.changes == f"created {index}\n" and not index.exists()
    assert "Invalid max index size: -1" in kafka.exception


def test_every_small_file_matches_the_real_tool(kafka_dump_log: h.KafkaDumpLog,
                                                parity_ws: Path) -> None:
    """Every file the real tool reads in the real broker data, samples/generated,
    samples/dump, a written __transaction_state partition and the 0.8/0.9 message sets,
    with issue 10's flags (default, --deep-iteration --print-data-log, the topic's decoder,
    --max-bytes, indexes with --verify-index-only and --index-sanity-check)."""
    cases = _suite_cases(parity_ws)
    kinds = {c.kind for c in cases}
    assert kinds >= {"log", "checkpoint", "index", "timeindex", "snapshot", "txnindex"}
    flags = {a for c in cases for a in c.args}
    assert {"--cluster-metadata-decoder", "--offsets-decoder", "--transaction-log-decoder",
            "--verify-index-only", "--index-sanity-check", "--max-bytes"} <= flags
    ours = [h.run_ours(c.args, parity_ws) for c in cases]  # first: the real tool writes
    kafka = kafka_dump_log.run_jobs([c.args for c in cases], parity_ws)
    tally, explained, unexplained = _judge(kafka, ours, cases)
    assert not unexplained, "\n".join(unexplained[:40])
    assert tally[h.IDENTICAL] > 0.95 * len(cases), tally
    # unmutated files do not differ at all (an index next to an empty log, where Kafka dies on
    # a healthy file, gets a clean warning since issue 11); the known classes need mutants
    assert not explained, "\n".join(explained[:40])


def test_transaction_log_decoder_matches_the_real_tool(kafka_dump_log: h.KafkaDumpLog,
                                                       parity_ws: Path) -> None:
    """Kafka 4.x prints __transaction_state records as coordinator JSON (3.x text needs
    --kafka-version 3.9); the partition is written by segtools' writer (no real one exists in
    the repository): every state, value versions 0 and 1 with tagged fields, a tombstone and
    an unknown value version."""
    log = "built/__transaction_state-0/00000000000000000000.log"
    cases = [["--transaction-log-decoder", "--files", log],
             ["--transaction-log-decoder", "--skip-record-metadata", "--files", log]]
    ours_all = [h.run_ours(args, parity_ws) for args in cases]
    kafka = kafka_dump_log.run_jobs(cases, parity_ws)
    for _args, k, ours in zip(cases, kafka, ours_all):
        assert h.compare(k, ours).kind == h.IDENTICAL, h.compare(k, ours).reason
    assert '"transactionalId":"txn-flex-1"' in kafka[0].stdout  # the oracle did decode them
    assert "Found an unknown record version 7 for 0 type" in kafka[0].stdout


def test_multi_file_runs_match_the_real_command_line(kafka_dump_log: h.KafkaDumpLog,
                                                     parity_ws: Path) -> None:
    """One real `kafka-dump-log --files a,b,c` run per scenario: the end-of-run summaries of
    many files (timestamp mismatches, not-found offsets, non-consecutive offsets) come out in
    the order of Kafka's java.util.HashMap, and the exit status agrees."""
    import shutil

    from segtools.dump.scala_order import java_hashmap_order_is_modelled

    scenarios = ["S15-delete-records-log-start", "S3-kip101-divergent-logs",
                 "c-durability-acks-all", "a-preferred-leader-return"]
    for name in scenarios:
        # where 8+ of the files' absolute paths share a hash bucket, Java's HashMap makes the
        # bucket a red-black tree, an order java_hashmap_order does not model: the paths
        # depend on pytest's temporary folder, so pick a folder name where they do not
        for attempt in range(20):
            folder = parity_ws / f"multi{attempt}" / name
            if not folder.exists():
                shutil.copytree(parity_ws / "samples" / "generated" / name, folder)
            paths = [str(p) for p in h.kafka_files(folder)]
            if java_hashmap_order_is_modelled(paths):
                break
        files = [str(p.relative_to(parity_ws)) for p in h.kafka_files(folder)
                 if p.suffix in (".log", ".index", ".timeindex")]
        args = ["--deep-iteration", "--files", ",".join(files)]
        ours = h.run_ours(args, parity_ws)
        kafka = kafka_dump_log.run_cli(args, parity_ws)
        assert kafka.stderr.count("\n") >= 2, f"{name}: no summary to compare"
        verdict = h.compare(kafka, ours, "multi")
        assert verdict.kind == h.IDENTICAL, f"{name}: {verdict.reason}"


def test_mutants_match_the_real_tool(kafka_dump_log: h.KafkaDumpLog, parity_ws: Path,
                                     tmp_path: Path) -> None:
    """300 seeded mutants (bit flips, truncations, hostile lengths, bad CRCs and magics,
    broken record varints, index entries): where Kafka prints lines ours are identical; where
    Kafka dies with a stack trace ours prints a clean error inside the batch Kafka died in.
    The few remaining differences are the documented classes of
    parity_harness.KNOWN_DIFFERENCES (reader behaviours on hostile batch headers)."""
    mutants = h.make_mutants(h.mutant_sources(parity_ws), 300, 7, parity_ws / "mutants-suite")
    pairs = h.mutant_cases(mutants, parity_ws)
    cases = [c for _, c in pairs]
    ours = [h.run_ours(c.args, parity_ws) for c in cases]
    kafka = kafka_dump_log.run_jobs([c.args for c in cases], parity_ws)
    tally, explained, unexplained = _judge(kafka, ours, cases)
    assert not unexplained, "\n".join(unexplained[:40])
    assert tally[h.CLEAN_ERROR] > 50, tally  # the mutants do make Kafka die
    assert tally[h.IDENTICAL] > 0.6 * len(cases), tally
    assert len(explained) < 0.1 * len(cases), "\n".join(explained[:40])


def test_java_hashmap_order_is_javas(kafka_dump_log: h.KafkaDumpLog, tmp_path: Path) -> None:
    """segtools.dump.scala_order.java_hashmap_order against java.util.HashMap itself, filled
    with computeIfAbsent as Kafka 4.x fills its summary maps (resizes on hits included)."""
    import random

    from segtools.dump.scala_order import java_hashmap_order

    source = tmp_path / "HashMapOrder.java"
    source.write_text(
        "import java.nio.file.*; import java.util.*;\n"
        "public class HashMapOrder { public static void main(String[] a) throws Exception {\n"
        "  for (String line : Files.readAllLines(Path.of(a[0]))) {\n"
        "    Map<String, Integer> m = new HashMap<>();\n"
        "    for (String k : line.split(\"\\t\")) m.computeIfAbsent(k, x -> 1);\n"
        "    System.out.println(String.join(\"\\t\", m.keySet())); } } }\n")
    from segtools.dump.scala_order import java_hashmap_order_is_modelled

    rng = random.Random(3)
    runs = []
    for _ in range(400):  # unrelated paths
        n = rng.choice([1, 2, 5, 12, 13, 14, 25, 49, 97, 200])
        keys = [f"/tmp/x{rng.randrange(10**6)}/broker-{rng.randrange(4)}/t-{rng.randrange(9)}/"
                f"{rng.randrange(10**5):020d}.timeindex" for _ in range(n)]
        runs.append([rng.choice(keys) for _ in range(rng.choice([n, 2 * n, 3 * n]))])
    for _ in range(600):  # paths a few characters apart collide in the low hash bits
        root = f"/tmp/ws{rng.randrange(300)}/samples/generated/c-durability-acks-all"
        keys = list(dict.fromkeys(
            f"{root}/{rng.choice(['', 'snapshots/before-restart/'])}broker-{rng.randrange(1, 4)}"
            f"/rf{rng.randrange(2, 4)}-min{rng.randrange(1, 3)}-{rng.randrange(3)}/"
            f"{rng.randrange(3):020d}.timeindex" for _ in range(rng.choice([5, 10, 13, 20, 30]))))
        runs.append([rng.choice(keys) for _ in range(len(keys))] + keys)

    data = tmp_path / "calls.txt"
    data.write_text("".join("\t".join(calls) + "\n" for calls in runs))
    proc = subprocess.run([kafka_dump_log.runtime.java, str(source), str(data)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    java = proc.stdout.splitlines()
    assert len(java) == len(runs)
    checked = [(calls, line) for calls, line in zip(runs, java)
               if java_hashmap_order_is_modelled(calls)]
    assert len(checked) > 0.95 * len(runs)
    wrong = [i for i, (calls, line) in enumerate(checked)
             if java_hashmap_order(calls) != line.split("\t")]
    assert not wrong, f"{len(wrong)} of {len(checked)} orders differ, e.g. run {wrong[0]}"
