"""`segtools salvage`: rebuild a damaged segment's intact batches into a new folder
(segtools/salvage.py does the work; docs/CONTRACT.md "segtools salvage")."""

from __future__ import annotations

import sys

import click

from segtools.cli.errors import handle_errors
from segtools.cli.options import max_batch_bytes_option


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("path", type=click.Path(exists=True))
@click.option("--out", "out_dir", required=True,
              help="New (or empty) folder for the rebuilt partition dir and manifest.json; never "
                   "inside the input.")
@click.option("--force", is_flag=True, help="Write into a non-empty --out folder.")
@click.option("--index-interval-bytes", type=int, default=4096, show_default=True,
              help="The topic's index.interval.bytes, for the rebuilt .index/.timeindex.")
@max_batch_bytes_option("A header claiming more is not a batch. ")
@click.option("-q", "--quiet", is_flag=True, help="Only the exit status and the manifest.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def salvage(path: str, out_dir: str, force: bool, index_interval_bytes: int, quiet: bool,
            debug: bool, max_batch_bytes: int | None = None) -> None:
    """Scan PATH (a .log segment or a partition dir) past corrupt bytes to every intact batch,
    and write a clean segment with its .index and .timeindex, plus manifest.json (what was
    kept and dropped: byte ranges, offsets, and what Kafka's own recovery would delete).

    Exit status: 0 nothing damaged, 1 damaged ranges found (and salvaged), 2 unusable input
    or usage error.
    """
    from segtools.primitives.limits import DEFAULT_MAX_BATCH_BYTES
    from segtools.primitives.visible import visible
    from segtools.salvage import salvage as run

    if index_interval_bytes < 0:
        raise click.UsageError("--index-interval-bytes must not be negative")
    from segtools.bundle import is_bundle

    if is_bundle(path):
        raise click.UsageError(f"{path} is a bundle of many partitions: salvage one partition dir "
                               "of it, e.g. BUNDLE/broker-1/<topic>-<partition>")
    result = run(path, out_dir, force=force, index_interval_bytes=index_interval_bytes,
                 max_batch_bytes=max_batch_bytes or DEFAULT_MAX_BATCH_BYTES)
    if not quiet:
        for seg in result.segments:
            lost = seg.kafka_would_delete()
            click.echo(f"{visible(seg.path)}: kept {len(seg.kept)} batches "
                       f"({sum(b.records_count for b in seg.kept)} records), "
                       f"dropped {len(seg.dropped)} ranges "
                       f"({sum(d.end - d.start for d in seg.dropped)} bytes)")
            for d in seg.dropped:
                click.echo(visible(f"  dropped bytes {d.start}-{d.end} ({d.reason}): {d.detail}"))
            if lost:
                click.echo(f"  Kafka's recovery would truncate at byte {seg.kafka_truncation_position} "
                           f"and delete {len(lost)} intact batches "
                           f"({sum(b.records_count for b in lost)} records) kept here")
        click.echo(visible(f"rebuilt: {result.partition_dir}  manifest: {result.manifest_path}"))
    sys.exit(1 if result.damaged else 0)
