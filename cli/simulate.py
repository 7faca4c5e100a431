"""`segtools simulate SCENARIO --out DIR`: write real Kafka log dirs and the ground truth, with
the model (default) or a real Kafka cluster (`--engine kafka`)."""

from __future__ import annotations

import click

from segtools.cli.errors import handle_errors


@click.command("simulate")
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="New or empty directory for broker-<id>/, controller/, acks.jsonl, truth.json.")
@click.option("--seed", type=int, default=None, help="Override the scenario's seed.")
@click.option("--engine", type=click.Choice(["model", "kafka"]), default="model", show_default=True,
              help="model: the deterministic simulator; kafka: a real KRaft cluster on 127.0.0.1 "
                   "(needs Java 17+ and the clients of segtools[kafka]; docs/CONTRACT.md 3.1 lists "
                   "what it runs and refuses).")
@click.option("--kafka-home", type=click.Path(exists=True, file_okay=False), default=None,
              help="With --engine kafka: an installed Kafka distribution (bin/, libs/) instead "
                   "of the pinned jars resolved with Maven.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def simulate(scenario: str, out_dir: str, seed: int | None, engine: str, kafka_home: str | None,
             debug: bool) -> None:
    """Run the replicated-cluster SCENARIO (YAML/JSON, docs/CONTRACT.md section 3) into DIR.

    With the model, the same scenario and seed always give byte-identical output. With
    --engine kafka, every step is a real action on real brokers (docs/CONTRACT.md section 3.1;
    README: "the real engine").
    """
    from segtools.simulate import load_scenario, run

    if kafka_home is not None and engine != "kafka":
        raise click.UsageError("--kafka-home needs --engine kafka")
    parsed = load_scenario(scenario, seed=seed)
    if engine == "kafka":
        from segtools.realcluster import check_supported, run_on_kafka
        from segtools.realcluster.processes import install_handlers

        check_supported(parsed)  # before anything starts
        install_handlers(signals=True)
        result = run_on_kafka(parsed, out_dir, kafka_home=kafka_home)
    else:
        result = run(parsed, out_dir)
    lost = sum(len(p["lost"]) for p in result.truth.values())
    acked = sum(1 for a in result.acks if a["ok"])
    click.echo(f"{len(result.acks)} records produced, {acked} acknowledged, {lost} lost; "
               f"wrote {out_dir}")
