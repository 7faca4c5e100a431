"""The report's first screen (issue 26): at a 1280-wide viewport the verdict, the incident
window, the lost records and the next commands all lie within the first 1,000 px, for a lost,
a safe and a cannot-tell incident. The answers come from the simulator's truth.json (records
lost or not) and from what evidence the sample lacks, not from our own output."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import compare_sample, truth

from segtools.forensics.report_html import write_html

FIRST_SCREEN = ("#verdict", "#incident-window", "#first-lost", "#next-commands")


def _bottoms(browser: Any, report: dict[str, Any], tmp_path: Any) -> tuple[Any, dict[str, float]]:
    out = tmp_path / "report.html"
    write_html(report, out)
    page = browser.open(out.as_uri(), width=1280, height=1000)
    got = page.evaluate(
        "Object.fromEntries(" + repr(list(FIRST_SCREEN)) + ".map(s => { const e = document.querySelector(s);"
        " return [s, e ? e.getBoundingClientRect().bottom + window.scrollY : null]; }))")
    assert page.console_errors() == []
    return page, got


@pytest.mark.parametrize("sample, answer", [
    ("S7-simple-unclean-election", "lost"),          # truth: 15 committed records lost
    ("a-preferred-leader-return", "safe"),           # truth: nothing lost; metadata log given
    ("S0-healthy-baseline", "cannot_tell"),          # truth: nothing lost; no metadata log
])
def test_first_screen_within_1000px(browser, tmp_path, sample, answer):
    t = truth(sample)
    assert any(p["lost"] for p in t.values()) == (answer == "lost")
    page, bottoms = _bottoms(browser, compare_sample(sample), tmp_path)
    verdict = page.evaluate("[document.querySelector('#verdict').dataset.answer,"
                            " document.querySelector('#verdict').className]")
    assert verdict[0] == answer
    assert ("ok" in verdict[1].split()) == (answer == "safe")       # green only when proven
    for sel, bottom in bottoms.items():
        assert bottom is not None and bottom <= 1000, (sel, bottom)
    commands = page.evaluate("[...document.querySelectorAll('#next-commands code')].map(c => c.textContent)")
    assert commands[0].startswith("segtools advise ") and f"samples/generated/{sample}" in commands[0]
    if answer == "lost":
        assert any("--lost-out" in c for c in commands) and "segtools replay lost/ --dry-run" in commands
        shown = page.evaluate("[...document.querySelectorAll('#first-lost tr')].slice(1)"
                              ".map(r => +r.children[1].textContent)")
        lost = {x["offset"] for p in t.values() for x in p["lost"]}
        assert shown and set(shown) <= lost
        # each shown record's time and transaction state are read, not "not in report"; the
        # full table carries them too (the sample's producers are not transactional: none)
        cells = page.evaluate("[...document.querySelectorAll('#first-lost tr')].slice(1)"
                              ".map(r => [...r.children].map(c => c.textContent))")
        assert all("not in report" not in c for row in cells for c in row)
        assert {row[6] for row in cells} == {"none"}
        full = page.evaluate("[...document.querySelector('#lost-body tr').children].map(c => c.textContent)")
        assert len(full) == 10 and full[8].endswith("Z") and full[9] == "none"
        elections = page.evaluate("[...document.querySelectorAll('#incident-window li.election')]"
                                  ".map(li => li.textContent)")
        unclean = [e for p in t.values() for e in p["elections"] if e["unclean"]]
        assert len(elections) >= len(unclean) and any("UNCLEAN" in e for e in elections)
    else:
        assert not any("--lost-out" in c for c in commands)
        assert page.evaluate("document.querySelectorAll('#first-lost tr').length") == 0


def test_codes_explained_on_hover_and_in_legend(browser, tmp_path):
    page, _ = _bottoms(browser, compare_sample("S7-simple-unclean-election"), tmp_path)
    statuses = page.evaluate("[...document.querySelectorAll('#by-status tr[data-status] abbr')]"
                             ".map(a => [a.textContent, a.title])")
    assert statuses and all(title for _, title in statuses)
    legend = set(page.evaluate("[...document.querySelectorAll('#codes dt')].map(d => d.textContent)"))
    assert {s for s, _ in statuses} <= legend and {"HWC", "LAGGING_PREFIX", "BENIGN_EPOCH_GAPS"} <= legend


@pytest.mark.parametrize("acks", [True, False])
def test_acks_card_says_no_acks_only_without_acks(acks):
    from segtools.forensics.report_html import render_html

    page = render_html(compare_sample("S0-healthy-baseline", acks=acks))
    assert ("(no --acks)" in page) == (not acks)


def test_partition_finding_links_the_broker_it_names(tmp_path):
    """S7's UNCLEAN_SHUTDOWN names broker 1 (truth: broker 1 crashed); its evidence link goes
    to broker 1's partition dir, not the reference broker's."""
    import re

    from segtools.forensics.report_html import render_html

    t = truth("S7-simple-unclean-election")["orders-0"]
    crashed = [int(b) for b, r in t["replicas"].items() if not r["clean_shutdown"]]
    report = compare_sample("S7-simple-unclean-election")
    assert report["partitions"][0]["reference_broker"] not in crashed or len(crashed) > 1
    from pathlib import Path

    repo = str(Path(__file__).resolve().parents[2])       # where the report's relative paths start
    page = render_html(report, html_dir=repo, cwd=repo)
    rows = re.findall(r'<tr class="finding" data-code="UNCLEAN_SHUTDOWN"><td>partition \(broker (\d+)\)</td>'
                      r'.*?<a class="evidence" href="([^"]*)"', page)
    assert rows
    for broker, href in rows:
        assert int(broker) in crashed and f"broker-{broker}/orders-0" in href, (broker, href)
