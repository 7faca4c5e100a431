"""`segtools simulate SCENARIO --out DIR`: write real Kafka log dirs and the ground truth."""

from __future__ import annotations

import click

from segtools.cli.errors import handle_errors


@click.command("simulate")
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="New or empty directory for broker-<id>/, controller/, acks.jsonl, truth.json.")
@click.option("--seed", type=int, default=None, help="Override the scenario's seed.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def simulate(scenario: str, out_dir: str, seed: int | None, debug: bool) -> None:
    """Run the replicated-cluster SCENARIO (YAML/JSON, docs/CONTRACT.md section 3) into DIR.

    The same scenario and seed always give byte-identical output.
    """
    from segtools.simulate import load_scenario, run

    parsed = load_scenario(scenario, seed=seed)
    result = run(parsed, out_dir)
    lost = sum(len(p["lost"]) for p in result.truth.values())
    acked = sum(1 for a in result.acks if a["ok"])
    click.echo(f"{len(result.acks)} records produced, {acked} acknowledged, {lost} lost; "
               f"wrote {out_dir}")
