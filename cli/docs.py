"""`segtools docs`: the documentation that ships inside the package, readable where segtools
is installed (an incident host has no browser and maybe no copy of the repository)."""

from __future__ import annotations

import os
import sys
from importlib import resources

import click

from segtools.cli.errors import TroubleError, handle_errors

#: the order a new user reads them in, with what each answers
GUIDE: tuple[tuple[str, str], ...] = (
    ("README", "the map: every document below, as guide, reference and spec"),
    ("RUNBOOK", "an incident step by step: collect, verify, compare, advise, replay, salvage"),
    ("USAGE", "set-up, every command's examples and outputs, Spark, the Python API"),
    ("SIMULATOR", "the samples, and scenarios on a real Kafka cluster"),
    ("CONTRACT", "every command, flag, file format, JSON field and exit code"),
    ("REPORT", "compare's report: every status, finding code and field"),
    ("ACKS", "producer truth for --acks: client logs, CSV, kcat -J, console-consumer; what each proves"),
    ("DUMP_LOG", "kafka-dump-log's flags and text, per Kafka release"),
    ("QUORUM", "segtools quorum: the controllers' metadata logs audited together"),
    ("FORENSICS", "how loss is decided: replication semantics, scenarios, detection rules"),
    ("FORMATS", "the byte layouts of every file in a Kafka log dir"),
    ("ENGINES", "simulate's two engines (model, real Kafka): releases, time, checks, differences"),
    ("TIER", "tiered storage audit: remote segment states, lineage, coverage, findings"),
    ("SCALE", "sizes, memory and runners"),
    ("ARCHITECTURE", "how the code is laid out"),
    ("CONVENTIONS", "the project's coding decisions"),
)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("name", required=False)
@click.option("--path", "show_path", is_flag=True, help="Print the folder the docs are in.")
@click.option("--schema", "schema_name", metavar="NAME",
              help="Print the JSON Schema of one JSON output (e.g. compare-report, dump-ndjson); "
                   "'list' names every JSON output and its schema.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def docs(name: str | None, show_path: bool, schema_name: str | None, debug: bool) -> None:
    """Read segtools' documentation offline: without NAME, the list; with NAME (e.g. RUNBOOK,
    CONTRACT, REPORT), that document as Markdown on stdout.

    Exit status: 0 shown, 2 no such document.
    """
    if schema_name is not None:
        _schema(schema_name)
        return
    try:
        folder = resources.files("segtools.docs")
    except ModuleNotFoundError:   # an install made without the docs package
        raise TroubleError("the docs are not installed with this segtools; they are in the "
                           "repository's docs/ folder") from None
    if show_path:
        click.echo(str(folder))
        return
    if name is None:
        for doc, what in GUIDE:
            click.echo(f"{doc:<13} {what}")
        click.echo("\nsegtools docs NAME shows one (e.g. segtools docs RUNBOOK | less)")
        click.echo("segtools docs --schema list: the JSON Schema of every JSON output")
        return
    wanted = name.upper().removesuffix(".MD")
    page = folder.joinpath(f"{wanted}.md")
    if wanted not in {doc for doc, _ in GUIDE} or not page.is_file():
        raise TroubleError(f"no document {name!r}; one of: {', '.join(doc for doc, _ in GUIDE)}")
    try:
        click.echo(page.read_text(encoding="utf-8"), nl=False)
    except BrokenPipeError:   # `segtools docs CONTRACT | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _schema(name: str) -> None:
    """One shipped JSON Schema on stdout, or (``list``) every JSON output and its schema."""
    import json

    from segtools import schemas

    if name == "list":
        for output, schema in schemas.OUTPUTS.items():
            click.echo(f"{schema:<17} {output}")
        return
    if name not in schemas.NAMES:
        raise TroubleError(f"no schema {name!r}; one of: {', '.join(schemas.NAMES)}")
    click.echo(json.dumps(schemas.load(name), indent=1))
