"""The committed samples: up to date (regenerating gives the same bytes) and showing what their
README says, checked on the files with kafka-python."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sim_oracle import partition_dirs, read_partition, records_by_offset

from segtools.simulate import simulate

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
SCENARIOS = sorted(p.stem for p in (SAMPLES / "scenarios").glob("*.yaml"))


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", SCENARIOS)
def test_generated_sample_is_up_to_date(name, tmp_path):
    simulate(SAMPLES / "scenarios" / f"{name}.yaml", tmp_path / name)
    committed = tree(SAMPLES / "generated" / name)
    fresh = tree(tmp_path / name)
    assert sorted(fresh) == sorted(committed), "run python samples/regenerate.py"
    changed = [k for k in fresh if fresh[k] != committed[k]]
    assert changed == [], "run python samples/regenerate.py"


def gen(name: str) -> Path:
    return SAMPLES / "generated" / name


def truth_of(name: str) -> dict:
    return json.loads((gen(name) / "truth.json").read_text())


def test_a_leadership_back_on_preferred_replicas():
    truth = truth_of("a-preferred-leader-return")
    assert len(truth) == 3
    for t in truth.values():
        assert t["leader"] == t["assignment"][0]
        assert t["lost"] == [] and sorted(t["isr"]) == [1, 2]
    # broker 2 was down for the six messages and holds them all after catching up
    b2 = set()
    for broker, _name, p in partition_dirs(str(gen("a-preferred-leader-return"))):
        if broker == 2:
            b2 |= {v for _, (_, _, v) in records_by_offset(p).items()}
    assert {f"m{i}".encode() for i in range(1, 7)} <= b2


def test_b_unclean_elections_of_the_stale_broker():
    from segtools.internal_topics.metadata import decode_record

    truth = truth_of("b-unclean-stale-return")
    for tp, t in truth.items():
        assert t["leader"] == 3 and t["elections"][-1]["unclean"] is True
        assert t["lost"] and all(x["cause"] == "UNCLEAN_ELECTION" for x in t["lost"])
        # every lost record is still on the disk of a broker that stayed down
        evidence = set()
        for broker, name, p in partition_dirs(str(gen("b-unclean-stale-return"))):
            if name == tp and broker != 3:
                evidence |= {(o, e, v.decode()) for o, (e, _, v) in records_by_offset(p).items()}
        assert {(x["offset"], x["leader_epoch"], x["value"]) for x in t["lost"]} <= evidence
    changes = [decode_record(v) for b in read_partition(str(gen("b-unclean-stale-return") / "controller"
                                                          / "__cluster_metadata-0"))
               for _, _, v in b.records]
    recovering = [d for name, _, d in changes
                  if name == "PARTITION_CHANGE_RECORD" and d.get("leaderRecoveryState") == 1]
    assert len(recovering) == 3 and all(d["leader"] == 3 and d["isr"] == [3] for d in recovering)


def acked_lost(name: str) -> dict[str, list[str]]:
    return {tp: [x["value"] for x in t["lost"] if x["acked"]] for tp, t in truth_of(name).items()}


def test_c_durability_matrix():
    assert acked_lost("c-durability-acks-all") == {
        "rf1-min1-0": [], "rf2-min1-0": ["c2", "c3"], "rf3-min1-0": ["b2", "b3"], "rf3-min2-0": []}
    assert acked_lost("c-durability-acks-1") == {
        "rf1-min1-0": [], "rf2-min1-0": ["c2", "c3"], "rf3-min1-0": ["b2", "b3"],
        "rf3-min2-0": ["a2", "a3"]}
    # acks=0: the producer never hears back, so nothing lost was acknowledged, yet records are gone
    assert acked_lost("c-durability-acks-0") == {tp: [] for tp in acked_lost("c-durability-acks-0")}
    assert sum(len(t["lost"]) for t in truth_of("c-durability-acks-0").values()) == 6
    # the evidence: broker 1's log before it restarted still holds the lost acks=1 records
    before = gen("c-durability-acks-1") / "snapshots" / "before-restart" / "broker-1" / "rf3-min2-0"
    assert [v for _, (_, _, v) in sorted(records_by_offset(str(before)).items())] == \
        [b"a0", b"a1", b"a2", b"a3"]
    acks = [json.loads(x) for x in (gen("c-durability-acks-all") / "acks.jsonl").read_text().splitlines()]
    a = {x["value"]: x for x in acks if x["topic"] == "rf3-min2"}
    assert not a["a2"]["ok"] and not a["a3"]["ok"]  # min.insync 2 refused to acknowledge them


def test_metadata_log_through_segtools_dump():
    from click.testing import CliRunner

    from segtools.cli.main import cli

    log = gen("S7-simple-unclean-election") / "controller" / "__cluster_metadata-0" / "00000000000000000000.log"
    result = CliRunner().invoke(cli, ["dump", "--cluster-metadata-decoder", "--files", str(log)])
    assert result.exit_code == 0, result.output
    changes = [line for line in result.output.splitlines() if "PARTITION_CHANGE_RECORD" in line]
    assert any('"leaderRecoveryState":1' in line and '"leader":2' in line for line in changes)
    assert sum("REGISTER_BROKER_RECORD" in line for line in result.output.splitlines()) == 3


def test_lost_records_name_the_brokers_still_holding_them():
    t = truth_of("S7-simple-unclean-election")["orders-0"]
    assert t["lost"] and all(x["on_brokers"] == [1] for x in t["lost"])
    t = truth_of("S11b-last-replica-standing")["orders-0"]
    assert t["lost"] and all(x["on_brokers"] == [] for x in t["lost"])  # gone everywhere
