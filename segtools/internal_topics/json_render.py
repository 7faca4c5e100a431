"""Kafka-identical JSON for decoded messages.

kafka-dump-log prints the output of Kafka's generated ``*JsonConverter.write(message, version)``
serialised by Jackson's ``JsonNode.toString()``. The rules reproduced here:

* keys are the schema field names with the first letter lower-cased, in declaration order
  (tagged fields included, at their declared position);
* a field absent in the version is left out; a tagged field only appears when it differs
  from its default (``protocol.tagged_is_default``: a null struct differs and prints ``null``);
* int8..int64/uint16/uint32 are JSON numbers, float64 uses Java's ``Double.toString`` digits,
  uuids are their base64url text, bytes are standard base64 with padding, null is ``null``;
* compact output (no spaces); strings escaped like Jackson (``\\n`` ``\\t`` ``\\r`` ``\\b`` ``\\f``
  ``\\"`` ``\\\\``, other control characters as upper-case ``\\u00XX``, non-ASCII kept as is).
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable
from typing import Any

from segtools.formats.messages import UNKNOWN_TAGGED_FIELDS, Field, Message
from segtools.primitives.messages import tagged_is_default


class JavaDouble(float):
    """A float rendered the way Jackson renders a Java double."""


class Raw(str):
    """Already-serialised JSON text, inserted verbatim."""


#: hook (field, value, version) -> JSON node or None to keep the default rendering
Override = Callable[[Field, Any, int], Any]


def to_node(msg: Message, data: dict[str, Any], version: int,
            override: Override | None = None) -> dict[str, Any]:
    """The JSON object Kafka's JsonConverter builds for ``data`` at ``version``."""
    return _struct_node(msg.fields, data, version, msg.is_flexible(version), override)


def _struct_node(fields: tuple[Field, ...], data: dict[str, Any], version: int, flexible: bool,
                 override: Override | None) -> dict[str, Any]:
    node: dict[str, Any] = {}
    for f in fields:
        if version not in f.versions:
            continue
        value = data.get(f.key, f.default_value())
        if flexible and f.tagged is not None and version in f.tagged and tagged_is_default(f, value):
            continue
        if override is not None:
            replaced = override(f, value, version)
            if replaced is not None:
                node[f.key] = replaced
                continue
        node[f.key] = _value_node(f, value, version, flexible, override)
    return node


def _value_node(f: Field, value: Any, version: int, flexible: bool,
                override: Override | None) -> Any:
    if value is None:
        return None
    if f.is_array:
        if f.is_struct:
            return [_struct_node(f.fields, item, version, flexible, override) for item in value]
        return [_scalar_node(f.element_type, item) for item in value]
    if f.is_struct:
        return _struct_node(f.fields, value, version, flexible, override)
    return _scalar_node(f.type, value)


def _scalar_node(type_name: str, value: Any) -> Any:
    if value is None:
        return None
    if type_name in ("bytes", "records"):
        return base64.b64encode(bytes(value)).decode("ascii")
    if type_name == "float64":
        return JavaDouble(value)
    return value


def java_double(value: float) -> str:
    """Java's Double.toString (what Jackson writes for a DoubleNode)."""
    if math.isnan(value):
        return '"NaN"'  # Jackson quotes non-numeric numbers by default
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    a = abs(value)
    if a == 5e-324:
        return sign + "4.9E-324"  # Double.MIN_VALUE: JDK 17's digits (not the shortest)
    digits, exp = _shortest_digits(a)   # a = 0.d1d2... * 10**exp
    if 1e-3 <= a < 1e7:
        point = exp
        if point <= 0:
            text = "0." + "0" * (-point) + digits
        elif point >= len(digits):
            text = digits + "0" * (point - len(digits)) + ".0"
        else:
            text = digits[:point] + "." + digits[point:]
        return sign + text
    mantissa = digits[0] + "." + (digits[1:] or "0")
    return f"{sign}{mantissa}E{exp - 1}"


def _shortest_digits(a: float) -> tuple[str, int]:
    text = repr(a)  # shortest round-trip digits
    if "e" in text or "E" in text:
        mant, e = text.lower().split("e")
        exp10 = int(e)
    else:
        mant, exp10 = text, 0
    if "." in mant:
        whole, frac = mant.split(".")
    else:
        whole, frac = mant, ""
    digits = (whole + frac).lstrip("0")
    lead_zeros = len(whole + frac) - len((whole + frac).lstrip("0"))
    point = len(whole) - lead_zeros + exp10
    digits = digits.rstrip("0") or "0"
    return digits, point


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b",
            "\f": "\\f"}


def quote(text: str) -> str:
    """A JSON string literal escaped like Jackson's default generator."""
    out = ['"']
    for ch in text:
        esc = _ESCAPES.get(ch)
        if esc is not None:
            out.append(esc)
        elif ch < " ":
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def dumps(node: Any) -> str:
    """Compact JSON text, as Jackson's ``JsonNode.toString()`` writes it."""
    parts: list[str] = []
    _dump(node, parts)
    return "".join(parts)


def _dump(node: Any, out: list[str]) -> None:
    if isinstance(node, Raw):
        out.append(str(node))
    elif node is None:
        out.append("null")
    elif node is True:
        out.append("true")
    elif node is False:
        out.append("false")
    elif isinstance(node, JavaDouble):
        out.append(java_double(float(node)))
    elif isinstance(node, int):
        out.append(str(node))
    elif isinstance(node, float):
        out.append(java_double(node))
    elif isinstance(node, str):
        out.append(quote(node))
    elif isinstance(node, dict):
        out.append("{")
        first = True
        for k, v in node.items():
            if k == UNKNOWN_TAGGED_FIELDS:
                continue
            if not first:
                out.append(",")
            first = False
            out.append(quote(k))
            out.append(":")
            _dump(v, out)
        out.append("}")
    elif isinstance(node, (list, tuple)):
        out.append("[")
        for i, v in enumerate(node):
            if i:
                out.append(",")
            _dump(v, out)
        out.append("]")
    else:  # pragma: no cover - nodes are built by to_node only
        raise TypeError(f"cannot render {type(node).__name__} as JSON")


def message_json(msg: Message, data: dict[str, Any], version: int,
                 override: Override | None = None) -> str:
    """Shortcut: ``dumps(to_node(...))``."""
    return dumps(to_node(msg, data, version, override))
