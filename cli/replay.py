"""`segtools replay`: produce `compare --lost-out` records back to a live cluster
(segtools/replay.py; docs/CONTRACT.md section 10)."""

from __future__ import annotations

import click

from segtools.cli.errors import handle_errors


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("lost_dir", type=click.Path(exists=True))
@click.option("--bootstrap-server", "bootstrap", required=True, metavar="HOST:PORT[,...]",
              help="The cluster to write the lost records back to.")
@click.option("--dry-run", is_flag=True,
              help="Print what would be produced (records not yet in the cluster), produce nothing.")
@click.option("--timeout", type=float, default=60.0, show_default=True,
              help="Seconds to wait for the cluster (reading what is there, confirming writes).")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def replay(lost_dir: str, bootstrap: str, dry_run: bool, timeout: float, debug: bool) -> None:
    """Produce the records of LOST_DIR (written by segtools compare --lost-out) to their topic
    and partition, in original order, with their key, value, headers and timestamp. Records the
    cluster already holds from an earlier replay (header segtools.replay.source) are skipped,
    so running it twice adds nothing.

    Exit status: 0 done (or nothing to do), 2 unusable input or the cluster did not confirm.
    """
    from segtools.replay import replay as run

    summary = run(lost_dir, bootstrap, dry_run=dry_run, timeout=timeout)
    if dry_run:
        for r in summary.planned:
            click.echo(f"would produce {r['topic']}-{r['partition']} (was offset {r['offset']}, "
                       f"epoch {r['leader_epoch']}, broker {r['broker']}): key={r['key']!r} "
                       f"value={(r['value'] or b'')[:60]!r}")
    verb = "would produce" if dry_run else "produced"
    click.echo(f"{summary.records} lost records: {summary.already_present} already in the cluster, "
               f"{verb} {len(summary.planned) if dry_run else summary.produced}")
