"""`segtools tier`: audit tiered storage (KIP-405) from `__remote_log_metadata` and the local
logs (segtools/tier/ does the work; docs/TIER.md)."""

from __future__ import annotations

import json
import sys

import click

from segtools.cli.errors import handle_errors


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--remote", "remote_root", metavar="DIR|URI",
              help="The remote tier, a folder or an object-store URI (s3://bucket/prefix): its "
                   "objects are checked against the metadata (missing objects, leaks, sizes, "
                   "contents).")
@click.option("--remote-format", type=click.Choice(["auto", "local", "aiven"]), default="auto",
              show_default=True,
              help="Layout of --remote: Kafka's LocalTieredStorage, or Aiven's plugin "
                   "(chunked, zstd, AES-GCM objects with a manifest); auto tells them apart.")
@click.option("--private-key", type=click.Path(exists=True, dir_okay=False), metavar="PEM",
              help="The RSA private key (PEM) Aiven's plugin wrapped the data keys with: "
                   "needed to read encrypted segments.")
@click.option("--extract-remote", type=click.Path(file_okay=False), metavar="DIR",
              help="Write the remote segments read back (Aiven's decoded) into the new folder "
                   "DIR, in LocalTieredStorage's layout, for dump/export/compare.")
@click.option("--metadata-partitions", type=int, default=50, show_default=True,
              help="The cluster's remote.log.metadata.topic.num.partitions.")
@click.option("--json", "as_json", is_flag=True, help="The whole report as JSON on stdout.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def tier(paths: tuple[str, ...], remote_root: str | None, remote_format: str,
         private_key: str | None, extract_remote: str | None, metadata_partitions: int,
         as_json: bool, debug: bool) -> None:
    """Audit the remote tier of the partitions under PATHS (the brokers' log dirs, with their
    __remote_log_metadata partitions): every remote segment's state history (illegal
    transitions, dangling COPY_SEGMENT_STARTED, unfinished deletes), lineage by Kafka's
    leader-epoch rule against each replica, and coverage of the log by FINISHED remote
    segments and local segments. A LocalTieredStorage folder among PATHS is checked like
    --remote.

    Exit status: 0 no finding, 1 findings (or cannot tell), 2 unusable input or usage error.
    """
    from segtools.primitives.visible import visible
    from segtools.tier import audit

    if metadata_partitions < 1:
        raise click.UsageError("--metadata-partitions must be at least 1")
    if private_key is not None and remote_root is None:
        raise click.UsageError("--private-key reads remote objects: give --remote too")
    report = audit(list(paths), remote_root=remote_root, metadata_partitions=metadata_partitions,
                   remote_format=remote_format, private_key=private_key,
                   extract_to=extract_remote)
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2, sort_keys=True))
    else:
        for p in report.partitions:
            click.echo(visible(
                f"{p.topic}-{p.partition}: earliest {p.earliest_offset}, earliest local "
                f"{p.earliest_local_offset}, latest tiered {p.latest_tiered_offset}, log end "
                f"{p.log_end_offset} (metadata in __remote_log_metadata-{p.metadata_partition})"))
        click.echo(f"{len(report.segments)} remote segments in "
                   f"{len(report.metadata_partitions)} metadata partitions")
        if report.remote is not None:
            r = report.remote
            click.echo(visible(
                f"remote tier {r['root']} ({'Aiven' if r['format'] == 'aiven' else 'LocalTieredStorage'}"
                f" layout): {r['segments_read']} segments read back"
                + (f", {r['segments_unreadable']} not readable" if r["segments_unreadable"] else "")))
        for f in report.findings:
            click.echo(visible(f"{f.kind}: {f.message}"))
        click.echo(f"{len(report.findings)} findings")
    sys.exit(1 if report.findings else 0)
