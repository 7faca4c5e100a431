"""--acks from what SREs have (issue 26): NDJSON/CSV without leader epochs, kcat -J output and
kafka-console-consumer output. The oracle is the simulator's own acks.jsonl and truth.json;
the ack files are converted from it here, the way docs/ACKS.md describes getting them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli
from segtools.errors import InputError
from segtools.forensics.acks import read_acks
from tests.forensics.test_answers import FALSE_ALL_CLEAR, QUIET, _compare, _simulate


def _acks(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "acks.jsonl").read_text().splitlines() if line.strip()]


def _write(tmp_path: Path, fmt: str, entries: list[dict]) -> str:
    """entries (the simulator's acks, ok only) as an SRE would have them: no leader epoch."""
    if fmt == "ndjson":
        p = tmp_path / "acks.ndjson"
        p.write_text("".join(json.dumps({"topic": e["topic"], "partition": e["partition"],
                                         "offset": e["offset"]}) + "\n" for e in entries))
        return str(p)
    if fmt == "csv":
        p = tmp_path / "acks.csv"
        with p.open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["topic", "partition", "offset", "timestamp"])
            for e in entries:
                w.writerow([e["topic"], e["partition"], e["offset"], 1700000000000])
        return str(p)
    if fmt == "kcat":
        p = tmp_path / "kcat.json"
        p.write_text("".join(json.dumps({"topic": e["topic"], "partition": e["partition"], "offset": e["offset"],
                                         "tstype": "create", "ts": 1700000000000, "broker": 1, "key": None,
                                         "payload": "v"}) + "\n" for e in entries))
        return str(p)
    assert fmt == "console"
    p = tmp_path / "console.txt"
    p.write_text("".join(f"CreateTime:1700000000000\tPartition:{e['partition']}\tOffset:{e['offset']}\tnull\tv\n"
                         for e in entries) + "Processed a total of 3 messages\n")
    return f"console-consumer:{entries[0]['topic']}:{p}"


@pytest.fixture(scope="module")
def fac(tmp_path_factory):
    return _simulate(tmp_path_factory.mktemp("fac"), FALSE_ALL_CLEAR, "fac")


@pytest.fixture(scope="module")
def quiet(tmp_path_factory):
    return _simulate(tmp_path_factory.mktemp("quiet"), QUIET, "quiet")


@pytest.mark.parametrize("fmt", ["ndjson", "csv", "kcat", "console"])
def test_epochless_acks_of_a_rewritten_offset_are_never_safe(fac, tmp_path, fmt):
    # truth: the record acknowledged at offset 1 in the first unclean leader's epoch is on no
    # disk, yet offset 1 is held (rewritten by the next leader). Without the epoch that cannot
    # be decided: cannot tell, naming the missing leader epoch -- never safe.
    truth = json.loads((fac / "truth.json").read_text())["t-0"]
    gone = [x for x in truth["lost"] if x["acked"] and not x["on_brokers"]]
    assert gone
    acked = [e for e in _acks(fac) if e.get("ok") and e.get("offset") is not None]
    spec = _write(tmp_path, fmt, acked)
    code, doc, _ = _compare(str(fac / "broker-1"), str(fac / "broker-2"), "--acks", spec, tmp_path=tmp_path)
    assert code == 1
    answer = doc["partitions"][0]["answer"]
    assert answer["value"] != "safe" and doc["summary"]["answer"] != "safe"
    miss = [m for m in answer["missing"] if m["evidence"] == "ack_leader_epoch"]
    assert len(miss) == 1
    # the lost record's offset is among the undecided ones, and the offsets before it too
    held = sorted({e["offset"] for e in acked})
    assert min(x["offset"] for x in gone) in held and f"first {held[0]})" in miss[0]["detail"]


@pytest.mark.parametrize("fmt", ["ndjson", "csv", "kcat", "console"])
def test_epochless_ack_no_replica_holds_is_lost(quiet, tmp_path, fmt):
    # quiet cluster: proven safe without acks. A consumer export naming an offset past every
    # acknowledged one (so no replica can hold it) is a loss, committed (a consumer read it).
    acked = [e for e in _acks(quiet) if e.get("ok") and e.get("offset") is not None]
    beyond = max(e["offset"] for e in acked) + 1
    spec = _write(tmp_path, fmt, [*acked, {**acked[0], "offset": beyond}])
    code, doc, _ = _compare(str(quiet), "--acks", spec, tmp_path=tmp_path)
    assert code == 1
    part = doc["partitions"][0]
    assert part["answer"]["value"] == "lost"
    assert part["acked_offsets_lost"] == [{"offset": beyond, "leader_epoch": None,
                                           "committed": fmt in ("kcat", "console")}]


@pytest.mark.parametrize("fmt", ["ndjson", "csv", "kcat", "console"])
def test_epochless_acks_do_not_demote_a_proven_safe_answer(quiet, tmp_path, fmt):
    # one leader epoch, every ISR member's dir and the metadata log given: held offsets
    # cannot have been rewritten, so the answer stays the one proven without acks
    acked = [e for e in _acks(quiet) if e.get("ok") and e.get("offset") is not None]
    code, doc, _ = _compare(str(quiet), "--acks", _write(tmp_path, fmt, acked), tmp_path=tmp_path)
    assert code == 0 and doc["partitions"][0]["answer"]["value"] == "safe"


def test_bad_ack_inputs_are_one_line_errors(tmp_path):
    console = tmp_path / "c.txt"
    console.write_text("CreateTime:1\tPartition:0\tOffset:3\tk\tv\n")
    with pytest.raises(InputError, match="console-consumer:TOPIC"):
        read_acks(console)
    no_offset = tmp_path / "c2.txt"
    no_offset.write_text("CreateTime:1\tk\tv\n")
    with pytest.raises(InputError, match=r"line 1: no Partition:/Offset: field"):
        read_acks(f"console-consumer:t:{no_offset}")
    bad_csv = tmp_path / "a.csv"
    bad_csv.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="topic,partition,offset"):
        read_acks(bad_csv)
    bad_off = tmp_path / "b.csv"
    bad_off.write_text("topic,partition,offset\nt,0,x\n")
    with pytest.raises(InputError, match="line 2: offset is not an integer"):
        read_acks(bad_off)
    res = CliRunner().invoke(cli, ["compare", str(tmp_path), "--no-spark", "--acks", str(bad_off)])
    assert res.exit_code == 2 and "Traceback" not in res.output


def test_console_epoch_is_used(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("CreateTime:5\tPartition:2\tOffset:7\tEpoch:3\tk\tv\n")
    assert read_acks(f"console-consumer:t:{p}") == [{"topic": "t", "partition": 2, "offset": 7, "leader_epoch": 3,
                                                     "ok": True, "acks": "consumed", "timestamp": "5"}]


# RF 2: broker 2 stops; broker 1 alone takes two acks=1 records (epoch 0, offsets 2-3) and
# stops; broker 2 is elected uncleanly and writes offset 2 again. Broker 1 stays down, so its
# dir still holds the two records the surviving lineage lost.
DIVERGED = """\
name: diverged
seed: 26
cluster: {brokers: [1, 2], segment_index_bytes: 1024, metadata_log: true}
topics:
  - {name: t, replication_factor: 2, min_insync_replicas: 1, unclean_leader_election: true,
     assignment: {0: [1, 2]}}
steps:
  - produce: {topic: t, partition: 0, acks: all, count: 2, value_bytes: 4}
  - crash: {broker: 2}
  - produce: {topic: t, partition: 0, acks: 1, count: 2, value_bytes: 4}
  - crash: {broker: 1}
  - restart: {broker: 2}
  - produce: {topic: t, partition: 0, acks: 1, count: 1, value_bytes: 4}
  - advance: {ms: 6000}
"""


def test_lost_record_at_an_epochless_acked_offset_is_acked_unknown(tmp_path):
    # with epochs the lost records are acked (the oracle: acks.jsonl has their offset and
    # epoch); without epochs the same offset was also acknowledged for the new leader's record,
    # so "acked" is unknown (null) -- never false
    run = _simulate(tmp_path, DIVERGED, "div")
    acked = [e for e in _acks(run) if e.get("ok") and e.get("offset") is not None]
    dirs = (str(run / "broker-1"), str(run / "broker-2"))
    _, with_epochs, _ = _compare(*dirs, "--acks", str(run / "acks.jsonl"), tmp_path=tmp_path)
    lost = {(x["offset"], x["leader_epoch"]): x["acked"] for x in with_epochs["partitions"][0]["lost_records"]}
    truth = {(e["offset"], e["leader_epoch"]) for e in acked}
    assert lost and all(k in truth and v is True for k, v in lost.items())
    code, doc, _ = _compare(*dirs, "--acks", _write(tmp_path, "csv", acked), tmp_path=tmp_path)
    assert code == 1 and doc["partitions"][0]["answer"]["value"] == "lost"
    assert {(x["offset"], x["leader_epoch"]): x["acked"] for x in doc["partitions"][0]["lost_records"]} == \
        dict.fromkeys(lost, None)


@pytest.mark.parametrize("fmt", ["csv", "kcat"])
def test_advise_with_epochless_acks_is_never_safe(fac, quiet, tmp_path, fmt):
    # advise matches acks to candidates by (offset, epoch); without epochs it cannot, so no
    # partition is called safe and the missing evidence is named (with acks.jsonl's epochs, the
    # quiet cluster is safe: the oracle that only the epochs changed)
    ok = CliRunner().invoke(cli, ["advise", str(quiet), "--acks", str(quiet / "acks.jsonl"), "--json", "-"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)[0]["verdict"] == "safe"
    for run in (fac, quiet):
        acked = [e for e in _acks(run) if e.get("ok") and e.get("offset") is not None]
        res = CliRunner().invoke(cli, ["advise", *[str(p) for p in sorted(run.glob("broker-*"))],
                                       "--acks", _write(tmp_path, fmt, acked), "--json", "-"])
        assert res.exit_code == 1, res.output
        doc = json.loads(res.stdout)[0]
        assert doc["verdict"] == "cannot tell"
        assert any(m["role"] == "ack leader epochs" for m in doc["missing"])
