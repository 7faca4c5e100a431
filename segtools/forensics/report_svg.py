"""Inline SVG drawings for the HTML incident report (``segtools.forensics.report_html``).

Two pictures per partition: lanes over offset (one per replica: epoch runs, log start,
high-watermark checkpoint, log end, fork point, divergent and lost ranges) and the partition
over time (metadata-log elections and ISR/ELR changes, each replica's epochs by batch
timestamp, broker fencing). Every text that comes from the
report goes through ``esc``; the lanes carry ``data-*`` attributes the browser tests read.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from segtools.primitives.visible import html_text

#: epoch run fills, cycled by epoch number (colour-blind safe-ish, light enough for labels)
EPOCH_FILLS = ("#9ecae1", "#a1d99b", "#fdd0a2", "#dadaeb", "#c7e9c0", "#fcbba1", "#d9d9d9",
               "#c6dbef", "#bcbddc", "#fdae6b")
#: lost/divergent record classes, most severe first
LOSS_CLASSES = ("committed", "acked", "unacked", "relocated")

WIDTH = 960
LABEL_W = 190
LANE_H = 26
LANE_GAP = 8
AXIS_H = 26


def esc(value: Any) -> str:
    """Text or attribute value, escaped (keys and values in reports are hostile input)."""
    if value is None:
        return ""
    if type(value) is int:          # most cells: nothing to escape
        return str(value)
    return html_text(str(value))   # control/bidi characters shown as escapes, not obeyed


@functools.lru_cache(maxsize=4096)      # metadata changes repeat their timestamps a lot
def iso_ms(ms: int | None) -> str:
    if ms is None or ms < 0:
        return ""
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ms)


def loss_class(rec: Mapping[str, Any]) -> str:
    """committed beats acked beats unacknowledged; a record the reference holds again
    elsewhere (``relocated_to``) is not lost data, nor is one of an aborted transaction (never
    delivered to read_committed consumers, never replayed), whatever its acknowledgement."""
    if rec.get("relocated_to") is not None:
        return "relocated"
    if rec.get("txn_state") == "aborted":
        return "aborted"
    if rec.get("committed"):
        return "committed"
    if rec.get("acked"):
        return "acked"
    return "unacked"


def loss_runs(records: Iterable[Mapping[str, Any]]) -> list[tuple[int, int, str]]:
    """(first, last, class) runs of adjacent offsets with the same class."""
    runs: list[tuple[int, int, str]] = []
    for off, cls in sorted((int(r["offset"]), loss_class(r)) for r in records):
        if runs and runs[-1][2] == cls and runs[-1][1] + 1 >= off:
            runs[-1] = (runs[-1][0], max(runs[-1][1], off), cls)
        else:
            runs.append((off, off, cls))
    return runs


def _nice_ticks(lo: int, hi: int, n: int = 6) -> list[int]:
    span = max(1, hi - lo)
    step = 1
    raw = span / n
    mag = 1
    while mag * 10 <= raw:
        mag *= 10
    for mult in (1, 2, 5, 10):
        step = mag * mult
        if step >= raw:
            break
    first = -(-lo // step) * step
    return list(range(first, hi + 1, step))


class _Scale:
    def __init__(self, lo: int, hi: int, x0: float, x1: float) -> None:
        self.lo, self.hi = lo, max(hi, lo + 1)
        self.x0, self.x1 = x0, x1

    def x(self, v: float) -> float:
        return self.x0 + (v - self.lo) * (self.x1 - self.x0) / (self.hi - self.lo)

    def span(self, a: float, b: float, min_w: float = 2.0) -> tuple[float, float]:
        xa = self.x(a)
        return xa, max(min_w, self.x(b) - xa)


def offset_lanes(partition: Mapping[str, Any], offsets_lost: tuple[int, int] | None = None) -> str:
    """One lane per replica over offsets [lowest log start, highest log end]; ``offsets_lost``
    is [first, end) of committed offsets that no replica holds (drawn across all lanes)."""
    replicas: Sequence[Mapping[str, Any]] = partition.get("replicas") or []
    lost_by_broker: dict[Any, list[Mapping[str, Any]]] = {}
    for rec in partition.get("lost_records") or []:
        lost_by_broker.setdefault(rec.get("broker"), []).append(rec)
    if not replicas:
        return ""
    ends = [int(r.get("log_end_offset") or 0) for r in replicas]
    ends += [int(r["high_watermark"]) for r in replicas if r.get("high_watermark") is not None]
    starts = [int(r.get("log_start_offset") or 0) for r in replicas]
    if offsets_lost:
        ends.append(offsets_lost[1])
    lo, hi = min(starts), max(ends + [min(starts) + 1])
    scale = _Scale(lo, hi, LABEL_W, WIDTH - 20)
    height = AXIS_H + len(replicas) * (LANE_H + LANE_GAP) + 6
    out = [(f'<svg class="lanes" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" '
            f'role="img" aria-label="replica logs over offset" data-lo="{lo}" data-hi="{hi}">')]
    # axis
    out.append(f'<g class="axis"><line x1="{LABEL_W}" y1="{AXIS_H - 6}" x2="{WIDTH - 20}" '
               f'y2="{AXIS_H - 6}" stroke="#888"/>')
    for t in _nice_ticks(lo, hi):
        x = scale.x(t)
        out.append(f'<line x1="{x:.1f}" y1="{AXIS_H - 10}" x2="{x:.1f}" y2="{AXIS_H - 2}" stroke="#888"/>'
                   f'<text x="{x:.1f}" y="{AXIS_H - 13}" text-anchor="middle">{t}</text>')
    out.append(f'<text x="4" y="{AXIS_H - 13}">offset</text></g>')
    for i, r in enumerate(replicas):
        y = AXIS_H + i * (LANE_H + LANE_GAP)
        out.append(_lane(r, y, scale, lost_by_broker.get(r.get("broker"), [])))
    if offsets_lost:
        a, b = offsets_lost
        x, w = scale.span(a, b)
        out.append(f'<rect class="offsets-lost" data-first="{a}" data-end="{b}" x="{x:.1f}" y="{AXIS_H - 4}" '
                   f'width="{w:.1f}" height="{height - AXIS_H}"><title>committed offsets {a}\u2013{b - 1} '
                   f'held by no replica: no copy left</title></rect>')
    out.append("</svg>")
    return "".join(out)


#: which label wins where labels would overlap (lower first)
_SEVERITY = {"unclean": 0, "fenced": 0, "offline": 1, "unregistered": 1, "clean": 2, "unfenced": 2,
             "initial": 3}


def _labels(cands: list[tuple[int, float, str]], y: float, cls: str) -> list[str]:
    """Text labels placed most severe first; one that would overlap a placed one is left
    out (its marker keeps its tooltip). Labels near the right edge end at their marker."""
    placed: list[tuple[float, float]] = []
    out = []
    for _sev, x, text in sorted(cands, key=lambda c: (c[0], c[1])):
        w = 5.6 * len(text) + 6
        right = x > WIDTH - 20 - w / 2
        a, b = (x - w, x) if right else (max(LABEL_W - 4.0, x - w / 2), max(LABEL_W - 4.0, x - w / 2) + w)
        if any(a < pb and pa < b for pa, pb in placed):
            continue
        placed.append((a, b))
        anchor = "end" if right else "start"
        out.append(f'<text class="{cls}" x="{(x if right else a):.1f}" y="{y}" text-anchor="{anchor}">'
                   f'{esc(text)}</text>')
    return out


def _lane(r: Mapping[str, Any], y: float, scale: _Scale, lost: list[Mapping[str, Any]]) -> str:
    broker = r.get("broker")
    start = int(r.get("log_start_offset") or 0)
    end = int(r.get("log_end_offset") or 0)
    hw = r.get("high_watermark")
    fork = r.get("fork_offset")
    status = r.get("status") or ""
    label = f"broker {broker}" + (" (reference)" if r.get("reference") else "")
    attrs = (f'class="lane status-{esc(status)}" data-broker="{esc(broker)}" data-status="{esc(status)}" '
             f'data-log-start="{start}" data-log-end="{end}"'
             + (f' data-hw="{int(hw)}"' if hw is not None else "")
             + (f' data-fork="{int(fork)}"' if fork is not None else ""))
    p = [f"<g {attrs}>"]
    warn = "" if r.get("clean_shutdown") in (True, None) else " \u26a0"
    p.append(f'<text class="lane-label" x="4" y="{y + 12}">{esc(label)}{warn}</text>'
             f'<text class="lane-status" x="4" y="{y + 23}">{esc(status)}</text>')
    # the offsets below log start are gone by retention / DeleteRecords: hatched
    if start > scale.lo:
        x, w = scale.span(scale.lo, start, 0)
        p.append(f'<rect class="below-log-start" x="{x:.1f}" y="{y}" width="{w:.1f}" height="{LANE_H}">'
                 f'<title>below log start offset {start}</title></rect>')
    runs = _epoch_runs(r.get("epochs"), start, end)
    for epoch, a, b in runs:
        if b <= a:
            continue
        x, w = scale.span(a, b, 1.0)
        fill = EPOCH_FILLS[epoch % len(EPOCH_FILLS)] if epoch >= 0 else "#eeeeee"
        p.append(f'<rect class="run" data-epoch="{epoch}" data-first="{a}" data-end="{b}" x="{x:.1f}" '
                 f'y="{y}" width="{w:.1f}" height="{LANE_H}" fill="{fill}">'
                 f'<title>broker {esc(broker)}: leader epoch {epoch}, offsets {a}\u2013{b - 1}</title></rect>')
        if w > 34:
            p.append(f'<text class="run-label" x="{x + 3:.1f}" y="{y + 16}">e{epoch}</text>')
    div = r.get("divergent") or None
    if div and div.get("first_offset") is not None:
        a, b = int(div["first_offset"]), int(div["last_offset"]) + 1
        x, w = scale.span(a, b)
        p.append(f'<rect class="divergent" data-first="{a}" data-last="{b - 1}" x="{x:.1f}" y="{y + 1}" '
                 f'width="{w:.1f}" height="{LANE_H - 2}"><title>divergent offsets {a}\u2013{b - 1}: '
                 f'{esc(div.get("records"))} record(s), {esc(div.get("committed_records"))} committed'
                 f'</title></rect>')
    for a, b, cls in loss_runs(lost):
        x, w = scale.span(a, b + 1)
        what = ("records of aborted transactions (never delivered to read_committed consumers)"
                if cls == "aborted" else f"{cls} records lost")
        p.append(f'<rect class="loss {cls}" data-first="{a}" data-last="{b}" x="{x:.1f}" y="{y + 15}" '
                 f'width="{w:.1f}" height="{LANE_H - 16}"><title>{what}: offsets {a}\u2013{b}'
                 f'</title></rect>')
    x = scale.x(start)
    p.append(f'<line class="log-start" data-offset="{start}" x1="{x:.1f}" y1="{y - 2}" x2="{x:.1f}" '
             f'y2="{y + LANE_H + 2}"><title>log start offset {start}</title></line>')
    x = scale.x(end)
    p.append(f'<line class="leo" data-offset="{end}" x1="{x:.1f}" y1="{y - 2}" x2="{x:.1f}" '
             f'y2="{y + LANE_H + 2}"><title>log end offset {end}</title></line>')
    if hw is not None:
        x = scale.x(int(hw))
        p.append(f'<path class="hw" data-offset="{int(hw)}" d="M{x - 5:.1f} {y - 4} L{x + 5:.1f} {y - 4} '
                 f'L{x:.1f} {y + 3} Z"><title>high-watermark checkpoint {int(hw)}</title></path>')
    if fork is not None:
        x = scale.x(int(fork))
        p.append(f'<line class="fork" data-offset="{int(fork)}" x1="{x:.1f}" y1="{y - 4}" x2="{x:.1f}" '
                 f'y2="{y + LANE_H + 4}"><title>fork point: offset {int(fork)}</title></line>'
                 f'<text class="fork-label" x="{x + 3:.1f}" y="{y + 11}">fork {int(fork)}</text>')
    p.append("</g>")
    return "".join(p)


def _epoch_runs(epochs: Any, start: int, end: int) -> list[tuple[int, int, int]]:
    """(epoch, first, end) from [[epoch, start_offset], ...]; one unknown run (-1) when the
    report predates the ``epochs`` field."""
    if not epochs:
        return [(-1, start, end)] if end > start else []
    out = []
    pairs = [(int(e), int(s)) for e, s in epochs]
    for i, (e, s) in enumerate(pairs):
        nxt = pairs[i + 1][1] if i + 1 < len(pairs) else end
        out.append((e, max(s, start), min(nxt, end)))
    return out


def _ms_label(ms: int) -> str:
    if ms % 60_000 == 0 and ms:
        return f"+{ms // 60_000} min"
    if ms % 1000 == 0:
        return f"+{ms // 1000} s"
    return f"+{ms / 1000:g} s"


def time_view(changes: Sequence[Mapping[str, Any]], brokers: Sequence[Mapping[str, Any]],
              replicas: Sequence[Mapping[str, Any]] = ()) -> str:
    """The partition over time: its metadata changes (elections, ISR/ELR changes) on top, one
    lane per replica with the time span of each leader epoch's batches (MaxTimestamp; the
    producers' clocks under CreateTime), and the broker events (registration, fencing) of
    that window; elections as vertical lines across all rows."""
    spans = [(r.get("broker"), [(int(e), int(a), int(b)) for e, a, b in (r.get("epoch_times") or [])])
             for r in replicas]
    spans = [(b, t) for b, t in spans if t]
    times = [int(c["timestamp_ms"]) for c in changes if c.get("timestamp_ms") is not None]
    times += [x for _, t in spans for _, a, b in t for x in (a, b)]
    if not times:
        return ""
    lo, hi = min(times), max(times)
    window = [b for b in brokers if b.get("timestamp_ms") is not None and lo <= int(b["timestamp_ms"]) <= hi]
    scale = _Scale(lo, hi if hi > lo else lo + 1, LABEL_W, WIDTH - 20)
    lane_y0 = 40
    lane_h, gap = 16, 6
    brokers_y = lane_y0 + len(spans) * (lane_h + gap) + 8
    axis_y = brokers_y + 18
    h = axis_y + 30
    out = [(f'<svg class="timeline" viewBox="0 0 {WIDTH} {h}" width="{WIDTH}" height="{h}" role="img" '
            f'aria-label="the partition over time" data-t0="{lo}" data-t1="{hi}">'),
           '<text x="4" y="30">partition changes</text>',
           f'<text x="4" y="{brokers_y + 8}">brokers</text>',
           f'<line x1="{LABEL_W}" y1="{axis_y}" x2="{WIDTH - 20}" y2="{axis_y}" stroke="#888"/>',
           f'<text x="{LABEL_W}" y="{axis_y + 24}">{esc(iso_ms(lo))}</text>',
           f'<text x="{WIDTH - 20}" y="{axis_y + 24}" text-anchor="end">{esc(iso_ms(hi))}</text>']
    for t in _nice_ticks(0, hi - lo, 6) if hi > lo else []:
        x = scale.x(lo + t)
        out.append(f'<line x1="{x:.1f}" y1="{axis_y - 3}" x2="{x:.1f}" y2="{axis_y + 3}" stroke="#888"/>'
                   f'<text x="{x:.1f}" y="{axis_y + 13}" text-anchor="middle">{_ms_label(t)}</text>')
    for i, (broker, epochs) in enumerate(spans):
        y = lane_y0 + i * (lane_h + gap)
        out.append(f'<g class="time-lane" data-broker="{esc(broker)}"><text x="4" y="{y + 12}">broker '
                   f'{esc(broker)}</text>')
        for e, a, b in epochs:
            x, w = scale.span(a, b, 2.0)
            fill = EPOCH_FILLS[e % len(EPOCH_FILLS)]
            out.append(f'<rect class="time-run" data-epoch="{e}" data-first-ms="{a}" data-last-ms="{b}" '
                       f'x="{x:.1f}" y="{y}" width="{w:.1f}" height="{lane_h}" fill="{fill}"><title>broker '
                       f'{esc(broker)}, leader epoch {e}: batches from {esc(iso_ms(a))} to {esc(iso_ms(b))}'
                       f'</title></rect>')
            if w > 26:
                out.append(f'<text class="run-label" x="{x + 3:.1f}" y="{y + 12}">e{e}</text>')
        out.append("</g>")
    labels = []
    for c in changes:
        if c.get("timestamp_ms") is None:
            continue
        x = scale.x(int(c["timestamp_ms"]))
        election = c.get("election")
        if election:
            labels.append((_SEVERITY.get(str(election), 9), x,
                           f"e{c.get('leader_epoch')} {election} \u2192 {c.get('leader')}"))
            out.append(f'<line class="election-line {esc(election)}" x1="{x:.1f}" y1="32" x2="{x:.1f}" '
                       f'y2="{axis_y}"/>')
        else:
            labels.append((5, x, f"ISR {c.get('isr')}"))
        cls = f"election {election}" if election else "isr-change"
        r = 6 if election else 3.5
        what = (f"{esc(election)} election: leader {esc(c.get('leader'))}, epoch {esc(c.get('leader_epoch'))}"
                if election else "ISR/ELR change")
        p = (f"{what}; ISR {esc(c.get('isr'))}" + (f"; ELR {esc(c.get('elr'))}" if c.get("elr") else "")
             + f"; metadata offset {esc(c.get('offset'))}; {esc(iso_ms(c.get('timestamp_ms')))}")
        out.append(f'<circle class="{cls}" data-offset="{esc(c.get("offset"))}" cx="{x:.1f}" cy="26" r="{r}">'
                   f'<title>{p}</title></circle>')
    out.extend(_labels(labels, 14, "election-label"))
    labels = []
    for event in window:
        x = scale.x(int(event["timestamp_ms"]))
        ev = str(event.get("event") or "")
        if ev in ("fenced", "unfenced", "unregistered"):
            labels.append((_SEVERITY.get(ev, 9), x, f"broker {event.get('broker')} {ev}"))
        out.append(f'<path class="broker-event {esc(ev.replace(" ", "-"))}" d="M{x - 5:.1f} {brokers_y + 10} '
                   f'L{x + 5:.1f} {brokers_y + 10} L{x:.1f} {brokers_y} Z"><title>broker '
                   f'{esc(event.get("broker"))} {esc(ev)}; {esc(iso_ms(event.get("timestamp_ms")))}</title></path>')
    out.extend(_labels(labels, brokers_y - 2, "broker-label"))
    out.append("</svg>")
    return "".join(out)
