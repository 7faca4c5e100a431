"""The Kafka features a real cluster is formatted with: the release's own defaults for a new
cluster, as its ``kafka-storage version-mapping`` prints them (the levels ``kafka-storage
format`` gives a cluster of the latest production metadata.version of that release), with the
scenario's ``cluster.kafka_features`` over them. Read from the release, never written down
here: Kafka 4.0 formats with eligible.leader.replicas.version=0, 4.1 and later with 1."""

from __future__ import annotations

import re
from dataclasses import replace

from segtools.realcluster.kafka_runtime import KafkaRuntime
from segtools.realcluster.processes import run_tool
from segtools.simulate.scenario import Scenario

STORAGE_TOOL = "kafka.tools.StorageTool"

#: features a scenario's cluster does not choose: the metadata.version is the release's, and
#: kraft.version follows the quorum's configuration (a static controller.quorum.voters is 0)
_NOT_SCENARIO_FEATURES = ("metadata.version", "kraft.version")

#: the features the model knows (its controller and producers change with them)
MODEL_FEATURES = ("eligible.leader.replicas.version", "transaction.version")

_LINE = re.compile(r"^([a-z][a-z0-9_.]*)=(\d+)")
_CACHE: dict[tuple[str, str], dict[str, int]] = {}


def release_features(runtime: KafkaRuntime) -> dict[str, int]:
    """Feature name -> level of a new cluster of ``runtime``'s release (metadata.version too)."""
    key = (runtime.version, runtime.classpath)
    if key not in _CACHE:
        res = run_tool(runtime.command(STORAGE_TOOL, "version-mapping", heap="128m"), timeout=120)
        levels = {m[1]: int(m[2]) for line in res.stdout.splitlines() if (m := _LINE.match(line.strip()))}
        if res.returncode != 0 or "metadata.version" not in levels:
            from segtools.realcluster.cluster import ClusterError

            tail = " ".join((res.stdout + res.stderr).split()[-30:])
            raise ClusterError(f"kafka-storage version-mapping of Kafka {runtime.version} failed: {tail}")
        _CACHE[key] = levels
    return dict(_CACHE[key])


def cluster_features(scenario: Scenario, runtime: KafkaRuntime) -> tuple[dict[str, int], dict[str, int]]:
    """(what ``kafka-storage format`` is given with ``--feature``: the scenario's own
    features only, the release applies its defaults to the rest; the features the cluster
    then has, metadata.version and kraft.version left out)."""
    defaults = {k: v for k, v in release_features(runtime).items() if k not in _NOT_SCENARIO_FEATURES}
    given = dict(scenario.cluster.kafka_features) if scenario.cluster.kafka_features_given else {}
    return given, {**defaults, **given}


def model_features(features: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """The part of a real cluster's features the lockstep model runs with."""
    out = {"eligible.leader.replicas.version": 0}
    out.update({k: v for k, v in features.items() if k in MODEL_FEATURES})
    return tuple(sorted(out.items()))


def lockstep_scenario(scenario: Scenario, features: dict[str, int]) -> Scenario:
    """``scenario`` as the model must run it to tell a real cluster's story: with the cluster's
    features and Kafka's ISR rule for caught-up followers (docs/ENGINES.md)."""
    return replace(scenario, cluster=replace(scenario.cluster, kafka_features=model_features(features),
                                             caught_up_stays_in_isr=True))
