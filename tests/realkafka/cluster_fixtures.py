"""Shared helpers of the real-cluster engine tests (tests/realkafka/test_engine_*.py).

Real Kafka is required, never optional: a missing Java, Maven cache or confluent-kafka fails
the test with the reason (a skip would count as a pass)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = REPO / "samples" / "scenarios"
sys.path.insert(0, str(REPO / "tests" / "forensics"))

from forensics_helpers import check_against_truth, disk_records_by_replica  # noqa: E402


def require_real_kafka() -> None:
    """Fail (not skip) when real Kafka cannot run here."""
    from segtools.realcluster.kafka_runtime import KafkaUnavailableError, kafka_runtime

    try:
        kafka_runtime()
    except KafkaUnavailableError as exc:
        pytest.fail(f"real Kafka is needed for this test: {exc}")
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        pytest.fail("the real engine needs confluent-kafka: pip install -e '.[test]'")


def lost_view(truth: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
    """Per partition, the lost records as (offset, epoch, value, acked, committed, cause)."""
    return {k: [(x["offset"], x["leader_epoch"], x["value"], x["acked"], x["committed"], x["cause"])
                for x in v["lost"]] for k, v in truth.items()}


def run_both(scenario_file: Path, tmp: Path, *, kafka_version: str | None = None,
             allow_drift: bool = False) -> tuple[dict[str, Any], dict[str, Any], Path]:
    """The scenario on a real cluster (into tmp/real) and under the model as the real engine's
    lockstep model runs it (the features that cluster was formatted with, kafka/run.json
    ``features``, and Kafka's ISR rule for caught-up followers): both truths."""
    from segtools.realcluster import run_on_kafka
    from segtools.realcluster.features import lockstep_scenario
    from segtools.simulate import load_scenario, run

    require_real_kafka()
    scenario = load_scenario(scenario_file)
    real_dir = tmp / "real"
    real = run_on_kafka(scenario, real_dir, kafka_version=kafka_version, allow_drift=allow_drift)
    check_run_files(real_dir)
    model = run(lockstep_scenario(scenario, run_log(real_dir)["features"]), tmp / "model")
    return real.truth, model.truth, real_dir


def story_checks(real_dir: Path) -> dict[str, Any]:
    """The real run reached every state the scenario implies, without drift, and told the
    model's story (leaders, epochs, ISR/ELR, election kinds): its run.json."""
    log = run_log(real_dir)
    assert [w for w in log["waits"] if w["reached"] is False] == []
    assert log["drift"] == [] and log["allow_drift"] is False
    assert log["story"]["differences"] == []
    assert log["story"]["model"] == log["story"]["cluster"] or all(
        [(c["epoch"], c["leader"], c["isr"], c["elr"], c["election"]) for c in log["story"]["model"][k]]
        == [(c["epoch"], c["leader"], c["isr"], c["elr"], c["election"]) for c in log["story"]["cluster"][k]]
        for k in log["story"]["model"])
    return log


def check_run_files(real_dir: Path) -> None:
    """The real engine's run.json, truth.json and acks.jsonl against their shipped schemas."""
    import jsonschema

    from segtools import schemas

    def check(doc: object, name: str) -> None:
        jsonschema.Draft202012Validator(schemas.load(name)).validate(doc)

    run = run_log(real_dir)
    check(run, "run")
    with pytest.raises(jsonschema.ValidationError):   # the schema is not vacuous
        check({k: v for k, v in run.items() if k != "kafka_version"}, "run")
    check(json.loads((real_dir / "truth.json").read_text()), "truth")
    for line in (real_dir / "acks.jsonl").read_text().splitlines():
        check(json.loads(line), "acks-line")


def run_log(real_dir: Path) -> dict[str, Any]:
    return json.loads((real_dir / "kafka" / "run.json").read_text())


def compare_dir(folder: Path, acks: Path, *, metadata: Path | None):
    import segtools

    return segtools.compare([str(folder)], acks=acks, metadata_log=metadata, find_metadata_log=False)


def verdicts(report) -> dict[tuple[str, int], tuple[str, str | None]]:
    return {(f"{p.verdict.topic}-{p.verdict.partition}", r.broker): (r.status, r.cause)
            for p in report.partitions for r in p.verdict.replicas}


def java_processes_of(path: Path) -> list[int]:
    """PIDs of live kafka.Kafka / kafka tool JVMs whose command line names ``path``."""
    out = []
    needle = os.fsencode(str(path))
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read()
            with open(f"/proc/{pid}/stat", "rb") as fh:
                state = fh.read().split(b") ")[-1][:1]
        except OSError:
            continue
        if state != b"Z" and b"java" in cmd and needle in cmd:
            out.append(int(pid))
    return out


__all__ = ["REPO", "SCENARIOS", "build_kafka_home", "check_against_truth", "compare_dir", "disk_records_by_replica",
           "java_processes_of", "lost_view", "require_real_kafka", "run_both", "run_log", "verdicts"]


def build_kafka_home(dest: Path) -> Path:
    """A Kafka distribution laid out like the 4.3 tarball (kafka_2.13-4.3.1/ with bin/,
    config/, libs/), its libs/ the jars Maven resolved for jvm/pom.xml (symlinked), its bin/
    scripts the tarball's entry points reduced to running those jars."""
    from segtools.realcluster.kafka_runtime import KAFKA_VERSION, KafkaUnavailableError, kafka_runtime

    try:
        runtime = kafka_runtime()
    except KafkaUnavailableError as exc:
        pytest.fail(f"real Kafka is needed for this test: {exc}")
    home = dest / f"kafka_2.13-{KAFKA_VERSION}"
    for sub in ("bin", "config", "libs"):
        (home / sub).mkdir(parents=True)
    for jar in runtime.classpath.split(os.pathsep):
        link = home / "libs" / Path(jar).name
        if not link.exists():
            link.symlink_to(jar)
    run_class = home / "bin" / "kafka-run-class.sh"
    run_class.write_text('#!/bin/sh\nbase=$(dirname "$0")/..\n'
                         'exec "${JAVA:-java}" -cp "$base/libs/*" "$@"\n')
    mains = {"kafka-server-start.sh": "kafka.Kafka", "kafka-storage.sh": "kafka.tools.StorageTool",
             "kafka-dump-log.sh": "org.apache.kafka.tools.DumpLogSegments"}
    for name, main in mains.items():
        (home / "bin" / name).write_text(f'#!/bin/sh\nexec "$(dirname "$0")/kafka-run-class.sh" {main} "$@"\n')
    for script in (home / "bin").iterdir():
        script.chmod(0o755)
    (home / "config" / "server.properties").write_text(
        "process.roles=broker,controller\nnode.id=1\n"
        "controller.quorum.bootstrap.servers=localhost:9093\n"
        "listeners=PLAINTEXT://:9092,CONTROLLER://:9093\ncontroller.listener.names=CONTROLLER\n"
        "log.dirs=/tmp/kraft-combined-logs\n")
    return home
