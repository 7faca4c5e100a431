"""`segtools compare DIR...`: divergence, truncation and lost records across replicas."""

from __future__ import annotations

import json
import os
import re
import sys

import click

from segtools.cli.errors import TroubleError, handle_errors


def default_metadata_log(dirs: tuple[str, ...] | list[str]) -> str | None:
    """The controller's ``__cluster_metadata-0`` of the first given folder of broker dirs that
    has one (what `segtools simulate` writes with ``metadata_log: true``); a given
    ``DIR/broker-<id>`` dir stands for its folder ``DIR``."""
    from segtools.errors import SegtoolsError
    from segtools.sources import resolve

    folders = []
    for d in dirs:
        d = os.path.normpath(d)
        folders.append(os.path.dirname(d) if re.fullmatch(r"broker-\d+", os.path.basename(d)) else d)
    for d in dict.fromkeys(folders):
        try:
            found = resolve([d or "."], errors="collect", check_copies=False)
        except SegtoolsError:
            continue
        if found.inputs[0].kind == "cluster" and found.metadata_logs:
            return found.metadata_logs[0].partition_dir
    return None


@click.command("compare")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--report", "report_path", type=click.Path(dir_okay=False, writable=True),
              help="Write the JSON report (docs/CONTRACT.md section 4) to FILE.")
@click.option("--acks", "acks_path", type=click.Path(exists=True, dir_okay=False),
              help="Producer acks (acks.jsonl) to mark lost records as acked.")
@click.option("--master", default=None, help="Spark master URL (default local[*], or spark-submit's).")
@click.option("--tables", "tables_dir", type=click.Path(file_okay=False),
              help="Also write the intermediate tables (batches, replicas, verdicts, "
                   "divergent_records) as Parquet under DIR.")
@click.option("--metadata-log", "metadata_log", type=click.Path(exists=True, file_okay=False),
              help="KRaft __cluster_metadata-0 (or a dir holding it) to attribute causes. "
                   "Default: DIR/controller/__cluster_metadata-0 when DIR is a folder of "
                   "broker-* dirs that has one.")
@click.option("--no-spark", is_flag=True, help="Run in this process without Spark (small inputs).")
@click.option("--max-rows", default=200, show_default=True, help="Summary rows to print.")
@click.option("--max-batch-bytes", "max_batch_bytes", default=None, metavar="SIZE",
              help="Largest batch to read, on disk and decompressed (e.g. 256MiB; default 16MiB). "
                   "Raise it for clusters with message.max.bytes above that.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def compare(dirs: tuple[str, ...], report_path: str | None, acks_path: str | None, master: str | None,
            tables_dir: str | None, metadata_log: str | None, no_spark: bool, max_rows: int,
            debug: bool, max_batch_bytes: str | None = None) -> None:
    """Compare the log dirs of several brokers (one DIR per broker, or a folder of broker-*
    dirs). Exit 0 when every replica is consistent or a lagging prefix, 1 when anything is
    lost, diverged or corrupt, 2 when the input cannot be used."""
    from segtools.errors import SegtoolsError
    from segtools.forensics.collect import discover_replicas
    from segtools.forensics.elections import load_histories
    from segtools.forensics.loss import AckIndex
    from segtools.forensics.report import render_summary
    from segtools.limits import MAX_BATCH_BYTES_ENV, parse_size

    if max_batch_bytes is not None:
        try:
            limit = parse_size(max_batch_bytes)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--max-batch-bytes") from None
        # every reader of the run (in process, and Spark's Python workers, which inherit the
        # environment) takes the limit from here
        os.environ[MAX_BATCH_BYTES_ENV] = str(limit)
    for d in dirs:
        inside = os.path.realpath(d) + os.sep
        if tables_dir and os.path.realpath(tables_dir).startswith(inside):
            raise TroubleError(f"--tables {tables_dir} is inside input {d}; inputs are evidence")
        if report_path and os.path.realpath(report_path).startswith(inside):
            raise TroubleError(f"--report {report_path} is inside input {d}; inputs are evidence")
    if tables_dir and no_spark:
        raise TroubleError("--tables writes Spark's intermediate tables; drop --no-spark")
    acks = AckIndex.load(acks_path) if acks_path else None
    histories = load_histories(metadata_log) if metadata_log else None
    auto_log = None if metadata_log else default_metadata_log(dirs)
    if auto_log:
        # found, not asked for: a log that cannot be replayed only costs the causes
        try:
            histories = load_histories(auto_log)
            click.echo(f"compare: using the controller's metadata log {auto_log}", err=True)
        except SegtoolsError as exc:
            click.echo(f"compare: ignoring the controller's metadata log: {exc}", err=True)
    from segtools.sources import resolve

    resolution = resolve(list(dirs), non_utf8="raise")
    for warning in resolution.messages:   # links out of the input, duplicates, copies
        click.echo(f"compare: warning: {warning.message}", err=True)
    specs = discover_replicas(list(dirs), resolution)
    if no_spark:
        from segtools.forensics.pipeline import compare_in_process

        report = compare_in_process(list(dirs), acks=acks, histories=histories, specs=specs)
    else:
        from segtools.spark.compare_job import run_compare
        from segtools.spark.session import get_spark

        spark = get_spark(master=master, app_name="segtools-compare")
        report = run_compare(spark, list(dirs), acks=acks, histories=histories,
                             tables_dir=tables_dir, specs=specs)
    click.echo(render_summary(report, max_rows=max_rows))
    if report_path:
        with open(report_path, "w", encoding="utf-8") as fh:
            doc = report.to_json()
            if resolution.messages:   # what the inputs held that the verdicts do not show
                doc["input_warnings"] = [w.to_json() for w in resolution.messages]
            json.dump(doc, fh, indent=1, sort_keys=False)
            fh.write("\n")
    sys.exit(report.exit_code)
