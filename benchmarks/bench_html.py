"""How fast the HTML incident report opens: a synthetic report.json of many partitions,
rendered by ``segtools.forensics.report_html`` and opened in headless Chromium (Debian's package,
driven over the DevTools protocol as in tests/html).

Usage::

    python benchmarks/bench_html.py [--partitions 2000] [--problem-share 0.25]
                                    [--lost-per-problem 40] [--repeat 3] [--keep report.json]

A command, not a test: CI does not run it. Each partition has three replicas with two or
three leader epochs and six metadata changes; a share of them lost records to an unclean
election (a divergent suffix on one replica, its records committed, acked or not). Printed
per run: the Python render time, the file size, and in the browser the time from navigation
start to the load event and to the first frame painted after it (two animation frames:
layout, the lazy lost-records table and paint are done), the renderer's CPU time and its
main-thread task time (less sensitive than wall time to other load on the machine, which is
printed too).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HTML_TESTS = Path(__file__).resolve().parents[1] / "tests" / "html"   # the CDP client lives there

T0 = 1_719_975_664_000


def synthetic_report(partitions: int, problem_share: float, lost_per_problem: int,
                     seed: int = 7) -> dict[str, Any]:
    rnd = random.Random(seed)
    parts = []
    seg = "00000000000000000000.log"
    for i in range(partitions):
        topic, pid = f"topic-{i // 50:03d}", i % 50
        problem = rnd.random() < problem_share
        end = rnd.randint(1_000, 5_000_000)
        fork = end - lost_per_problem
        e1 = end // 2
        replicas = []
        for b in (1, 2, 3):
            diverged = problem and b == 1
            leo = end + (lost_per_problem // 2 if diverged else 0)
            replicas.append({
                "broker": b, "log_dir": f"/cluster/broker-{b}", "log_start_offset": 0,
                "log_end_offset": leo, "high_watermark": end - 5,
                "status": "COMMITTED_LOSS" if diverged else "CONSISTENT",
                "fork_offset": fork if diverged else None,
                "cause": "UNCLEAN_ELECTION" if diverged else None,
                "divergent": ({"first_offset": fork, "last_offset": leo - 1, "records": leo - fork,
                               "committed_records": (leo - fork) // 2} if diverged else None),
                "reference": b == 2, "reconciled": not diverged,
                "findings": ([{"code": "TORN_TAIL", "detail": "120 bytes fail the CRC", "offset": leo,
                               "segment": seg, "position": 4096}] if diverged else []),
                "epochs": [[0, 0], [1, e1]] + ([] if diverged else [[2, fork]]),
                "clean_shutdown": not diverged,
            })
        lost = []
        if problem:
            for off in range(fork, fork + lost_per_problem):
                lost.append({"broker": 1, "offset": off, "leader_epoch": 1,
                             "key": f"user-{rnd.randint(0, 10**6)}", "value": "x" * rnd.randint(5, 60),
                             "committed": off < fork + lost_per_problem // 2,
                             "acked": rnd.random() < 0.5})
        changes = []
        for k, (leader, isr, election) in enumerate([(1, [1, 2, 3], "initial"), (1, [1, 2], None),
                                                      (2, [2], "clean"), (2, [2, 3], None),
                                                      (1, [1], "unclean" if problem else "clean"),
                                                      (1, [1, 2, 3], None)]):
            changes.append({"offset": i * 6 + k, "timestamp_ms": T0 + k * 5000,
                            "file": "/cluster/controller/__cluster_metadata-0/" + seg,
                            "position": (i * 6 + k) * 100, "record": "PartitionChange" if k else "Partition",
                            "leader_epoch": sum(1 for c in changes if c.get("election")) + (election is not None) - 1,
                            "leader": leader, "isr": isr, "elr": None,
                            **({"election": election} if election else {})})
        parts.append({"topic": topic, "partition": pid, "topic_id": "AAAAAAAAAAAAAAAAAAAAAA",
                      "reference_broker": 2, "replicas": replicas, "lost_records": lost,
                      "findings": [], "metadata_changes": changes})
    brokers = [{"offset": b, "timestamp_ms": T0, "event": "registered", "broker": b, "broker_epoch": b,
                "fenced": True} for b in (1, 2, 3)]
    return {"partitions": parts, "metadata": {"brokers": brokers}}


MEASURE = """
new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(() => {
  const nav = performance.getEntriesByType('navigation')[0];
  resolve({load: nav.loadEventEnd, painted: performance.now(),
           lanes: document.querySelectorAll('g.lane').length,
           open: document.querySelectorAll('details.partition[open]').length,
           rows: document.querySelectorAll('#lost-body tr').length,
           lost: +document.getElementById('lost-count').dataset.count});
})))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--problem-share", type=float, default=0.25)
    ap.add_argument("--lost-per-problem", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", help="also write the synthetic report.json here")
    args = ap.parse_args()

    sys.path.insert(0, str(HTML_TESTS))
    from cdp_chromium import Chromium

    from segtools.forensics.report_html import write_html

    report = synthetic_report(args.partitions, args.problem_share, args.lost_per_problem)
    if args.keep:
        Path(args.keep).write_text(json.dumps(report))
    lost = sum(len(p["lost_records"]) for p in report["partitions"])
    with tempfile.TemporaryDirectory() as tmp, Chromium(timeout=120) as browser:
        out = Path(tmp) / "report.html"
        t = time.perf_counter()
        write_html(report, out)
        render_s = time.perf_counter() - t
        size_mb = os.path.getsize(out) / 1e6
        loads, paints, cpu, main = [], [], [], []
        for _ in range(args.repeat):
            page = browser.open(out.as_uri(), width=1200, height=900)
            r = page.evaluate(MEASURE)
            if page.console_errors():
                raise SystemExit(f"console errors: {page.console_errors()[:3]}")
            loads.append(r["load"] / 1000)
            paints.append(r["painted"] / 1000)
            m = page.metrics()
            cpu.append(m["ProcessTime"])
            main.append(m["TaskDuration"])
            browser.call("Target.closeTarget", {"targetId": page.target})
    load_avg = os.getloadavg()[0]
    print("| partitions | with findings (open) | lost record copies | HTML | Python render | "
          "load event | first frame after load | renderer CPU | main-thread tasks | load average |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {args.partitions} | {r['open']} | {lost} | {size_mb:.1f} MB | {render_s:.2f} s | "
          f"{statistics.median(loads):.2f} s | {statistics.median(paints):.2f} s | "
          f"{statistics.median(cpu):.2f} s | {statistics.median(main):.2f} s | {load_avg:.1f} |")
    print(f"(browser figures: median of {args.repeat} opens; 'first frame after load' is the "
          f"time from navigation start until the page is drawn, the figure the 2 s target is for)",
          file=sys.stderr)
    print(f"lanes drawn: {r['lanes']}; lost-count shown: {r['lost']}; table rows in the DOM: {r['rows']}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
