"""The HTML incident report opened in headless Chromium (Debian's package): the DOM shows one
lane per replica, the fork where the simulator's truth says the unclean leader started
writing, the lost count the JSON report has, a filter box that filters; the page logs no
error and makes no request but its own file."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

from conftest import compare_sample, truth

from segtools.forensics.report_html import write_html

S7 = "S7-simple-unclean-election"
B = "b-unclean-stale-return"


def _open(browser: Any, report: dict[str, Any], tmp_path: Any, name: str = "report.html") -> Any:
    out = tmp_path / name
    write_html(report, out)
    return browser.open(out.as_uri()), out.as_uri()


def _sel(topic: str, partition: int) -> str:
    return f'details.partition[data-topic="{topic}"][data-partition="{partition}"]'


def _expected_forks(t: dict[str, Any]) -> dict[int, int]:
    """Per broker holding lost records: the first of them (where its log leaves the
    surviving lineage), from truth.json."""
    forks: dict[int, int] = {}
    for rec in t["lost"]:
        for b in rec["on_brokers"]:
            forks[b] = min(forks.get(b, rec["offset"]), rec["offset"])
    return forks


def _lanes(page: Any, sel: str) -> list[dict[str, Any]]:
    return page.evaluate(
        f"[...document.querySelectorAll('{sel} svg.lanes g.lane')].map(g => {{"
        "const f = g.querySelector('line.fork');"
        "return {broker: +g.dataset.broker, label: g.querySelector('.lane-label').textContent,"
        " fork: f ? +f.dataset.offset : null, fork_x: f ? +f.getAttribute('x1') : null}; })")


def _axis_x(page: Any, sel: str, offset: int) -> float:
    """Where ``offset`` lies on the drawn axis, interpolated from its tick labels."""
    ticks = page.evaluate(
        f"[...document.querySelectorAll('{sel} svg.lanes g.axis text')]"
        ".filter(t => /^\\d+$/.test(t.textContent)).map(t => [+t.textContent, +t.getAttribute('x')])")
    (v0, x0), (v1, x1) = ticks[0], ticks[-1]
    return x0 + (offset - v0) * (x1 - x0) / (v1 - v0)


def _assert_clean_page(page: Any, url: str) -> None:
    assert page.console_errors() == []
    assert page.requests() == [url]          # the page itself, nothing else
    assert page.dialogs() == []


def test_unclean_election_sample(browser, tmp_path):
    report = compare_sample(S7)
    t = truth(S7)["orders-0"]
    page, url = _open(browser, report, tmp_path)
    sel = _sel("orders", 0)

    lanes = _lanes(page, sel)
    assert sorted(lane["broker"] for lane in lanes) == sorted(t["assignment"])
    forks = _expected_forks(t)
    unclean = [e for e in t["elections"] if e["unclean"]]
    assert forks == {1: unclean[0]["start_offset"]}     # broker 1 forks where epoch 1 began
    for lane in lanes:
        assert lane["fork"] == forks.get(lane["broker"])
        if lane["fork"] is not None:
            assert abs(lane["fork_x"] - _axis_x(page, sel, lane["fork"])) < 0.6
        # no clean-shutdown marker -> the lane says so
        assert ("\u26a0" in lane["label"]) == (not t["replicas"][str(lane["broker"])]["clean_shutdown"])

    # the lost count: truth's records, and what report.json lists (distinct offset, epoch)
    distinct = {(x["offset"], x["leader_epoch"]) for p in report["partitions"] for x in p["lost_records"]}
    shown = page.evaluate("+document.getElementById('lost-count').dataset.count")
    assert shown == len(t["lost"]) == len(distinct)
    if "summary" in report:                         # compare's own total agrees
        assert shown == report["summary"]["records_lost"]["total"]
    assert page.evaluate("+document.getElementById('committed-count').textContent") == \
        sum(1 for p in report["partitions"] for x in p["lost_records"] if x["committed"])
    # acks were given: every lost record was acknowledged under acks=all
    assert page.evaluate("document.getElementById('acked-count').textContent") == \
        str(sum(1 for x in t["lost"] if x["acked"]))
    copies = sum(len(p["lost_records"]) for p in report["partitions"])
    assert page.evaluate("+document.getElementById('lost-info').dataset.matching") == copies
    assert page.evaluate("document.querySelectorAll('#lost-body tr').length") == copies

    # the unclean election from the metadata log, with its leader and epoch
    rows = page.evaluate(f"[...document.querySelectorAll('{sel} table.metadata-changes tr[data-election=unclean]')]"
                         ".map(r => [...r.cells].map(c => c.textContent))")
    assert [(int(r[3]), int(r[4])) for r in rows] == [(e["epoch"], e["leader"]) for e in unclean]
    assert page.evaluate(f"document.querySelectorAll('{sel} svg.timeline circle.election.unclean').length") == 1
    # over time: one lane per replica, holding the epochs its log holds
    time_lanes = page.evaluate(
        f"Object.fromEntries([...document.querySelectorAll('{sel} svg.timeline g.time-lane')].map(g => "
        "[g.dataset.broker, [...g.querySelectorAll('rect.time-run')].map(r => +r.dataset.epoch)]))")
    offset_epochs = page.evaluate(
        f"Object.fromEntries([...document.querySelectorAll('{sel} svg.lanes g.lane')].map(g => "
        "[g.dataset.broker, [...g.querySelectorAll('rect.run')].map(r => +r.dataset.epoch)]))")
    assert time_lanes == offset_epochs and sorted(map(int, time_lanes)) == sorted(t["assignment"])
    assert page.evaluate("document.querySelectorAll('#brokers tr[data-event=fenced]').length") >= 1
    assert page.evaluate(f"document.querySelector('{sel}').open") is True
    assert "UNCLEAN_ELECTION" in page.evaluate("document.getElementById('causes').textContent")

    # the filter box filters (typed like a user)
    target = t["lost"][3]["value"]
    page.type_into("#lost-filter", target)
    assert page.evaluate("+document.getElementById('lost-info').dataset.matching") == 1
    assert page.evaluate("[...document.querySelectorAll('#lost-body tr')].map(r => r.cells[5].textContent)") == [target]
    page.type_into("#lost-filter", "no-such-record-anywhere")
    assert page.evaluate("document.querySelectorAll('#lost-body tr').length") == 0
    page.type_into("#lost-filter", "")
    assert page.evaluate("document.querySelectorAll('#lost-body tr').length") == copies
    page.evaluate("(s => {s.value = 'committed'; s.dispatchEvent(new Event('change'));})"
                  "(document.getElementById('lost-class'))")
    assert page.evaluate("+document.getElementById('lost-info').dataset.matching") == \
        sum(1 for p in report["partitions"] for x in p["lost_records"] if x["committed"])

    page.screenshot(str(tmp_path / "s7.png"))
    assert (tmp_path / "s7.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    _assert_clean_page(page, url)


def test_stale_return_sample(browser, tmp_path):
    report = compare_sample(B)
    tr = truth(B)
    page, url = _open(browser, report, tmp_path)
    for key, t in tr.items():
        sel = _sel(t["topic"], t["partition"])
        lanes = _lanes(page, sel)
        assert sorted(lane["broker"] for lane in lanes) == sorted(t["assignment"])
        forks = _expected_forks(t)
        assert forks, key
        for lane in lanes:
            assert lane["fork"] == forks.get(lane["broker"]), (key, lane)
            if lane["fork"] is not None:
                assert abs(lane["fork_x"] - _axis_x(page, sel, lane["fork"])) < 0.6
    # every finding links to its evidence, a file or dir that exists next to the page
    links = page.evaluate("[...document.querySelectorAll('tr.finding')].map(r => "
                          "(r.querySelector('a.evidence') || {}).href || null)")
    assert links and all(links), links
    for href in links:
        assert Path(urllib.parse.unquote(urllib.parse.urlparse(href).path)).exists(), href
    assert page.evaluate("+document.getElementById('lost-count').dataset.count") == \
        sum(len(t["lost"]) for t in tr.values())
    copies = sum(len(x["on_brokers"]) for t in tr.values() for x in t["lost"])
    assert page.evaluate("+document.getElementById('lost-info').dataset.matching") == copies
    # a partition's link filters the table to that partition
    page.evaluate("document.querySelector('a.lost-link[data-filter=\"p3r3-1\"]').click()")
    assert page.evaluate("+document.getElementById('lost-info').dataset.matching") == \
        sum(len(x["on_brokers"]) for x in tr["p3r3-1"]["lost"])
    page.screenshot(str(tmp_path / "b.png"))
    _assert_clean_page(page, url)


XSS_KEY = '<img src=x onerror="window.__xss=1;alert(1)">'
XSS_VALUE = '</script><script>window.__xss=2;alert(2)</script>'
XSS_TOPIC = 'orders"><svg onload=alert(3)>'


def hostile_report() -> dict[str, Any]:
    report = compare_sample(S7)
    p = report["partitions"][0]
    p["topic"] = XSS_TOPIC
    p["lost_records"][0]["key"] = XSS_KEY
    p["lost_records"][0]["value"] = XSS_VALUE
    p["replicas"][0]["findings"] = [{"code": "<b>BAD</b>", "detail": XSS_VALUE, "segment": XSS_KEY,
                                    "position": "<i>1</i>", "offset": 3}]
    report["summary"] = {"verdict": XSS_KEY, "tool": XSS_VALUE, "warnings": [XSS_KEY],
                         "inputs": {"paths": [XSS_VALUE], "log_dirs": [{"broker": 1, "log_dir": XSS_KEY}]}}
    # a partition without findings: collapsed, its body built only when opened
    quiet = json.loads(json.dumps(p))
    quiet["topic"], quiet["lost_records"] = XSS_KEY, []
    for r in quiet["replicas"]:
        r.update(status="CONSISTENT", fork_offset=None, divergent=None, cause=None, findings=[])
    quiet["findings"] = [{"code": "BENIGN_EPOCH_GAPS", "detail": XSS_VALUE}]
    report["partitions"].append(quiet)
    return report


def test_hostile_keys_render_as_text(browser, tmp_path):
    report = hostile_report()
    page, url = _open(browser, report, tmp_path)
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    # the collapsed partition's packed body, the lost records, our script: two are data
    assert page.evaluate("[...document.scripts].map(s => s.type)") == \
        ["application/octet-stream", "application/json", ""]
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.evaluate("document.querySelectorAll('svg[onload], [onerror]').length") == 0
    page.type_into("#lost-filter", "onerror")
    cells = page.evaluate("[...document.querySelectorAll('#lost-body tr')].map(r => [r.cells[4].textContent, "
                          "r.cells[5].textContent])")
    assert cells == [[XSS_KEY, XSS_VALUE]]
    summary = page.evaluate("document.querySelector('details.partition summary').textContent")
    assert XSS_TOPIC in summary
    assert page.evaluate("document.getElementById('verdict').textContent").startswith(XSS_KEY + ": ")
    assert page.evaluate("document.querySelector('#warnings li').textContent") == "\u26a0 " + XSS_KEY
    assert XSS_VALUE in page.evaluate("document.getElementById('run-summary').textContent")
    assert page.evaluate("document.querySelector('#broker-legend tr:nth-child(2)').cells[2].textContent") == XSS_KEY
    # the collapsed partition: no lanes until opened, then its text is text too
    quiet = "details.partition[data-findings=false]"
    assert page.evaluate(f"document.querySelector('{quiet}').open") is False
    assert page.evaluate(f"document.querySelectorAll('{quiet} g.lane').length") == 0
    page.evaluate(f"document.querySelector('{quiet} > summary').click()")
    assert page.wait_for(f"document.querySelectorAll('{quiet} g.lane').length") == 3
    assert page.evaluate(f"document.querySelector('{quiet} tr.finding').cells[3].textContent") == XSS_VALUE
    assert XSS_KEY in page.evaluate(f"document.querySelector('{quiet} > summary').textContent")
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("typeof window.__xss") == "undefined"
    _assert_clean_page(page, url)


def test_missing_chromium_is_a_failure_with_a_message(monkeypatch):
    import cdp_chromium

    monkeypatch.setattr(cdp_chromium.shutil, "which", lambda name: None)
    try:
        cdp_chromium.Chromium()
    except RuntimeError as exc:
        assert "apt-get install -y chromium" in str(exc)
    else:
        raise AssertionError("Chromium() started without a chromium binary")
