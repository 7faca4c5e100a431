"""`segtools report REPORT.json --html OUT`: a compare report as one self-contained HTML file."""

from __future__ import annotations

import json
import os

import click

from segtools.cli.errors import TroubleError, handle_errors


def check_html_out(path: str, inputs: tuple[str, ...] | list[str] = ()) -> None:
    """Refuse an HTML output that exists (no silent overwrite) or lies inside an input."""
    if os.path.lexists(path):
        raise TroubleError(f"--html {path} exists; remove it or choose another name")
    for d in inputs:
        inside = os.path.realpath(d) + os.sep
        if os.path.realpath(path).startswith(inside) or os.path.realpath(path) == os.path.realpath(d):
            raise TroubleError(f"--html {path} is inside input {d}; inputs are evidence")


@click.command("report")
@click.argument("report_json", type=click.Path(exists=True, dir_okay=False))
@click.option("--html", "html_path", required=True, type=click.Path(dir_okay=False),
              help="Write the report as one self-contained HTML file (no network) to FILE.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def report(report_json: str, html_path: str, debug: bool) -> None:
    """Render a compare report (`segtools compare --report FILE`) as an HTML incident report:
    per partition, the replicas' logs as lanes over offset with the fork points and lost
    ranges, the metadata log's elections, and a filterable table of the lost records.

    \b
    Examples:
      segtools compare brokers/ --report report.json
      segtools report report.json --html report.html
    """
    from segtools.report_html import write_html

    check_html_out(html_path)
    try:
        with open(report_json, encoding="utf-8") as fh:
            data = json.load(fh)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TroubleError(f"{report_json}: not a compare report (JSON): {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("partitions"), list):
        raise TroubleError(f"{report_json}: not a compare report (no \"partitions\" list)")
    write_html(data, html_path, source=report_json)
    click.echo(f"report: wrote {html_path}", err=True)
