"""KIP-966 on a real Kafka 4.3.1 cluster (issue 13): the same scenario with eligible leader
replicas on and off, run by the real engine and by the model, read by compare.

RF 3 (assignment 1, 3, 2), min.insync.replicas 2, unclean election off. Broker 3 stops
cleanly, 5 more records are committed on 1 and 2, broker 2 stops cleanly (ISR [1]: with ELR,
ELR [2]), broker 1 (the leader) crashes, 3 and then 2 come back, an unclean election is asked
for through the Admin API, and 3 records are produced. Kafka's PartitionChangeBuilder decides:

- ELR on: broker 2 returns as an ELR member and is elected cleanly (class ``elr``) with every
  committed record; the Admin API's unclean election is not needed. Topic ``audit`` (RF 1 on
  broker 1, min ISR 1) has ISR and ELR empty after 1's crash; when 1 registers again without
  a clean-shutdown epoch the controller drops it from the ELR (an unclean restart) and then
  elects it as the last known leader (class ``last_known_leader``).
- ELR off: nobody in the ISR comes back, so the Admin API's unclean election takes the first
  live replica in assignment order, broker 3, which lacks the 5 committed records: they are
  lost (COMMITTED_LOSS, UNCLEAN_ELECTION, class ``unclean``).

The model must give the same report: statuses, lost records and classes."""

from __future__ import annotations

from pathlib import Path

import pytest
from cluster_fixtures import require_real_kafka  # also puts tests/forensics on sys.path
from kafka4x_scenarios import scenario_spec, summarize

pytestmark = pytest.mark.realkafka


@pytest.mark.parametrize("elr", [True, False], ids=["elr-on", "elr-off"])
def test_elr_on_saves_committed_records_off_loses_them_real_and_model(tmp_path: Path, elr: bool) -> None:
    from segtools.realcluster import run_on_kafka
    from segtools.simulate import run
    from segtools.simulate.scenario import parse_scenario

    require_real_kafka()
    scenario = parse_scenario(scenario_spec(elr))
    # the forensics are checked against this cluster's own truth; the election the cluster
    # makes after the scenario's last step (the model has none) is recorded as drift in run.json
    real = run_on_kafka(scenario, tmp_path / "real", allow_drift=True)
    run(scenario, tmp_path / "model")
    got = summarize(tmp_path / "real")

    # the real cluster's own account (Admin API and the real kafka-dump-log) of what was lost
    truth_lost = sorted(("orders-0", x["offset"], x["committed"]) for x in real.truth["orders-0"]["lost"]
                        if x["committed"])
    assert truth_lost == sorted((k, o, c) for k, _b, o, _e, _v, c in got["lost"] if c)
    # the high watermark stayed put while the ISR was [1] (ISR < min ISR 2)
    assert got["frozen"]
    if elr:
        assert got["classes"]["orders-0"] == [(1, "initial"), (-1, "offline"), (2, "elr")]
        assert got["classes"]["audit-0"] == [(1, "initial"), (-1, "offline"), (1, "last_known_leader")]
        assert not [x for x in got["lost"] if x[5]], "ELR keeps every committed record"
        assert got["replicas"][("orders-0", 1)][0] in ("CONSISTENT", "LAGGING_PREFIX")
        assert (1, "controller") in got["unclean_restarts"]
    else:
        assert got["classes"]["orders-0"] == [(1, "initial"), (-1, "offline"), (3, "unclean")]
        assert got["classes"]["audit-0"] == [(1, "initial"), (-1, "offline"), (1, "isr")]
        assert got["replicas"][("orders-0", 1)] == ("COMMITTED_LOSS", "UNCLEAN_ELECTION", "unclean")
        assert [(o, c) for k, b, o, _e, _v, c in got["lost"] if b == 1] == [(o, True) for o in range(10, 15)]
        assert got["unclean_restarts"] == []          # without ELR the controller cannot tell

    model = summarize(tmp_path / "model")
    assert model["replicas"] == got["replicas"]
    assert model["lost"] == got["lost"]
    assert model["classes"] == got["classes"]
    assert model["unclean_restarts"] == got["unclean_restarts"]
    assert model["frozen"] == got["frozen"]
