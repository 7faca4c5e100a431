"""Producer-side truth for ``--acks``: what an SRE has, read into one entry shape.

Accepted (docs/ACKS.md shows how to get each from real tools):

- NDJSON, one object a line: ``topic``, ``partition``, ``offset`` and optionally ``leader_epoch``,
  ``key``, ``value_sha256``, ``timestamp``, ``ok`` (default true), ``acks``. The simulator's
  ``acks.jsonl`` is this format. kcat ``-J`` lines (``payload``, ``ts``) are read the same way.
- CSV with a header naming at least ``topic,partition,offset`` (other columns as above).
- kafka-console-consumer output with ``--property print.partition=true --property
  print.offset=true`` (optionally ``print.timestamp``, ``print.epoch``), tab separated. It does
  not print the topic, so it is given as ``console-consumer:TOPIC:FILE``.

A record a consumer read was below the high watermark when read: committed. Entries without a
leader epoch are kept apart (``leader_epoch`` None): an offset is not an identity across
unclean elections, so they can prove a loss (no replica holds the offset) but never that a
record survived.
"""

from __future__ import annotations

import csv
import io
import json
import os
from typing import Any

from segtools.errors import InputError

CONSOLE_PREFIX = "console-consumer:"
_CONSOLE_FIELDS = ("CreateTime:", "LogAppendTime:", "NO_TIMESTAMP", "Partition:", "Offset:", "Epoch:",
                   "Delivery:")


def _int(value: Any, what: str, where: str, *, optional: bool = False) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        if optional:
            return None
        raise InputError(f"{where}: no {what}")
    if isinstance(value, bool):
        raise InputError(f"{where}: {what} is not an integer: {value!r}")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InputError(f"{where}: {what} is not an integer: {value!r}") from None


def _entry(raw: dict[str, Any], where: str, *, consumed: bool) -> dict[str, Any]:
    """One acknowledgement in the shape AckIndex reads (CONTRACT.md section 3's acks.jsonl)."""
    topic = raw.get("topic")
    if not isinstance(topic, str) or not topic:
        raise InputError(f"{where}: no topic")
    ok = raw.get("ok", True)
    if isinstance(ok, str):
        ok = ok.strip().lower() in ("true", "1", "yes")
    out: dict[str, Any] = {
        "topic": topic,
        "partition": _int(raw.get("partition"), "partition", where),
        # a failed send, or acks=0, has no offset: kept, then skipped by AckIndex as before
        "offset": _int(raw.get("offset"), "offset", where, optional=True),
        "leader_epoch": _int(raw.get("leader_epoch"), "leader_epoch", where, optional=True),
        "ok": bool(ok),
        # a consumer reads only below the high watermark: what it saw was committed
        "acks": "consumed" if consumed else raw.get("acks"),
    }
    for k in ("key", "value_sha256", "timestamp"):
        if raw.get(k) not in (None, ""):
            out[k] = raw[k]
    return out


def _read_text(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read acks file {path}: {exc.strerror or exc}") from exc
    return data.decode("utf-8", errors="replace")


def _ndjson(path: str, text: str) -> list[dict[str, Any]]:
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}: line {lineno}"
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise InputError(f"{where} is not a JSON object: {exc}") from None
        if not isinstance(obj, dict):
            raise InputError(f"{where} is not a JSON object: not an object")
        kcat = "payload" in obj or "tstype" in obj
        if kcat and "ts" in obj and "timestamp" not in obj:
            obj = {**obj, "timestamp": obj["ts"]}
        out.append(_entry(obj, where, consumed=kcat))
    return out


def _csv(path: str, text: str) -> list[dict[str, Any]]:
    reader = csv.DictReader(io.StringIO(text))
    names = [n.strip() for n in (reader.fieldnames or [])]
    if not {"topic", "partition", "offset"} <= set(names):
        raise InputError(f"{path}: not NDJSON, and not a CSV whose header names topic,partition,offset "
                         f"(header: {','.join(names)[:80]!r})")
    reader.fieldnames = names
    return [_entry(dict(row), f"{path}: line {reader.line_num}", consumed=False)
            for row in reader if any((v or "").strip() for v in row.values() if isinstance(v, str))]


def _console(path: str, topic: str, text: str) -> list[dict[str, Any]]:
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("Processed a total of"):
            continue
        raw: dict[str, Any] = {"topic": topic}
        for field in line.split("\t"):
            if field.startswith(("CreateTime:", "LogAppendTime:")):
                raw["timestamp"] = field.split(":", 1)[1]
            elif field.startswith("Partition:"):
                raw["partition"] = field[len("Partition:"):]
            elif field.startswith("Offset:"):
                raw["offset"] = field[len("Offset:"):]
            elif field.startswith("Epoch:"):
                raw["leader_epoch"] = field[len("Epoch:"):]
        where = f"{path}: line {lineno}"
        if "partition" not in raw or "offset" not in raw:
            raise InputError(f"{where}: no Partition:/Offset: field (run kafka-console-consumer with "
                             "--property print.partition=true --property print.offset=true)")
        out.append(_entry(raw, where, consumed=True))
    return out


def read_acks(spec: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every acknowledgement in ``spec`` (a path, or ``console-consumer:TOPIC:PATH``)."""
    spec = os.fspath(spec)
    if spec.startswith(CONSOLE_PREFIX):
        topic, sep, path = spec[len(CONSOLE_PREFIX):].partition(":")
        if not sep or not topic or not path:
            raise InputError(f"--acks {spec}: console-consumer output is given as console-consumer:TOPIC:FILE")
        return _console(path, topic, _read_text(path))
    text = _read_text(spec)
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if not first:
        return []
    if first.startswith("{"):
        return _ndjson(spec, text)
    if first.startswith(_CONSOLE_FIELDS):
        raise InputError(f"{spec}: looks like kafka-console-consumer output, which does not name the topic: "
                         f"give it as --acks {CONSOLE_PREFIX}TOPIC:{spec}")
    return _csv(spec, text)
