"""The HTML report shows compare's three-valued answer (issue 21): "cannot tell" is amber and
names the missing evidence, never the green "nothing lost"; green only for a proven "safe"."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from segtools.forensics.api import compare
from segtools.forensics.report_html import render_html
from tests.forensics.test_answers import QUIET, _simulate


def _quiet(tmp_path: Path) -> Path:
    return _simulate(tmp_path, QUIET, "quiet")


def _verdict(page: str) -> tuple[str, str]:
    m = re.search(r'<p class="verdict (\w+)" id="verdict" data-answer="(\w+)"', page)
    assert m, page[:2000]
    return m.group(1), m.group(2)


def test_cannot_tell_is_never_green(tmp_path):
    src = _quiet(tmp_path)
    dirs = tmp_path / "no-metadata"
    for b in (1, 2, 3):
        shutil.copytree(src / f"broker-{b}", dirs / f"broker-{b}")
    report = compare([str(dirs)])
    assert report.answer() == "cannot_tell"
    page = render_html(report.report_json())
    assert _verdict(page) == ("unknown", "cannot_tell")
    assert 'class="verdict ok"' not in page and "nothing lost" not in page
    assert 'data-evidence="metadata_log"' in page


def test_proven_safe_is_green(tmp_path):
    report = compare([str(_quiet(tmp_path))])
    assert report.answer() == "safe"
    assert _verdict(render_html(report.report_json())) == ("ok", "safe")


def test_a_report_without_an_answer_is_not_green(tmp_path):
    doc = compare([str(_quiet(tmp_path))]).report_json()
    for k in ("answer", "missing_evidence"):
        doc["summary"].pop(k)
    assert _verdict(render_html(doc)) == ("unknown", "cannot_tell")


def test_listed_records_of_an_undecided_answer_are_amber_not_nothing_lost(tmp_path):
    """A transaction's lost records whose markers and metadata log are gone: compare lists them
    and answers cannot tell; the page says so (amber, the report's answer), never 'nothing'."""
    from segtools.simulate import run
    from segtools.simulate.scenario import parse_scenario
    from tests.forensics.test_txn_coordinator_state import _damage_markers, _story

    evidence = tmp_path / "e"
    run(parse_scenario(_story("commit_transaction")), evidence)
    _damage_markers(evidence)
    report = compare([str(evidence)], acks=evidence / "acks.jsonl")
    assert report.answer() == "cannot_tell" and report.totals()["records_lost"]["total"] == 2
    page = render_html(report.report_json())
    assert _verdict(page) == ("unknown", "cannot_tell")
    assert "nothing was seen" not in page and "nothing lost" not in page
