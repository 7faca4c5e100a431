"""`segtools replay`: plan, and produce, `compare --lost-out` records back to a live cluster
(segtools/replay.py; docs/CONTRACT.md section 10)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from segtools.cli.errors import TroubleError, handle_errors
from segtools.cli.options import STDOUT, human_output


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("lost_dir", type=click.Path(exists=True))
@click.option("--bootstrap-server", "bootstrap", default=None, metavar="HOST:PORT[,...]",
              help="The cluster to write the lost records back to (also checked in a dry run: "
                   "records it already holds are skipped).")
@click.option("--dry-run", is_flag=True,
              help="Print the plan, produce nothing. Works offline from LOST_DIR alone.")
@click.option("--include-superseded", is_flag=True,
              help="Produce records whose key has a newer value in the surviving log too "
                   "(held back by default: the lost value would overwrite the newer one).")
@click.option("--plan-out", "plan_out", default=None, metavar="FILE",
              help="Write the plan as JSON to FILE (refused if FILE exists); '-': to stdout (the text "
                   "then goes to stderr).")
@click.option("--timeout", type=float, default=60.0, show_default=True,
              help="Seconds to wait for the cluster (reading what is there, confirming writes).")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def replay(lost_dir: str, bootstrap: str | None, dry_run: bool, include_superseded: bool,
           plan_out: str | None, timeout: float, debug: bool) -> None:
    """Plan the records of LOST_DIR (written by segtools compare --lost-out) and produce those
    that are safe to produce to their topic and partition, in original order, with their key,
    value, headers and timestamp.

    LOST_DIR is checked against its _SUCCESS manifest first (record count, schema, SHA-256 of
    each file). Each record gets an action and a reason: produce; skip (already in the cluster
    from an earlier replay, or a newer value for its key is there); hold (duplicate, aborted or
    undecided transaction, superseded by a newer value for its key in the surviving log, part
    of a transaction that is held); refuse (internal topic, control record). Records of one
    committed transaction are produced in one transaction.

    Exit status: 0 every record produced or skipped (or would be, with --dry-run), 1 some
    records held or refused (see the plan), 2 unusable input or the cluster did not confirm.
    """
    from segtools.replay import replay as run

    if bootstrap is None and not dry_run:
        raise click.UsageError("give --bootstrap-server to produce, or --dry-run to plan offline")
    to_stdout = plan_out == STDOUT
    if plan_out is not None and not to_stdout and os.path.lexists(plan_out):
        raise TroubleError(f"--plan-out {plan_out} exists: not overwritten")
    summary = run(lost_dir, bootstrap, dry_run=dry_run, include_superseded=include_superseded,
                  timeout=timeout)
    with human_output(to_stdout):
        _print_plan(summary, dry_run)
    if to_stdout:
        click.echo(json.dumps(summary.to_json(os.path.abspath(lost_dir)), indent=1))
    elif plan_out is not None:
        from segtools.files.outputs import atomic_file

        with atomic_file(plan_out, "w") as fh:
            json.dump(summary.to_json(os.path.abspath(lost_dir)), fh, indent=1)
            fh.write("\n")
    if summary.count("hold") or summary.count("refuse"):
        sys.exit(1)


def _print_plan(summary: Any, dry_run: bool) -> None:
    for p in summary.planned:
        r = p.row
        if p.action == "produce" and not dry_run:
            continue
        verb = "would produce" if p.action == "produce" else p.action
        topic = str(r["topic"]).encode("unicode_escape").decode("ascii")   # control characters visible
        click.echo(f"{verb} {topic}-{r['partition']} offset {r['offset']} epoch {r['leader_epoch']} "
                   f"({p.reason}; txn {r.get('txn_state')}): key={r['key']!r} "
                   f"value={(r['value'] or b'')[:60]!r}")
    counts = ", ".join(f"{summary.count(a)} {a}" for a in ("produce", "skip", "hold", "refuse"))
    where = "" if summary.cluster_checked else " (offline: not checked against a cluster)"
    verb = f"would produce {summary.count('produce')}" if dry_run else f"produced {summary.produced}"
    click.echo(f"{summary.records} lost records: {summary.already_present} already in the cluster, "
               f"{verb}; plan: {counts}{where}")
