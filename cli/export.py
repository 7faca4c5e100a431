"""`segtools export`: batches and records to Parquet in Spark's Kafka schema."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import click

from segtools.cli.errors import TroubleError, handle_errors
from segtools.cli.options import InputPath, max_batch_bytes_option


def _parse_partitions(text: str | None) -> tuple[int, ...]:
    if not text:
        return ()
    out: list[int] = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part:
                lo, hi = part.split("-", 1)
                out.extend(range(int(lo), int(hi) + 1))
            elif part:
                out.append(int(part))
    except ValueError:
        raise click.BadParameter(f"expected a list like 0,2,5-7, got {text!r}", param_hint="--partitions") from None
    return tuple(sorted(set(out)))


def _parse_time(text: str | None, flag: str) -> int | None:
    """Epoch milliseconds, or an ISO-8601 date/time (UTC unless it names a zone)."""
    if text is None:
        return None
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(f"expected epoch ms or ISO-8601, got {text!r}", param_hint=flag) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _where_producers(paths: tuple[str, ...], where: tuple[str, ...], level: str) -> tuple[int, ...] | None:
    """Check --where now (usage error, exit 2) and look up transactional ids once."""
    if not where:
        return None
    from segtools.filters import parse_where, transaction_producer_ids

    if level != "records":
        raise click.UsageError("--where filters records: use it with --level records")
    flt = parse_where(where)
    if not flt.of("transactional_id"):
        return None
    return tuple(sorted(transaction_producer_ids(list(paths), flt)))


def _parse_jobs(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """``--jobs``: a number of processes (1 or more), or ``auto`` (None)."""
    if value is None or value.strip().lower() == "auto":
        return None
    try:
        jobs = int(value)
    except ValueError:
        raise click.BadParameter(f"expected a number of processes or 'auto', got {value!r}",
                                 param_hint="--jobs") from None
    if jobs < 1:
        raise click.BadParameter(f"expected 1 or more processes (or 'auto'), got {jobs}", param_hint="--jobs")
    return jobs


@click.command()
@click.argument("paths", nargs=-1, required=True, type=InputPath(exists=True))
@click.option("--out", "out_dir", required=True,
              help="Output folder (local path, or an s3://, gs://, hdfs://, file:// URI).")
@click.option("--level", type=click.Choice(["records", "batches"]), default="records", show_default=True,
              help="One row per record, or one row per batch.")
@click.option("--topics", default=None, help="Comma list of topic names or glob patterns.")
@click.option("--partitions", default=None, help="Comma list of partition numbers, ranges allowed (0,2,5-7).")
@click.option("--start-offset", type=int, default=None, help="First offset to export (inclusive).")
@click.option("--end-offset", type=int, default=None,
              help="Stop before this offset (exclusive, like Kafka's end offsets).")
@click.option("--start-time", default=None, help="Earliest record timestamp: epoch ms or ISO-8601.")
@click.option("--end-time", default=None, help="Stop before this record timestamp (exclusive): epoch ms or ISO-8601.")
@click.option("--skip-control/--keep-control", default=False, show_default=True,
              help="Leave out transaction markers and other control records.")
@click.option("--compression", type=click.Choice(["snappy", "zstd", "gzip", "none"]), default="snappy",
              show_default=True)
@click.option("--by-broker", is_flag=True,
              help="One replica=broker-<id>/ folder per input log dir (several replicas of a partition); "
                   "two inputs claiming one broker id get broker-<id> and broker-<id>-2 (legend printed).")
@click.option("--overwrite", is_flag=True,
              help="Allow a non-empty --out folder (files of the same name are replaced, others kept).")
@click.option("--master", default=None, help="Run on Spark with this master URL (e.g. local[*], spark://host:7077).")
@click.option("--where", "where", multiple=True, metavar="EXPR",
              help="Keep only records matching EXPR (repeatable, all must hold), e.g. 'key^=order-', "
                   "'value~timeout', 'producer_id=4001', 'group=billing': docs/CONTRACT.md section 9.")
@max_batch_bytes_option()
@click.option("--jobs", default="auto", show_default=True, metavar="N|auto", callback=_parse_jobs,
              help="Processes that export partition replicas side by side (local inputs and --out only): "
                   "1 is one after another in this process; auto uses up to 4 (one per CPU) when there "
                   "are enough replicas to repay starting them. The files are the same either way.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def export(paths: tuple[str, ...], out_dir: str, level: str, topics: str | None, partitions: str | None,
           start_offset: int | None, end_offset: int | None, start_time: str | None, end_time: str | None,
           skip_control: bool, compression: str, by_broker: bool, overwrite: bool, master: str | None,
           quiet: bool, debug: bool, max_batch_bytes: int | None = None, where: tuple[str, ...] = (),
           jobs: int | None = None) -> None:
    """Write PATHS (segments, partition dirs or broker log dirs) to Parquet under --out.

    Files land in OUT/part-<topic>+<partition>+<first offset>.snappy.parquet (one per segment,
    small consecutive segments together up to 64 MiB; OUT/replica=broker-<id>/ with
    --by-broker); record columns start with Spark's Kafka source schema, then the forensic
    columns. pd.read_parquet(OUT), pyarrow.parquet.read_table(OUT),
    DuckDB read_parquet('OUT/**/*.parquet') and spark.read.parquet(OUT) read it as it is.
    OUT/_PARTIAL marks an export that has not finished (interrupted or failed); OUT/_SUCCESS
    one that has.
    """
    from segtools.export import ExportOptions, export_sources, export_with_spark, plan_export

    if master and jobs is not None:
        raise click.UsageError("--jobs is for an export in this process; with --master Spark's tasks "
                               "share out the partition replicas")
    options = ExportOptions(
        level=level,
        topics=tuple(t.strip() for t in topics.split(",") if t.strip()) if topics else (),
        partitions=_parse_partitions(partitions),
        start_offset=start_offset, end_offset=end_offset,
        start_timestamp=_parse_time(start_time, "--start-time"),
        end_timestamp=_parse_time(end_time, "--end-time"),
        include_control=not skip_control, compression=compression, by_broker=by_broker,
        max_batch_bytes=max_batch_bytes,
        where=where, where_producer_ids=_where_producers(paths, where, level),
    )
    from segtools.files.sources import resolve

    resolution = resolve(list(paths))   # non-UTF-8 names are refused after --topics (plan_export)
    # checked before Spark starts: an unsafe --out is refused in a second, not after the JVM
    sources = plan_export(list(paths), out_dir, options, overwrite, resolution)
    for warning in resolution.messages:   # links out of the input, duplicates, copies
        click.echo(f"warning: {warning.message}", err=True)
    if not sources:
        raise TroubleError("no partition matched the inputs and filters")
    try:
        if master:
            from segtools.spark.session import get_spark

            summary = export_with_spark(list(paths), out_dir, options, get_spark(master=master),
                                        overwrite=overwrite, resolution=resolution)
        else:
            from segtools.export import segment_bytes

            total = sum(segment_bytes(src) for src in sources)
            show = not quiet and sys.stderr.isatty() and total > 64 * 1024 * 1024
            if show:
                # a size per segment path (~100 bytes a segment) only for the bar
                sizes = {s: n for src in sources for s, n in zip(src.segments, src.segment_sizes)}
                with click.progressbar(length=total, label="exporting", file=sys.stderr) as bar:
                    summary = export_sources(sources, out_dir, options,
                                             on_segment=lambda seg: bar.update(sizes.get(seg, 0)), jobs=jobs)
            else:
                summary = export_sources(sources, out_dir, options, jobs=jobs)
    except KeyboardInterrupt:
        click.echo(f"interrupted: {out_dir} holds a partial export (marked {out_dir}/_PARTIAL)", err=True)
        sys.exit(130)
    if by_broker:
        _print_broker_legend(sources)
    click.echo(f"exported {summary.rows} {level} from {summary.partitions} partition replica(s), "
               f"{summary.segments} segment(s), {summary.bytes_read} bytes -> {len(summary.files)} "
               f"Parquet file(s) under {out_dir}")
    for finding in summary.findings:
        click.echo(f"Error: {finding}", err=True)
    if summary.crc_invalid_rows:
        click.echo(f"warning: {summary.crc_invalid_rows} exported {level} come from batches whose CRC "
                   "does not match (column crc_valid = false)", err=True)
    if summary.crc_invalid_rows or summary.findings:
        sys.exit(1)


def _print_broker_legend(sources) -> None:
    """Which input went to which replica= folder (several inputs may claim one broker id)."""
    from segtools.export import broker_folders

    def order(item: tuple[str, str]) -> tuple:
        parts = item[1].split("-")[1:]          # broker-<id>[-n]: numeric order, unknown last
        return tuple(int(p) if p.isdigit() else float("inf") for p in parts)

    for ident, name in sorted(broker_folders(sources).items(), key=order):
        click.echo(f"replica={name}/ <- {ident}")
