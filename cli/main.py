"""The `segtools` click group. Subcommands are imported only when invoked, so `segtools dump`
never pays for pyspark or other heavy imports."""

from __future__ import annotations

import importlib
import sys

import click

# name -> "module:attribute" of a click.Command
SUBCOMMANDS: dict[str, str] = {
    "dump": "segtools.cli.dump:dump",
    "simulate": "segtools.cli.simulate:simulate",
    "compare": "segtools.cli.compare:compare",
    "export": "segtools.cli.export:export",
    "demo": "segtools.cli.demo:demo",
    "report": "segtools.cli.report:report",
    "salvage": "segtools.cli.salvage:salvage",
    "replay": "segtools.cli.replay:replay",
    "advise": "segtools.cli.advise:advise",
    "quorum": "segtools.cli.quorum:quorum",
    "collect": "segtools.cli.bundle:collect",
    "verify": "segtools.cli.bundle:verify",
    "docs": "segtools.cli.docs:docs",
    "tier": "segtools.cli.tier:tier",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # The group docstring lists the commands; importing each one here would make
        # `segtools --help` pay for pyspark.
        return None

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = SUBCOMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command = getattr(importlib.import_module(module_name), attr)
        from segtools.cli.examples import add_examples

        add_examples(name, command)
        return command


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """The version plus the Kafka releases segtools matches (imported only when asked)."""
    if not value or ctx.resilient_parsing:
        return
    from segtools.dump.options import KAFKA_VERSIONS as DUMP_TEXTS
    from segtools.realcluster.kafka_runtime import KAFKA_VERSION, KAFKA_VERSIONS
    from segtools.version import __version__

    click.echo(f"segtools, version {__version__}")
    click.echo(f"dump text of kafka-dump-log: Kafka {', '.join(DUMP_TEXTS)} (--kafka-version)")
    click.echo(f"real Kafka it runs (simulate --engine kafka, tests): {', '.join(KAFKA_VERSIONS)}; "
               f"default {KAFKA_VERSION}")
    click.echo("reads log dirs written by Kafka 0.8 and later (message formats v0, v1, v2)")
    ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and the Kafka releases it matches, and exit.")
def cli() -> None:
    """Forensics for Apache Kafka log directories.

    \b
    dump      kafka-dump-log drop-in (+ JSON, whole directories)
    compare   find divergence and lost records across replicas (Spark)
    export    batches and records to Parquet in Spark's Kafka schema
    simulate  write real Kafka log dirs from a replicated-cluster scenario
    demo      all of the above on embedded defaults
    report    a compare report (JSON) as a self-contained HTML file
    salvage   rebuild a corrupt segment's intact batches into a new folder
    replay    produce the records of compare --lost-out back to a live cluster, once
    advise    which replica to elect for an offline partition, and what each choice loses
    quorum    audit the controllers' metadata logs: divergence, split brain, committed prefix
    collect   copy brokers' evidence into a sealed bundle before anything restarts
    verify    check a bundle against its SHA-256 manifest
    tier      audit tiered storage: remote segment states, lineage, coverage
    docs      the documentation, offline (start with: segtools docs RUNBOOK)

    `segtools COMMAND --help` shows each command's options and examples. The docs ship with
    the package: `segtools docs` lists them (docs/RUNBOOK.md for an incident,
    docs/CONTRACT.md for commands, formats and exit codes).
    """


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="segtools")


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])
