"""The model's transaction coordinator writes a marker its old leader had not had acknowledged
again on the partition's new leader (producer.Producers.rewrite_pending_marker), as Kafka's
does (TransactionMarkerRequestCompletionHandler retries NOT_LEADER_OR_FOLLOWER).

The oracle is real Kafka: S19-txn-marker-lost on the real engine (4.3.1 and 4.4.0, under
Kafka's rule that a caught-up paused follower stays in the ISR) ended with `orders-0` at log
end 5 on brokers 2 and 3 where the model said 4: the coordinator wrote the COMMIT marker again
on broker 2, elected cleanly after broker 1's crash (docs/ENGINES.md). No Kafka needed here."""

from __future__ import annotations

from cluster_fixtures import SCENARIOS as SAMPLES

from segtools.realcluster.features import lockstep_scenario
from segtools.simulate import load_scenario
from segtools.simulate.cluster import Cluster
from segtools.simulate.scenario import Scenario

# the features every 4.x release formats with that the model reads (ELR on, transactions v2)
_FEATURES = {"eligible.leader.replicas.version": 1, "transaction.version": 2}


def _orders_0(scenario: Scenario) -> dict[int, list[tuple[int, str | None, int]]]:
    c = Cluster(scenario)
    c.run()
    return {b: [(x.base_offset, x.control_type, x.epoch) for x in r.batches]
            for b, r in c.replicas[("orders", 0)].items()}


def test_a_marker_the_isr_had_not_fetched_is_written_again_on_the_new_leader():
    s19 = lockstep_scenario(load_scenario(SAMPLES / "S19-txn-marker-lost.yaml"), _FEATURES)
    logs = _orders_0(s19)
    assert logs[1][-1] == (3, "COMMIT", 0)  # the old leader's copy, never acknowledged
    for b in (2, 3):  # written again at the new leader's epoch, then the record after it
        assert logs[b][3:] == [(3, "COMMIT", 1), (4, None, 1)]


def test_a_marker_acknowledged_by_its_isr_is_not_written_again():
    # the model's own rule drops the paused followers before the commit: the ISR is [1], the
    # marker is acknowledged at once, and the unclean election leaves it on broker 1 only
    logs = _orders_0(load_scenario(SAMPLES / "S19-txn-marker-lost.yaml"))
    assert logs[1][-1] == (3, "COMMIT", 0)
    assert all(control is None for b in (2, 3) for _, control, _ in logs[b])
