"""`segtools collect` and `segtools verify`: copy the evidence before anything restarts, and
check later that the copy is what was collected (segtools/bundle.py does the work;
docs/CONTRACT.md "segtools collect / verify")."""

from __future__ import annotations

import json
import sys

import click

from segtools.cli.errors import handle_errors


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("log_dirs", nargs=-1, type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", required=True,
              help="New (or empty) folder for the bundle; never inside an input.")
@click.option("--topic", "topics", multiple=True,
              help="Collect only these topics' partition dirs (repeatable); __cluster_metadata "
                   "and the broker's checkpoints and meta.properties are always collected.")
@click.option("--metadata-dir", "metadata_dirs", multiple=True,
              type=click.Path(exists=True, file_okay=False),
              help="A controller's metadata log dir (KRaft controllers that are not brokers); "
                   "repeatable.")
@click.option("--redact", is_flag=True,
              help="Replace record keys, values and header values of user topics by same-length "
                   "pseudonyms, keeping sizes, offsets, timestamps, producer fields, control "
                   "batches and CRC validity, so compare/advise/report answer the same "
                   "(docs/USAGE.md \"Redacted bundles\").")
@click.option("--redact-salt", "redact_salt", metavar="HEX",
              help="Key of the pseudonyms (hex; default: random, not kept). Give the same salt "
                   "to bundles collected in separate runs that will be compared together.")
@click.option("-q", "--quiet", is_flag=True, help="Only the exit status and warnings.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def collect(log_dirs: tuple[str, ...], out_dir: str, topics: tuple[str, ...],
            metadata_dirs: tuple[str, ...], redact: bool, redact_salt: str | None, quiet: bool,
            debug: bool) -> None:
    """Copy the evidence of an incident from brokers' LOG_DIRS (broker log dirs or a folder of
    them) into a new bundle, read-only, before any broker restarts: a restarted replica
    truncates its log, and with it the proof of what was lost. The bundle is a folder of
    broker dirs that every segtools command reads, plus MANIFEST.json and SHA256SUMS (check
    it with `segtools verify BUNDLE` or `sha256sum -c SHA256SUMS` inside it).

    Exit status: 0 collected, 1 collected but a file changed while it was copied (a broker
    still running: stop it or collect again), 2 unusable input or usage error.
    """
    from segtools.bundle import collect as run

    salt = None
    if redact_salt is not None:
        if not redact:
            raise click.UsageError("--redact-salt needs --redact")
        try:
            salt = bytes.fromhex(redact_salt)
        except ValueError:
            raise click.BadParameter("not hex digits", param_hint="--redact-salt") from None
        if len(salt) < 8:
            raise click.BadParameter("at least 8 bytes (16 hex digits)", param_hint="--redact-salt")
    result = run(log_dirs, out_dir, topics=topics or None, metadata_dirs=metadata_dirs,
                 redact=redact, redact_salt=salt)
    if result.redactor is not None:
        for note in result.redaction_notes[:5]:
            click.echo(f"segtools: {note['path']} @ position {note['position']} "
                       f"(baseOffset={note['base_offset']}): {note['note']}", err=True)
        if len(result.redaction_notes) > 5:
            click.echo(f"segtools: {len(result.redaction_notes) - 5} more redaction notes in "
                       "MANIFEST.json (redaction.notes)", err=True)
    for item in result.skipped:
        click.echo(f"segtools: skipped {item['path']}: {item['reason']}", err=True)
    for f in result.changed:
        click.echo(f"segtools: {f.source} changed while it was copied (is the broker still "
                   "running?); the manifest records the bytes that were read", err=True)
    if result.auto_metadata is not None:
        click.echo(f"segtools: also collected the controller's metadata log next to the broker "
                   f"dirs (as {result.auto_metadata}), as compare would read it", err=True)
    if not quiet:
        names = ", ".join(s["name"] for s in result.sources)
        click.echo(f"collected {len(result.files)} files ({result.bytes} bytes) from "
                   f"{len(result.sources)} log dirs ({names}) into {result.bundle}")
        if result.redactor is not None:
            r = result.redactor
            click.echo(f"redacted {r.redacted} of {r.batches} batches of user topics "
                       f"({r.control_kept} control batches kept as they were); "
                       f"{len(result.redaction_notes)} notes in MANIFEST.json")
        click.echo(f"check it later with: segtools verify {result.bundle}")
    sys.exit(1 if result.changed else 0)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("bundle", type=click.Path(exists=True, file_okay=False))
@click.option("--output", "output", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="json: one object on stdout (schema_version, problems).")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def verify(bundle: str, output: str, debug: bool) -> None:
    """Check that BUNDLE (made by `segtools collect`) holds exactly the files its manifest
    lists, byte for byte (SHA-256): names every changed, missing or extra file and an
    interrupted collect.

    Exit status: 0 intact, 1 something differs, 2 not a bundle or usage error.
    """
    from segtools.bundle import verify as run

    result = run(bundle)
    if output == "json":
        click.echo(json.dumps(result.to_json(), indent=1))
    else:
        for problem in result.problems:
            click.echo(str(problem))
        state = "intact" if result.ok else f"{len(result.problems)} problems"
        click.echo(f"{result.bundle}: {result.checked} files checked, {state}")
    sys.exit(0 if result.ok else 1)
