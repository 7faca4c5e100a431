"""`segtools dump --skip-corrupt`: the batches of a damaged segment past its bad ranges.

Kafka's tool (and our default) stops at the first batch it cannot frame; with this option the
segment is walked by `segtools.salvage.scan_segment` instead, which resynchronises on the next
header that checks out. Each skipped range is one finding, printed as one line on stdout where
it sits in the dump (docs/CONTRACT.md section 2), so an SRE can still read what follows."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from segtools.primitives.limits import resolve_max_batch_bytes
from segtools.records.batches import SegmentBatch
from segtools.records.segment_file import SegmentFile

if TYPE_CHECKING:
    from segtools.dump.context import DumpContext
    from segtools.salvage import DroppedRange


def skipped_range_line(start: int, end: int, reason: str, detail: str, after: int | None,
                       before: int | None) -> str:
    around = []
    if after is not None:
        around.append(f"after offset {after}")
    if before is not None:
        around.append(f"before offset {before}")
    where = f" ({', '.join(around)})" if around else ""
    return f"Skipped {end - start} corrupt bytes at position {start}-{end}{where}: {reason}: {detail}"


def batches_skipping_corrupt(ctx: DumpContext, path: str, max_batch_bytes: int | None,
                             skipped: list[DroppedRange] | None = None) -> Iterator[SegmentBatch]:
    """The intact batches of ``path`` in file order; a finding line for each range between.
    Each reported range is also appended to ``skipped`` (before the batch after it is
    yielded), so the caller can tell an offset gap the skip made from a compaction gap."""
    from segtools.salvage import scan_segment

    limit = resolve_max_batch_bytes(max_batch_bytes)
    seg = scan_segment(path, max_batch_bytes=limit)
    dropped = list(seg.dropped)
    name = os.path.basename(path)
    # read-only, bounded window with read-ahead: a file that shrank since the scan is one
    # FileChangedError naming the position
    with SegmentFile(path) as log:
        for batch in seg.kept:
            while dropped and dropped[0].start < batch.position:
                _report(ctx, dropped.pop(0), skipped)
            if batch.position + batch.size > log.size:
                raise log.changed(f"the file shrank below {batch.position + batch.size} bytes",
                                  batch.position)
            buf, rel = log.get(batch.position, batch.size)
            data = bytes(buf[rel:rel + batch.size])
            yield SegmentBatch.from_bytes(data, path=path, position=batch.position, segment=name,
                                         max_batch_bytes=limit)
    for d in dropped:
        _report(ctx, d, skipped)


def _report(ctx: DumpContext, d: DroppedRange, skipped: list[DroppedRange] | None) -> None:
    if skipped is not None:
        skipped.append(d)
    fields = {"position": d.start, "end": d.end, "size": d.end - d.start, "reason": d.reason,
              "detail": d.detail, "after_offset": d.after_offset, "before_offset": d.before_offset}
    ctx.flag("skipped_corrupt_range", fields, stream="out",
             line=skipped_range_line(d.start, d.end, d.reason, d.detail, d.after_offset, d.before_offset))
