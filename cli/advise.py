"""`segtools advise`: per candidate leader of an offline partition, the records the other
replicas would lose if it were elected, ranked, with the commands (segtools/advise.py;
docs/CONTRACT.md section 11)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from segtools.cli.errors import handle_errors
from segtools.cli.options import ACKS_HELP, STDOUT, AcksPath, human_output

#: ``schema_version`` on each element of ``advise --json`` (segtools/schemas/advise.schema.json)
ADVISE_SCHEMA_VERSION = 1


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--acks", "acks_path", type=AcksPath(exists=True, dir_okay=False),
              help=ACKS_HELP + "Split lost records into acked and never acknowledged, "
                   "and count acked records that no given replica holds.")
@click.option("--metadata-log", "metadata_log", type=click.Path(exists=True, file_okay=False),
              help="KRaft __cluster_metadata-0 (or a dir holding it): the partition's last ISR, "
                   "ELR, leader epoch and assignment, so each candidate's election is known to "
                   "be clean or unclean. Default: DIR/controller/__cluster_metadata-0 when DIR "
                   "is a folder of broker-* dirs that has one.")
@click.option("--no-metadata-log", "no_metadata_log", is_flag=True,
              help="Do not look for the controller's metadata log next to the broker dirs.")
@click.option("--topic", default=None, help="Only this topic.")
@click.option("--partition", type=int, default=None, help="Only this partition.")
@click.option("--bootstrap-server", "bootstrap", default="BROKER:9092", show_default=True,
              help="Put into the printed kafka-* commands.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, allow_dash=True),
              help="Also write the advice as JSON to FILE (every candidate and lost record); "
                   "'-': to stdout (the text then goes to stderr).")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def advise(dirs: tuple[str, ...], acks_path: str | None, metadata_log: str | None,
           no_metadata_log: bool, topic: str | None, partition: int | None,
           bootstrap: str, json_path: str | None, debug: bool) -> None:
    """DIRS: the log dirs (one per broker, or a folder of broker-* dirs) holding an offline
    partition's replicas (and, found next to them or given with --metadata-log, the
    controller's metadata log: last ISR/ELR, clean or unclean election per candidate). For
    each candidate leader, the records every other replica would
    lose if it were elected (following the leader-epoch lineage, as followers truncate),
    split into committed / acked / never acknowledged, candidates ranked best first, and the
    kafka-reassign-partitions / kafka-leader-election commands for the best one.

    Each partition gets a verdict: safe (proven: every replica of the partition given, per
    the metadata log, and the best candidate loses nothing, not even a record known only
    from --acks), lost (every candidate loses records; counted with them), or cannot tell
    (naming the missing evidence: a replica's log dir, above all the last ISR/ELR member's,
    or the metadata log, without which the replica set is unknown; the costs are then lower
    bounds and no candidate is recommended while a clean one is missing). Records at the
    same offset and leader epoch with different data are a conflict, counted as lost.

    Exit status: 0 every partition safe, 1 a partition lost or cannot tell, 2 unusable input
    or usage error.
    """
    from segtools.files.outputs import atomic_write, check_output_file

    to_stdout = json_path == STDOUT
    if json_path and not to_stdout:
        check_output_file(json_path, list(dirs), flag="--json")
    with human_output(to_stdout):
        worst, result = _advise_text(list(dirs), acks_path, metadata_log, no_metadata_log, topic, partition,
                                     bootstrap)
    # the document stays an array (docs/CONTRACT.md section 11): each element carries the version
    doc = json.dumps([{"schema_version": ADVISE_SCHEMA_VERSION, **a.to_json(bootstrap)} for a in result], indent=1)
    if to_stdout:
        click.echo(doc)
    elif json_path:
        atomic_write(json_path, doc + "\n")
    sys.exit(worst)


def _advise_text(dirs: list[str], acks_path: str | None, metadata_log: str | None, no_metadata_log: bool,
                 topic: str | None, partition: int | None, bootstrap: str) -> tuple[int, list[Any]]:
    """Run advise and print its text; (exit status, the advice per partition)."""
    from segtools.advise import advise as run
    from segtools.primitives.visible import visible

    result = run(dirs, acks_path=acks_path, topic=topic, partition=partition,
                 metadata_log=metadata_log, find_metadata_log=not no_metadata_log,
                 on_note=lambda text: click.echo(visible(text), err=True))
    worst = 0
    for adv in result:
        click.echo(visible(f"{adv.topic}-{adv.partition}:"))   # names are evidence: escapes shown
        st = adv.state
        if st is not None:
            click.echo(f"  metadata log: leader {'none' if st.leader is None else st.leader}, "
                       f"leader epoch {st.leader_epoch}, replicas {list(st.replicas)}, "
                       f"ISR {list(st.isr)}, ELR {list(st.elr)}")
        bound = adv.candidates[0].lower_bound if adv.candidates else False
        click.echo("  rank  broker  log_end  epoch  lost: committed  acked  unacked  uncommitted  total"
                   "  acks-only  conflict" + ("  election" if st is not None else "")
                   + ("   (at least: evidence is missing)" if bound else ""))
        for i, c in enumerate(adv.candidates, 1):
            n = c.counts()
            click.echo(f"  {i:>4}  {c.broker:>6}  {c.log_end_offset:>7}  {c.latest_epoch:>5}  "
                       f"{n['committed']:>15}  {n['acked']:>5}  {n['unacknowledged']:>7}  "
                       f"{n['uncommitted']:>11}  {n['total']:>5}  {n['from_acks']:>9}  {n['conflict']:>8}"
                       + (f"  {c.election}" if st is not None else ""))
        for line in adv.summary():
            click.echo(f"  {line}")
        if adv.verdict != "safe":
            worst = 1
        best = adv.candidates[0]
        if adv.recommended is None:
            click.echo(f"  no recommendation; if it comes to the best given candidate, broker {best.broker}:")
        elif adv.verdict == "cannot tell":
            click.echo(f"  the best given candidate, broker {best.broker} (what it loses is a lower bound):")
        else:
            click.echo(f"  elect broker {best.broker}:")
        for line in adv.commands(bootstrap):
            click.echo(visible(f"    {line}"))
    return worst, result
