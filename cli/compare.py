"""`segtools compare DIR...`: divergence, truncation and lost records across replicas."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sys
from typing import Any

import click

from segtools.cli.errors import TroubleError, handle_errors
from segtools.cli.options import InputPath, max_batch_bytes_option
from segtools.errors import display_path, is_utf8

#: Inputs up to this many bytes of segments run in this process; larger ones on Spark.
#: Measured on the project's 2-core machine (benchmarks/bench_compare.py data, cold CLI runs,
#: README "segtools compare: runner, legend, report"): the in-process runner was faster than
#: local Spark at every size measured, 0.5 GB to 6.1 GB (6.1 GB: 14 s vs 261 s; Spark pays
#: 20 s or more to start its JVM and has the same 2 cores); the threshold is the largest
#: measured size.
IN_PROCESS_MAX_BYTES = 6 << 30


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
@click.argument("dirs", nargs=-1, required=True, type=InputPath(exists=True, file_okay=False))
@click.option("--report", "report_path", type=click.Path(dir_okay=False, writable=True),
              help="Write the JSON report (docs/REPORT.md) to FILE.")
@click.option("--acks", "acks_path", type=InputPath(exists=True, dir_okay=False),
              help="Producer acks (acks.jsonl) to mark lost records as acked.")
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
@click.option("--max-rows", default=200, show_default=True, help="Summary rows to print.")
@max_batch_bytes_option()
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def compare(dirs: tuple[str, ...], report_path: str | None, acks_path: str | None, master: str | None,
            tables_dir: str | None, metadata_log: str | None, use_spark: bool | None, strict: bool,
            max_rows: int, debug: bool, max_batch_bytes: int | None = None,
            html_path: str | None = None) -> None:
    """Compare the log dirs of several brokers (one DIR per broker, or a folder of broker-*
    dirs). Exit 0 when every replica is consistent or a lagging prefix, 1 when anything is
    lost, diverged or corrupt, 2 when the input cannot be used."""
    from segtools.errors import SegtoolsError
    from segtools.forensics.collect import discover_replicas
    from segtools.forensics.elections import load_histories
    from segtools.forensics.inputs import check_inputs, unique_inputs
    from segtools.forensics.loss import AckIndex
    from segtools.forensics.report import render_summary
    from segtools.limits import MAX_BATCH_BYTES_ENV
    from segtools.outputs import atomic_write, check_output_file, check_output_location

    if max_batch_bytes is not None:
        # every reader of the run (in process, and Spark's Python workers, which inherit the
        # environment) takes the limit from here; restored when the command ends, so an
        # in-process caller (a test, a notebook) keeps its own default afterwards
        previous = os.environ.get(MAX_BATCH_BYTES_ENV)
        os.environ[MAX_BATCH_BYTES_ENV] = str(max_batch_bytes)
        click.get_current_context().call_on_close(lambda: _restore_env(MAX_BATCH_BYTES_ENV, previous))
    if use_spark is False and (master or tables_dir):
        raise TroubleError(f"{'--master' if master else '--tables'} needs Spark; drop --no-spark")
    paths, warnings = unique_inputs(dirs)
    if tables_dir:
        check_output_location(tables_dir, paths, flag="--tables")
    if report_path:
        # inside an input, or an input file itself (a hard link to a checkpoint): refused
        check_output_file(report_path, paths, flag="--report")
    if html_path:
        from segtools.cli.report import check_html_out

        check_html_out(html_path, paths)
    # s3://, gs://, hdfs:// inputs: read from local copies; what is printed or reported names
    # the URIs (segtools.remote); a no-op for local paths
    paths, metadata_log, acks_path = _localize(paths, metadata_log, acks_path)
    acks = AckIndex.load(acks_path) if acks_path else None
    histories = load_histories(metadata_log) if metadata_log else None
    auto_log = None if metadata_log else default_metadata_log(paths)
    if auto_log:
        # found, not asked for: a log that cannot be replayed only costs the causes
        try:
            histories = load_histories(auto_log)
            _note(f"using the controller's metadata log {auto_log}")
        except SegtoolsError as exc:
            _note(f"ignoring the controller's metadata log: {exc}")
    from segtools.sources import resolve

    resolution = resolve(paths)   # links out of the input, nested duplicates, copies
    warnings += [w.message for w in resolution.messages]
    specs = discover_replicas(paths, resolution, warnings=warnings)
    check = check_inputs(paths, specs)
    warnings += check.warnings
    for w in warnings:
        _note(f"warning: {w}")
    if strict and check.cluster_conflict:
        raise TroubleError(f"{check.cluster_conflict} (--strict)")
    total = sum(size for s in specs for _p, size in s.segments)
    spark_wanted = use_spark if use_spark is not None else bool(
        master or tables_dir or total > IN_PROCESS_MAX_BYTES)
    odd = next((s.partition_dir for s in specs if not is_utf8(s.partition_dir)), None)
    if spark_wanted and odd is not None:
        # Spark reads through pyarrow filesystems, which take UTF-8 paths only
        raise TroubleError(f"{display_path(odd)}: a path that is not UTF-8 cannot be read on Spark; "
                           "run compare with --no-spark (or rename a copy of the evidence)")
    if not spark_wanted:
        from segtools.forensics.pipeline import compare_in_process

        runner = "in-process"
        report = compare_in_process(paths, acks=acks, histories=histories, specs=specs)
    else:
        runner = "spark"
        from segtools.remote import origin_specs

        # the executors read the segments from the object store itself, not the driver's copy
        report = _run_on_spark(paths, origin_specs(specs, _mirror()), total, master=master, acks=acks,
                               histories=histories,
                               tables_dir=tables_dir, forced=use_spark is True)
    if histories is not None:
        report.broker_events = list(getattr(histories, "brokers", []))
    click.echo(display_path(render_summary(report, max_rows=max_rows)))
    click.echo(display_path("\n".join(check.legend_lines())))
    doc = _mirror().rewrite_json(report.report_json(inputs=check.to_json(), warnings=warnings, runner=runner))
    if report_path:
        # temporary file + rename: never half a report, and a link at the path keeps its bytes
        atomic_write(report_path, json.dumps(doc, indent=1) + "\n")
    if html_path:
        from segtools.report_html import write_html

        write_html(doc, html_path, source=_mirror().rewrite(", ".join(paths)))
        _note(f"wrote {html_path}")
    sys.exit(report.exit_code)


def _note(text: str) -> None:
    click.echo(display_path(f"compare: {text}"), err=True)


def _mirror() -> Any:
    """The local copies of this run's URI inputs (an empty Mirror for local inputs)."""
    from segtools.remote import Mirror

    ctx = click.get_current_context(silent=True)
    return (ctx.meta.get("segtools.mirror") if ctx else None) or Mirror()


def _localize(paths: list[str], metadata_log: str | None, acks_path: str | None
              ) -> tuple[list[str], str | None, str | None]:
    """Copy URI inputs (broker dirs, --metadata-log, --acks) to a temporary tree removed when
    the command ends, and print through the mirror so users see their URIs."""
    from segtools.remote import RewritingStream, is_remote, mirror_inputs

    extra = [p for p in (metadata_log, acks_path) if p]
    if not any(is_remote(p) for p in [*paths, *extra]):
        return paths, metadata_log, acks_path
    ctx = click.get_current_context()
    mirror = ctx.with_resource(mirror_inputs([*paths, *extra]))
    ctx.meta["segtools.mirror"] = mirror
    ctx.with_resource(contextlib.redirect_stdout(RewritingStream(sys.stdout, mirror)))
    ctx.with_resource(contextlib.redirect_stderr(RewritingStream(sys.stderr, mirror)))
    rest = list(mirror.paths[len(paths):])
    return (list(mirror.paths[:len(paths)]), rest.pop(0) if metadata_log else None,
            rest.pop(0) if acks_path else None)



def _run_on_spark(paths: list[str], specs: list[Any], total: int, *, master: str | None, acks: Any,
                  histories: Any, tables_dir: str | None, forced: bool) -> Any:
    from segtools.spark import session

    session.require_pyspark()
    from segtools.spark.compare_job import run_compare

    if "SPARK_SUBMIT" not in os.environ and not os.environ.get("PYSPARK_GATEWAY_PORT"):
        session.check_java()          # before the line below: no usable Java is one line
    why = ("--spark" if forced else "--master" if master else "--tables" if tables_dir else
           f"above the {IN_PROCESS_MAX_BYTES / 2**30:g} GiB in-process threshold")
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:            # spark-submit, a notebook, a test: its session, its UI
        _note(f"running on the active Spark session ({why}); Spark UI "
              f"{active.sparkContext.uiWebUrl or 'disabled'}")
        return run_compare(active, paths, acks=acks, histories=histories, tables_dir=tables_dir, specs=specs)
    # One line on stderr, before the ~20 s JVM start: what starts, why, where its UI will be.
    port = _free_port()
    host = "localhost" if (master or "local").startswith("local") else _hostname()
    _note(f"starting Spark ({master or 'local[*]'}) for {total / 2**20:.1f} MiB of segments "
          f"({why}); Spark UI http://{host}:{port}")
    previous = signal.signal(signal.SIGINT, _interrupted)
    try:
        spark = session.get_spark(master=master, app_name="segtools-compare",
                                  config={"spark.ui.port": str(port)})
        ui = spark.sparkContext.uiWebUrl
        if ui and not ui.rstrip("/").endswith(f":{port}"):
            _note(f"Spark UI moved to {ui}")      # the port was taken meanwhile
        return run_compare(spark, paths, acks=acks, histories=histories, tables_dir=tables_dir, specs=specs)
    finally:
        signal.signal(signal.SIGINT, previous)


def _restore_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def _free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _hostname() -> str:
    import socket

    return socket.gethostname()


def _children(pid: int) -> list[int]:
    """Direct child processes of ``pid`` (Linux /proc; empty elsewhere)."""
    out = []
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
