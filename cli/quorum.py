"""`segtools quorum`: audit controllers' metadata logs together (segtools/quorum/,
docs/QUORUM.md, docs/CONTRACT.md "segtools quorum")."""

from __future__ import annotations

import json
import sys

import click

from segtools.cli.errors import handle_errors


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("dirs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the audit as one JSON document.")
@click.option("--image-at", "image_at", default=None, metavar="OFFSET|@TIME_MS",
              help="Time travel: print the cluster image (JSON) of the first DIR at metadata "
                   "OFFSET (exclusive), or at the last record stamped at or before @TIME_MS, "
                   "instead of the audit. 'end' is the log end.")
@click.option("--diff-from", "diff_from", default=None, metavar="OFFSET",
              help="With --image-at: print only the entities that differ between the image at "
                   "OFFSET and the one at --image-at.")
@click.option("--broker", "brokers", multiple=True, metavar="DIR",
              type=click.Path(exists=True, file_okay=False),
              help="A broker's log dir (or its __cluster_metadata-0): compare its metadata "
                   "replica with the controllers' logs (repeatable).")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
@handle_errors
def quorum(dirs: tuple[str, ...], as_json: bool, image_at: str | None, diff_from: str | None,
           brokers: tuple[str, ...], debug: bool) -> None:
    """Audit the controllers' metadata dirs DIRS together (each a metadata.log.dir or its
    __cluster_metadata-0): Log Matching across them (first divergence per pair and which node
    holds the stale suffix), one leader per epoch (split brain), quorum-state votes against
    LEADER_CHANGE granting voters (double votes), the prefix proven committed without a
    persisted high watermark, the voter-set history, split quorums at formatting, and which
    survivor to keep after losing a majority (what each choice loses); with --broker, each
    broker's metadata replica against the controllers'; known Kafka bugs matching what is
    found (docs/QUORUM.md).

    Exit status: 0 no finding, 1 findings, 2 usage error or unusable input.
    """
    from segtools.bundle import is_bundle, metadata_dirs_of
    from segtools.quorum import audit_dirs

    # a bundle (segtools collect) stands for the metadata log dirs it holds
    dirs = tuple(d for given in dirs for d in (metadata_dirs_of(given) if is_bundle(given) else [given]))

    if diff_from is not None and image_at is None:
        raise click.UsageError("--diff-from needs --image-at")
    if image_at is not None:
        _time_travel(dirs[0], image_at, diff_from)
        return
    result = audit_dirs(list(dirs), list(brokers))
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=1))
    else:
        for n in result.nodes:
            qs = n.quorum_state or {}
            click.echo(f"node {n.node_id} {n.name}: log {n.log_start}..{n.log_end}, "
                       f"{len(n.snapshots)} snapshots, quorum-state epoch "
                       f"{qs.get('leaderEpoch', '?')} leader {qs.get('leaderId', '?')} "
                       f"voted {qs.get('votedId', '?')}")
        for fp in result.fingerprints:
            click.echo(f"release of {fp.node}: {fp.note}")
        for d in result.divergences:
            where = (f"differ from offset {d.offset} (epoch {d.epoch_a} vs {d.epoch_b}; stale "
                     f"suffix on {d.stale or 'cannot tell'})" if d.offset is not None
                     else "one is a prefix of the other")
            click.echo(f"pair {d.a} / {d.b}: identical below {d.common_end}, {where}")
        click.echo(f"committed: proven below offset {result.committed_end} "
                   f"({result.committed_reason})")
        for v in result.voter_history:
            click.echo(f"voters at offset {v.offset} ({v.source}, {v.node}): "
                       + ", ".join(f"{i}:{d}" for i, d in v.voters))
        for s in result.survivors:
            lost = "; ".join(f"{n} {f}..{t}" for n, f, t in s.loses) or "nothing from the others"
            warn = " (LOSES COMMITTED RECORDS)" if s.loses_committed else ""
            click.echo(f"keep {s.node} (end {s.log_end}): loses {lost}{warn}")
        for r in result.replicas:
            part = (f", differs from offset {r.first_divergence}" if r.first_divergence
                    is not None else "")
            lacks = (f"; lacks {r.missing_committed} committed offsets" if r.missing_committed
                     else "")
            click.echo(f"broker replica {r.broker}: holds up to {r.log_end}, identical to "
                       f"{r.reference} below {r.identical_below}{part}{lacks}")
        for f in result.findings:
            click.echo(f"FINDING {f.kind}: {f.message}")
        for o in result.observations:
            click.echo(f"NOTE {o.kind}: {o.message}")
        for m in result.known_bugs:
            click.echo(f"KNOWN BUG {m.bug.key} ({m.verdict}) for {m.mark}: {m.why}; "
                       f"{' '.join(m.bug.links)}")
    sys.exit(1 if result.findings else 0)


def _point(text: str) -> dict[str, int | None]:
    try:
        if text == "end":
            return {}
        if text.startswith("@"):
            return {"time_ms": int(text[1:])}
        return {"offset": int(text)}
    except ValueError:
        raise click.UsageError(f"not an offset, @time_ms or 'end': {text!r}") from None


def _time_travel(path: str, at: str, since: str | None) -> None:
    from segtools.quorum.image import JSON_SCHEMA_VERSION, diff, image_at, image_json
    from segtools.quorum.nodes import load_node

    node = load_node(path)
    img = image_at(node, **_point(at))
    if since is None:
        click.echo(json.dumps(image_json(img), indent=1, default=str))
        return
    old = image_at(node, **_point(since))
    rows = [{"kind": k[0], "id": k[1], "before": a, "after": b} for k, a, b in diff(old, img)]
    click.echo(json.dumps({"schema_version": JSON_SCHEMA_VERSION, "from": old.offset, "to": img.offset,
                           "changes": rows}, indent=1, default=str))
