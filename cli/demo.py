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


def _banner(text: str) -> None:
    click.secho(f"\n=== {text}", bold=True)


@click.command()
@click.option("--out", "out_dir", default="demo-out", show_default=True, type=click.Path(),
              help="Folder for everything the demo writes (replaced if it exists).")
@click.option("--master", default=None, help="Spark master for the compare step (default local[*]).")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def demo(out_dir: str, master: str | None, debug: bool) -> None:
    """Simulate a cluster with a failure, dump, compare on Spark, export to Parquet."""
    from segtools.cli.compare import compare
    from segtools.cli.dump import dump
    from segtools.cli.export import export
    from segtools.cli.simulate import simulate

    out = Path(out_dir)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    scenario = out / "scenario.yaml"
    scenario.write_text(DEMO_SCENARIO)
    cluster = out / "cluster"

    _banner(f"1/4 simulate: 3 brokers, unclean election  ->  {cluster}")
    if _run(simulate, [str(scenario), "--out", str(cluster)]) != 0:
        raise TroubleError("simulate failed")

    segment = cluster / "broker-1" / "orders-0" / "00000000000000000000.log"
    _banner(f"2/4 dump (kafka-dump-log compatible): {segment}")
    _run(dump, ["--files", str(segment), "--deep-iteration", "--print-data-log", "--max-bytes", "600"])

    report = out / "report.json"
    _banner("3/4 compare the three replicas on Spark")
    args = [str(cluster / f"broker-{b}") for b in (1, 2, 3)]
    args += ["--report", str(report), "--acks", str(cluster / "acks.jsonl"),
             "--metadata-log", str(cluster / "controller" / "__cluster_metadata-0")]
    if master:
        args += ["--master", master]
    code = _run(compare, args)
    if code not in (0, 1):
        raise TroubleError("compare failed")
    click.echo(f"report: {report} (exit code {code}: {'findings' if code == 1 else 'clean'})")

    parquet = out / "parquet"
    _banner(f"4/4 export the surviving leader's log to Parquet  ->  {parquet}")
    if _run(export, [str(cluster / "broker-3"), "--out", str(parquet), "--quiet"]) != 0:
        raise TroubleError("export failed")
    click.echo(f"\nDone. Everything is under {out}/ (truth: {cluster / 'truth.json'}).")
