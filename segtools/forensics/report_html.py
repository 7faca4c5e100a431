"""The compare report (CONTRACT.md section 4) as one self-contained HTML file.

No network: inline CSS, inline SVG (``segtools.forensics.report_svg``) and one inline script whose
SHA-256 is the only script the page's Content-Security-Policy allows (``default-src 'none'``),
so even a key that escaped escaping could not run. The lost records travel as a JSON data
block and are rendered by that script a page at a time, so tens of thousands of them stay
fast; partitions are ``<details>``, open only when they have findings. A collapsed
partition's body (the same markup) travels gzip-compressed with its neighbours and is
unpacked by the browser's ``DecompressionStream`` when it is opened: a file of thousands of
partitions stays a few MB, and reading the file is most of what opening it costs.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import re
import urllib.parse
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from segtools.forensics.findings import INFO_CODES, PROBLEM_STATUSES, STATUS_ORDER
from segtools.forensics.report_assets import CSS as _CSS
from segtools.forensics.report_assets import SCRIPT as _JS
from segtools.forensics.report_svg import esc, iso_ms, loss_class, offset_lanes, time_view
from segtools.primitives.visible import visible

#: partitions with findings opened at most; the rest stay collapsed (listed, one click away)
MAX_OPEN = 50
#: collapsed partitions' bodies per gzip chunk (unpacked in the browser when one is opened)
LAZY_CHUNK = 100
KEY_PREVIEW = 200
VALUE_PREVIEW = 120

#: What to do next, per cause (FORENSICS.md D.6) and per status without a cause.
ADVICE: dict[str, str] = {
    "UNCLEAN_ELECTION": "An unclean leader election made a replica that lacked committed records the "
                        "leader. Set unclean.leader.election.enable=false (broker and topic), keep "
                        "min.insync.replicas >= 2 with acks=all, and re-produce the acked records in the "
                        "lost-records table from their source. Each partition's view over time "
                        "shows when its ISR shrank to one broker.",
    "LOCAL_LOSS_REELECTED": "A leader lost records it had acknowledged on its own disk (its log end after "
                            "a crash fell below its high-watermark checkpoint) and was elected again. "
                            "Check the disks and flush settings of that broker; eligible leader replicas "
                            "(KIP-966) prevent electing it.",
    "PROTOCOL_VIOLATION": "Every election was clean, yet committed records are gone: a replication bug. "
                          "Keep these log dirs untouched as evidence, note the Kafka version and report it "
                          "with this file.",
    "undetermined": "Committed records are gone and the cause is undetermined: run compare again with "
                    "the controller's metadata log (--metadata-log) to attribute it.",
    "COMMITTED_OFFSETS_LOST": "Committed offsets are held by no replica any more (a high-watermark "
                              "checkpoint vouches for them, every log ends below it): the records are "
                              "gone from every disk. Restore them from backups or re-produce them from "
                              "their source, and check the brokers' disks and flush settings.",
    "TRUNCATED_BELOW_HW": "A replica's log ends below its high-watermark checkpoint: records it had "
                          "committed were lost on its disk (unclean shutdown without fsync). Check which "
                          "replica still holds them before it is elected.",
    "DIVERGED_UNCOMMITTED": "Uncommitted records were dropped, as Kafka does on a leader change; producers "
                            "using acks=all were never acknowledged for them. Producers with acks=0/1 "
                            "may have lost data: check the acked column.",
    "CRC_INVALID": "Batches fail their CRC: check the disk of the broker named in the findings; the "
                   "other replicas hold intact copies.",
    "LOG_MATCHING_VIOLATION": "Two replicas hold different records under the same offset and leader "
                              "epoch: Kafka's log matching property is broken. Keep the evidence and "
                              "report it.",
    "EPOCH_REGRESSION": "Leader epochs go backwards inside a log: a segment from another lineage or a "
                        "corrupt file. See the findings' evidence.",
    "SALVAGE_HOLE": "A replica was rebuilt by segtools salvage and has holes: the original segment's "
                    "bytes there did not check out. Keep the original segment; compare cannot tell what "
                    "the replica held in those offsets.",
    "NON_MONOTONIC_OFFSETS": "Offsets go backwards inside a log: a corrupt or foreign segment. See the "
                             "findings' evidence.",
}

def _preview(v: Any, limit: int) -> str | None:
    """Key/value as text for the table: UTF-8 text, or ``base64:...`` for binary."""
    if v is None:
        return None
    if isinstance(v, Mapping) and "base64" in v:
        s = "base64:" + str(v["base64"])
    else:
        s = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    s = visible(s)   # a NUL or U+202E in a key is shown as an escape, not obeyed by the page
    return s if len(s) <= limit else s[:limit] + "\u2026"


def _json_block(obj: Any) -> str:
    """JSON safe inside <script type="application/json">: no '<', '>', '&', U+2028/9."""
    s = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return (s.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def _csp() -> str:
    digest = base64.b64encode(hashlib.sha256(_JS.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
            "img-src data:; base-uri 'none'; form-action 'none'")


def _rank(status: str) -> int:
    return STATUS_ORDER.index(status) if status in STATUS_ORDER else len(STATUS_ORDER)


def _partition_status(p: Mapping[str, Any]) -> str:
    statuses = [r.get("status") or "CONSISTENT" for r in p.get("replicas") or []]
    return min(statuses, key=_rank) if statuses else "CONSISTENT"


def _has_findings(p: Mapping[str, Any]) -> bool:
    if p.get("lost_records") or _partition_status(p) not in ("CONSISTENT", "LAGGING_PREFIX"):
        return True
    codes = [f.get("code") for f in p.get("findings") or []]
    codes += [f.get("code") for r in p.get("replicas") or [] for f in r.get("findings") or []]
    return any(c not in INFO_CODES for c in codes) or "READ_ERROR" in codes


def _lost_key(p: Mapping[str, Any], x: Mapping[str, Any]) -> tuple[Any, ...]:
    return (p.get("topic"), p.get("partition"), x.get("offset"), x.get("leader_epoch"))


def totals(report: Mapping[str, Any]) -> dict[str, Any]:
    """Counts the summary shows: a record lost from two replicas is one record (distinct
    topic, partition, offset, leader epoch), as the terminal summary counts them."""
    parts = report.get("partitions") or []
    by_status = Counter(_partition_status(p) for p in parts)
    distinct: dict[tuple[Any, ...], list[bool | None]] = {}
    relocated: set[tuple[Any, ...]] = set()
    aborted: set[tuple[Any, ...]] = set()
    causes: Counter[str] = Counter()
    for p in parts:
        for x in p.get("lost_records") or []:
            # counted as compare counts them (report.json's summary, the terminal line)
            if x.get("relocated_to") is not None:
                relocated.add(_lost_key(p, x))
            if x.get("txn_state") == "aborted":
                aborted.add(_lost_key(p, x))
            d = distinct.setdefault(_lost_key(p, x), [False, None])
            d[0] = d[0] or bool(x.get("committed"))
            if x.get("acked") is not None:
                d[1] = bool(d[1]) or bool(x.get("acked"))
        for r in p.get("replicas") or []:
            if r.get("status") in PROBLEM_STATUSES:
                causes[r.get("cause") or ("undetermined" if r.get("status") == "COMMITTED_LOSS"
                                          else r.get("status"))] += 1
    return {
        "partitions": len(parts), "by_status": dict(by_status),
        "lost": len(distinct), "relocated": len(relocated),
        # of aborted transactions: not delivered to read_committed consumers, no loss (issue 21)
        "aborted": len(aborted),
        "lost_copies": sum(len(p.get("lost_records") or []) for p in parts),
        "committed": sum(1 for c, _ in distinct.values() if c),
        "acked": sum(1 for _, a in distinct.values() if a),
        # --acks given: summary.acked_offsets_lost is an object (null without, docs/REPORT.md),
        # also when no record was lost to mark
        "acks_known": any(a is not None for _, a in distinct.values())
        or isinstance((report.get("summary") or {}).get("acked_offsets_lost"), Mapping),
        "causes": dict(causes),
        "problem": any(s in PROBLEM_STATUSES for s in by_status) or bool(distinct),
    }


class _Evidence:
    """Links to evidence files, relative to the folder the HTML file is written to; plain
    text when the file is not where the report says (a report opened elsewhere)."""

    def __init__(self, html_dir: str | None, cwd: str | None = None) -> None:
        self.html_dir = html_dir
        self.cwd = cwd or os.getcwd()
        self._href: dict[str, str | None] = {}     # one stat and relpath per distinct path

    def _target(self, path: str) -> str | None:
        if path not in self._href:
            full = path if os.path.isabs(path) else os.path.join(self.cwd, path)
            if self.html_dir is None or not os.path.exists(full):
                self._href[path] = None
            else:
                rel = os.path.relpath(full, self.html_dir)
                self._href[path] = urllib.parse.quote(rel.replace(os.sep, "/"))
        return self._href[path]

    def link(self, path: str | None, position: Any = None, label: str | None = None) -> str:
        if not path:
            return ""
        where = f" @ byte {esc(position)}" if position is not None else ""
        shown = esc(label or path)
        href = self._target(path)
        if href is None:
            return f'<span class="evidence">{shown}{where}</span>'
        return (f'<a class="evidence" href="{esc(href)}" title="{esc(path)}">{shown}</a>'
                f'<span class="evidence">{where}</span>')


def render_html(report: Mapping[str, Any], *, html_dir: str | None = None, source: str | None = None,
                cwd: str | None = None) -> str:
    """The page for one report dict. ``html_dir`` is where the file will live (evidence links
    are relative to it); ``cwd`` is what relative paths in the report are relative to."""
    from segtools.version import __version__

    ev = _Evidence(html_dir, cwd)
    parts = sorted(report.get("partitions") or [],
                   key=lambda p: (_rank(_partition_status(p)), str(p.get("topic")), p.get("partition") or 0))
    t = totals(report)
    brokers = ((report.get("metadata") or {}).get("brokers")) or []
    out: list[str] = []
    w = out.append
    w('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">')
    w(f'<meta http-equiv="Content-Security-Policy" content="{esc(_csp())}">')
    w('<meta name="viewport" content="width=device-width, initial-scale=1">'
      '<meta name="referrer" content="no-referrer"><title>segtools incident report</title>')
    w(f"<style>{_CSS}</style></head><body>")
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    w(f'<header><h1>Incident report</h1><p class="sub">segtools {esc(__version__)} \u00b7 written {now}'
      + (f" \u00b7 from {esc(source)}" if source else "") + "</p></header>")
    _summary(w, t, parts, report.get("summary"), report, ev)
    _legend(w)
    _codes_legend(w)
    ctx = _Ctx(brokers, ev, [], lost_offset_ranges(report.get("summary")),
               _election_images(report, parts))
    lazy = ctx.lazy
    _partitions(w, parts, ctx)
    if brokers:
        _broker_table(w, brokers, ev)
    if report.get("tier") is not None:
        _tier_table(w, report["tier"])
    _images_section(w, parts, ctx.images)
    _lost_table(w, parts, t)
    for k in range(0, len(lazy), LAZY_CHUNK):
        packed = gzip.compress(json.dumps(lazy[k:k + LAZY_CHUNK]).encode("utf-8"), compresslevel=6, mtime=0)
        w(f'<script type="application/octet-stream" id="lazy-{k // LAZY_CHUNK}">'
          f'{base64.b64encode(packed).decode("ascii")}</script>')
    w(f'<script type="application/json" id="lost-data">{_json_block({"rows": _lost_rows(parts)})}</script>')
    w(f"<script>{_JS}</script></body></html>\n")
    return "".join(out)


def _offsets_lost(block: Any) -> dict[str, Any]:
    """``summary.offsets_lost`` of compare's summary block (docs/REPORT.md), or empty."""
    if isinstance(block, Mapping) and isinstance(block.get("offsets_lost"), Mapping):
        return dict(block["offsets_lost"])
    return {}


def lost_offset_ranges(block: Any) -> dict[tuple[Any, Any], tuple[int, int]]:
    """(topic, partition) -> [first_offset, end_offset): committed offsets no replica holds."""
    out = {}
    for x in _offsets_lost(block).get("partitions") or []:
        try:
            out[(x["topic"], x["partition"])] = (int(x["first_offset"]), int(x["end_offset"]))
        except (KeyError, TypeError, ValueError):
            continue
    return out


#: What each status and common finding code means, for hover titles and the legend.
CODES: dict[str, str] = {
    "LOG_MATCHING_VIOLATION": "two replicas hold different records under the same offset and leader epoch",
    "COMMITTED_LOSS": "this replica holds committed records the surviving log does not: they were lost",
    "CRC_INVALID": "a batch fails its CRC check: corrupt bytes on this disk",
    "SALVAGE_HOLE": "a dir rebuilt by segtools salvage: the records in its holes are unknown, so nothing "
                    "there is proven held or lost",
    "NON_MONOTONIC_OFFSETS": "offsets go backwards inside the log: corrupt or foreign segment",
    "EPOCH_REGRESSION": "leader epochs go backwards inside the log",
    "TRUNCATED_BELOW_HW": "the log ends below its own high-watermark checkpoint: committed records lost on this disk",
    "DIVERGED_UNCOMMITTED": "this replica holds uncommitted records the surviving log dropped",
    "NOT_COMPARABLE": "no common ground with the reference (e.g. different topic id)",
    "LAGGING_PREFIX": "a prefix of the reference log: this replica is behind, nothing of its own",
    "CONSISTENT": "the same records as the reference over the offsets both hold",
    "HWC": "high-watermark checkpoint: the committed offset the broker last wrote to disk",
    "BENIGN_EPOCH_GAPS": "leader epochs with no records between two that have some: normal after quick elections",
    "UNCLEAN_SHUTDOWN": "no .kafka_cleanshutdown marker: the broker crashed or was copied while running",
    "UNCLEAN_ELECTION": "a replica outside the ISR was elected leader",
}

ANSWER_TEXT = {"lost": "LOST", "safe": "SAFE (proven)", "cannot_tell": "CANNOT TELL"}


def code(name: Any, cls: str = "code") -> str:
    """A code with its meaning on hover (CODES)."""
    title = CODES.get(str(name))
    return (f'<abbr class="{cls}" title="{esc(title)}">{esc(name)}</abbr>' if title
            else f'<span class="{cls}">{esc(name)}</span>')


def _metadata_dir(report: Mapping[str, Any]) -> str | None:
    """The metadata log dir the report read (from its evidence file names), or None."""
    for p in report.get("partitions") or []:
        for c in p.get("metadata_changes") or []:
            f = str(c.get("file") or "")
            if "__cluster_metadata-0" in f:
                return f[:f.index("__cluster_metadata-0") + len("__cluster_metadata-0")]
    return None


def _redacted_bundle(inputs: Sequence[Any]) -> str | None:
    """The redacted bundle one of the report's inputs lies in, if any."""
    from segtools.bundle import redacted_bundle_of

    for path in inputs:
        if "://" not in str(path) and (bundle := redacted_bundle_of(str(path))) is not None:
            return bundle
    return None


def next_commands(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(command, why) with this incident's inputs filled in."""
    import shlex

    inputs = ((report.get("summary") or {}).get("inputs") or {}).get("paths") or []
    if not inputs:      # an older report: the replicas' log dirs
        inputs = sorted({str(r["log_dir"]) for p in report.get("partitions") or []
                         for r in p.get("replicas") or [] if r.get("log_dir")})
    dirs = " ".join(shlex.quote(str(x)) for x in inputs) or "BROKER_DIR..."
    meta = _metadata_dir(report)
    ml = f" --metadata-log {shlex.quote(meta)}" if meta else ""
    answer = (report.get("summary") or {}).get("answer")
    out = [(f"segtools advise {dirs}{ml}", "what to do per partition, with the evidence behind it")]
    redacted = _redacted_bundle(inputs)
    if answer == "lost" and redacted:
        # a redacted bundle holds pseudonyms: compare --lost-out refuses it (replaying them
        # would write garbage), so point at the originals the bundle was collected from
        out.append((f"segtools compare ORIGINAL_BROKER_DIR...{ml} --lost-out lost/",
                    f"{redacted} is a redacted bundle: its keys and values are pseudonyms; write "
                    "the lost records from the original log dirs or an unredacted bundle"))
    elif answer == "lost":
        out.append((f"segtools compare {dirs}{ml} --lost-out lost/",
                    "write every lost record (key, value, headers, timestamp) to lost/ for replay"))
        out.append(("segtools replay lost/ --dry-run",
                    "show what would be re-produced, and where, before producing anything"))
    elif answer == "cannot_tell":
        out.append((f"segtools collect {dirs} --out bundle/",
                    "copy and seal the evidence before any broker restarts; then add the missing "
                    "evidence listed below"))
    return out


def _first_screen(w: Any, report: Mapping[str, Any], parts: Sequence[Mapping[str, Any]], ev: _Evidence) -> None:
    """Incident window, the first lost records and the next commands: what an on-call
    engineer needs before scrolling."""
    # incident window: where each partition's replicas first leave the surviving log, and
    # the elections (with times) from the metadata log
    forks = []
    for p in parts:
        for r in p.get("replicas") or []:
            d = r.get("divergent") or {}
            first = d.get("first_offset", r.get("fork_offset"))
            if first is not None:
                forks.append((p, r, first))
    elections = [(p, c) for p in parts for c in p.get("metadata_changes") or []
                 if c.get("election") and c.get("election") != "initial"]
    w('<div id="incident-window"><h3>Incident window</h3><ul>')
    if not forks and not elections:
        w("<li>No replica leaves the surviving log; " + (
            "the metadata log shows no election after the initial ones." if _metadata_dir(report)
            else "no metadata log given: elections and their times unknown.") + "</li>")
    for p, r, first in forks[:4]:
        w(f'<li class="fork">first divergence: <b>{esc(p.get("topic"))}-{esc(p.get("partition"))}</b> broker '
          f'{esc(r.get("broker"))} from offset <b>{esc(first)}</b> ({code(r.get("status"))}) '
          f'{ev.link(_replica_dir(p, r), label="evidence")}</li>')
    if len(forks) > 4:
        w(f"<li>\u2026 {len(forks) - 4} more diverged replica(s) below</li>")
    for p, c in elections[:4]:
        kind = str(c.get("election_class") or c.get("election"))
        w(f'<li class="election">{esc(iso_ms(c.get("timestamp_ms")))} election of '
          f'<b>{esc(p.get("topic"))}-{esc(p.get("partition"))}</b>: leader {esc(c.get("leader"))}, epoch '
          f'{esc(c.get("leader_epoch"))}, ISR {esc(c.get("isr"))}, {code(kind.upper() if "unclean" in kind else kind)} '
          f'{ev.link(c.get("file"), c.get("position"), label="metadata log")}</li>')
    if len(elections) > 4:
        w(f"<li>\u2026 {len(elections) - 4} more election(s) below</li>")
    w("</ul></div>")
    rows = [(p, x) for p in parts for x in p.get("lost_records") or []]
    # acked null with --acks given: acknowledged at that offset without a leader epoch (unknown)
    acks_given = (report.get("summary") or {}).get("acked_offsets_lost") is not None
    unknown_ack = "unknown" if acks_given else "? (no --acks)"
    w('<div id="first-lost"><h3>Lost records</h3>')
    if rows:
        w('<table class="first-lost"><tr><th>partition</th><th>offset</th><th>timestamp</th><th>key</th>'
          '<th>acked</th><th>committed</th><th>transaction</th><th>broker</th></tr>')
        for p, x in rows[:5]:
            acked = {True: "yes", False: "no"}.get(x.get("acked"), unknown_ack)
            w(f'<tr><td>{esc(p.get("topic"))}-{esc(p.get("partition"))}</td><td class="num">{esc(x.get("offset"))}'
              f'</td><td>{esc(iso_ms(x.get("timestamp")) or "not in report")}</td>'
              f'<td>{esc(_preview(x.get("key"), 40) or "null")}</td><td>{acked}</td>'
              f'<td>{"yes" if x.get("committed") else "no"}</td>'
              f'<td>{esc(x.get("transaction") or x.get("txn_state") or "not in report")}</td>'
              f'<td>{esc(x.get("broker"))}</td></tr>')
        w("</table>")
        w(f'<p><a href="#lost">all {len(rows)} lost record copies \u2193</a></p>')
    else:
        w("<p>None seen on the given log dirs.</p>")
    w("</div>")
    w('<div id="next-commands"><h3>Next commands</h3><ol>')
    for cmd, why in next_commands(report):
        w(f"<li><code>{esc(visible(cmd))}</code> \u2014 {esc(why)}</li>")
    w("</ol></div>")


def _codes_legend(w: Any) -> None:
    w('<dl id="codes">')
    for k, v in CODES.items():
        w(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>")
    w("</dl>")


def _summary(w: Any, t: Mapping[str, Any], parts: Sequence[Mapping[str, Any]], block: Any,
             report: Mapping[str, Any] | None = None, ev: _Evidence | None = None) -> None:
    block = block if isinstance(block, Mapping) else {}
    offsets = _offsets_lost(block)
    n_offsets = offsets.get("total") or 0
    verdict = block.get("verdict")
    # the three-valued answer (docs/REPORT.md "answer"): green only for a proven "safe"; a
    # report without one (written before schema_version 2) proves nothing
    answer = block.get("answer")
    if answer not in ("lost", "safe", "cannot_tell"):
        answer = "lost" if t["problem"] or n_offsets or verdict not in (None, "CLEAN") else "cannot_tell"
    w('<section id="summary"><h2>Summary</h2>')
    if answer == "lost" or t["problem"] or n_offsets:
        lost = (f'{t["lost"]} record(s) lost, {t["committed"]} of them committed'
                + (f', {t["acked"]} acknowledged to producers' if t["acks_known"] else ""))
        if t.get("aborted"):
            lost += (f', {t["aborted"]} of them in aborted transactions (not delivered to read_committed '
                     'consumers, no loss)')
        if n_offsets:
            lost += f"; {esc(n_offsets)} committed offset(s) lost with no copy on any replica"
        acked_off = (block.get("acked_offsets_lost") or {}).get("total") if isinstance(
            block.get("acked_offsets_lost"), Mapping) else None
        if acked_off:
            lost += f"; {esc(acked_off)} acknowledged offset(s) held by no replica"
        # a divergence nothing was lost by (all of it aborted transactions) is a finding (exit 1),
        # not green; the attribute carries the report's own answer
        if answer == "cannot_tell":
            # records are listed but the evidence cannot decide their fate (e.g. a transaction
            # whose outcome no evidence holds): amber, the report's own answer, never green
            w(f'<p class="verdict unknown" id="verdict" data-answer="cannot_tell">'
              f'{esc(verdict) + ": " if verdict else ""}Cannot tell whether these records were lost: '
              f'{lost}. Missing evidence is listed below.</p>')
        else:
            head = ("Replicas diverged, nothing lost for consumers (proven)" if answer == "safe"
                    else "Data was lost or replicas diverged")
            w(f'<p class="verdict bad" id="verdict" data-answer="{"safe" if answer == "safe" else "lost"}">'
              f'{esc(verdict) + ": " if verdict else ""}{head}: {lost}.</p>')
    elif answer == "safe":
        w('<p class="verdict ok" id="verdict" data-answer="safe">Safe: every replica is consistent (or a '
          'lagging prefix of the reference) and the evidence proves nothing was lost.</p>')
    else:
        w('<p class="verdict unknown" id="verdict" data-answer="cannot_tell">Cannot tell: nothing was seen '
          'lost, but the evidence given cannot prove that nothing was. Missing evidence is listed below.</p>')
    if report is not None and ev is not None:
        _first_screen(w, report, parts, ev)
    gaps = block.get("missing_evidence")
    if isinstance(gaps, list) and gaps:
        w('<ul id="missing-evidence">')
        for g in gaps:
            if not isinstance(g, Mapping):
                continue
            for m in g.get("missing") or []:
                if isinstance(m, Mapping):
                    w(f'<li data-evidence="{esc(m.get("evidence"))}"><b>{esc(g.get("topic"))}-'
                      f'{esc(g.get("partition"))}: missing {esc(m.get("evidence"))}</b> \u2014 '
                      f'{esc(m.get("detail"))}; would decide {esc(m.get("decides"))}</li>')
        w("</ul>")
    w('<div class="cards">')
    w(f'<div class="card"><div class="n" id="partition-count">{t["partitions"]}</div>partition(s)</div>')
    w(f'<div class="card"><div class="n" id="lost-count" data-count="{t["lost"]}">{t["lost"]}</div>'
      f'record(s) lost' + (f' <span class="muted">(on {t["lost_copies"]} replica copies)</span>'
                           if t["lost_copies"] != t["lost"] else "")
      + (f' <span class="muted" id="relocated-count">{t["relocated"]} held again at another offset '
         f'(relocated)</span>' if t["relocated"] else "")
      + (f' <span class="muted" id="aborted-count" data-count="{t["aborted"]}">{t["aborted"]} of aborted '
         'transactions, not delivered to read_committed consumers</span>' if t.get("aborted") else "")
      + "</div>")
    w(f'<div class="card"><div class="n" id="committed-count">{t["committed"]}</div>committed</div>')
    acked = t["acked"] if t["acks_known"] else "?"
    w(f'<div class="card"><div class="n" id="acked-count">{acked}</div>acknowledged'
      + ("" if t["acks_known"] else ' <span class="muted">(no --acks)</span>') + "</div>")
    if n_offsets:
        w(f'<div class="card"><div class="n" id="offsets-lost-count">{esc(n_offsets)}</div>committed '
          'offset(s) lost, no copy left</div>')
    w("</div>")
    w('<table id="by-status"><tr><th>status</th><th>partitions</th></tr>')
    for status, n in sorted(t["by_status"].items(), key=lambda kv: _rank(kv[0])):
        cls = "problem" if status in PROBLEM_STATUSES else "ok"
        w(f'<tr data-status="{esc(status)}"><td>{code(status, "badge " + cls)}</td>'
          f'<td class="num">{n}</td></tr>')
    w("</table>")
    causes = dict(t["causes"])
    if n_offsets:
        causes.setdefault("COMMITTED_OFFSETS_LOST", len(offsets.get("partitions") or []))
    if causes:
        w('<h3>Cause</h3><ul id="causes">')
        for cause, n in sorted(causes.items(), key=lambda kv: -kv[1]):
            unit = "partition(s)" if cause == "COMMITTED_OFFSETS_LOST" else "replica(s)"
            w(f'<li data-cause="{esc(cause)}"><b>{esc(cause)}</b> \u2014 {n} {unit}</li>')
        w("</ul>")
    w('<h3>What to do next</h3><ul id="next-steps">')
    advice = [ADVICE[c] for c in causes if c in ADVICE]
    if answer == "cannot_tell" and not (t["problem"] or n_offsets):
        advice = ["Collect the missing evidence listed above and run compare again: until then nothing "
                  "is proven safe."]
    elif not (t["problem"] or n_offsets):
        advice = ["Nothing to recover. Keep the report with the incident notes."]
    elif not advice:
        advice = ["Read the findings of the open partitions below; each links to its evidence."]
    for a in dict.fromkeys(advice):
        w(f"<li>{esc(a)}</li>")
    w("</ul>")
    if block:
        _run_block(w, block)
    w("</section>")


def _cell(v: Any) -> str:
    if v is None:
        return ""
    shown = v if isinstance(v, (str, int, float, bool)) or v is None else json.dumps(v, ensure_ascii=False)
    shown = str(shown)
    return esc(shown if len(shown) <= 2000 else shown[:2000] + "\u2026")


def _run_block(w: Any, block: Mapping[str, Any]) -> None:
    """compare's summary block (docs/REPORT.md): the run, the broker-id legend, warnings;
    keys this page does not know are shown as they are."""
    shown = {"records_lost", "offsets_lost", "totals", "verdict", "inputs", "warnings", "missing_evidence"}
    w('<h3>Run</h3><table id="run-summary">')
    for k, v in block.items():
        if k not in shown:
            w(f"<tr><th>{esc(k)}</th><td>{_cell(v)}</td></tr>")
    inputs = block.get("inputs")
    if isinstance(inputs, Mapping) and inputs.get("paths") is not None:
        w(f'<tr><th>inputs</th><td>{_cell(", ".join(map(str, inputs.get("paths") or [])))}</td></tr>')
    elif inputs is not None:
        w(f"<tr><th>inputs</th><td>{_cell(inputs)}</td></tr>")
    w("</table>")
    warnings = block.get("warnings") or []
    if warnings:
        w('<ul id="warnings">' + "".join(f'<li class="warning">\u26a0 {_cell(x)}</li>' for x in warnings)
          + "</ul>")
    dirs = inputs.get("log_dirs") if isinstance(inputs, Mapping) else None
    if isinstance(dirs, list) and dirs:
        w('<table id="broker-legend"><tr><th>broker</th><th>claimed id</th><th>log dir</th>'
          '<th>cluster id</th><th>replicas</th><th>copy of</th></tr>')
        for d in dirs:
            if isinstance(d, Mapping):
                w(f'<tr><td>{_cell(d.get("broker"))}</td><td>{_cell(d.get("claimed_broker"))}</td>'
                  f'<td>{_cell(d.get("log_dir"))}</td><td>{_cell(d.get("cluster_id"))}</td>'
                  f'<td class="num">{_cell(d.get("replicas"))}</td><td>{_cell(d.get("copy_of"))}</td></tr>')
        w("</table>")


def _legend(w: Any) -> None:
    w('<p class="legend" id="legend">Lanes: one per replica over offsets; coloured runs are leader '
      'epochs (e<i>N</i>); <b style="color:#1565c0">|</b> log start, <b>|</b> log end, '
      '<b style="color:#2e7d32">\u25bc</b> high-watermark checkpoint, <b style="color:#c62828">\u00a6</b> '
      'fork point, dashed box: divergent range; lost records:'
      '<span class="sw committed"></span>committed<span class="sw acked"></span>acked'
      '<span class="sw unacked"></span>unacknowledged<span class="sw relocated"></span>relocated'
      '<span class="sw aborted"></span>aborted transaction; '
      'a pale red band across all lanes: committed offsets no replica holds any more. '
      '\u26a0 no clean-shutdown marker (crashed, or copied while running).</p>')


@dataclass(slots=True)
class _Ctx:
    """What every partition's section draws on besides the partition itself."""

    brokers: Sequence[Mapping[str, Any]]          # metadata.brokers
    ev: _Evidence
    lazy: list[str]                              # collapsed bodies, packed at the end
    lost_offsets: dict[tuple[Any, Any], tuple[int, int]]
    images: Mapping[int, Any] = field(default_factory=dict)   # election offset -> Image


def _partitions(w: Any, parts: Sequence[Mapping[str, Any]], ctx: _Ctx) -> None:
    with_findings = [p for p in parts if _has_findings(p)]
    w(f'<section id="partitions"><h2>Partitions</h2><p>{len(with_findings)} of {len(parts)} with findings '
      '(open); <button type="button" id="expand-all">expand all</button> '
      '<button type="button" id="collapse-all">collapse all</button></p>')
    if len(with_findings) > MAX_OPEN:
        w(f'<p class="muted">The first {MAX_OPEN} partitions with findings are open; the others are '
          f'collapsed.</p>')
    opened = 0
    for i, p in enumerate(parts):
        found = _has_findings(p)
        is_open = found and opened < MAX_OPEN
        opened += is_open
        _partition(w, i, p, is_open, found, ctx)
    w("</section>")


def _partition(w: Any, i: int, p: Mapping[str, Any], is_open: bool, found: bool, ctx: _Ctx) -> None:
    ev, brokers, lazy = ctx.ev, ctx.brokers, ctx.lazy
    name = f"{p.get('topic')}-{p.get('partition')}"
    status = _partition_status(p)
    lost = list(p.get("lost_records") or [])
    n_lost = len({(x.get("offset"), x.get("leader_epoch")) for x in lost})
    n_comm = len({(x.get("offset"), x.get("leader_epoch")) for x in lost if x.get("committed")})
    causes = sorted({str(r.get("cause")) for r in p.get("replicas") or [] if r.get("cause")})
    cls = "problem" if status in PROBLEM_STATUSES else "ok"
    w(f'<details class="partition" id="p{i}" data-topic="{esc(p.get("topic"))}" '
      f'data-partition="{esc(p.get("partition"))}" data-status="{esc(status)}" '
      f'data-findings="{str(found).lower()}"{" open" if is_open else ""}>')
    w(f'<summary><span class="badge {cls}">{esc(status)}</span> {esc(name)} \u2014 '
      f'{len(p.get("replicas") or [])} replica(s)'
      + (f", {n_lost} lost ({n_comm} committed)" if n_lost else "")
      + (f", cause {esc(', '.join(causes))}" if causes else "") + "</summary>")
    body: list[str] = []
    outer, w = w, body.append
    w(offset_lanes(p, ctx.lost_offsets.get((p.get("topic"), p.get("partition")))))
    _replica_table(w, p, ev)
    _findings(w, p, ev)
    changes = p.get("metadata_changes") or []
    over_time = time_view(changes, brokers, p.get("replicas") or [])
    if over_time:
        w(f"<h4>Over time</h4>{over_time}")
    if changes:
        elections = sum(1 for c in changes if c.get("election") in ("clean", "unclean", "offline"))
        unclean = sum(1 for c in changes if c.get("election") == "unclean")
        w(f'<details class="changes"><summary>Metadata log: {len(changes)} partition change(s), '
          f'{elections} election(s), {unclean} unclean</summary>')
        _changes_table(w, changes, ev, ctx.images)
        w("</details>")
    if lost:
        w(f'<p><a class="lost-link" href="#lost" data-filter="{esc(name)}">Show the '
          f'{len(lost)} lost record cop{"y" if len(lost) == 1 else "ies"} of {esc(name)}</a></p>')
    html_body = "".join(body)
    if is_open:
        outer(html_body)
    else:
        outer(f'<div class="lazy" data-lazy="{len(lazy)}" data-chunk-size="{LAZY_CHUNK}"></div>')
        lazy.append(html_body)
    outer("</details>")


def _replica_dir(p: Mapping[str, Any], r: Mapping[str, Any]) -> str | None:
    if not r.get("log_dir"):
        return None
    return os.path.join(str(r["log_dir"]), f"{p.get('topic')}-{p.get('partition')}")


def _replica_table(w: Any, p: Mapping[str, Any], ev: _Evidence) -> None:
    w('<table class="replicas"><tr><th>broker</th><th>status</th><th>log start</th><th>log end</th>'
      '<th>HW checkpoint</th><th>fork</th><th>divergent</th><th>committed</th><th>cause</th>'
      '<th>shutdown</th><th>evidence</th></tr>')
    for r in p.get("replicas") or []:
        d = r.get("divergent") or {}
        shutdown = {True: "clean", False: "unclean \u26a0", None: ""}.get(r.get("clean_shutdown"), "")
        nums = "".join(f'<td class="num">{esc(v)}</td>' for v in (
            r.get("log_start_offset"), r.get("log_end_offset"), r.get("high_watermark"), r.get("fork_offset"),
            d.get("records", ""), d.get("committed_records", "")))
        pdir = _replica_dir(p, r)
        w(f'<tr data-broker="{esc(r.get("broker"))}"><td>{esc(r.get("broker"))}'
          f'{" (ref)" if r.get("reference") else ""}</td><td>{esc(r.get("status"))}</td>{nums}'
          f'<td>{esc(r.get("cause"))}</td><td>{shutdown}</td><td>{ev.link(pdir, label=_tail(pdir))}</td></tr>')
    w("</table>")


def _findings(w: Any, p: Mapping[str, Any], ev: _Evidence) -> None:
    rows = []
    dirs = {r.get("broker"): _replica_dir(p, r) for r in p.get("replicas") or []}
    ref_dir = next((_replica_dir(p, r) for r in p.get("replicas") or [] if r.get("reference")), None)
    for f in p.get("findings") or []:
        # the broker the finding is about (its field, or the first "broker N" its detail names
        # that holds a replica here); else the reference's partition dir
        named = f.get("broker")
        if named not in dirs:
            named = next((int(m) for m in re.findall(r"\bbroker (\d+)\b", str(f.get("detail") or ""))
                          if int(m) in dirs), None)
        rows.append(("partition" if named is None else f"partition (broker {named})", f,
                     dirs.get(named) or ref_dir))
    for r in p.get("replicas") or []:
        for f in r.get("findings") or []:
            rows.append((f"broker {r.get('broker')}", f, _replica_dir(p, r)))
    if not rows:
        return
    w('<table class="findings"><tr><th>where</th><th>code</th><th>offset</th><th>detail</th>'
      '<th>evidence</th></tr>')
    for where, f, pdir in rows:
        name = str(f.get("code") or "")
        kind = "info" if name in INFO_CODES else "problem"
        if f.get("segment") and pdir:
            seg = os.path.join(pdir, str(f["segment"]))
            link = ev.link(seg, f.get("position"), _tail(seg, 3))
        elif pdir:
            link = ev.link(pdir, label=_tail(pdir))
        else:
            link = ""
        w(f'<tr class="finding" data-code="{esc(name)}"><td>{esc(where)}</td>'
          f'<td>{code(name, "badge " + kind)}</td><td class="num">{esc(f.get("offset"))}</td>'
          f'<td>{esc(f.get("detail"))}</td><td>{link}</td></tr>')
    w("</table>")


#: elections whose cluster image the report embeds (each a replay step of the metadata log)
MAX_ELECTION_IMAGES = 50
_ELECTIONS = ("clean", "unclean", "offline")


def _election_images(report: Mapping[str, Any], parts: Sequence[Mapping[str, Any]]) -> dict[int, Any]:
    """The cluster image just after each election's metadata record (segtools.quorum.image),
    for the first MAX_ELECTION_IMAGES elections; none without a readable metadata log."""
    mdir = _metadata_dir(report)
    offsets = sorted({c["offset"] for p in parts for c in p.get("metadata_changes") or []
                      if c.get("election") in _ELECTIONS and isinstance(c.get("offset"), int)})
    if not mdir or not offsets:
        return {}
    from segtools.errors import SegtoolsError
    from segtools.quorum.image import images_after

    try:
        return dict(images_after(mdir, offsets[:MAX_ELECTION_IMAGES]))
    except (SegtoolsError, OSError):
        return {}          # the report stands without them; compare reported the log's problems


def _images_section(w: Any, parts: Sequence[Mapping[str, Any]], images: Mapping[int, Any]) -> None:
    """One collapsed block per election: its partition's topic and the brokers, as the
    metadata log stood right after the election (docs/QUORUM.md, time travel)."""
    if not images:
        return
    w('<section id="election-images"><h2>Cluster at each election (metadata log)</h2>')
    for offset, img in sorted(images.items()):
        topics = {str(p.get("topic")) for p in parts
                  if any(c.get("offset") == offset for c in p.get("metadata_changes") or [])}
        ids = {k[1] for k, d in img.entities.items() if k[0] == "topic" and d.get("name") in topics}
        rows = {"offset": offset, "topics": sorted(topics),
                "partitions": [{"topic_id": k[1][0], "partition": k[1][1], **d}
                               for k, d in sorted(img.entities.items(), key=lambda kv: repr(kv[0]))
                               if k[0] == "partition" and k[1][0] in ids],
                "brokers": [{"id": k[1], **d} for k, d in sorted(img.entities.items(), key=lambda kv: repr(kv[0]))
                            if k[0] == "broker"]}
        w(f'<details id="image-{offset}"><summary>after metadata offset {offset}: '
          f'{esc(", ".join(sorted(topics)))}</summary><pre>{_pre_json(rows)}</pre>'
          "</details>")
    w("</section>")


def _pre_json(doc: Any) -> str:
    # esc shows control characters as visible escapes: each line is escaped on its own
    return "\n".join(esc(line) for line in json.dumps(doc, indent=1, default=str).splitlines())


def _changes_table(w: Any, changes: Sequence[Mapping[str, Any]], ev: _Evidence,
                   images: Mapping[int, Any] | None = None) -> None:
    w('<table class="metadata-changes"><tr><th>time</th><th>metadata offset</th><th>record</th>'
      '<th>leader epoch</th><th>leader</th><th>ISR</th><th>ELR</th><th>election</th><th>evidence</th></tr>')
    for c in changes:
        election = c.get("election") or ("recovered" if c.get("recovered") else "")
        w(f'<tr data-election="{esc(c.get("election") or "")}"><td>{esc(iso_ms(c.get("timestamp_ms")))}</td>'
          f'<td class="num">{esc(c.get("offset"))}</td><td>{esc(c.get("record"))}</td>'
          f'<td class="num">{esc(c.get("leader_epoch"))}</td><td>{esc(c.get("leader"))}</td>'
          f'<td>{esc(c.get("isr"))}</td><td>{esc(c.get("elr") if c.get("elr") is not None else "")}</td>'
          f'<td>{esc(election)}'
          + (f' <a href="#image-{c["offset"]}">image</a>' if images and c.get("offset") in images else "")
          + f'</td><td>{ev.link(c.get("file"), c.get("position"), _short(c.get("file")))}</td></tr>')
    w("</table>")


def _tail(path: str | None, n: int = 2) -> str | None:
    """The last ``n`` parts of a path (broker dir / partition dir [/ segment]); the full path
    is the link target and its tooltip."""
    if not path:
        return None
    parts = os.path.normpath(path).split(os.sep)
    return "/".join(parts[-n:])


def _short(path: Any) -> str | None:
    return os.path.basename(str(path)) if path else None


def _tier_table(w: Any, tier: Mapping[str, Any]) -> None:
    """The tier audit (docs/TIER.md): per tiered partition its offsets, then every finding."""
    w('<section id="tier"><h2>Remote tier</h2><table class="tier"><tr><th>partition</th>'
      '<th>earliest</th><th>earliest local</th><th>latest tiered</th><th>log end</th></tr>')
    for p in tier.get("partitions") or []:
        w(f'<tr><td>{esc(p.get("topic"))}-{esc(p.get("partition"))}</td>'
          f'<td class="num">{esc(p.get("earliest_offset"))}</td>'
          f'<td class="num">{esc(p.get("earliest_local_offset"))}</td>'
          f'<td class="num">{esc(p.get("latest_tiered_offset"))}</td>'
          f'<td class="num">{esc(p.get("log_end_offset"))}</td></tr>')
    w("</table>")
    findings = tier.get("findings") or []
    w(f"<p>{len(findings)} finding(s) of the tier audit</p>")
    if findings:
        w('<table class="tier-findings"><tr><th>kind</th><th>partition</th><th>segment</th>'
          "<th>what</th></tr>")
        for f in findings:
            w(f'<tr><td>{esc(f.get("kind"))}</td><td>{esc(f.get("topic"))}-{esc(f.get("partition"))}'
              f'</td><td>{esc(f.get("segment_id"))}</td><td>{esc(f.get("message"))}</td></tr>')
        w("</table>")
    w("</section>")


def _broker_table(w: Any, brokers: Sequence[Mapping[str, Any]], ev: _Evidence) -> None:
    w('<section id="brokers"><h2>Brokers (metadata log)</h2><table class="broker-events"><tr><th>time</th>'
      '<th>metadata offset</th><th>broker</th><th>event</th><th>broker epoch</th><th>fenced</th>'
      '<th>evidence</th></tr>')
    for b in brokers:
        fenced = b.get("fenced")
        w(f'<tr data-event="{esc(b.get("event"))}"><td>{esc(iso_ms(b.get("timestamp_ms")))}</td>'
          f'<td class="num">{esc(b.get("offset"))}</td><td>{esc(b.get("broker"))}</td><td>{esc(b.get("event"))}'
          f'{" (controlled shutdown)" if b.get("in_controlled_shutdown") else ""}</td>'
          f'<td class="num">{esc(b.get("broker_epoch"))}</td><td>{"" if fenced is None else esc(fenced)}</td>'
          f'<td>{ev.link(b.get("file"), b.get("position"), _short(b.get("file")))}</td></tr>')
    w("</table></section>")


def _lost_rows(parts: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """[partition, broker, offset, epoch, key, value, class index, acked, timestamp (ISO, UTC),
    transaction state] per lost copy (the last two null when the report does not carry them)."""
    order = {"committed": 0, "acked": 1, "unacked": 2, "relocated": 3, "aborted": 4}
    rows = []
    for p in parts:
        name = visible(f"{p.get('topic')}-{p.get('partition')}")
        for x in p.get("lost_records") or []:
            rows.append([name, x.get("broker"), x.get("offset"), x.get("leader_epoch"),
                         _preview(x.get("key"), KEY_PREVIEW), _preview(x.get("value"), VALUE_PREVIEW),
                         order[loss_class(x)], x.get("acked"), iso_ms(x.get("timestamp")) or None,
                         x.get("txn_state")])
    return rows


def _lost_table(w: Any, parts: Sequence[Mapping[str, Any]], t: Mapping[str, Any]) -> None:
    w(f'<section id="lost"><h2>Lost records</h2><p>{t["lost_copies"]} lost record cop'
      f'{"y" if t["lost_copies"] == 1 else "ies"} ({t["lost"]} distinct records). Rows marked relocated '
      'are held again by the surviving log at another offset.</p>'
      '<div id="lost-controls"><input id="lost-filter" type="search" placeholder="filter: partition, '
      'key, value, offset (words must all match)" aria-label="filter lost records">'
      '<select id="lost-class" aria-label="class"><option value="">all</option>'
      '<option value="committed">committed</option><option value="acked">acked</option>'
      '<option value="unacked">unacknowledged</option><option value="relocated">relocated</option>'
      '<option value="aborted">aborted transaction</option></select>'
      '<button type="button" id="lost-prev">\u2190 prev</button><button type="button" id="lost-next">'
      'next \u2192</button><span id="lost-info"></span></div>'
      '<table id="lost-table"><thead><tr><th>partition</th><th>broker</th><th>offset</th><th>epoch</th>'
      '<th>key</th><th>value</th><th>class</th><th>acked</th><th>timestamp</th><th>transaction</th></tr>'
      '</thead><tbody id="lost-body"></tbody>'
      "</table></section>")


def write_html(report: Mapping[str, Any], path: str | os.PathLike[str], *, source: str | None = None) -> None:
    """Write the page to ``path`` through a temporary file beside it, renamed when complete
    (``segtools.files.outputs.atomic_write``: an interrupted run never leaves half a report)."""
    from segtools.files.outputs import atomic_write

    out = os.fspath(path)
    atomic_write(out, render_html(report, html_dir=os.path.dirname(os.path.abspath(out)), source=source))
