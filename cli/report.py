"""`segtools report REPORT.json --html OUT`: a compare report as one self-contained HTML file."""

from __future__ import annotations

import json
import os

import click

from segtools.cli.errors import TroubleError, handle_errors


def check_html_out(path: str, inputs: tuple[str, ...] | list[str] = (), *, force: bool = False,
                   force_flag: str | None = None) -> None:
    """Refuse an HTML output inside an input or that is an input file (segtools.files.outputs), and
    one that exists unless ``force`` (no silent overwrite)."""
    from segtools.files.outputs import check_output_file

    check_output_file(path, inputs, flag="--html", overwrite=True)
    if not force and os.path.lexists(path):
        hint = f" (or {force_flag} to replace it)" if force_flag else ""
        raise TroubleError(f"--html {path} exists; remove it or choose another name{hint}")


@click.command("report")
@click.argument("report_json", type=click.Path(exists=True, dir_okay=False))
@click.option("--html", "html_path", required=True, type=click.Path(dir_okay=False),
              help="Write the report as one self-contained HTML file (no network) to FILE.")
@click.option("--force", is_flag=True, help="Replace FILE if it exists.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def report(report_json: str, html_path: str, force: bool, debug: bool) -> None:
    """Render a compare report (`segtools compare --report FILE`) as an HTML incident report:
    per partition, the replicas' logs as lanes over offset with the fork points and lost
    ranges, the metadata log's elections, and a filterable table of the lost records.

    The report comes from `segtools compare DIR... --report report.json` (compare can also
    write the page itself with --html).

    \b
    Examples:
      segtools report report.json --html report.html
      segtools report incident/report.json --html incident.html --force
    """
    from segtools.forensics.report_html import write_html

    check_html_out(html_path, [report_json], force=force, force_flag="--force")
    try:
        with open(report_json, encoding="utf-8") as fh:
            data = json.load(fh)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TroubleError(f"{report_json}: not a compare report (JSON): {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("partitions"), list):
        raise TroubleError(f"{report_json}: not a compare report (no \"partitions\" list)")
    try:
        write_html(data, html_path, source=report_json)
    except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
        # a hand-edited or foreign file: the shape is not report.json's
        raise TroubleError(f"{report_json}: not a compare report (unexpected shape: {exc})") from None
    click.echo(f"report: wrote {html_path}", err=True)
