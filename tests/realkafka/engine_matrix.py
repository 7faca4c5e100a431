"""The real engine's long run (not part of the CI suite): every sample scenario x every Kafka
release, and random scenarios, each run with ``--allow-drift`` so every difference is counted
instead of stopping the run. Prints one line per run and the figures at the end:

    .venv/bin/python tests/realkafka/engine_matrix.py                     # everything
    .venv/bin/python tests/realkafka/engine_matrix.py --releases 4.4.0 --random 50 --no-samples
    .venv/bin/python tests/realkafka/engine_matrix.py --no-samples --random 25 \
        --append benchmarks/engine_campaign.jsonl     # a campaign over several sessions

``--append FILE`` adds one JSON line per run to FILE and skips every (scenario, release) the file
already holds: random seeds continue after the ones run before, so a campaign stopped at any
point goes on in the next session without repeating a seed.

Per run: refused (the real engine cannot do the scenario: support.check_supported), failed
(an error), or ran: steps whose state was not reached (``reached: false`` in run.json),
story differences between the model and the cluster (story.py), and the lost sets compared
with the model run with the same features (lost_view).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def _random_scenario(seed: int) -> Any:
    from segtools.simulate.random_scenarios import random_scenario
    from segtools.simulate.scenario import parse_scenario

    # what a real cluster can run: no power loss, no requested unclean election of a given broker
    return parse_scenario(random_scenario(seed, power_loss=False, brokers=3, steps=12),
                          source=f"random-{seed}")


def run_one(scenario: Any, release: str, work: Path) -> dict[str, Any]:
    from segtools.errors import ScenarioError
    from segtools.realcluster import check_supported, run_on_kafka
    from segtools.realcluster.features import lockstep_scenario
    from segtools.simulate import run

    row: dict[str, Any] = {"scenario": scenario.name, "release": release}
    try:
        check_supported(scenario)
    except ScenarioError as exc:
        row["refused"] = str(exc)
        return row
    t0 = time.monotonic()
    try:
        res = run_on_kafka(scenario, work / "real", kafka_version=release, allow_drift=True)
    except Exception as exc:  # noqa: BLE001 - counted and printed, the matrix goes on
        row["failed"] = f"{type(exc).__name__}: {exc}"
        row["trace"] = traceback.format_exc(limit=3)
        row["seconds"] = round(time.monotonic() - t0, 1)
        return row
    row["seconds"] = round(time.monotonic() - t0, 1)
    log = json.loads((work / "real" / "kafka" / "run.json").read_text())
    row["not_reached"] = [w for w in log["waits"] if w["reached"] is False]
    row["drift"] = log["drift"]
    row["story_differences"] = log["story"].get("differences", [log["story"].get("error")])
    model = run(lockstep_scenario(scenario, log["features"]), work / "model").truth

    def lost(truth: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
        return {k: [(x["offset"], x["value"], x["acked"], x["cause"]) for x in v["lost"]]
                for k, v in truth.items()}
    real_lost, model_lost = lost(res.truth), lost(model)
    row["lost_same"] = real_lost == model_lost
    row["lost_differences"] = [f"{k}: the model lost {model_lost.get(k)}; the cluster {real_lost.get(k)}"
                               for k in sorted(set(real_lost) | set(model_lost))
                               if real_lost.get(k) != model_lost.get(k)]
    return row


def _code_version() -> str:
    """The commit the runs measure (``+dirty`` with uncommitted changes)."""
    import subprocess

    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True).stdout.strip()
    return git("rev-parse", "--short", "HEAD") + ("+dirty" if git("status", "--porcelain", "--", "segtools") else "")


def _done(path: Path) -> set[tuple[str, str]]:
    """(scenario, release) of every run an earlier session appended to ``path``."""
    if not path.exists():
        return set()
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {(r["scenario"], r["release"]) for r in rows}


def _cell(r: dict[str, Any]) -> str:
    if "refused" in r:
        return "refused"
    if "failed" in r:
        return "FAILED: " + r["failed"][:80]
    return (f"{len(r['not_reached'])} / {len(r['story_differences'])} / "
            f"{'yes' if r['lost_same'] else 'no'} ({r['seconds']:.0f} s)")


def report(path: Path) -> str:
    """Markdown: samples x releases (not reached / story differences / the model's lost set,
    wall time), then the random runs, one line each, and their figures."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    samples = [r for r in rows if not r["scenario"].startswith("random-")]
    rand = [r for r in rows if r["scenario"].startswith("random-")]
    out: list[str] = []
    if samples:
        rels = sorted({r["release"] for r in samples})
        by = {(r["scenario"], r["release"]): r for r in samples}  # the last run of each counts
        out += ["| sample | " + " | ".join(rels) + " |", "|---" * (len(rels) + 1) + "|"]
        for name in sorted({r["scenario"] for r in samples}):
            out.append(f"| {name} | " + " | ".join(_cell(by[(name, rel)]) if (name, rel) in by else "-"
                                                  for rel in rels) + " |")
    if rand:
        ran = [r for r in rand if "refused" not in r and "failed" not in r]
        out += ["", "| seed | release | not reached / story diffs / lost same (wall) | first difference |",
                "|---|---|---|---|"]
        for r in rand:
            first = (r.get("story_differences") or [x["what"] for x in r.get("drift", [])] or [""])[0]
            out.append(f"| {r['scenario'][7:]} | {r['release']} | {_cell(r)} | {str(first)[:160]} |")
        out += ["", f"random runs: {len(rand)}, ran {len(ran)}, failed {sum('failed' in r for r in rand)}; "
                f"with reached:false {sum(bool(r['not_reached']) for r in ran)}; with story differences "
                f"{sum(bool(r['story_differences']) for r in ran)}; another lost set "
                f"{sum(not r['lost_same'] for r in ran)}; {sum(r.get('seconds', 0) for r in rand):.0f} s"]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    from segtools.realcluster.kafka_runtime import KAFKA_VERSIONS
    from segtools.simulate import load_scenario

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--releases", default=",".join(KAFKA_VERSIONS))
    ap.add_argument("--samples", default="*", help="glob of samples/scenarios/*.yaml names")
    ap.add_argument("--no-samples", action="store_true")
    ap.add_argument("--scenario", action="append", default=[],
                    help="a scenario file to run too (each release); repeatable")
    ap.add_argument("--random", type=int, default=50, help="random scenarios (on the newest release)")
    ap.add_argument("--random-seed", type=int, default=1000)
    ap.add_argument("--json", default=None, help="write every row here")
    ap.add_argument("--append", default=None,
                    help="JSON lines file: add a line per run, skip runs it already holds")
    ap.add_argument("--report", default=None,
                    help="print the markdown tables of an --append file and exit (no run)")
    ap.add_argument("--keep", default=None,
                    help="keep every run's output (OUT/kafka/controller.log, run.json) under this folder")
    args = ap.parse_args(argv)
    if args.report:
        print(report(Path(args.report)))
        return 0
    releases = args.releases.split(",")
    done = _done(Path(args.append)) if args.append else set()
    jobs: list[tuple[Any, str]] = []
    if not args.no_samples:
        for path in sorted((REPO / "samples" / "scenarios").glob(args.samples + ".yaml")):
            for rel in releases:
                scenario = load_scenario(path)
                if (scenario.name, rel) not in done:
                    jobs.append((scenario, rel))
    for path in args.scenario:
        for rel in releases:
            scenario = load_scenario(Path(path))
            if (scenario.name, rel) not in done:
                jobs.append((scenario, rel))
    seed, random_jobs = args.random_seed, 0
    while random_jobs < args.random:  # seeds an earlier session ran are skipped, not counted
        if (f"random-{seed}", releases[-1]) not in done:
            jobs.append((_random_scenario(seed), releases[-1]))
            random_jobs += 1
        seed += 1
    rows = []
    code = _code_version()
    for scenario, rel in jobs:
        if args.keep:  # a run to diagnose: its controller log and run.json stay
            work = Path(args.keep) / f"{scenario.name}-{rel}"
            if work.exists():
                sys.exit(f"engine_matrix: {work} exists (no output is overwritten)")
            row = run_one(scenario, rel, work)
        else:
            with tempfile.TemporaryDirectory(prefix="segtools-matrix-") as tmp:
                row = run_one(scenario, rel, Path(tmp))
        row["code"] = code
        rows.append(row)
        if "refused" in row:
            state = "refused"
        elif "failed" in row:
            state = "FAILED " + row["failed"][:200]
        else:
            state = (f"not_reached={len(row['not_reached'])} drift={len(row['drift'])} "
                     f"story_diffs={len(row['story_differences'])} lost_same={row['lost_same']}")
            for d in row["story_differences"][:2] + [x["what"] for x in row["drift"][:2]] \
                    + row["lost_differences"][:2]:
                state += f"\n      {d}"
        print(f"{row['scenario']:40s} {rel:6s} {row.get('seconds', 0):6.1f}s {state}", flush=True)
        if args.append:
            with open(args.append, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(row, default=str) + "\n")
        if args.json:  # after every run: a long run stopped early keeps what it measured
            Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    ran = [r for r in rows if "refused" not in r and "failed" not in r]
    print("\nfigures:")
    print(f"  runs: {len(rows)}  ran: {len(ran)}  refused: {sum('refused' in r for r in rows)}  "
          f"failed: {sum('failed' in r for r in rows)}")
    print(f"  runs with reached:false: {sum(bool(r['not_reached']) for r in ran)}  "
          f"with drift: {sum(bool(r['drift']) for r in ran)}  "
          f"with story differences: {sum(bool(r['story_differences']) for r in ran)}  "
          f"with another lost set than the model: {sum(not r['lost_same'] for r in ran)}")
    print(f"  seconds: {sum(r.get('seconds', 0) for r in rows):.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=str))
    return 0 if all(not r["not_reached"] and not r["story_differences"] for r in ran) else 1


if __name__ == "__main__":
    sys.exit(main())
