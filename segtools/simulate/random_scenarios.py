"""Seeded random fault schedules on small clusters (for property tests against truth.json)."""

from __future__ import annotations

import random
from typing import Any


def random_scenario(seed: int, **size: Any) -> dict[str, Any]:
    """A valid scenario dict drawn from ``seed``: crashes (some losing unflushed data), controlled
    shutdowns, restarts, pauses, elections, time passing and produces with mixed acks.

    ``size`` may fix: ``brokers`` (count), ``topics``, ``partitions``, ``replication_factor``,
    ``min_insync_replicas``, ``unclean_leader_election``, ``steps``, ``truncation``,
    ``metadata_log``, ``acks`` (a list to draw from), ``max_records`` (per produce step),
    ``power_loss`` (crashes may lose unflushed data; default true), ``unclean_elections``
    (requested unclean elections; default true), ``producers`` (in-flight sends, resends and
    transactions besides plain and idempotent produces; default true).
    """
    rng = random.Random(seed)
    n_brokers = int(size.get("brokers") or rng.randint(2, 4))
    brokers = list(range(1, n_brokers + 1))
    topics: list[dict[str, Any]] = []
    for t in range(int(size.get("topics") or rng.randint(1, 2))):
        rf = int(size.get("replication_factor") or rng.randint(1, min(3, n_brokers)))
        rf = min(rf, n_brokers)
        min_isr = int(size.get("min_insync_replicas") or rng.randint(1, rf))
        topics.append({
            "name": f"t{t}",
            "partitions": int(size.get("partitions") or rng.randint(1, 3)),
            "replication_factor": rf,
            "min_insync_replicas": min(min_isr, rf),
            "unclean_leader_election": bool(size.get("unclean_leader_election",
                                                     rng.random() < 0.3)),
        })
    acks_choices = [str(a) for a in size.get("acks", ["0", "1", "all", "all"])]
    max_records = int(size.get("max_records", 4))
    features = bool(size.get("producers", True))
    in_flight: set[str] = set()
    alive = set(brokers)
    paused: set[int] = set()
    steps: list[dict[str, Any]] = []
    counter = 0
    for _ in range(int(size.get("steps", 24))):
        roll = rng.random()
        dead = sorted(set(brokers) - alive)
        if roll < 0.45 or not steps:
            topic = rng.choice(topics)
            n = rng.randint(1, max_records)
            values = [f"v{counter + i}" for i in range(n)]
            counter += n
            step: dict[str, Any] = {"topic": topic["name"], "acks": rng.choice(acks_choices),
                                    "values": values, "keys": [f"k{(counter + i) % 7}" for i in range(n)]}
            if rng.random() < 0.7:
                step["partition"] = rng.randrange(topic["partitions"])
            if rng.random() < 0.2:
                step["batch_size"] = rng.randint(2, 3)
            extra = rng.random()
            if extra < 0.15:
                step["producer"] = "idem"  # idempotent: producer id and sequences
                step["acks"] = "all"
            elif extra < 0.25 and features:
                step["producer"] = "idem" if rng.random() < 0.5 else "plain"
                if step["producer"] == "idem":
                    step["acks"] = "all"
                step["in_flight"] = True   # response lost; resent by a later resend step
                in_flight.add(step["producer"])
            elif extra < 0.30 and features and "partition" in step:
                step["producer"] = "tx"
                step["acks"] = "all"
                steps.append({"begin_transaction": {"producer": "tx"}})
                steps.append({"produce": step})
                end = "commit_transaction" if rng.random() < 0.6 else "abort_transaction"
                steps.append({end: {"producer": "tx"}})
                continue
            steps.append({"produce": step})
        elif roll < 0.57 and len(alive) > 0:
            b = rng.choice(sorted(alive))
            alive.discard(b)
            paused.discard(b)
            lose = bool(size.get("power_loss", True)) and rng.random() < 0.3
            steps.append({"crash": {"broker": b, "lose_unflushed": lose}})
        elif roll < 0.62 and len(alive) > 0:
            b = rng.choice(sorted(alive))
            alive.discard(b)
            paused.discard(b)
            steps.append({"shutdown": {"broker": b}})
        elif roll < 0.75 and dead:
            b = rng.choice(dead)
            alive.add(b)
            steps.append({"restart": {"broker": b}})
        elif roll < 0.80 and alive - paused:
            b = rng.choice(sorted(alive - paused))
            paused.add(b)
            steps.append({"pause": {"broker": b}})
        elif roll < 0.85 and paused:
            b = rng.choice(sorted(paused))
            paused.discard(b)
            steps.append({"resume": {"broker": b}})
        elif roll < 0.91:
            steps.append({"advance": {"ms": rng.choice([1000, 5000, 12000, 40000])}})
        elif roll < 0.95:
            steps.append({"elect": {"preferred": True}})
        elif roll < 0.98:
            topic = rng.choice(topics)
            if size.get("unclean_elections", True):
                steps.append({"elect": {"topic": topic["name"], "unclean": True}})
            else:
                steps.append({"elect": {"topic": topic["name"], "preferred": True}})
        elif in_flight and roll < 0.99:
            name = sorted(in_flight)[0]  # sorted: set order of strings varies between processes
            in_flight.discard(name)
            steps.append({"resend": {"producer": name}})
        else:
            steps.append({"flush": {"broker": rng.choice(brokers)}})
    return {
        "name": f"random-{seed}",
        "seed": seed,
        "cluster": {
            "brokers": brokers,
            "replica_lag_time_max_ms": 10000,
            "truncation": size.get("truncation", "leader-epoch"),
            "metadata_log": bool(size.get("metadata_log", False)),
        },
        "topics": topics,
        "producers": [{"name": "idem", "idempotent": True}, {"name": "plain"},
                      {"name": "tx", "transactional_id": f"tx-{seed}"}],
        "steps": steps,
    }
