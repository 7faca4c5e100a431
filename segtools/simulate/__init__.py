"""`segtools simulate`: a deterministic replicated Kafka cluster that writes real log dirs and the
ground truth (acks.jsonl, truth.json). See CONTRACT.md section 3 and FORENSICS.md Part A.

    from segtools.simulate import load_scenario, run
    result = run(load_scenario("scenario.yaml"), "out/")
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from segtools.errors import InputError, ScenarioError
from segtools.simulate.random_scenarios import random_scenario
from segtools.simulate.scenario import Scenario, load_scenario, parse_scenario

__all__ = ["Scenario", "ScenarioError", "SimulationResult", "load_scenario", "parse_scenario",
           "random_scenario", "run", "simulate"]


@dataclass
class SimulationResult:
    out_dir: str | None
    truth: dict[str, Any]
    acks: list[dict[str, Any]]
    # the final in-memory state: the model's segtools.simulate.cluster.Cluster (the real engine,
    # segtools.realcluster, puts its step runner here)
    cluster: Any


def run(scenario: Scenario | dict[str, Any], out_dir: str | os.PathLike[str] | None) -> SimulationResult:
    """Run a scenario; with ``out_dir`` write broker dirs, snapshots, the metadata log,
    ``acks.jsonl`` and ``truth.json`` there (the directory must be new or empty)."""
    from segtools.simulate.cluster import Cluster
    from segtools.simulate.truth import acks_lines, truth, truth_text

    if isinstance(scenario, dict):
        scenario = parse_scenario(scenario)
    out = os.fspath(out_dir) if out_dir is not None else None
    if out is not None:
        if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
            raise InputError(f"output directory {out} exists and is not empty")
        os.makedirs(out, exist_ok=True)
    cluster = Cluster(scenario)
    if out is not None:
        from segtools.simulate.files import write_cluster

        def snapshot(c: Cluster, name: str) -> None:
            target = os.path.join(out, "snapshots", name)
            if os.path.exists(target):
                raise ScenarioError(f"snapshot name {name!r} used twice")
            write_cluster(c, target)

        cluster.snapshot_hook = snapshot
    cluster.run()
    if out is not None:
        write_cluster(cluster, out)
        if scenario.cluster.metadata_log:
            from segtools.simulate.metadata_log import write_metadata_log

            write_metadata_log(cluster, os.path.join(out, "controller"))
        with open(os.path.join(out, "acks.jsonl"), "w", encoding="utf-8") as fh:
            fh.write(acks_lines(cluster))
        with open(os.path.join(out, "truth.json"), "w", encoding="utf-8") as fh:
            fh.write(truth_text(cluster))
    return SimulationResult(out, truth(cluster), [a.to_json() for a in cluster.acks], cluster)


def simulate(scenario_path: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> SimulationResult:
    """Load a scenario file and run it into ``out_dir``."""
    return run(load_scenario(scenario_path), out_dir)
