"""The HTML report without a browser: self-contained (no URL leaves the page), hostile text
escaped, the CLI entry points, and the report.json fields the page draws (checked against
the simulator's truth.json)."""

from __future__ import annotations

import json
import re

from click.testing import CliRunner
from conftest import GENERATED, compare_sample, truth
from test_report_browser import S7, XSS_KEY, XSS_TOPIC, XSS_VALUE, hostile_report

from segtools.cli.main import cli
from segtools.forensics.report_html import render_html


def with_lazy_bodies(page: str) -> str:
    """The page plus the collapsed partitions' bodies it carries gzip-compressed."""
    import base64
    import gzip

    bodies = []
    for packed in re.findall(r'<script type="application/octet-stream" id="lazy-\d+">([^<]*)</script>', page):
        bodies += json.loads(gzip.decompress(base64.b64decode(packed)))
    return page + "".join(bodies)


def test_page_is_self_contained():
    report = compare_sample(S7)
    quiet = json.loads(json.dumps(report["partitions"][0]))
    quiet["lost_records"], quiet["partition"] = [], 1
    for r in quiet["replicas"]:
        r.update(status="CONSISTENT", fork_offset=None, divergent=None, cause=None)
    report["partitions"].append(quiet)
    page = with_lazy_bodies(render_html(report))
    assert page.count('<svg class="lanes"') == 2        # the collapsed partition's lanes included
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"', page)
    assert csp and csp.group(1).startswith("default-src &#x27;none&#x27;;")
    assert "'unsafe-inline'" not in csp.group(1).split("script-src")[1].split(";")[0].replace("&#x27;", "'")
    assert "http://" not in page and "https://" not in page
    assert not re.search(r'\b(?:src|href|xlink:href|action)\s*=\s*"(?:[a-z][a-z0-9+.-]*:|//)', page, re.IGNORECASE)
    assert "<link" not in page and "@import" not in page and "url(" not in page


def test_hostile_text_is_escaped_in_the_source():
    page = with_lazy_bodies(render_html(hostile_report()))
    assert page.count('<svg class="lanes"') == 2
    for payload in (XSS_KEY, XSS_VALUE, XSS_TOPIC, "<b>BAD</b>", "<i>1</i>"):
        assert payload not in page
    # the data block cannot be closed from inside
    data = page.split('<script type="application/json" id="lost-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data
    rows = json.loads(data)["rows"]
    assert [XSS_KEY, XSS_VALUE] in [r[4:6] for r in rows]


def test_report_without_new_fields_renders():
    """A report.json written before this change (CONTRACT.md section 4 fields only), with or
    without compare's summary block."""
    report = compare_sample(S7)
    for p in report["partitions"]:
        p.pop("metadata_changes", None)
        for r in p["replicas"]:
            r.pop("epochs", None)
            r.pop("clean_shutdown", None)
    report.pop("metadata", None)
    page = render_html(report)
    assert page.count('class="lane ') == 3 and 'class="fork"' in page
    page = render_html({**report, "summary": {"tool": "segtools compare", "verdict": "COMMITTED_LOSS",
                                              "records_lost": {"total": 15}}})
    assert 'id="run-summary"' in page and "segtools compare" in page and ">COMMITTED_LOSS: " in page
    assert 'id="lost-count" data-count="15"' in render_html({"partitions": report["partitions"]})


def test_offsets_lost_from_the_summary_block():
    """compare's summary block (docs/REPORT.md) names committed offsets no replica holds: the
    page counts them, names the cause and draws the range across the lanes."""
    report = compare_sample(S7)
    report["summary"] = {"verdict": "COMMITTED_LOSS", "offsets_lost": {
        "total": 7, "committed": 7, "acked": None,
        "partitions": [{"topic": "orders", "partition": 0, "first_offset": 30, "end_offset": 37}]}}
    page = render_html(report)
    assert 'id="offsets-lost-count">7<' in page and 'data-cause="COMMITTED_OFFSETS_LOST"' in page
    assert '<rect class="offsets-lost" data-first="30" data-end="37"' in page
    assert 'data-hi="37"' in page                   # the axis reaches the end of the lost range
    assert "offsets-lost" not in render_html(compare_sample(S7)).split("</style>", 1)[1]


def test_report_fields_match_truth():
    report = compare_sample(S7)
    t = truth(S7)["orders-0"]
    (p,) = report["partitions"]
    starts = [[e["epoch"], e["start_offset"]] for e in t["elections"] if e["start_offset"] is not None]
    ref = next(r for r in p["replicas"] if r["reference"])
    assert ref["epochs"] == starts
    for r in p["replicas"]:
        assert r["clean_shutdown"] == t["replicas"][str(r["broker"])]["clean_shutdown"]
    elections = [(c["leader_epoch"], c["leader"], c["election"] == "unclean")
                 for c in p["metadata_changes"] if c.get("election") in ("initial", "clean", "unclean")]
    assert elections == [(e["epoch"], e["leader"], e["unclean"]) for e in t["elections"]]
    assert p["metadata_changes"][-1]["isr"] == t["isr"]
    for c in p["metadata_changes"]:
        assert c["file"].endswith(".log") and c["position"] >= 0 and c["timestamp_ms"] > 0
    events = {(b["event"], b["broker"]) for b in report["metadata"]["brokers"]}
    assert {("registered", b) for b in t["assignment"]} <= events
    # the crashed leader (broker 1, not alive) was fenced
    assert [int(b) for b, r in t["replicas"].items() if not r["alive"]] == [1]
    assert ("fenced", 1) in events


def test_report_command(tmp_path):
    runner = CliRunner()
    rep = tmp_path / "report.json"
    res = runner.invoke(cli, ["compare", str(GENERATED / S7), "--no-spark", "--report", str(rep),
                              "--html", str(tmp_path / "compare.html")])
    assert res.exit_code == 1, res.output           # records were lost
    assert (tmp_path / "compare.html").read_text().startswith("<!DOCTYPE html>")
    out = tmp_path / "report.html"
    res = runner.invoke(cli, ["report", str(rep), "--html", str(out)])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    assert 'id="lost-count" data-count="15"' in page
    assert sorted(x.name for x in tmp_path.iterdir()) == ["compare.html", "report.html", "report.json"]
    # evidence links: relative to the page, and they lead to the files
    import urllib.parse

    hrefs = [urllib.parse.unquote(h) for h in re.findall(r'<a class="evidence" href="([^"]*)"', page)]
    assert any(h.endswith("broker-1/orders-0") for h in hrefs)
    assert any(h.endswith("__cluster_metadata-0/00000000000000000000.log") for h in hrefs)
    assert all(not h.startswith("/") and (out.parent / h).exists() for h in hrefs)
    # never overwritten silently
    before = out.read_bytes()
    res = runner.invoke(cli, ["report", str(rep), "--html", str(out)])
    assert res.exit_code == 2 and "exists" in res.output and out.read_bytes() == before
    out.write_text("old")
    assert runner.invoke(cli, ["report", str(rep), "--html", str(out), "--force"]).exit_code == 0
    assert 'id="lost-count" data-count="15"' in out.read_text()
    # the report itself is the input: never the output, not even with --force
    res = runner.invoke(cli, ["report", str(rep), "--html", str(rep), "--force"])
    assert res.exit_code == 2 and "evidence" in res.output and json.loads(rep.read_text())["partitions"]
    # not a report
    bad = tmp_path / "bad.json"
    bad.write_text('{"rows": []}')
    res = runner.invoke(cli, ["report", str(bad), "--html", str(tmp_path / "x.html")])
    assert res.exit_code == 2 and "not a compare report" in res.output and "Traceback" not in res.output
    for shape in ('{"partitions": ["x"]}', '{"partitions": [{"replicas": [1]}]}',
                  '{"partitions": [{"replicas": [{"broker": 1, "log_end_offset": "x"}]}]}'):
        bad.write_text(shape)
        res = runner.invoke(cli, ["report", str(bad), "--html", str(tmp_path / "x.html")])
        assert res.exit_code == 2 and "not a compare report" in res.output, (shape, res.output)
        assert res.exception is None or isinstance(res.exception, SystemExit)
    bad.write_text("{not json")
    res = runner.invoke(cli, ["report", str(bad), "--html", str(tmp_path / "x.html")])
    assert res.exit_code == 2 and "not a compare report" in res.output
    assert not (tmp_path / "x.html").exists()
    assert "report" in runner.invoke(cli, ["--help"]).output


def test_compare_html_inside_input_is_refused(tmp_path):
    import shutil

    src = tmp_path / "case"
    shutil.copytree(GENERATED / S7, src)
    res = CliRunner().invoke(cli, ["compare", str(src), "--no-spark", "--html", str(src / "r.html")])
    assert res.exit_code == 2 and "inputs are evidence" in res.output
    assert not (src / "r.html").exists()
