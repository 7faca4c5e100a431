"""The model as a Kafka 4.x cluster (issue 13): eligible leader replicas (KIP-966) and
transactions v2 (KIP-890) behind cluster.kafka_features, read back by compare. The same
scenarios on a real 4.3.1 cluster: tests/realkafka/test_forensics4x_*.py."""

from __future__ import annotations

from kafka4x_scenarios import scenario_spec, summarize  # noqa: E402

from segtools.simulate import run  # noqa: E402
from segtools.simulate.scenario import parse_scenario  # noqa: E402


def test_model_elr_on_and_off_without_a_cluster(tmp_path):
    """What the real cluster did (test_forensics4x_elr), asserted on the model alone so it is
    checked without Java too."""
    on = tmp_path / "on"
    run(parse_scenario(scenario_spec(True)), on)
    got = summarize(on)
    assert got["classes"] == {"orders-0": [(1, "initial"), (-1, "offline"), (2, "elr")],
                              "audit-0": [(1, "initial"), (-1, "offline"), (1, "last_known_leader")]}
    assert got["unclean_restarts"] == [(1, "controller")] and not got["lost"]
    off = tmp_path / "off"
    run(parse_scenario(scenario_spec(False)), off)
    got = summarize(off)
    assert got["classes"]["orders-0"] == [(1, "initial"), (-1, "offline"), (3, "unclean")]
    assert got["replicas"][("orders-0", 1)] == ("COMMITTED_LOSS", "UNCLEAN_ELECTION", "unclean")
    assert [x[2] for x in got["lost"]] == [10, 11, 12, 13, 14]


def _txn_spec(version: int) -> dict:
    return {"name": f"txn-v{version}", "seed": 890,
            "cluster": {"brokers": [1], "metadata_log": True, "kafka_features": {"transaction_version": version}},
            "topics": [{"name": "pay", "replication_factor": 1}],
            "producers": [{"name": "tx", "transactional_id": "tx-1"}],
            "steps": [{"begin_transaction": {"producer": "tx"}},
                      {"produce": {"topic": "pay", "partition": 0, "producer": "tx", "count": 2}},
                      {"commit_transaction": {"producer": "tx"}},
                      {"begin_transaction": {"producer": "tx"}},
                      {"produce": {"topic": "pay", "partition": 0, "producer": "tx", "count": 1}},
                      {"abort_transaction": {"producer": "tx"}},
                      {"begin_transaction": {"producer": "tx"}},
                      {"produce": {"topic": "pay", "partition": 0, "producer": "tx", "count": 2}},
                      {"advance": {"ms": 6000}}]}


def test_model_transactions_v2_bump_the_epoch_at_every_end_as_the_java_client(tmp_path):
    import segtools
    from segtools.forensics.elections import load_histories

    for version in (2, 1):
        out = tmp_path / f"v{version}"
        run(parse_scenario(_txn_spec(version)), out)
        histories = load_histories(out / "controller")
        assert histories.features["transaction.version"] == version
        (part,) = segtools.compare([str(out)], metadata_log=out / "controller",
                                   find_metadata_log=False).partitions
        txns = part.to_json()["transactions"]
        got = [(t["first_offset"], t["state"], t["producer_epoch"], t.get("marker_epoch"))
               for t in txns["transactions"]]
        if version == 2:
            # KIP-890: each marker one epoch above its data, the next transaction in that epoch
            assert got == [(0, "committed", 0, 1), (3, "aborted", 1, 2), (5, "open", 2, None)]
        else:
            assert got == [(0, "committed", 0, 0), (3, "aborted", 0, 0), (5, "open", 0, None)]
        assert txns["last_stable_offset"] == 5
