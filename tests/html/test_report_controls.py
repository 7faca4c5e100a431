"""Control and bidi characters in report text are shown as escapes, never copied raw into the
page (issue 23: a raw NUL and U+202E reached the HTML). The report is the simulator's
compare sample with evidence strings replaced by hostile ones."""

from __future__ import annotations

import json

from conftest import compare_sample
from test_report_browser import S7
from test_report_static import with_lazy_bodies

from segtools.forensics.report_html import render_html
from segtools.primitives.visible import html_text, visible

RAW = ("\x00", "\u202e", "\x1b", "\u2066", "\x85", "\u2028")
NAME = "orders\u202egnp.exe\x00"
KEY = "k\x00ey\x1b[31m"
VALUE = "\u2066value\u2028line\x85"


def test_no_control_or_bidi_character_reaches_the_page() -> None:
    report = compare_sample(S7)
    p = report["partitions"][0]
    p["topic"] = NAME
    p["lost_records"][0]["key"] = KEY
    p["lost_records"][0]["value"] = VALUE
    p["replicas"][0]["findings"] = [{"code": "CORRUPT", "detail": VALUE, "segment": NAME,
                                    "position": 1, "offset": 3}]
    report["summary"] = {"verdict": "LOSS", "tool": "segtools compare", "warnings": [KEY],
                         "inputs": {"paths": [NAME], "log_dirs": [{"broker": 1, "log_dir": NAME}]}}
    quiet = json.loads(json.dumps(p))
    quiet["partition"], quiet["lost_records"] = 9, []
    for r in quiet["replicas"]:
        r.update(status="CONSISTENT", fork_offset=None, divergent=None, cause=None, findings=[])
    report["partitions"].append(quiet)
    page = with_lazy_bodies(render_html(report))
    # the lost records travel as JSON: decode it as the page's script does
    data = page.split('id="lost-data">', 1)[1].split("</script>", 1)[0]
    for raw in RAW:
        assert raw not in page, repr(raw)
        assert raw not in json.dumps(json.loads(data), ensure_ascii=False), repr(raw)
    assert "orders\\u202egnp.exe\\x00" in page
    rows = json.loads(data)["rows"]
    assert [r[4:6] for r in rows if r[4] and "k\\x00ey" in r[4]] == [["k\\x00ey\\x1b[31m",
                                                                       "\\u2066value\\u2028line\\x85"]]


def test_visible_escapes() -> None:
    assert visible("plain text, é, 日本, 🙂") == "plain text, é, 日本, 🙂"
    assert visible("a\tb\nc\rd\x00\x7f\x9b") == "a\\tb\\nc\\rd\\x00\\x7f\\x9b"
    assert visible("\u202e\u200b\ufeff\U000e0001") == "\\u202e\\u200b\\ufeff\\U000e0001"
    assert visible(b"bad\xffname".decode("utf-8", "surrogateescape")) == "bad\\xffname"
    assert visible("a\u00a0b") == "a\u00a0b"     # a no-break space is a space, not a control
    assert html_text('<a href="x">\x00') == "&lt;a href=&quot;x&quot;&gt;\\x00"
