"""Real Apache Kafka driven by a scenario: ``segtools simulate SCENARIO --engine kafka``.

A KRaft cluster on 127.0.0.1 (``cluster.py``: one controller JVM, one broker JVM per broker id,
supervised by ``processes.py``, configured by ``config.py``) runs the scenario's steps as real
actions (``steps.py``, its producing steps in ``producing.py``, hand-written produce requests
for sends whose answer is lost in ``raw_produce.py``); ``truth.py`` writes truth.json from what
the cluster shows, read with the real kafka-dump-log (``dumplog.py``) and consumers of the
final leaders (``consume.py``). ``support.py`` refuses what a real cluster cannot do before
any JVM starts.

    from segtools.realcluster import run_on_kafka
    result = run_on_kafka(load_scenario("s.yaml"), "out/")
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

from segtools.errors import InputError
from segtools.simulate.scenario import Scenario
from segtools.simulate.truth import acks_text, truth_file_text

#: run.json lists at most this many folders the jars came from
_MAX_LISTED_DIRS = 20
#: ``schema_version`` of kafka/run.json (segtools/schemas/run.schema.json)
RUN_SCHEMA_VERSION = 1

__all__ = ["run_on_kafka", "check_supported"]

from segtools.realcluster.support import check_supported  # noqa: E402


def run_on_kafka(scenario: Scenario, out_dir: str | os.PathLike[str], *,
                 kafka_home: str | os.PathLike[str] | None = None,
                 kafka_version: str | None = None, allow_drift: bool = False,
                 keep_step_copies: bool = False) -> Any:
    """Run ``scenario`` on a real cluster of release ``kafka_version`` (default: the newest
    segtools runs) into ``out_dir`` (new or empty): broker-<id>/, controller/, snapshots/,
    acks.jsonl, truth.json, and kafka/ (properties, JVM logs, run.json: the release, its
    features, waits, timings, drift, the story of both engines). A step whose state the
    cluster does not reach raises DriftError (exit 1) unless ``allow_drift``; so does a
    story that differs from the model's. Every JVM is stopped before this returns or raises."""
    from segtools.realcluster import story
    from segtools.realcluster.cluster import RealCluster, require_client, require_consumer
    from segtools.realcluster.consume import read_final
    from segtools.realcluster.features import cluster_features, lockstep_scenario
    from segtools.realcluster.kafka_runtime import kafka_runtime
    from segtools.realcluster.processes import install_handlers, kill_all
    from segtools.realcluster.steps import DriftError, StepRunner
    from segtools.realcluster.truth import build_truth
    from segtools.simulate import SimulationResult

    check_supported(scenario)
    require_client()
    require_consumer()
    runtime = kafka_runtime(kafka_home, version=kafka_version)
    out = os.fspath(out_dir)
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise InputError(f"output directory {out} exists and is not empty")
    os.makedirs(out, exist_ok=True)
    install_handlers(signals=False)
    format_features, features = cluster_features(scenario, runtime)
    # the lockstep model runs the cluster the release formats (ELR on where it is on)
    scenario = lockstep_scenario(scenario, features)
    cluster = RealCluster(scenario, out, runtime, features=format_features)
    runner = StepRunner(scenario, cluster, out, allow_drift=allow_drift)
    from segtools.realcluster import config

    stories: dict[str, Any] = {}
    try:
        cluster.start()
        cluster.create_topics()
        runner.run()
        final_view: dict[Any, Any] | None = None
        final_hw: dict[Any, int] = {}
        consumed: dict[str, Any] = {}
        if any(p.alive() and not p.paused for p in cluster.brokers.values()):
            final_view = cluster.describe()
            final_hw = cluster.high_watermarks()
            consumed = read_final(cluster, final_view)
        runner.final_alive = {b: p.alive() for b, p in cluster.brokers.items()}
    finally:
        cluster.stop()
        runner.close_producers()
        kill_all()
        if cluster.controller is not None and not cluster.controller.alive():
            try:
                stories = story.compare_engines(runner)
            except Exception as exc:  # noqa: BLE001 - a run that failed earlier says why
                stories = {"error": str(exc)}
        with open(os.path.join(out, "kafka", "run.json"), "w", encoding="utf-8") as fh:
            json.dump({"schema_version": RUN_SCHEMA_VERSION, "kafka_version": runtime.version,
                       "cluster_id": cluster.cluster_id,
                       "time_scale": runner.scale,
                       "replica_lag_time_max_ms": config.replica_lag_ms(scenario),
                       "broker_session_timeout_ms": config.session_timeout_ms(scenario),
                       "format_features": format_features, "allow_drift": allow_drift,
                       "drift": runner.drift, "story": stories,
                       "kafka_home": None if kafka_home is None else os.path.abspath(kafka_home),
                       # where the JVMs' jars came from (a --kafka-home's libs/ or ~/.m2)
                       "classpath_dirs": sorted({os.path.dirname(p) for p in
                                                 runtime.classpath.split(os.pathsep)})[:_MAX_LISTED_DIRS],
                       "features": features, "waits": runner.log.waits,
                       "elections": runner.log.elections, "errors": runner.log.errors,
                       "timings": runner.log.timings, "fencings": runner.log.fencings},
                      fh, indent=2, sort_keys=True)
    differences = stories.get("differences", [])
    if differences and not allow_drift:
        raise DriftError(f"the cluster's story differs from the model's: {differences[0]}"
                         + (f" (and {len(differences) - 1} more, kafka/run.json)" if len(differences) > 1 else "")
                         + " (--allow-drift keeps going)")
    if final_view is None:
        # every broker stopped (or paused): no Admin API to ask, the controller's log tells
        final_view = story.final_view(stories.get("cluster", {}), scenario)
    truth = build_truth(runner, final_view, final_hw, consumed)
    if allow_drift:
        drift = runner.drift + [{"step": None, "kind": "story", "what": d} for d in differences]
        for name, part in truth.items():
            mine = [d for d in drift if f"{name}:" in d["what"]]
            if mine:
                part["drift"] = mine
    with open(os.path.join(out, "acks.jsonl"), "w", encoding="utf-8") as fh:
        fh.write(acks_text(runner.acks))
    with open(os.path.join(out, "truth.json"), "w", encoding="utf-8") as fh:
        fh.write(truth_file_text(truth))
    if not keep_step_copies:
        shutil.rmtree(runner.steps_dir, ignore_errors=True)
    return SimulationResult(out, truth, runner.acks, runner)
