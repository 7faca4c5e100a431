"""Full parity report: `segtools dump --kafka-version X` against the real kafka-dump-log of X.

    python tests/realkafka/parity_report.py [--mutants 1200] [--seed 10] [--quick]
        [--release 4.3.1 | --all-releases]

``--release`` picks the Kafka release (default: the newest, KAFKA_VERSION); ``--all-releases``
runs the whole matrix (every release of KAFKA_VERSIONS, the same files and mutants each) and
ends with one line per release.

Compares, with the flag combinations of issue 10, every file the real tool reads under
tests/data/realdata, samples/generated and samples/dump (plus a __transaction_state
partition written with segtools' writer, as no real one is in the repository, and the real
0.8/0.9 brokers' message sets staged as segments), a few multi-file runs through the real
command line (end-of-run summaries across files), and ``--mutants`` deterministic mutants of
those files. Prints the counts and every remaining difference with its reason. Exit status 0
when there is no difference, 1 otherwise. Takes several minutes (the real tool's own
time-index check is quadratic on the 1.2 MB KRaft metadata log).
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import parity_harness as h  # noqa: E402


def run_side_by_side(kafka: h.KafkaDumpLog, cases: list[h.Case], cwd: Path
                     ) -> tuple[list[h.Outcome], list[h.Outcome]]:
    """segtools first, then the real tool: the real tool writes to its inputs (truncates
    indexes, creates a missing .index), which the driver undoes after each of its jobs."""
    ours = [h.run_ours(c.args, cwd, kafka.release) for c in cases]
    return kafka.run_jobs([c.args for c in cases], cwd), ours


def multi_file_runs(ws: Path) -> list[h.Case]:
    """Whole runs over many files at once through the real CLI: the summaries of several
    files (index mismatches, time-index errors, non-consecutive offsets) in Kafka's order."""
    runs = []
    for folder in sorted((ws / "samples" / "generated").iterdir()):
        files = [str(p.relative_to(ws)) for p in h.kafka_files(folder)
                 if p.suffix in (".log", ".index", ".timeindex")]
        if files:
            runs.append(h.Case(f"{folder.name} (all files, one run)",
                               ["--deep-iteration", "--files", ",".join(files)], "multi",
                               group="multi"))
    dump_files = [str(p.relative_to(ws)) for p in h.kafka_files(ws / "samples" / "dump")
                  if "corrupt-index-past-eof" not in str(p)]
    runs.append(h.Case("samples/dump (all files but the one Kafka dies on, one run)",
                       ["--deep-iteration", "--files", ",".join(dump_files)], "multi",
                       group="multi"))
    return runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", type=int, default=1200)
    ap.add_argument("--seed", type=int, default=10)
    ap.add_argument("--quick", action="store_true",
                    help="skip the real-tool time-index check of logs over 256 KiB")
    ap.add_argument("--extra", action="append", default=[], type=Path,
                    help="another folder of broker dirs to compare (e.g. real-cluster outputs)")
    ap.add_argument("--release", default=None,
                    help="the Kafka release whose real tool judges (default: the newest)")
    ap.add_argument("--all-releases", action="store_true",
                    help="every release segtools runs, one after the other")
    args = ap.parse_args(argv)
    from segtools.realcluster.kafka_runtime import KAFKA_VERSION, KAFKA_VERSIONS

    releases = list(KAFKA_VERSIONS) if args.all_releases else [args.release or KAFKA_VERSION]
    summary = []
    status = 0
    for release in releases:
        print(f"\n######## Kafka {release} ########", flush=True)
        t0 = time.time()
        code, line = run_release(args, release)
        summary.append(f"{release}: {line} ({time.time() - t0:.0f} s)")
        status |= code
    if len(releases) > 1:
        print("\n== the matrix ==")
        for line in summary:
            print(line)
    return status


def run_release(args: argparse.Namespace, release: str) -> tuple[int, str]:
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="segtools-parity-") as tmp:
        tmpdir = Path(tmp)
        ws = tmpdir / "ws"
        h.copy_inputs(ws, [h.REPO / "tests" / "data" / "realdata", h.REPO / "samples" / "generated",
                           h.REPO / "samples" / "dump"])
        h.build_transaction_state(ws / "built")
        h.stage_legacy_message_sets(ws / "built")
        for i, extra in enumerate(args.extra):
            import shutil
            shutil.copytree(extra, ws / "extra" / f"{i}-{extra.name}")
        kafka = h.KafkaDumpLog(tmpdir, release)
        files = h.kafka_files(ws)
        cases = h.cases_for(files, ws)
        if args.quick:
            cases = [c for c in cases if not (c.kind == "timeindex" and _log_size(ws, c) > 256 * 1024)]
        print(f"real tool: kafka-dump-log {kafka.version}; {len(files)} files, {len(cases)} "
              f"file comparisons", flush=True)
        k_out, o_out = run_side_by_side(kafka, cases, ws)
        file_verdicts = [(c, _judge(c, a, b)) for c, a, b in zip(cases, k_out, o_out)]

        multi = multi_file_runs(ws)
        multi_verdicts = []
        for c in multi:
            b = h.run_ours(c.args, ws, kafka.release)
            a = kafka.run_cli(c.args, ws)
            multi_verdicts.append((c, _judge(c, a, b)))

        mdir = ws / "mutants"
        mutants = h.make_mutants(h.mutant_sources(ws), args.mutants, args.seed, mdir)
        mcases = h.mutant_cases(mutants, ws)
        print(f"{len(mutants)} mutants (seed {args.seed}), {len(mcases)} mutant comparisons",
              flush=True)
        mk, mo = run_side_by_side(kafka, [c for _, c in mcases], ws)
        mutant_verdicts = [(m, c, _judge(c, a, b))
                           for (m, c), a, b in zip(mcases, mk, mo)]
        writes = collections.Counter(
            line.split(" ", 1)[0] for o in list(k_out) + list(mk) for line in o.changes.splitlines())
        print(f"the real tool wrote to its inputs (undone after each job): "
              f"{dict(writes) or 'never'}", flush=True)
    return report(file_verdicts, multi_verdicts, mutant_verdicts, time.time() - t0)


def _judge(case: h.Case, kafka: h.Outcome, ours: h.Outcome) -> h.Verdict:
    verdict = h.compare(kafka, ours, case.kind)
    known = h.known_difference(case, kafka, ours, verdict)
    if known is not None:
        verdict.reason = f"[{known}] {verdict.reason}"
    return verdict


def _log_size(ws: Path, case: h.Case) -> int:
    p = ws / case.args[-1]
    log = p.with_name(p.name.split(".")[0] + ".log")
    return log.stat().st_size if log.exists() else 0


def report(file_verdicts, multi_verdicts, mutant_verdicts, seconds: float) -> tuple[int, str]:
    def tally(verdicts):
        return collections.Counter(v.kind for *_, v in verdicts)

    f = tally(file_verdicts)
    mu = tally(multi_verdicts)
    per_mutant: dict[str, list[h.Verdict]] = collections.defaultdict(list)
    for m, _, v in mutant_verdicts:
        per_mutant[m.name].append(v)
    mutants_identical = sum(all(v.kind == h.IDENTICAL for v in vs) for vs in per_mutant.values())
    mutants_ok = sum(all(v.ok for v in vs) for vs in per_mutant.values())
    mc = tally(mutant_verdicts)
    print()
    print("== dump parity: segtools dump vs the real kafka-dump-log ==")
    print(f"files compared (file x flag set): {len(file_verdicts)}")
    print(f"  identical:                         {f[h.IDENTICAL]}")
    print(f"  kafka crashed, segtools clean error: {f[h.CLEAN_ERROR]}")
    print(f"  different:                         {f[h.DIFFERENT]}")
    print(f"multi-file runs (real CLI, --files a,b,...): {len(multi_verdicts)}, identical "
          f"{mu[h.IDENTICAL]}, clean error {mu[h.CLEAN_ERROR]}, different {mu[h.DIFFERENT]}")
    print(f"mutants compared: {len(per_mutant)} ({len(mutant_verdicts)} comparisons)")
    print(f"  comparisons identical:             {mc[h.IDENTICAL]}")
    print(f"  kafka crashed, segtools clean error: {mc[h.CLEAN_ERROR]}")
    print(f"  different:                         {mc[h.DIFFERENT]}")
    print(f"  mutants identical in every flag set: {mutants_identical}")
    print(f"  mutants with no difference (identical or clean error): {mutants_ok}")
    print(f"({seconds:.0f} s)")
    diffs = [(c.name, v) for c, v in file_verdicts + multi_verdicts if not v.ok]
    n_known = collections.Counter(
        v.reason[1:v.reason.index("]")] for *_, v in file_verdicts + multi_verdicts
        + mutant_verdicts if not v.ok and v.reason.startswith("["))
    diffs += [(f"{c.name} [{m.operator}: {m.detail}; from {m.source.name}]", v)
              for m, c, v in mutant_verdicts if not v.ok]
    if diffs:
        unexplained = len(diffs) - sum(n_known.values())
        print(f"\n== {len(diffs)} remaining differences: {unexplained} unexplained, known "
              f"classes {dict(n_known)} ==")
        by_reason: dict[str, list[str]] = collections.defaultdict(list)
        for name, v in diffs:
            key = v.reason[1:v.reason.index("]")] if v.reason.startswith("[") else None
            label = (f"known: {key}: {h.KNOWN_DIFFERENCES[key]}" if key
                     else "UNEXPLAINED: " + _reason_class(v.reason))
            by_reason[label].append(f"{name}: {v.reason}")
        for reason, items in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
            print(f"\n-- {len(items)} x {reason}")
            for item in items:
                print(f"   {item[:1500]}")
    line = (f"files {len(file_verdicts)}: identical {f[h.IDENTICAL]}, clean error "
            f"{f[h.CLEAN_ERROR]}, different {f[h.DIFFERENT]}; multi-file {len(multi_verdicts)}: "
            f"different {mu[h.DIFFERENT]}; mutants {len(per_mutant)} ({len(mutant_verdicts)} "
            f"comparisons): identical {mc[h.IDENTICAL]}, clean error {mc[h.CLEAN_ERROR]}, "
            f"different {mc[h.DIFFERENT]} (known classes {sum(n_known.values())})")
    return (0 if not diffs else 1), line


def _reason_class(reason: str) -> str:
    return reason.split(":")[0][:120]


if __name__ == "__main__":
    sys.exit(main())
