"""Kafka's generated-message specs as data (FORMATS.md section 12.1): the declarations.

Kafka describes internal-topic payloads, KRaft metadata records and the KRaft control values
with JSON message specs (``clients/src/main/resources/common/message/*.json``) and generates
Java readers and writers from them. This module holds the same specs' vocabulary --
:class:`Versions`, :class:`Field` (:func:`field`) and :class:`Message` (:func:`message`) --
as plain data; ``segtools.primitives.messages`` is the one engine that reads and writes them
(compact lengths and tagged fields of the flexible versions, KIP-482).

Types are Kafka's spec types plus ``varlong`` (a zig-zag varlong, for tagged fields that
plugins write with ``ByteUtils.writeVarlong``, such as Aiven's tiered-storage metadata).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from dataclasses import field as _dc_field
from typing import Any

MAX_VERSION = 32767
UNKNOWN_TAGGED_FIELDS = "_unknownTaggedFields"  # dict key holding [(tag, bytes), ...] when present

UNSET: Any = object()

PRIMITIVE_TYPES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "string", "bytes",
     "uuid", "records", "varlong"}
)
INT_RANGES = {
    "int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
    "uint16": (0, (1 << 16) - 1), "int32": (-(1 << 31), (1 << 31) - 1),
    "uint32": (0, (1 << 32) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
}


# --------------------------------------------------------------------------------------------
# versions


@dataclass(frozen=True)
class Versions:
    """An inclusive version range as written in Kafka's specs ("0+", "1", "0-3", "none")."""

    low: int
    high: int

    @classmethod
    def parse(cls, text: str | None) -> Versions | None:
        if text is None or text == "none":
            return None
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        if "-" in text:
            lo, hi = text.split("-", 1)
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high


def in_versions(versions: Versions | None, version: int) -> bool:
    return versions is not None and version in versions


# --------------------------------------------------------------------------------------------
# declarations


def json_name(schema_name: str) -> str:
    """Kafka's FieldSpec.camelCaseName: the schema name with its first letter lower-cased."""
    return schema_name[:1].lower() + schema_name[1:]


@dataclass(frozen=True)
class Field:
    name: str                      # schema name, e.g. "TopicId"
    type: str                      # "int32", "string", "[]int32", "[]BrokerEndpoint", "ClassicMemberMetadata"
    versions: Versions
    nullable: Versions | None = None
    tag: int | None = None
    tagged: Versions | None = None
    default: Any = UNSET
    ignorable: bool = False
    fields: tuple[Field, ...] = ()

    @property
    def key(self) -> str:
        return json_name(self.name)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:]

    @property
    def is_struct(self) -> bool:
        """A struct or an array of structs (declared with nested fields)."""
        t = self.element_type if self.is_array else self.type
        return t not in PRIMITIVE_TYPES

    @property
    def struct_name(self) -> str:
        return self.element_type if self.is_array else self.type

    def default_value(self) -> Any:
        """The value Kafka's generated class holds when nothing was set."""
        if self.default is not UNSET:
            if self.default is None:
                return None
            if self.type == "bool":
                return bool(self.default)
            if self.type in INT_RANGES:
                return int(self.default)
            if self.type == "float64":
                return float(self.default)
            return self.default
        if self.is_array:
            return []
        if self.is_struct:
            return {f.key: f.default_value() for f in self.fields}
        return {"bool": False, "string": "", "bytes": b"", "records": None, "float64": 0.0,
                "uuid": ZERO_UUID}.get(self.type, 0)


def field(name: str, type: str, versions: str = "0+", *, nullable: str | None = None,
          tag: int | None = None, tagged: str | None = None, default: Any = UNSET,
          ignorable: bool = False, fields: Sequence[Field] = ()) -> Field:
    """Compact declaration of one schema field, mirroring the keys of Kafka's JSON specs."""
    if tag is not None and tagged is None:
        tagged = versions
    return Field(name, type, Versions.parse(versions) or Versions(0, MAX_VERSION),
                 Versions.parse(nullable), tag, Versions.parse(tagged), default, ignorable,
                 tuple(fields))


@dataclass(frozen=True)
class Message:
    name: str
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions | None
    fields: tuple[Field, ...]
    #: JSON/dict key -> field, filled in __post_init__
    by_key: dict[str, Field] = _dc_field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.by_key.update({f.key: f for f in self.fields})

    def is_flexible(self, version: int) -> bool:
        return in_versions(self.flexible_versions, version)


def message(name: str, api_key: int | None, valid: str, flexible: str | None,
            fields: Iterable[Field]) -> Message:
    valid_v = Versions.parse(valid) or Versions(0, 0)
    return Message(name, api_key, valid_v, _widen(Versions.parse(flexible), valid_v),
                   tuple(_widen_field(x, valid_v) for x in fields))


def _widen(v: Versions | None, scope: Versions) -> Versions | None:
    """Apply the generator's version conditionals: Kafka's generated code only tests a bound
    that is narrower than the enclosing range, so e.g. a "0+" field is read unconditionally,
    even for a version outside the message's valid range (as kafka-dump-log does)."""
    if v is None or v.high < scope.low or v.low > scope.high:
        return v
    return Versions(-MAX_VERSION - 1 if v.low <= scope.low else v.low,
                    MAX_VERSION if v.high >= scope.high else v.high)


def _widen_field(fd: Field, scope: Versions) -> Field:
    inner = Versions(max(scope.low, fd.versions.low), min(scope.high, fd.versions.high))
    return Field(fd.name, fd.type, _widen(fd.versions, scope) or fd.versions,
                 _widen(fd.nullable, scope), fd.tag, _widen(fd.tagged, scope), fd.default,
                 fd.ignorable, tuple(_widen_field(x, inner) for x in fd.fields))


#: Kafka's Uuid.ZERO_UUID in its text form (base64url, no padding)
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
