"""By hand (not part of the CI suite): the version fingerprint of metadata dirs that each Kafka
release formatted *and ran* (issue 28, must-show "fingerprints of dirs formatted and run by
each of 4.0.0, 4.1.0, 4.2.0, 4.3.1, 4.4.0 contain the true version").

For each release: one broker+controller node formatted with ``--standalone`` (so the log holds
broker registrations, a topic and its partitions, and snapshots as well as the bootstrap files),
started, a topic with a config created through the node, left running until it has written a
snapshot after the topic, stopped (SIGTERM, a controlled shutdown), then audited. The oracle is
the release that ran: the fingerprint's lower bound must equal it (the table holds no upper
bound; a tight lower bound is what "contains the true version" means here).

    .venv/bin/python tests/quorum/fingerprint_matrix.py                  # all five releases
    .venv/bin/python tests/quorum/fingerprint_matrix.py 4.1.0 4.4.0

Prints one row per release (the levels seen, the bound, the evidence that gives it) and exits 1
when any release's bound is not its own. Every JVM is stopped, also on failure.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

RELEASES = ("4.0.0", "4.1.0", "4.2.0", "4.3.1", "4.4.0")
TOPIC = "fp-t"


def _wait(cond: object, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():  # type: ignore[operator]
            return
        time.sleep(0.3)
    raise TimeoutError(f"timed out waiting for {what}")


def run_release(release: str, root: Path) -> dict[str, object]:
    """Format, run, stop one node of ``release`` under ``root``; its audit's fingerprint."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from segtools.quorum import audit_dirs
    from segtools.realcluster import config
    from segtools.realcluster.kafka_runtime import kafka_runtime
    from segtools.realcluster.processes import JvmProcess
    from tests.quorum.real_controllers import combined_properties, format_controller, kafka_uuid

    rt = kafka_runtime(version=release)
    (root / "log4j2.properties").write_text(config.LOG4J2)
    cport, bport = config.free_port(), config.free_port()
    d = root / "c1"
    d.mkdir()
    props = combined_properties(
        root / "c1.properties", 1, bport, cport, d, f"127.0.0.1:{cport}",
        "metadata.log.max.snapshot.interval.ms=1000\nmetadata.max.idle.interval.ms=200\n"
        "offsets.topic.replication.factor=1\ngroup.initial.rebalance.delay.ms=0\n")
    format_controller(rt, kafka_uuid(), props, "--standalone")
    argv = rt.command("kafka.Kafka", str(props), heap="256m")
    argv[1:1] = [f"-Dlog4j2.configurationFile={root / 'log4j2.properties'}",
                 f"-Dkafka.logs.dir={root}"]
    proc = JvmProcess("c1", argv, str(root / "c1.log"))
    part = d / "__cluster_metadata-0"
    try:
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{bport}", "log_level": 0})

        def registered() -> bool:
            try:
                return len(admin.list_topics(timeout=2).brokers) == 1
            except Exception:       # confluent_kafka.KafkaException: not listening yet
                return False

        _wait(registered, 180, f"{release}: the broker registered")
        admin.create_topics([NewTopic(TOPIC, 2, 1, config={"retention.ms": "3600000"})]
                            )[TOPIC].result(30)
        had = {p.name for p in part.glob("*.checkpoint")}
        _wait(lambda: {p.name for p in part.glob("*.checkpoint")} - had, 60,
              f"{release}: a snapshot after the topic")
        proc.terminate(30.0)
    finally:
        if proc.alive():
            proc.kill()
    r = audit_dirs([str(d)])
    (fp,) = r.fingerprints
    return {"release": release, "fp": fp,
            "snapshots": len(list(part.glob("*.checkpoint"))),
            "findings": [f.message for f in r.findings]}


def main(releases: list[str]) -> int:
    failed = []
    print("| release ran | metadata.version levels seen | release_min | evidence (strongest first) "
          "| snapshots | ok |")
    print("|---|---|---|---|---|---|")
    for release in releases:
        true = ".".join(release.split(".")[:2])
        with tempfile.TemporaryDirectory(prefix=f"fp-{release}-") as tmp:
            try:
                res = run_release(release, Path(tmp))
            except Exception as exc:       # one release failing must not hide the others
                print(f"| {release} | - | - | run failed: {exc} | - | FAIL |")
                failed.append(release)
                continue
        fp = res["fp"]
        levels = sorted({lvl for lvl, _ in fp.levels})       # type: ignore[attr-defined]
        ev = sorted(fp.evidence, key=lambda e: tuple(int(x) for x in e[0].split(".")),  # type: ignore[attr-defined]
                    reverse=True)
        ok = fp.release_min == true and not fp.newer_than_known  # type: ignore[attr-defined]
        strongest = "; ".join(f"{r} ({w})" for r, w, _ in ev[:3])
        print(f"| {release} | {levels} | {fp.release_min} | {strongest} "  # type: ignore[attr-defined]
              f"| {res['snapshots']} | {'ok' if ok else 'FAIL'} |")
        if res["findings"]:
            print(f"  findings: {res['findings']}")
        if not ok:
            failed.append(release)
            print(f"  note: {fp.note}")                  # type: ignore[attr-defined]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or list(RELEASES)))
