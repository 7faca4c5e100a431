"""The differential soundness harness, long run (issue 21): compare and advise on degraded
evidence of simulated incidents, checked against the simulator's ground truth.

Usage::

    python benchmarks/soundness.py [--cases 2000] [--jobs 2] [--first-seed 0] [--no-samples]
                                   [--kinds full,no_acks,...] [--details 20] [--json FILE]
    python benchmarks/soundness.py --engine kafka --jobs 1 --cases 30 \
        --scenarios b-unclean-stale-return,S11b-last-replica-standing,...

``--engine kafka`` runs each scenario on a real Kafka cluster (``run_on_kafka``, what
``segtools simulate --engine kafka`` runs): the real cluster's truth judges the answers;
``after_restart`` is left out there (it would need a second cluster run), and a scenario whose
story drifts from the model's is reported as refused, not counted.

Scenarios: the sample scenarios (samples/scenarios), then ``random_scenario(seed)`` from
``--first-seed``, each run once on the model and turned into degraded evidence sets (a broker
dir dropped, copies taken after a restart, no metadata log, no acks, checkpoints missing or
stale, segments deleted by retention; tests/soundness/soundness_degrade.py). Scenarios are run
until ``--cases`` evidence sets were checked. Prints a Markdown table of counts per degradation
kind (answers, and the violations: false loss, false all-clear, unjustified "cannot tell",
crashes) and the first violations in detail. Exit 1 when any violation was found.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from multiprocessing import get_context
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "soundness"))

from soundness_check import VIOLATIONS, Outcome, run_scenario, table  # noqa: E402
from soundness_degrade import KINDS, sample_scenarios, scenarios  # noqa: E402


def _one(job: tuple[str, dict[str, Any], tuple[str, ...], str, str]) -> list[Outcome]:
    name, scenario, kinds, engine, parent = job
    work = tempfile.mkdtemp(prefix="scenario-", dir=parent)
    try:
        return run_scenario(name, scenario, work, kinds, engine)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=2000, help="evidence sets to check (default 2000)")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--no-samples", action="store_true", help="random scenarios only")
    ap.add_argument("--kinds", default=",".join(KINDS), help="degradations, comma-separated")
    ap.add_argument("--details", type=int, default=20, help="violations shown in detail")
    ap.add_argument("--json", dest="json_path", help="also write every outcome as JSON here")
    ap.add_argument("--engine", choices=("model", "kafka"), default="model",
                    help="kafka: each scenario runs on a real cluster (segtools simulate --engine kafka); "
                         "use with --scenarios and --jobs 1")
    ap.add_argument("--scenarios", help="only these scenarios (comma-separated: sample names, random-N)")
    args = ap.parse_args(argv)
    kinds = tuple(k for k in args.kinds.split(",") if k)
    unknown = set(kinds) - set(KINDS)
    if unknown:
        ap.error(f"unknown degradations {sorted(unknown)}; known: {', '.join(KINDS)}")

    parent = tempfile.mkdtemp(prefix="segtools-soundness-")
    if args.scenarios:
        wanted = [n for n in args.scenarios.split(",") if n]
        known = dict(sample_scenarios())
        for n in wanted:
            if n.startswith("random-") and n[7:].isdigit():
                known.update(scenarios(1, first_seed=int(n[7:]), samples=False))
        if set(wanted) - set(known):
            ap.error(f"unknown scenarios {sorted(set(wanted) - set(known))}")
        chosen: Any = ((n, known[n]) for n in wanted)
    else:
        chosen = scenarios(10**9, first_seed=args.first_seed, samples=not args.no_samples)
    jobs = ((name, sc, kinds, args.engine, parent) for name, sc in chosen)
    outcomes: list[Outcome] = []
    start = time.perf_counter()
    try:
        _run_jobs(jobs, args, outcomes, start)
    finally:
        shutil.rmtree(parent, ignore_errors=True)      # a terminated worker's sets too
    sets = sum(1 for o in outcomes if o.kind != "scenario_error")
    return _report(args, outcomes, sets, start)


def _run_jobs(jobs: Any, args: argparse.Namespace, outcomes: list[Outcome], start: float) -> None:
    sets = 0
    if args.engine == "kafka" or args.jobs <= 1:
        # in this process: a terminated pool worker would leave a real cluster's JVMs behind
        for job in jobs:
            outs = _one(job)
            outcomes += outs
            sets += sum(1 for o in outs if o.kind != "scenario_error")
            print(f"... {job[0]}: {sets} sets, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
            if sets >= args.cases:
                return
        return
    with get_context("fork").Pool(max(1, args.jobs)) as pool:
        for outs in pool.imap(_one, jobs):
            outcomes += outs
            before = sets
            sets += sum(1 for o in outs if o.kind != "scenario_error")
            if sets // 100 > before // 100:
                print(f"... {sets} sets, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
            if sets >= args.cases:
                pool.terminate()
                break


def _report(args: argparse.Namespace, outcomes: list[Outcome], sets: int, start: float) -> int:
    elapsed = time.perf_counter() - start
    checked = [o for o in outcomes if o.kind != "scenario_error"]
    refused = [o for o in outcomes if o.kind == "scenario_error"]
    print(f"{sets} evidence sets from {len({o.scenario for o in outcomes})} scenarios "
          f"({sum(o.cases for o in checked)} compare/advise runs) in {elapsed:.0f} s, {args.jobs} jobs")
    if refused:
        print(f"{len(refused)} scenarios the engine refused: " + "; ".join(d for o in refused for d in o.details))
    print()
    print(table(checked))
    total: Counter[str] = Counter()
    for o in checked:
        total.update(o.violations)
    print()
    print("violations: " + ", ".join(f"{k} {total[k]}" for k in VIOLATIONS))
    shown = 0
    for o in checked:
        if not o.violations:
            continue
        for d in o.details:
            if shown >= args.details:
                break
            if any(f": {k}: " in d for k in VIOLATIONS):
                print("  " + d)
                shown += 1
    if args.json_path:
        with open(args.json_path, "x", encoding="utf-8") as fh:
            json.dump([{"scenario": o.scenario, "kind": o.kind, "cases": o.cases, "answers": dict(o.answers),
                        "violations": dict(o.violations), "details": o.details} for o in outcomes], fh, indent=1)
    return 1 if sum(total.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
