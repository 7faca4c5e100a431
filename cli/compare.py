"""`segtools compare DIR...`: divergence, truncation and lost records across replicas."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from typing import Any, Literal

import click

from segtools.cli.errors import TroubleError, handle_errors
from segtools.cli.options import ACKS_HELP, STDOUT, AcksPath, InputPath, human_output, max_batch_bytes_option
from segtools.errors import display_path

# the runner threshold and the metadata-log lookup live with segtools.compare(); kept here
# under their old names for callers of the CLI module
from segtools.forensics.api import IN_PROCESS_MAX_BYTES, default_metadata_log  # noqa: E402,F401
from segtools.primitives.visible import visible, visible_lines


@click.command("compare")
@click.argument("dirs", nargs=-1, required=True, type=InputPath(exists=True, file_okay=False))
@click.option("--report", "report_path", type=click.Path(dir_okay=False, writable=True, allow_dash=True),
              help="Write the JSON report (docs/REPORT.md) to FILE; '-': to stdout (the summary then "
                   "goes to stderr).")
@click.option("--acks", "acks_path", type=AcksPath(exists=True, dir_okay=False),
              help=ACKS_HELP + "Mark lost records as acked, and check every "
                   "acknowledged offset against every replica's lineage (on none: lost).")
@click.option("--master", default=None, help="Spark master URL (implies --spark; default local[*], "
              "or spark-submit's).")
@click.option("--tables", "tables_dir", type=click.Path(file_okay=False),
              help="Also write the intermediate tables (batches, replicas, verdicts, "
                   "divergent_records) as Parquet under DIR (implies --spark).")
@click.option("--metadata-log", "metadata_log", type=InputPath(exists=True, file_okay=False),
              help="KRaft __cluster_metadata-0 (or a dir holding it) to attribute causes. "
                   "Default: DIR/controller/__cluster_metadata-0 when DIR is a folder of "
                   "broker-* dirs that has one.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False),
              help="Also write the report as one self-contained HTML file (no network) to FILE.")
@click.option("--spark/--no-spark", "use_spark", default=None,
              help="Force the Spark runner / the in-process runner. Default: in process up to "
                   "6 GiB of segments, Spark above (or with --master / --tables).")
@click.option("--strict", is_flag=True,
              help="Refuse inputs from different clusters (cluster.id) instead of warning.")
@click.option("--lost-out", "lost_out", type=click.Path(file_okay=False),
              help="Write every lost record (key, value, headers, timestamp, offset, epoch, broker) "
                   "as lost.ndjson and lost.parquet under DIR, for segtools replay (docs/CONTRACT.md 10).")
@click.option("--max-rows", default=200, show_default=True, help="Summary rows to print.")
@click.option("--all", "all_rows", is_flag=True,
              help="Print a row for every replica; by default partitions with no findings are "
                   "summarised in one line after the problems.")
@max_batch_bytes_option()
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def compare(dirs: tuple[str, ...], report_path: str | None, acks_path: str | None, master: str | None,
            tables_dir: str | None, metadata_log: str | None, use_spark: bool | None, strict: bool,
            max_rows: int, debug: bool, max_batch_bytes: int | None = None,
            html_path: str | None = None, lost_out: str | None = None, all_rows: bool = False) -> None:
    """Compare the log dirs of several brokers (one DIR per broker, or a folder of broker-*
    dirs). The answer is lost, safe (proven) or cannot tell (naming the missing evidence:
    the metadata log, a last-ISR member's dir, --acks, ...). Exit 0 only when nothing lost is
    proven; 1 when anything is lost, diverged or corrupt, or when the evidence cannot tell;
    2 when the input cannot be used."""
    from segtools.files.outputs import atomic_write, check_output_file, check_output_location
    from segtools.forensics.api import compare as run
    from segtools.forensics.report import render_summary

    if use_spark is False and (master or tables_dir):
        raise TroubleError(f"{'--master' if master else '--tables'} needs Spark; drop --no-spark")
    # repeats are dropped (with a warning) by the resolver inside segtools.compare()
    paths = list(dirs)
    if tables_dir:
        check_output_location(tables_dir, paths, flag="--tables")
    to_stdout = report_path == STDOUT
    if report_path and not to_stdout:
        # inside an input, or an input file itself (a hard link to a checkpoint): refused
        check_output_file(report_path, paths, flag="--report")
    if html_path:
        from segtools.cli.report import check_html_out

        check_html_out(html_path, paths)
    if lost_out:
        check_output_location(lost_out, paths, flag="--lost-out")
        from segtools.bundle import redacted_bundle_of

        # a redacted bundle's records are pseudonyms: replaying them would write garbage
        for d in dirs:
            if (bundle := redacted_bundle_of(d)) is not None:
                raise click.UsageError(f"{d}: in a redacted bundle ({bundle}): its keys and values "
                                       "are pseudonyms, not records to replay; run --lost-out "
                                       "on the originals or an unredacted bundle")
    # s3://, gs://, hdfs:// inputs: read from local copies; what is printed or reported names
    # the URIs (segtools.files.remote); a no-op for local paths
    # (every DIR as given: segtools.compare() says which ones it reads once)
    local_dirs, metadata_log, acks_path = _localize(list(dirs), metadata_log, acks_path)
    engine: Literal["local", "spark", "auto"] = "auto" if use_spark is None else "spark" if use_spark else "local"
    previous = signal.signal(signal.SIGINT, _sigint)
    try:
        report = run(local_dirs, engine=engine, spark_specs=_origin_specs, acks=acks_path,
                     metadata_log=metadata_log, master=master,
                     tables_dir=tables_dir, max_batch_bytes=max_batch_bytes, strict=strict, on_note=_note,
                     in_process_max_bytes=IN_PROCESS_MAX_BYTES)
    finally:
        signal.signal(signal.SIGINT, previous)
    with human_output(to_stdout):
        click.echo(visible_lines(display_path(render_summary(report, max_rows=max_rows, all_rows=all_rows))))
        click.echo(visible_lines(display_path("\n".join(report.legend))))
    if to_stdout:
        click.echo(json.dumps(_mirror().rewrite_json(report.report_json()), indent=1))
    elif report_path:
        # temporary file + rename: never half a report, and a link at the path keeps its bytes
        atomic_write(report_path, json.dumps(_mirror().rewrite_json(report.report_json()), indent=1) + "\n")
    if lost_out:   # segtools/forensics/lost_out.py
        from segtools.forensics.lost_out import write_lost_out

        written = write_lost_out(report, report.replicas, lost_out, paths)
        _note(f"wrote {written.records} lost records to {lost_out}")
    if html_path:
        from segtools.forensics.report_html import write_html

        write_html(_mirror().rewrite_json(report.report_json()), html_path, source=", ".join(paths))
        _note(f"wrote {html_path}")
    sys.exit(report.exit_code)


def _note(text: str) -> None:
    click.echo(visible(display_path(f"compare: {text}")), err=True)


def _mirror() -> Any:
    """The local copies of this run's URI inputs (an empty Mirror for local inputs)."""
    from segtools.files.remote import Mirror

    ctx = click.get_current_context(silent=True)
    return (ctx.meta.get("segtools.mirror") if ctx else None) or Mirror()


def _origin_specs(specs: list[Any]) -> list[Any]:
    """Spark's executors read the segments from the object store itself, not the driver's copy."""
    from segtools.files.remote import origin_specs

    return origin_specs(specs, _mirror())


def _localize(paths: list[str], metadata_log: str | None, acks_path: str | None
              ) -> tuple[list[str], str | None, str | None]:
    """Copy URI inputs (broker dirs, --metadata-log, --acks) to a temporary tree removed when
    the command ends, and print through the mirror so users see their URIs."""
    from segtools.files.remote import RewritingStream, is_remote, mirror_inputs

    extra = [p for p in (metadata_log, acks_path) if p]
    if not any(is_remote(p) for p in [*paths, *extra]):
        return list(paths), metadata_log, acks_path
    ctx = click.get_current_context()
    # a URI named twice is copied once; both names lead to that copy, which the resolver
    # then reads once (and says so), as it does for a local dir named twice
    keys = [p.rstrip("/") if is_remote(p) else p for p in paths]
    once = list(dict.fromkeys(keys))
    mirror = ctx.with_resource(mirror_inputs([*once, *extra]))
    ctx.meta["segtools.mirror"] = mirror
    ctx.with_resource(contextlib.redirect_stdout(RewritingStream(sys.stdout, mirror)))
    ctx.with_resource(contextlib.redirect_stderr(RewritingStream(sys.stderr, mirror)))
    copy_of = dict(zip(once, mirror.paths[:len(once)]))
    rest = list(mirror.paths[len(once):])
    return ([copy_of[k] for k in keys], rest.pop(0) if metadata_log else None,
            rest.pop(0) if acks_path else None)


def _sigint(signum: int, frame: Any) -> None:
    """Ctrl-C: with Spark started (or starting), stop its JVM and leave in one line; before
    that, the usual KeyboardInterrupt."""
    if "pyspark" in sys.modules:
        _interrupted(signum, frame)
    raise KeyboardInterrupt


def _children(pid: int) -> list[int]:
    """Direct child processes of ``pid`` (Linux /proc; empty elsewhere)."""
    out: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return out


def _interrupted(signum: int, frame: Any) -> None:
    """Ctrl-C while Spark runs: say so in one line and leave at once. Raising
    KeyboardInterrupt inside a py4j call makes py4j print tracebacks. pyspark starts its JVM
    with SIGINT ignored; it is stopped here (also while it is still starting, when pyspark
    does not know it yet) so that it neither outlives us nor writes after our last line."""
    import time

    jvms = set(_children(os.getpid()))
    try:
        from pyspark import SparkContext

        proc = getattr(getattr(SparkContext, "_gateway", None), "proc", None)
        if proc is not None:
            jvms.add(proc.pid)
    except Exception:  # noqa: BLE001 - leaving anyway
        pass
    for pid in jvms:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + 10
    while jvms and time.monotonic() < deadline:
        for pid in list(jvms):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    jvms.discard(pid)
            except ChildProcessError:
                jvms.discard(pid)
        time.sleep(0.05)
    for pid in jvms:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except OSError:
            pass
    sys.stderr.write("interrupted\n")
    sys.stderr.flush()
    os._exit(130)
