"""The one engine of Kafka's generated-message encoding (FORMATS.md section 12.1).

The specs are data (``segtools.formats.messages``: internal topics, KRaft metadata records,
``__remote_log_metadata``, the KRaft control values, plugin metadata); this module reads and
writes them:

* non-flexible versions: int16-length strings, int32-length bytes and arrays, -1 = null;
* flexible versions: ``uvarint(n + 1)`` lengths (0 = null) and a tagged-field section at the end
  of every struct (written in ascending tag order, only for non-default values);
* fields that are absent in a version are skipped; unknown tagged fields are kept (as Kafka
  does) so that ``encode(decode(x)) == x``.

Decoded messages are plain dicts keyed by the JSON field names Kafka's JsonConverter uses
(schema name with the first letter lower-cased). Uuids are decoded to Kafka's text form
(base64url without padding); bytes stay ``bytes``. Error messages repeat the text Kafka's
generated readers throw, because kafka-dump-log prints them; the error's ``field`` is the
path of the failing field (``voters[0].endpoints[0].host``).
"""

from __future__ import annotations

import base64
import struct
import uuid as _uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from segtools.errors import SchemaError
from segtools.formats.messages import INT_RANGES as _INT_RANGES
from segtools.formats.messages import UNKNOWN_TAGGED_FIELDS, Field, Message, Versions
from segtools.formats.messages import UNSET as _UNSET
from segtools.formats.messages import in_versions as _in
from segtools.formats.primitives import uuid_to_base64url
from segtools.primitives.java_utf8 import java_utf8_replace
from segtools.primitives.varint import (
    VarintError,
    VarintTruncatedError,
    encode_uvarint,
    encode_varlong,
    read_uvarint,
    read_varlong,
)

__all__ = ["read_message", "write_message", "read_fixed", "fixed_bytes", "uvarint", "uuid_to_text", "uuid_to_bytes",
           "tag_count_checks", "tagged_absent_value", "tagged_is_default", "unknown_tagged_fields",
           "Reader"]

_FIXED = {
    "bool": struct.Struct(">?"), "int8": struct.Struct(">b"), "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"), "int32": struct.Struct(">i"), "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"), "float64": struct.Struct(">d"),
}


# --------------------------------------------------------------------------------------------
# uuid


#: Kafka's Uuid.toString() of 16 raw bytes (formats/primitives' rendering: one implementation)
uuid_to_text = uuid_to_base64url


def uuid_to_bytes(value: Any) -> bytes:
    """Accept Kafka's text form, a :class:`uuid.UUID` or 16 raw bytes."""
    if isinstance(value, (bytes, bytearray, memoryview)) and len(value) == 16:
        return bytes(value)
    if isinstance(value, _uuid.UUID):
        return value.bytes
    if isinstance(value, str) and len(value) == 22:
        try:
            raw = base64.urlsafe_b64decode(value + "==")
        except (ValueError, TypeError):
            raw = b""
        if len(raw) == 16:
            return raw
    raise TypeError(f"not a Kafka uuid: {value!r}")


# --------------------------------------------------------------------------------------------
# reading


class _ReadError(Exception):
    """Raised inside the reader with Kafka's message text; turned into SchemaError at the edge."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


class Reader:
    """Cursor over a payload; every read is bounds-checked and fails like Kafka's ByteBuffer."""

    __slots__ = ("data", "pos", "end", "_bounded")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0,
                 end: int | None = None) -> None:
        self.data = bytes(data) if not isinstance(data, bytes) else data
        self.pos = pos
        self.end = len(self.data) if end is None else end
        # the payload up to ``end``, for readers that stop at a buffer's end (varints)
        self._bounded = self.data if self.end == len(self.data) else memoryview(self.data)[:self.end]

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def fixed(self, type_name: str, path: str) -> Any:
        st = _FIXED[type_name]
        if self.remaining < st.size:
            # java.nio.BufferUnderflowException has no message: Kafka prints "null"
            raise _ReadError("null", path)
        (value,) = st.unpack_from(self.data, self.pos)
        self.pos += st.size
        if type_name == "bool":
            value = self.data[self.pos - 1] != 0
        return value

    def uvarint(self, path: str) -> int:
        try:
            value, self.pos = read_uvarint(self._bounded, self.pos)
        except VarintTruncatedError:
            raise _ReadError("null", path) from None
        except VarintError as e:
            raise _ReadError("Varint is too long, the most significant bit in the 5th byte is set, "
                             "converted value: " + format(int(e.actual or 0) & 0xFFFFFFFF, "x"), path) from None
        # Java keeps the low 32 bits in an int
        return value - (1 << 32) if value >= (1 << 31) else value

    def varlong(self, path: str) -> int:
        try:
            value, self.pos = read_varlong(self._bounded, self.pos)
        except VarintTruncatedError:
            raise _ReadError("null", path) from None
        except VarintError as e:
            raise _ReadError("Varlong is too long, the most significant bit in the 10th byte is set, "
                             "converted value: " + format(int(e.actual or 0) & 0xFFFFFFFFFFFFFFFF, "x"),
                             path) from None
        return value

    def raw(self, length: int, path: str) -> bytes:
        if length > self.remaining:
            raise _ReadError(f"Error reading byte array of {length} byte(s): only "
                             f"{self.remaining} byte(s) available", path)
        out = self.data[self.pos:self.pos + length]
        self.pos += length
        return out

    def string_bytes(self, length: int, path: str) -> bytes:
        if length > self.remaining:
            # new String(array, offset, length, UTF_8) bounds check (JDK 17 wording)
            raise _ReadError(f"offset {self.pos}, count {length}, length {self.end}", path)
        out = self.data[self.pos:self.pos + length]
        self.pos += length
        return out


def _read_length(r: Reader, flexible: bool, wide: bool, path: str) -> int:
    """Length prefix: compact uvarint(n+1) when flexible, else int16 (strings) / int32."""
    if flexible:
        return r.uvarint(path) - 1
    n: int = r.fixed("int32" if wide else "int16", path)
    return n


def _read_value(r: Reader, f: Field, version: int, flexible: bool, top_valid: Versions,
                path: str, *, tagged: bool = False) -> Any:
    t = f.type
    if f.is_array:
        n = _read_length(r, flexible, True, path)
        if n < 0:
            if _in(f.nullable, version):
                return None
            raise _ReadError(f"non-nullable field {f.key} was serialized as null", path)
        if n > r.remaining:
            raise _ReadError(f"Tried to allocate a collection of size {n}, but there are only "
                             f"{r.remaining} bytes remaining.", path)
        et = f.element_type
        out = []
        for i in range(n):
            ep = f"{path}[{i}]"
            if f.is_struct:
                out.append(_read_struct(r, f.fields, f.struct_name, version, flexible,
                                        top_valid, ep))
            else:
                out.append(_read_primitive(r, et, f, version, flexible, ep, element=True))
        return out
    if f.is_struct:
        if _in(f.nullable, version):
            # nullable struct: presence marker, int8 (< 0 = null) or, inside a tagged field,
            # uvarint (0 = null); Kafka writes 1 for "present" in both cases
            if tagged:
                if r.uvarint(path) <= 0:
                    return None
            elif r.fixed("int8", path) < 0:
                return None
        return _read_struct(r, f.fields, f.struct_name, version, flexible, top_valid, path)
    return _read_primitive(r, t, f, version, flexible, path)


def _read_primitive(r: Reader, t: str, f: Field, version: int, flexible: bool, path: str,
                    *, element: bool = False) -> Any:
    if t in _FIXED:
        return r.fixed(t, path)
    if t == "varlong":
        return r.varlong(path)
    if t == "uuid":
        return uuid_to_text(r.raw(16, path) if r.remaining >= 16 else _underflow(path))
    nullable = (not element) and _in(f.nullable, version)
    if t == "string":
        n = _read_length(r, flexible, False, path)
        if n < 0:
            if nullable:
                return None
            raise _ReadError(f"non-nullable field {f.key} was serialized as null", path)
        if n > 0x7FFF:
            raise _ReadError(f"string field {f.key} had invalid length {n}", path)
        raw = r.string_bytes(n, path)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:  # Java's new String(bytes, UTF_8), not Python's "replace"
            return java_utf8_replace(raw)
    if t in ("bytes", "records"):
        n = _read_length(r, flexible, True, path)
        if n < 0:
            if nullable or t == "records":
                return None
            raise _ReadError(f"non-nullable field {f.key} was serialized as null", path)
        return r.raw(n, path)
    raise _ReadError(f"unsupported type {t}", path)  # pragma: no cover - declarations only


def _underflow(path: str) -> bytes:
    raise _ReadError("null", path)


def _read_struct(r: Reader, fields: Sequence[Field], struct_name: str | None, version: int,
                 flexible: bool, top_valid: Versions, path: str) -> dict[str, Any]:
    if struct_name is not None and version > top_valid.high:
        # generated nested-struct readers check the version against the message's range
        raise _ReadError(f"Can't read version {version} of {struct_name}", path)
    out: dict[str, Any] = {}
    tagged: dict[int, Field] = {}
    for f in fields:
        if version not in f.versions:
            continue
        if flexible and _in(f.tagged, version):
            tagged[f.tag] = f  # type: ignore[index]
            out[f.key] = tagged_absent_value(f)
            continue
        out[f.key] = _read_value(r, f, version, flexible, top_valid, _join(path, f.key))
    if flexible:
        unknown: list[tuple[int, bytes]] = []
        count = r.uvarint(_join(path, "_tagged_fields"))
        if _TAG_COUNT_CHECKS.get():
            _check_tag_count(count, r.remaining, path)
        for _ in range(count):
            tag = r.uvarint(_join(path, "_tagged_fields"))
            size = r.uvarint(_join(path, "_tagged_fields"))
            tf = tagged.get(tag)
            if tf is None:
                if size < 0:
                    raise _ReadError(f"Tried to read a negative-size tagged field of {size} "
                                     "bytes", path)
                unknown.append((tag, r.raw(size, _join(path, f"_tag{tag}"))))
            else:
                out[tf.key] = _read_value(r, tf, version, flexible, top_valid, _join(path, tf.key),
                                          tagged=True)
        if unknown:
            out[UNKNOWN_TAGGED_FIELDS] = unknown
    # keep the schema's declaration order (tagged values were placed at their default's slot)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


#: Kafka 4.4's generated readers check the tagged-field count before reading the fields
#: (4.3 and older read on and fail at the first short field); set by ``tag_count_checks``
_TAG_COUNT_CHECKS: ContextVar[bool] = ContextVar("tag_count_checks", default=False)
_MAX_TAGGED_FIELDS = 10000


@contextmanager
def tag_count_checks(on: bool) -> Iterator[None]:
    """Within the block, reads check the tagged-field count as Kafka 4.4's generated code."""
    token = _TAG_COUNT_CHECKS.set(on)
    try:
        yield
    finally:
        _TAG_COUNT_CHECKS.reset(token)


def _check_tag_count(count: int, remaining: int, path: str) -> None:
    where = _join(path, "_tagged_fields")
    if count < 0:
        raise _ReadError(f"Invalid negative number of tagged fields {count}", where)
    if count > remaining:
        raise _ReadError(f"Tried to read {count} tagged fields, but there are only {remaining} "
                         "bytes remaining.", where)
    if count > _MAX_TAGGED_FIELDS:
        raise _ReadError(f"Tried to read {count} tagged fields, which exceeds the maximum "
                         f"allowed count of {_MAX_TAGGED_FIELDS}.", where)


def read_message(msg: Message, data: bytes | bytearray | memoryview, version: int, *,
                 pos: int = 0, end: int | None = None, path: str = "") -> tuple[dict[str, Any], int]:
    """Decode one message body at ``data[pos:end]`` with ``version``; return (dict, end pos).

    Raises :class:`SchemaError` whose ``reason`` is Kafka's message text and whose ``field``
    is the path of the failing field.
    """
    r = Reader(data, pos, end)
    try:
        out = _read_struct(r, msg.fields, None, version, msg.is_flexible(version),
                           msg.valid_versions, path)
    except _ReadError as e:
        raise SchemaError(e.message, field=e.path or msg.name) from None
    return out, r.pos


def read_fixed(type_name: str, data: bytes | bytearray | memoryview, pos: int = 0) -> Any:
    """One fixed-size primitive (``int16``, ``int32``, ``int64`` ...) at ``data[pos:]``, big-endian
    as Kafka's ByteBuffer reads it; None when fewer bytes remain. The int16 version prefix of
    the coordinators' records and the tools' Integer/Long decoders read through it."""
    st = _FIXED[type_name]
    if len(data) - pos < st.size:
        return None
    return st.unpack_from(data, pos)[0]


def fixed_bytes(type_name: str, value: Any) -> bytes:
    """``value`` as the fixed-size primitive ``type_name`` (e.g. an int16 version prefix)."""
    return _FIXED[type_name].pack(value)


# --------------------------------------------------------------------------------------------
# writing


def uvarint(value: int) -> bytes:
    """Unsigned varint of the low 32 bits, as ByteUtils.writeUnsignedVarint."""
    return encode_uvarint(value & 0xFFFFFFFF)


class _WriteError(Exception):
    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


def _write_length(out: bytearray, n: int, flexible: bool, wide: bool) -> None:
    if flexible:
        out += uvarint(n + 1)
    else:
        out += struct.pack(">i" if wide else ">h", n)


def _write_value(out: bytearray, f: Field, value: Any, version: int, flexible: bool,
                 path: str, *, tagged: bool = False) -> None:
    if f.is_array:
        if value is None:
            if not _in(f.nullable, version):
                raise _WriteError(f"non-nullable field {f.key} is null", path)
            _write_length(out, -1, flexible, True)
            return
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
            raise _WriteError(f"expected a list, got {type(value).__name__}", path)
        items = list(value)
        _write_length(out, len(items), flexible, True)
        for i, item in enumerate(items):
            ep = f"{path}[{i}]"
            if f.is_struct:
                _write_struct(out, f.fields, item, version, flexible, ep)
            else:
                _write_primitive(out, f.element_type, f, item, version, flexible, ep, element=True)
        return
    if f.is_struct:
        if _in(f.nullable, version):
            if value is None:
                out += b"\x00" if tagged else b"\xff"
                return
            out += b"\x01"
        elif value is None:
            raise _WriteError(f"non-nullable field {f.key} is null", path)
        _write_struct(out, f.fields, value, version, flexible, path)
        return
    _write_primitive(out, f.type, f, value, version, flexible, path)


def _write_primitive(out: bytearray, t: str, f: Field, value: Any, version: int, flexible: bool,
                     path: str, *, element: bool = False) -> None:
    if t in _FIXED:
        if t == "bool":
            if not isinstance(value, bool):
                raise _WriteError(f"expected a bool, got {value!r}", path)
            out.append(1 if value else 0)
            return
        if t == "float64":
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise _WriteError(f"expected a number, got {value!r}", path)
            out += _FIXED[t].pack(float(value))
            return
        lo, hi = _INT_RANGES[t]
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise _WriteError(f"expected {t} in [{lo}, {hi}], got {value!r}", path)
        out += _FIXED[t].pack(value)
        return
    if t == "varlong":
        lo, hi = _INT_RANGES["int64"]
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise _WriteError(f"expected a varlong in [{lo}, {hi}], got {value!r}", path)
        out += encode_varlong(value)
        return
    if t == "uuid":
        try:
            out += uuid_to_bytes(value)
        except TypeError as e:
            raise _WriteError(str(e), path) from None
        return
    nullable = (not element) and _in(f.nullable, version)
    if t == "string":
        if value is None:
            if not nullable:
                raise _WriteError(f"non-nullable field {f.key} is null", path)
            _write_length(out, -1, flexible, False)
            return
        if not isinstance(value, str):
            raise _WriteError(f"expected a string, got {value!r}", path)
        raw = value.encode("utf-8", "surrogatepass")
        if len(raw) > 0x7FFF:
            raise _WriteError(f"string field {f.key} had invalid length {len(raw)}", path)
        _write_length(out, len(raw), flexible, False)
        out += raw
        return
    if t in ("bytes", "records"):
        if value is None:
            if not (nullable or t == "records"):
                raise _WriteError(f"non-nullable field {f.key} is null", path)
            _write_length(out, -1, flexible, True)
            return
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise _WriteError(f"expected bytes, got {type(value).__name__}", path)
        _write_length(out, len(value), flexible, True)
        out += bytes(value)
        return
    raise _WriteError(f"unsupported type {t}", path)  # pragma: no cover


def _is_default(f: Field, value: Any) -> bool:
    default = f.default_value()
    if f.type == "uuid" and value is not None:
        try:
            return uuid_to_bytes(value) == uuid_to_bytes(default)
        except TypeError:
            return False
    if f.is_struct and not f.is_array and isinstance(value, dict) and isinstance(default, dict):
        return all(value.get(k, v) == v for k, v in default.items()) and not value.get(
            UNKNOWN_TAGGED_FIELDS)
    if f.is_array and value is not None and default is not None:
        return len(list(value)) == 0
    return value == default and type(value) is type(default) or (value is None and default is None)


def tagged_absent_value(f: Field) -> Any:
    """What Kafka's generated reader holds for a tagged field that is not in the bytes: its
    default, except that a (non-array) struct is a default-constructed struct even when the
    spec's default is null (e.g. ConsumerGroupMemberMetadataValue's ClassicMemberMetadata:
    the generated read() starts from ``new ClassicMemberMetadata()``)."""
    if f.is_struct and not f.is_array:
        return {x.key: x.default_value() for x in f.fields}
    return f.default_value()


def tagged_is_default(f: Field, value: Any) -> bool:
    """Whether Kafka leaves a tagged field out (of the bytes and of its JSON): it equals
    :func:`tagged_absent_value`; a null struct is written (with a null marker) and printed
    as ``null``."""
    if f.is_struct and not f.is_array:
        if not isinstance(value, dict):
            return False
        known = {k: v for k, v in value.items() if k != UNKNOWN_TAGGED_FIELDS}
        return known == tagged_absent_value(f) and not value.get(UNKNOWN_TAGGED_FIELDS)
    return _is_default(f, value)


def _write_struct(out: bytearray, fields: Sequence[Field], data: Any, version: int,
                  flexible: bool, path: str) -> None:
    if not isinstance(data, dict):
        raise _WriteError(f"expected a dict, got {type(data).__name__}", path)
    known = {f.key for f in fields} | {UNKNOWN_TAGGED_FIELDS}
    for k in data:
        if k not in known:
            raise _WriteError(f"unknown field {k!r}", _join(path, str(k)))
    tagged: list[tuple[int, bytes]] = []
    for f in fields:
        fp = _join(path, f.key)
        value = data.get(f.key, _UNSET)
        if version not in f.versions:
            if value is not _UNSET and not f.ignorable and not _is_default(f, value):
                raise _WriteError(f"field {f.key} does not exist in version {version}", fp)
            continue
        if value is _UNSET:
            value = f.default_value()
        if flexible and _in(f.tagged, version):
            if tagged_is_default(f, value):
                continue  # Kafka writes a tagged field only when it differs from its default
            buf = bytearray()
            _write_value(buf, f, value, version, flexible, fp, tagged=True)
            tagged.append((f.tag, bytes(buf)))  # type: ignore[arg-type]
            continue
        _write_value(out, f, value, version, flexible, fp)
    if flexible:
        for tag, raw in data.get(UNKNOWN_TAGGED_FIELDS) or ():
            tagged.append((int(tag), bytes(raw)))
        tagged.sort(key=lambda item: item[0])
        out += uvarint(len(tagged))
        for tag, raw in tagged:
            out += uvarint(tag)
            out += uvarint(len(raw))
            out += raw
    elif data.get(UNKNOWN_TAGGED_FIELDS):
        raise _WriteError("tagged fields need a flexible version", path)


def write_message(msg: Message, data: dict[str, Any], version: int, *, path: str = "") -> bytes:
    """Encode ``data`` (a dict as produced by :func:`read_message`) with ``version``."""
    out = bytearray()
    try:
        _write_struct(out, msg.fields, data, version, msg.is_flexible(version), path)
    except _WriteError as e:
        raise SchemaError(e.message, field=e.path or msg.name) from None
    return bytes(out)


def unknown_tagged_fields(data: Any, path: str = "") -> list[tuple[str, int, bytes]]:
    """Every tagged field a decoded message kept without a schema, as (path, tag, bytes),
    nested structs and arrays included (Kafka's generated readers keep them in
    ``_unknownTaggedFields`` and their JSON converters leave them out)."""
    found: list[tuple[str, int, bytes]] = []
    if isinstance(data, dict):
        for tag, raw in data.get(UNKNOWN_TAGGED_FIELDS) or ():
            found.append((path, int(tag), bytes(raw)))
        for key, value in data.items():
            if key != UNKNOWN_TAGGED_FIELDS and isinstance(value, (dict, list)):
                found.extend(unknown_tagged_fields(value, _join(path, key)))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            if isinstance(item, (dict, list)):
                found.extend(unknown_tagged_fields(item, f"{path}[{i}]"))
    return found
