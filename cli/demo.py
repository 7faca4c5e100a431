"""`segtools demo`: the whole toolkit on embedded defaults.

Simulates a three-broker cluster in which the leader dies and a stale replica wins an unclean
election, dumps a segment like kafka-dump-log, compares the replicas on a local Spark and
exports the surviving log to Parquet.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import click

from segtools.cli.errors import TroubleError, handle_errors
from segtools.files.outputs import atomic_write

#: The embedded scenario (CONTRACT.md section 3 format). Broker 3 is paused and falls out of
#: the ISR; acks=all writes are then committed on brokers 1 and 2 only (min.insync 1); both
#: die, broker 3 comes back and, with unclean election enabled, becomes leader: committed,
#: acknowledged records are lost. The dead brokers' disks are examined as they are, before a
#: restart would truncate the evidence.
DEMO_SCENARIO = """\
name: demo-unclean-election
seed: 7
cluster:
  brokers: [1, 2, 3]
  start_time_ms: 1719975664000
  segment_bytes: 4096
  index_interval_bytes: 512
  replica_lag_time_max_ms: 10000
  truncation: leader-epoch
  metadata_log: true
topics:
  - name: orders
    partitions: 2
    replication_factor: 3
    min_insync_replicas: 1
    unclean_leader_election: true
steps:
  - produce: {topic: orders, acks: all, count: 40, value_bytes: 48}
  - pause: {broker: 3}
  - advance: {ms: 15000}
  - produce: {topic: orders, acks: all, count: 30, value_bytes: 48}
  - crash: {broker: 1}
  - crash: {broker: 2}
  - resume: {broker: 3}
  - produce: {topic: orders, acks: 1, count: 10, value_bytes: 48}
"""


def _run(command: click.Command, args: list[str]) -> int:
    """Invoke a segtools subcommand in this process and return its exit code."""
    try:
        result = command.main(args=args, prog_name=f"segtools {command.name}", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:  # commands that exit with their findings code
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    return result if isinstance(result, int) else 0


#: What the demo writes in its folder; a re-run replaces these and nothing else.
DEMO_ENTRIES = ("scenario.yaml", "cluster", "report.json", "report.html", "parquet")
#: Marks a folder as the demo's own, so running the demo again may replace its entries.
DEMO_MARKER = ".segtools-demo"


def _prepare_out(out: Path, force: bool) -> None:
    """Refuse a folder that holds anything but a previous demo run, unless --force; never
    delete anything the demo did not write."""
    if out.exists() and not out.is_dir():
        raise TroubleError(f"--out {out} exists and is not a folder")
    own = (out / DEMO_MARKER).is_file()
    if out.is_dir() and any(out.iterdir()) and not own:
        clashes = [name for name in DEMO_ENTRIES if (out / name).exists()]
        if not force:
            raise TroubleError(f"--out {out} exists and is not empty (use a new folder, or --force "
                               f"to add the demo's {', '.join(DEMO_ENTRIES)} to it)")
        if clashes:
            raise TroubleError(f"--out {out} already holds {', '.join(clashes)}, which the demo did "
                               "not write; it is never deleted: use another folder")
    out.mkdir(parents=True, exist_ok=True)
    (out / DEMO_MARKER).write_text("written by `segtools demo`; a re-run replaces "
                                   f"{', '.join(DEMO_ENTRIES)} here\n")
    for name in DEMO_ENTRIES:   # a previous demo run's entries (checked above: ours)
        entry = out / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        elif entry.exists() or entry.is_symlink():
            entry.unlink()


def _banner(text: str) -> None:
    click.secho(f"\n=== {text}", bold=True)


@click.command()
@click.option("--out", "out_dir", default="demo-out", show_default=True, type=click.Path(),
              help="Folder for everything the demo writes: new or empty, or a previous demo's "
                   "(its demo files are replaced).")
@click.option("--force", is_flag=True,
              help="Write into a non-empty --out folder that is not a previous demo's (nothing in it "
                   "is deleted; refused if it holds files of the demo's names).")
@click.option("--master", default=None, help="Spark master for the compare step (default local[*]).")
@click.option("--no-spark", is_flag=True, help="Compare in this process instead of on Spark.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def demo(out_dir: str, force: bool, master: str | None, no_spark: bool, debug: bool) -> None:
    """Simulate a cluster with a failure, dump, compare on Spark (report.json and the HTML page
report.html), export to Parquet."""
    from segtools.cli.compare import compare
    from segtools.cli.dump import dump
    from segtools.cli.export import export
    from segtools.cli.simulate import simulate

    out = Path(out_dir)
    _prepare_out(out, force)
    scenario = out / "scenario.yaml"
    atomic_write(scenario, DEMO_SCENARIO)
    cluster = out / "cluster"

    _banner(f"1/4 simulate: 3 brokers, unclean election  ->  {cluster}")
    if _run(simulate, [str(scenario), "--out", str(cluster)]) != 0:
        raise TroubleError("simulate failed")

    segment = cluster / "broker-1" / "orders-0" / "00000000000000000000.log"
    _banner(f"2/4 dump (kafka-dump-log compatible): {segment}")
    _run(dump, ["--files", str(segment), "--deep-iteration", "--print-data-log", "--max-bytes", "600"])

    report = out / "report.json"
    page = out / "report.html"
    _banner(f"3/4 compare the three replicas {'in this process' if no_spark else 'on Spark'}")
    args = [str(cluster / f"broker-{b}") for b in (1, 2, 3)]
    args += ["--report", str(report), "--html", str(page), "--acks", str(cluster / "acks.jsonl"),
             "--metadata-log", str(cluster / "controller" / "__cluster_metadata-0")]
    if master:
        args += ["--master", master]
    # the demo shows the Spark pipeline even on its small input (compare alone would run
    # in-process below its size threshold)
    args += ["--no-spark"] if no_spark else ["--spark"]
    code = _run(compare, args)
    if code not in (0, 1):
        raise TroubleError("compare failed")
    click.echo(f"report: {report} (exit code {code}: {'findings' if code == 1 else 'clean'})")
    click.echo(f"the report as a page: open {page.resolve().as_uri()} in a browser")

    parquet = out / "parquet"
    _banner(f"4/4 export the surviving leader's log to Parquet  ->  {parquet}")
    if _run(export, [str(cluster / "broker-3"), "--out", str(parquet), "--quiet"]) != 0:
        raise TroubleError("export failed")
    click.echo(f"\nDone. Everything is under {out}/ (truth: {cluster / 'truth.json'}); "
               f"the HTML report: {page}")
