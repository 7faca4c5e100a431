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
@click.option("--kafka-version", default=None,
              help="With --engine kafka: the Kafka release to run, one of "
                   "4.0.0, 4.1.0, 4.2.0, 4.3.1, 4.4.0 (default: the newest); its jars are "
                   "resolved by Maven.")
@click.option("--allow-drift", is_flag=True,
              help="With --engine kafka: keep going when the cluster does not reach a step's "
                   "state or tells another story than the model (marked in truth.json and "
                   "kafka/run.json) instead of failing.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def simulate(scenario: str, out_dir: str, seed: int | None, engine: str, kafka_home: str | None,
             kafka_version: str | None, allow_drift: bool, debug: bool) -> None:
    """Run the replicated-cluster SCENARIO (YAML/JSON, docs/CONTRACT.md section 3) into DIR.

    With the model, the same scenario and seed always give byte-identical output. With
    --engine kafka, every step is a real action on real brokers (docs/CONTRACT.md section 3.1;
    README: "the real engine").
    """
    from segtools.simulate import load_scenario, run

    for flag, given in (("--kafka-home", kafka_home is not None),
                        ("--kafka-version", kafka_version is not None), ("--allow-drift", allow_drift)):
        if given and engine != "kafka":
            raise click.UsageError(f"{flag} needs --engine kafka")
    if kafka_home is not None and kafka_version is not None:
        raise click.UsageError("--kafka-home and --kafka-version exclude each other")
    if kafka_version is not None:
        from segtools.realcluster.kafka_runtime import KAFKA_VERSIONS

        if kafka_version not in KAFKA_VERSIONS:
            raise click.UsageError(f"--kafka-version {kafka_version}: not one of the releases "
                                   f"segtools runs: {', '.join(KAFKA_VERSIONS)}")
    parsed = load_scenario(scenario, seed=seed)
    if engine == "kafka":
        from segtools.realcluster import check_supported, run_on_kafka
        from segtools.realcluster.processes import install_handlers

        check_supported(parsed)  # before anything starts
        install_handlers(signals=True)
        from segtools.realcluster.steps import DriftError

        try:
            result = run_on_kafka(parsed, out_dir, kafka_home=kafka_home,
                                  kafka_version=kafka_version, allow_drift=allow_drift)
        except DriftError as exc:
            if debug:
                raise
            # a finding about the run (exit 1), not unusable input: OUT/kafka/run.json has it all
            click.echo(f"Error: {exc}", err=True)
            raise click.exceptions.Exit(exc.exit_code) from None
    else:
        result = run(parsed, out_dir)
    lost = sum(len(p["lost"]) for p in result.truth.values())
    acked = sum(1 for a in result.acks if a["ok"])
    click.echo(f"{len(result.acks)} records produced, {acked} acknowledged, {lost} lost; "
               f"wrote {out_dir}")

