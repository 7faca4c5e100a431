"""Verdicts and lost records as plain JSON values and back, so the Spark runner moves them as
a declared ``string`` column (no pickles: a worker's output is data the driver parses, not code
it unpickles).

The conversion follows the dataclasses' own type hints, so a field the forensics modules add
later travels without a change here."""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import types
import typing
from typing import Any, TypeVar, Union

T = TypeVar("T")


def to_plain(obj: Any) -> Any:
    """JSON-able value of ``obj``: dataclasses as dicts of their fields, tuples as lists,
    bytes as {"b64": ...}; dict keys must be str or int (ints come back from the hints)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return {"b64": base64.b64encode(bytes(obj)).decode("ascii")}
    if isinstance(obj, (list, tuple)):
        return [to_plain(x) for x in obj]
    if isinstance(obj, (set, frozenset)):
        return [to_plain(x) for x in sorted(obj)]
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    return obj


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_plain(tp: Any, value: Any) -> Any:
    """Inverse of :func:`to_plain` for a value of declared type ``tp``."""
    if value is None:
        return None
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return from_plain(inner[0], value) if len(inner) == 1 else value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = _hints(tp)
        return tp(**{k: from_plain(hints.get(k, Any), v) for k, v in value.items()
                     if k in {f.name for f in dataclasses.fields(tp) if f.init}})
    if tp is bytes:
        return base64.b64decode(value["b64"])
    if origin is list:
        return [from_plain(args[0] if args else Any, x) for x in value]
    if origin is set:
        return {from_plain(args[0] if args else Any, x) for x in value}
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_plain(args[0], x) for x in value)
        return tuple(from_plain(a, x) for a, x in zip(args, value)) if args else tuple(value)
    if origin is dict:
        kt, vt = args if args else (Any, Any)
        return {(int(k) if kt is int else k): from_plain(vt, v) for k, v in value.items()}
    return value


def dumps(obj: Any) -> str:
    return json.dumps(to_plain(obj), separators=(",", ":"))


def loads(tp: type[T], text: str) -> T:
    return typing.cast(T, from_plain(tp, json.loads(text)))
