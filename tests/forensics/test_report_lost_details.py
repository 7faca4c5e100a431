"""The lost records in report.json and on the report's first screen carry their timestamp, key,
acked, committed and transaction state (issue 26). Oracles: the simulator's truth.json (which
records were lost, acked, committed), the records' timestamps as kafka-python reads them from the
replica's segment, and for transactions what the scenario did (commit, abort, or neither)."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from kafka.record.memory_records import MemoryRecords

from segtools import schemas
from segtools.cli.main import cli
from segtools.forensics.report_html import render_html
from segtools.simulate import run
from segtools.simulate.scenario import parse_scenario
from tests.forensics.test_lost_out_txn import _spec

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "generated"


def _timestamps(partition_dir: Path) -> dict[tuple[int, int], int]:
    """(offset, leader epoch) -> record timestamp, read with kafka-python."""
    out: dict[tuple[int, int], int] = {}
    for seg in sorted(partition_dir.glob("*.log")):
        records = MemoryRecords(seg.read_bytes())
        while (batch := records.next_batch()) is not None:
            if batch.is_control_batch:
                continue
            for r in batch:
                out[(r.offset, batch.leader_epoch)] = r.timestamp
    return out


def _report(evidence: Path, *dirs: Path) -> dict:
    res = CliRunner().invoke(cli, ["compare", *[str(d) for d in dirs], "--no-spark", "--acks",
                                   str(evidence / "acks.jsonl"), "--report", "-"])
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    jsonschema.Draft202012Validator(schemas.load("compare-report")).validate(doc)
    return doc


def _iso(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")


def test_lost_records_carry_timestamp_acked_committed_and_no_transaction():
    sample = SAMPLES / "S7-simple-unclean-election"
    doc = _report(sample, *sorted(sample.glob("broker-*")))
    truth = json.loads((sample / "truth.json").read_text())
    (part,) = [p for p in doc["partitions"] if p["lost_records"]]
    lost = {(x["offset"], x["leader_epoch"]): x for x in truth[f"{part['topic']}-{part['partition']}"]["lost"]}
    assert {(x["offset"], x["leader_epoch"]) for x in part["lost_records"]} == set(lost)
    for x in part["lost_records"]:
        stamps = _timestamps(sample / f"broker-{x['broker']}" / f"{part['topic']}-{part['partition']}")
        t = lost[(x["offset"], x["leader_epoch"])]
        assert x["timestamp"] == stamps[(x["offset"], x["leader_epoch"])]
        assert (x["acked"], x["committed"], x["value"]) == (t["acked"], t["committed"], t["value"])
        assert x["txn_state"] == "none" and x["is_transactional"] is False
    # the first screen shows them: time (UTC), acked, committed, transaction
    html = render_html(doc)
    first = html[html.index('<div id="first-lost">'):html.index('<div id="next-commands">')]
    rows = re.findall(r"<tr><td>(.*?)</tr>", first)
    assert len(rows) == min(5, len(part["lost_records"]))
    for x, row in zip(sorted(part["lost_records"], key=lambda x: x["offset"]), rows, strict=False):
        assert _iso(x["timestamp"]) in row and "not in report" not in row
        assert "<td>yes</td><td>yes</td><td>none</td>" in row        # acked, committed (truth), no transaction


@pytest.mark.parametrize(("before", "after", "state"), [
    ("commit_transaction", None, "committed"),
    ("abort_transaction", None, "aborted"),
    (None, "commit_transaction", "committed"),       # the marker only on the new leader
    (None, "abort_transaction", "aborted"),          # idem: found on the other replica
    (None, None, "open"),
])
def test_lost_transactional_records_show_their_transactions_state(tmp_path, before, after, state):
    evidence = tmp_path / "e"
    run(parse_scenario(_spec("t", before, after)), evidence)
    doc = _report(evidence, evidence)
    truth = json.loads((evidence / "truth.json").read_text())["orders-0"]
    (part,) = doc["partitions"]
    assert sorted((x["offset"], x["value"]) for x in part["lost_records"]) == \
        sorted((x["offset"], x["value"]) for x in truth["lost"]) == [(1, "x0"), (2, "x1")]
    for x in part["lost_records"]:
        assert x["is_transactional"] is True and x["txn_state"] == state
        assert x["acked"] is True                        # acks=all, answered before the crash
    html = render_html(doc)
    first = html[html.index('<div id="first-lost">'):html.index('<div id="next-commands">')]
    assert first.count(f"<td>{state}</td>") == 2


def test_a_report_read_back_without_its_replicas_says_not_in_report():
    """A report.json rendered later (no replicas to read) shows the gap, never a guess."""
    sample = SAMPLES / "S7-simple-unclean-election"
    doc = _report(sample, *sorted(sample.glob("broker-*")))
    for p in doc["partitions"]:
        for x in p["lost_records"]:
            for k in ("timestamp", "txn_state", "is_transactional"):
                x.pop(k, None)
    html = render_html(doc)
    first = html[html.index('<div id="first-lost">'):html.index('<div id="next-commands">')]
    assert first.count("not in report") == 2 * min(5, sum(len(p["lost_records"]) for p in doc["partitions"]))
