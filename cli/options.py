"""Options shared by several commands, declared once."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

import click


def _parse_size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return None
    from segtools.primitives.limits import parse_size

    try:
        return parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--max-batch-bytes") from None


def max_batch_bytes_option(consequence: str = "") -> Callable[[Any], Any]:
    """``--max-batch-bytes SIZE`` (segtools.primitives.limits): the value reaches the command as bytes."""
    return click.option(
        "--max-batch-bytes", "max_batch_bytes", default=None, metavar="SIZE", callback=_parse_size,
        help="Largest batch to read, on disk and decompressed (e.g. 256MiB; default 16MiB). "
             f"{consequence}Raise it for clusters with message.max.bytes above that.")


class InputPath(click.Path):
    """``click.Path`` for inputs that may also be URIs (s3://, gs://, hdfs://, file://):
    a local path is checked as ``click.Path`` does; a URI is passed on as written (its
    filesystem is asked when it is read, segtools.files.remote)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from segtools.files.remote import is_uri

        if isinstance(value, str) and is_uri(value):
            return value
        return super().convert(value, param, ctx)


class AcksPath(InputPath):
    """``--acks``: a file (NDJSON, CSV, kcat -J) or ``console-consumer:TOPIC:FILE``, whose
    FILE part is checked as InputPath checks a path or URI (docs/ACKS.md)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from segtools.forensics.acks import CONSOLE_PREFIX

        if isinstance(value, str) and value.startswith(CONSOLE_PREFIX):
            topic, sep, path = value[len(CONSOLE_PREFIX):].partition(":")
            if not sep or not topic or not path:
                self.fail(f"{value!r}: console-consumer output is given as console-consumer:TOPIC:FILE", param, ctx)
            return f"{CONSOLE_PREFIX}{topic}:{super().convert(path, param, ctx)}"
        return super().convert(value, param, ctx)


ACKS_HELP = ("Producer truth (docs/ACKS.md): acks.jsonl or any NDJSON/CSV of topic,partition,offset"
             "[,leader_epoch,...], kcat -J output, or console-consumer:TOPIC:FILE. ")


#: an output path that means standard output (``--report -``, ``--json -``)
STDOUT = "-"


def human_output(json_to_stdout: bool) -> contextlib.AbstractContextManager[Any]:
    """Where the text for people goes: stdout, or stderr while stdout carries the JSON (so
    ``segtools compare ... --report - | jq`` reads one JSON document)."""
    return contextlib.redirect_stdout(sys.stderr) if json_to_stdout else contextlib.nullcontext()
