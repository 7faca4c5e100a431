"""By hand (not part of the CI suite): KAFKA-19489's two quorums *run*, not only formatted
(issue 28, must-show (iii)). Three controller-only nodes on 127.0.0.1 under one cluster id:

* layout ``flags``: nodes 1 and 2 formatted with ``--initial-controllers 1@…,2@…``, node 3
  with ``--standalone``; every node's ``controller.quorum.bootstrap.servers`` names all three.
* layout ``static`` (the bug as filed): every node has ``controller.quorum.voters=1,2,3``;
  nodes 1 and 2 formatted without a flag (a static quorum, kraft.version 0), node 3 with
  ``--standalone``, which the release should refuse beside ``controller.quorum.voters``
  (apache/kafka PR 20136).

When every format is accepted the three nodes are started, left running until each knows a
leader and a few seconds more, stopped (SIGTERM), and audited. Oracles: what each node's
``quorum-state`` says its leader and epoch are (Kafka's own files, read before the audit), and
what kafka-storage accepted. The audit must report the split at formatting and, when two
leaders were elected, each of them; KAFKA-19489 must be linked as possible (4.1) or excluded.

    .venv/bin/python tests/quorum/kafka19489_run.py                     # 4.1.0 and 4.2.0, both layouts
    .venv/bin/python tests/quorum/kafka19489_run.py 4.1.0 --layout flags

Exits 1 when a check fails. Every JVM is stopped, also on failure.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

LAYOUTS = ("flags", "static")
NODES = (1, 2, 3)


def _state(d: Path) -> dict[str, Any]:
    try:
        return dict(json.loads((d / "__cluster_metadata-0" / "quorum-state").read_text()))
    except (OSError, ValueError):
        return {}


def run_split(release: str, layout: str, root: Path, *, run_s: float = 5.0) -> dict[str, Any]:
    """Format (and, when all formats are accepted, run and stop) the three nodes; returns what
    kafka-storage said, each node's quorum-state after the stop, and the audit."""
    from segtools.quorum import audit_dirs
    from segtools.realcluster import config
    from segtools.realcluster.kafka_runtime import kafka_runtime
    from segtools.realcluster.processes import JvmProcess, run_tool
    from tests.quorum.real_controllers import controller_properties, kafka_uuid

    rt = kafka_runtime(version=release)
    (root / "log4j2.properties").write_text(config.LOG4J2)
    ports = {i: config.free_port() for i in NODES}
    dids = {i: kafka_uuid() for i in NODES}
    cid = kafka_uuid()
    boot = ",".join(f"127.0.0.1:{ports[i]}" for i in NODES)
    static = ",".join(f"{i}@127.0.0.1:{ports[i]}" for i in NODES)
    dirs, props, formats = {}, {}, {}
    for i in NODES:
        d = root / f"c{i}"
        d.mkdir()
        extra = ("metadata.max.idle.interval.ms=200\ncontroller.quorum.election.timeout.ms=1000\n"
                 "controller.quorum.fetch.timeout.ms=2000\n")
        if layout == "static":
            extra += f"controller.quorum.voters={static}\n"
        p = controller_properties(root / f"c{i}.properties", i, ports[i], d, boot, extra)
        if layout == "static":           # static voters and bootstrap servers exclude each other
            p.write_text(p.read_text().replace("controller.quorum.bootstrap.servers=", "#"))
        if i == 3:
            how: list[str] = ["--standalone"]
        elif layout == "flags":
            how = ["--initial-controllers",
                   ",".join(f"{j}@127.0.0.1:{ports[j]}:{dids[j]}" for j in (1, 2))]
        else:
            how = []
        res = run_tool(rt.command("kafka.tools.StorageTool", "format", "-t", cid, "-c", str(p),
                                  *how, heap="128m"), timeout=120)
        formats[i] = (" ".join(how) or "(no flag)", res.returncode,
                      (res.stdout + res.stderr).strip().splitlines()[-1:])
        dirs[i], props[i] = d, p
    out: dict[str, Any] = {"release": release, "layout": layout, "formats": formats,
                           "dirs": dirs, "ran": False}
    if any(rc != 0 for _, rc, _ in formats.values()):
        return out
    procs: dict[int, JvmProcess] = {}
    try:
        for i in NODES:
            argv = rt.command("kafka.Kafka", str(props[i]), heap="160m")
            argv[1:1] = [f"-Dlog4j2.configurationFile={root / 'log4j2.properties'}",
                         f"-Dkafka.logs.dir={root}"]
            procs[i] = JvmProcess(f"c{i}", argv, str(root / f"c{i}.log"))
        end = time.monotonic() + 120
        while time.monotonic() < end and not all(
                int(_state(dirs[i]).get("leaderId", -1)) > 0 for i in NODES):
            time.sleep(0.3)
        time.sleep(run_s)                # NoOpRecords every 200 ms on each leader's log
        for i in NODES:
            procs[i].terminate(20.0)
    finally:
        for p in procs.values():
            if p.alive():
                p.kill()
    out["ran"] = True
    out["states"] = {i: _state(dirs[i]) for i in NODES}
    out["audit"] = audit_dirs([str(dirs[i]) for i in NODES])
    return out


def check(res: dict[str, Any]) -> list[str]:
    """What must hold; the failures (empty: passed)."""
    bad: list[str] = []
    if not res["ran"]:
        return bad
    r = res["audit"]
    kinds = {f.kind for f in r.findings}
    if "split-at-formatting" not in kinds:
        bad.append(f"no split-at-formatting finding: {[f.message for f in r.findings]}")
    # Kafka's own view of the leaders: each node's quorum-state after the stop
    leaders = {i: int(s.get("leaderId", -1)) for i, s in res["states"].items()}
    seen = {(lc.node, lc.epoch, lc.leader_id) for n in r.nodes for lc in n.leader_changes}
    for i, lid in leaders.items():
        if lid > 0 and not any(who == lid for _, _, who in seen):
            bad.append(f"node {i}'s quorum-state names leader {lid}, no LEADER_CHANGE of it "
                       f"on any node in the audit")
    if len({lid for lid in leaders.values() if lid > 0}) > 1 and "split-brain" not in kinds:
        # two leaders elected in one epoch by the two voter sets must be named together
        epochs = {int(s.get("leaderEpoch", -1)) for s in res["states"].values()}
        if len(epochs) == 1:
            bad.append("two leaders in one epoch, no split-brain finding")
    rejoined = [o.message for o in r.observations if o.kind == "voter-rejoined"]
    if rejoined:
        bad.append(f"voter-rejoined observed in a run without add/remove-controller: {rejoined}")
    rows = [(m.bug.key, m.verdict) for m in r.known_bugs if m.bug.key == "KAFKA-19489"]
    want = "possible" if res["release"].startswith(("3.9", "4.0", "4.1")) else "excluded"
    if not rows or any(v != want for _, v in rows):
        bad.append(f"KAFKA-19489 rows {rows}, want {want}")
    return bad


def report(res: dict[str, Any]) -> None:
    print(f"== Kafka {res['release']}, layout {res['layout']}")
    for i, (how, rc, tail) in res["formats"].items():
        print(f"  format node {i} {how}: exit {rc} {tail if rc else ''}")
    if not res["ran"]:
        print("  not run: a format was refused")
        return
    for i, s in res["states"].items():
        print(f"  node {i} quorum-state: leader {s.get('leaderId')} epoch {s.get('leaderEpoch')}")
    r = res["audit"]
    for n in r.nodes:
        print(f"  {Path(n.name).name}: log end {n.log_end}; bootstrap voters "
              f"{[v for v, _ in n.bootstrap_voters] if n.bootstrap_voters else None}; leaders "
              f"{sorted({(lc.epoch, lc.leader_id) for lc in n.leader_changes})}")
    for f in r.findings:
        print(f"  FINDING {f.kind}: {f.message}")
    print(f"  committed below {r.committed_end}: {r.committed_reason}")
    for m in r.known_bugs:
        print(f"  KNOWN BUG {m.bug.key} {m.verdict} for {m.mark}: {m.why}")


def main(args: list[str]) -> int:
    layouts = [args[args.index("--layout") + 1]] if "--layout" in args else list(LAYOUTS)
    releases = [a for a in args if a[0].isdigit()] or ["4.1.0", "4.2.0"]
    failed = 0
    for release in releases:
        for layout in layouts:
            with tempfile.TemporaryDirectory(prefix=f"k19489-{release}-") as tmp:
                res = run_split(release, layout, Path(tmp))
                report(res)
                bad = check(res)
            for b in bad:
                print(f"  FAIL: {b}")
            failed += bool(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
