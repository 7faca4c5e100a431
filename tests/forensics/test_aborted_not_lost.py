"""Issue 21: an aborted transaction whose data was lost with the old leader, while its ABORT
marker survives only on the new leader (the coordinator wrote it after the unclean election).

Oracles: the scenario (it aborted the transaction: soundness_degrade.aborted_values) and the
simulator's truth.json (the records it lists as lost, acknowledged under acks=all). Before, the
verdict, the counts and the HTML called both records committed, acknowledged losses
(COMMITTED_LOSS) while lost-out's ``txn_state`` said aborted. Now they agree: aborted records
are no loss for consumers, listed as such, and the answer is "safe" only where the rest of the
evidence proves it."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq
from click.testing import CliRunner

from segtools.cli.main import cli
from segtools.simulate import run
from segtools.simulate.scenario import parse_scenario
from tests.forensics.test_lost_out_txn import _spec

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "soundness"))
from soundness_degrade import aborted_values  # noqa: E402


def _story(tmp_path: Path, after: str | None) -> tuple[Path, dict, dict]:
    spec = _spec(f"t-{after}", None, after)
    spec["cluster"]["metadata_log"] = True
    evidence = tmp_path / "e"
    run(parse_scenario(spec), evidence)
    truth = json.loads((evidence / "truth.json").read_text())["orders-0"]
    return evidence, spec, truth


def _compare(tmp_path: Path, evidence: Path, dirs: list[Path], *extra: str) -> tuple[int, dict, str]:
    report = tmp_path / "r.json"
    html = tmp_path / "r.html"
    for f in (report, html):
        f.unlink(missing_ok=True)
    result = CliRunner().invoke(cli, ["compare", *map(str, dirs), "--no-spark", "--acks",
                                      str(evidence / "acks.jsonl"), "--metadata-log",
                                      str(evidence / "controller" / "__cluster_metadata-0"),
                                      "--report", str(report), "--html", str(html), *extra])
    return result.exit_code, json.loads(report.read_text()), html.read_text()


def _verdict(page: str) -> tuple[str, str]:
    m = re.search(r'<p class="verdict (\w+)" id="verdict" data-answer="(\w+)"', page)
    assert m, page[:2000]
    return m.group(1), m.group(2)


def test_an_abort_marker_only_on_the_new_leader_makes_no_committed_loss(tmp_path):
    evidence, spec, truth = _story(tmp_path, "abort_transaction")
    # the oracle: truth lists the transaction's two records lost, acknowledged (acks=all) and
    # committed by the log; the scenario aborted them
    assert [(x["offset"], x["value"], x["acked"]) for x in truth["lost"]] == [(1, "x0", True), (2, "x1", True)]
    assert {("orders", x["value"]) for x in truth["lost"]} <= aborted_values(spec)
    out = tmp_path / "lost"
    code, report, page = _compare(tmp_path, evidence, [evidence], "--lost-out", str(out))
    assert code == 1       # broker 1 diverged: a finding, never exit 0
    (part,) = report["partitions"]
    lost = part["lost_records"]
    assert [(x["offset"], x["value"], x["txn_state"], x["committed"]) for x in lost] == \
        [(1, "x0", "aborted", False), (2, "x1", "aborted", False)]
    b1 = next(r for r in part["replicas"] if r["broker"] == 1)
    assert b1["status"] == "DIVERGED_UNCOMMITTED" and b1["divergent"]["committed_records"] == 0
    summary = report["summary"]
    assert summary["records_lost"]["committed"] == 0 and summary["records_lost"]["aborted"] == 2
    assert summary["verdict"] != "COMMITTED_LOSS"
    # every other piece of evidence is there (metadata log, every ISR member, acks): proven
    assert part["answer"]["value"] == "safe" and summary["answer"] == "safe"
    assert part["answer"]["not_delivered"] and "aborted" in part["answer"]["not_delivered"][0]
    assert any(f["code"] == "TXN_ABORTED_LOST" for f in part["findings"])
    # the HTML: not green (a divergence is a finding), the aborted records counted as such
    assert _verdict(page) == ("bad", "safe")
    assert 'id="aborted-count" data-count="2"' in page and 'class="verdict ok"' not in page
    # the lost-records table and the lanes class them "aborted", never "acked" (acks=all
    # acknowledged them): the class index of each row read through the page's own CLS list
    data = json.loads(re.search(r'<script type="application/json" id="lost-data">(.*?)</script>', page,
                                re.S).group(1))
    classes = json.loads(re.search(r"var CLS=(\[.*?\]);", page).group(1))
    assert [(r[2], classes[r[6]], r[7]) for r in data["rows"]] == [(1, "aborted", True), (2, "aborted", True)]
    assert '<option value="aborted">' in page and '<rect class="loss aborted"' in page
    assert '<rect class="loss acked"' not in page and '<rect class="loss committed"' not in page
    # lost-out agrees, and replay holds them
    rows = pq.read_table(out / "lost.parquet").to_pylist()
    assert [(r["txn_state"], r["committed"], r["log_committed"]) for r in rows] == [("aborted", False, False)] * 2
    plan = CliRunner().invoke(cli, ["replay", str(out), "--dry-run"])
    assert plan.exit_code == 1 and "0 produce" in plan.output


def test_the_abort_marker_on_a_follower_when_the_new_leader_is_missing_is_not_safe(tmp_path):
    """The new leader's dir (broker 2) is not given: broker 3 followed it and holds the ABORT
    marker too, so the records are still aborted, but the metadata log names broker 2 as the
    leader whose log is missing: cannot tell, never safe."""
    evidence, _spec_, truth = _story(tmp_path, "abort_transaction")
    assert truth["leader"] == 2
    given = tmp_path / "given"
    for b in (1, 3):
        shutil.copytree(evidence / f"broker-{b}", given / f"broker-{b}")
    code, report, page = _compare(tmp_path, evidence, [given])
    assert code == 1
    (part,) = report["partitions"]
    assert {x["txn_state"] for x in part["lost_records"]} == {"aborted"}
    assert not any(x["committed"] for x in part["lost_records"])
    assert part["answer"]["value"] == "cannot_tell"
    assert any(m["evidence"] == "log_dir" and m.get("broker") == 2 for m in part["answer"]["missing"])
    assert _verdict(page)[0] != "ok"


def test_a_commit_marker_only_on_the_new_leader_stays_a_committed_loss(tmp_path):
    """The control: the coordinator committed the transaction after the election; its records
    are gone from the surviving log, a loss for read_committed consumers."""
    evidence, spec, truth = _story(tmp_path, "commit_transaction")
    assert not aborted_values(spec) and [x["value"] for x in truth["lost"]] == ["x0", "x1"]
    code, report, _page = _compare(tmp_path, evidence, [evidence])
    assert code == 1
    (part,) = report["partitions"]
    assert [(x["txn_state"], x["committed"]) for x in part["lost_records"]] == [("committed", True)] * 2
    assert report["summary"]["verdict"] == "COMMITTED_LOSS" and report["summary"]["records_lost"]["aborted"] == 0
    assert part["answer"]["value"] == "lost"


def test_a_transaction_with_no_marker_anywhere_is_never_an_all_clear(tmp_path):
    """No marker on any replica (the transaction was left open): nothing proves it aborted, so its
    acknowledged records stay a loss, never "safe"."""
    evidence, _spec_, truth = _story(tmp_path, None)
    assert all(x["acked"] for x in truth["lost"])
    code, report, page = _compare(tmp_path, evidence, [evidence])
    assert code == 1
    (part,) = report["partitions"]
    assert {x["txn_state"] for x in part["lost_records"]} == {"open"}
    assert part["answer"]["value"] == "lost" and report["summary"]["records_lost"]["aborted"] == 0
    assert "2 of open or unknown transactions" in part["answer"]["lost"][0]     # flagged
    assert _verdict(page) == ("bad", "lost")


def test_advise_does_not_trade_a_committed_record_for_aborted_ones(tmp_path):
    """advise over the same story: electing broker 2 or 3 (the new leader and its follower)
    drops x0, x1, which the scenario aborted; electing broker 1 back (unclean) drops `after`,
    committed. Before, advise counted the aborted records as two committed losses and
    recommended the unclean election of broker 1."""
    evidence, spec, truth = _story(tmp_path, "abort_transaction")
    assert {("orders", x["value"]) for x in truth["lost"]} <= aborted_values(spec)
    out = tmp_path / "advice.json"
    result = CliRunner().invoke(cli, ["advise", str(evidence), "--topic", "orders", "--partition", "0",
                                      "--acks", str(evidence / "acks.jsonl"), "--metadata-log",
                                      str(evidence / "controller" / "__cluster_metadata-0"), "--json", str(out)])
    (entry,) = json.loads(out.read_text())
    assert entry["recommended"] == 2 and entry["verdict"] == "safe", result.output
    by_broker = {c["broker"]: c["lost"] for c in entry["candidates"]}
    assert by_broker[2]["total"] == 0 and by_broker[2]["aborted"] == 2
    assert by_broker[1]["committed"] == 1        # `after`, acknowledged with acks=all
    assert result.exit_code == 0
