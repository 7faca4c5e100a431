"""One filter language for finding records (``--where`` on the CLI, :func:`parse_where` and
:func:`read_filtered` in Python; docs/CONTRACT.md section 9).

A filter is a list of conditions ``FIELD OP VALUE``, all of which must hold (AND)::

    offset>=1000            offset<2000            timestamp>=2024-05-01T12:00:00Z
    key=order-42            key^=order-            key~^order-[0-9]+$      key=null
    value~timeout           value^=hex:0a0b        producer_id=4001        producer_epoch=3
    leader_epoch>=5         partition=3            topic=orders
    transactional_id=payments-tx-1                 group=billing-service

Numbers take ``= != < <= > >=`` (``=`` also a comma list: ``producer_id=1,2``); ``timestamp``
takes epoch ms or ISO-8601 (UTC unless a zone is given); ``key``/``value`` take ``=`` (exact),
``!=``, ``^=`` (prefix) and ``~`` (regular expression searched in the bytes); a ``hex:`` value
gives raw bytes, ``null`` a null key/value.

The language cannot crash or hang on what a user types: a number outside its field's Kafka
type (int64 offsets, timestamps and producer ids, int32 leader epochs and partitions, int16
producer epochs) is a one-line ``FilterError``; regular expressions run on RE2 (the
``google-re2`` wheel), whose matching time is linear in the text (no backtracking: ``(a+)+$``
costs what ``a+$`` costs), and which therefore has no backreferences or lookaround; a
pattern nesting groups deeper than ``MAX_REGEX_NESTING`` or longer than
``MAX_REGEX_BYTES`` is refused before it is compiled.

Two fields are looked up, because no record header carries them:
- ``group=G``: the records of consumer group G in ``__consumer_offsets``: partition
  ``Utils.abs(G.hashCode()) % offsets.topic.num.partitions`` (GroupCoordinator /
  GroupMetadataManager.partitionFor; 50 by default, ``offsets_partitions=``), keys whose group
  field (the string after the int16 key version) is G.
- ``transactional_id=T``: T is only written in ``__transaction_state`` (partition
  ``Utils.abs(T.hashCode()) % transaction.state.log.num.partitions``, TransactionStateManager
  .partitionFor; 50 by default, ``transaction_partitions=``). Its records there map T to the
  producer ids it used; the filter then keeps those records of T and the records of every other
  topic written by those producer ids. Without that partition in the inputs it is an error.

Pushdown (what is not read at all): partitions another ``partition``/``topic``/``group``
condition excludes, and, for ``key=K`` with ``key_partitions=N`` (the topic's partition count),
every partition but Kafka's default partitioner's choice ``toPositive(murmur2(K)) % N``;
segments whose offset range (file names) misses the offset bounds; rolled segments whose
``.timeindex`` says their largest timestamp is below the start time; then, inside a segment,
batches whose header (offsets, max timestamp) cannot match are not decoded. ``FilterStats``
counts what was read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import re2

from segtools.primitives.java_hash import java_string_hash
from segtools.records.schema import RECORD_SCHEMA

from .errors import InputError
from .formats.names import stem_offset

__all__ = ["Condition", "RecordFilter", "FilterStats", "parse_where", "read_filtered",
           "iter_filtered", "java_string_hash", "kafka_abs", "partition_for_group",
           "murmur2", "partition_for_key", "FilterError", "compiled", "transaction_producer_ids",
           "MAX_REGEX_NESTING", "MAX_REGEX_BYTES", "FIELD_RANGES"]


class FilterError(InputError):
    """A ``--where`` expression that cannot be parsed or applied (exit 2)."""


NUMERIC = {"offset", "timestamp", "producer_id", "producer_epoch", "leader_epoch", "partition"}
BYTES = {"key", "value"}
TEXT = {"topic", "transactional_id", "group"}
_OPS = ("<=", ">=", "!=", "^=", "=", "<", ">", "~")
#: FIELD OP at the start; the value is the rest, stripped (a lazy ``(.*?)\s*$`` was quadratic
#: in a value holding a long run of blanks)
_EXPR = re.compile(r"\s*([A-Za-z_]+)\s*(<=|>=|!=|\^=|=|<|>|~)")
_COLUMN = {"offset": "offset", "timestamp": "timestamp_ms", "producer_id": "producer_id",
           "producer_epoch": "producer_epoch", "leader_epoch": "leader_epoch", "partition": "partition"}
#: the Kafka type of each numeric field: a value outside it can match nothing and is an error
#: (Arrow cannot even hold it: an int64 column compared with 2**64 raised OverflowError)
FIELD_RANGES: dict[str, tuple[str, int, int]] = {
    "offset": ("int64", -(1 << 63), (1 << 63) - 1),
    "timestamp": ("int64", -(1 << 63), (1 << 63) - 1),
    "producer_id": ("int64", -(1 << 63), (1 << 63) - 1),
    "producer_epoch": ("int16", -(1 << 15), (1 << 15) - 1),
    "leader_epoch": ("int32", -(1 << 31), (1 << 31) - 1),
    "partition": ("int32", -(1 << 31), (1 << 31) - 1),
}
#: deepest group nesting a ``~`` pattern may have (Python's ``re`` hit RecursionError at 1,000;
#: real searches nest a handful)
MAX_REGEX_NESTING = 100
#: longest ``~`` pattern, in bytes
MAX_REGEX_BYTES = 64 * 1024
#: memory RE2 may use for one compiled pattern (it refuses a larger program with an error)
_REGEX_MEMORY = 64 << 20
_ALIASES = {"time": "timestamp", "ts": "timestamp", "pid": "producer_id", "epoch": "leader_epoch",
            "txn": "transactional_id", "group_id": "group"}


# --------------------------------------------------------------------------- Kafka's hashes

def kafka_abs(n: int) -> int:
    """``org.apache.kafka.common.utils.Utils.abs``: Integer.MIN_VALUE maps to 0."""
    return 0 if n == -(1 << 31) else abs(n)


def partition_for_group(group_id: str, num_partitions: int = 50) -> int:
    """The ``__consumer_offsets`` (or ``__transaction_state``, same rule) partition of an id:
    ``Utils.abs(id.hashCode()) % numPartitions`` (GroupMetadataManager.partitionFor)."""
    return kafka_abs(java_string_hash(group_id)) % num_partitions


def murmur2(data: bytes) -> int:
    """``Utils.murmur2`` (clients/.../common/utils/Utils.java) as a signed int."""
    m, r = 0x5BD1E995, 24
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    n4 = length // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = data[4 * n4:]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The default partitioner's partition of a keyed record:
    ``Utils.toPositive(Utils.murmur2(key)) % numPartitions`` (BuiltInPartitioner)."""
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


# --------------------------------------------------------------------------- parsing

@dataclass(frozen=True)
class Condition:
    field: str
    op: str
    value: Any          # int | list[int] | bytes | None | str | a compiled RE2 pattern
    text: str           # as written

    def __str__(self) -> str:
        return self.text


def _parse_time(text: str) -> int:
    if text.lstrip("-").isdigit():
        return _int(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        raise FilterError(f"expected epoch ms or ISO-8601, got {_shown(text)}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _parse_bytes(text: str) -> bytes | None:
    if text == "null":
        return None
    if text.startswith("hex:"):
        try:
            return bytes.fromhex(text[4:])
        except ValueError:
            raise FilterError(f"bad hex bytes {_shown(text)}") from None
    return text.encode("utf-8")


def parse_condition(expr: str) -> Condition:
    m = _EXPR.match(expr)
    if not m:
        raise FilterError(f"cannot parse --where {_shown(expr)}: expected FIELD OP VALUE, OP one of "
                          f"{' '.join(_OPS)}")
    name, op, raw = m.group(1).lower(), m.group(2), expr[m.end():].strip()
    name = _ALIASES.get(name, name)
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        raw = raw[1:-1]
    if name in NUMERIC:
        if op in ("^=", "~"):
            raise FilterError(f"--where {_shown(expr)}: {name} takes = != < <= > >=")
        parse = _parse_time if name == "timestamp" else _int
        try:
            if op == "=" and "," in raw:
                return Condition(name, "in", [_in_range(name, parse(x.strip())) for x in raw.split(",")],
                                 expr)
            return Condition(name, op, _in_range(name, parse(raw)), expr)
        except FilterError as exc:
            raise FilterError(f"--where {_shown(expr)}: {exc}") from None
    if name in BYTES:
        if op in ("<", "<=", ">", ">="):
            raise FilterError(f"--where {_shown(expr)}: {name} takes = != ^= ~")
        if op == "~":
            return Condition(name, op, compile_regex(raw, expr), expr)
        value = _parse_bytes(raw)
        if value is None and op == "^=":
            raise FilterError(f"--where {_shown(expr)}: a prefix cannot be null")
        return Condition(name, op, value, expr)
    if name in TEXT:
        if op not in ("=",):
            raise FilterError(f"--where {_shown(expr)}: {name} takes =")
        return Condition(name, op, raw, expr)
    raise FilterError(f"--where {_shown(expr)}: unknown field {name!r} (fields: "
                      f"{', '.join(sorted(NUMERIC | BYTES | TEXT))})")


def _int(text: str) -> int:
    if len(text) > 100:   # int() of a long digit string is quadratic; no Kafka number is that long
        raise FilterError(f"expected an integer, got {len(text)} characters")
    try:
        return int(text, 0)
    except ValueError:
        raise FilterError(f"expected an integer, got {_shown(text)}") from None


def _in_range(name: str, value: int) -> int:
    kind, lo, hi = FIELD_RANGES[name]
    if not lo <= value <= hi:
        raise FilterError(f"{value} is outside {name}'s range ({kind}: {lo}..{hi})")
    return value


def _shown(text: str, limit: int = 200) -> str:
    """``text`` quoted for an error line, cut to ``limit`` characters (a 1,000-group pattern
    is not echoed whole)."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + f"... ({len(text)} characters)"


def _nesting(pattern: bytes) -> int:
    """Deepest group nesting of a regular expression (escapes and character classes skipped)."""
    depth = deepest = 0
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == 0x5C:              # backslash: the next byte is literal
            i += 2
            continue
        if in_class:
            if c == 0x5D:          # ]
                in_class = False
        elif c == 0x5B:            # [ (a ']' right after '[' or '[^' is a member)
            in_class = True
            if pattern[i + 1:i + 2] == b"^":
                i += 1
            if pattern[i + 1:i + 2] == b"]":
                i += 1
        elif c == 0x28:            # (
            depth += 1
            deepest = max(deepest, depth)
        elif c == 0x29 and depth:  # )
            depth -= 1
        i += 1
    return deepest


def compile_regex(raw: str, expr: str | None = None) -> Any:
    """A ``~`` pattern compiled by RE2 (linear-time matching) over bytes: Latin-1 mode, so
    each byte is one character as in Python's ``re`` on bytes, and ``.`` matches a newline
    (``re.S``). Too long, too deeply nested, or not RE2 syntax: FilterError."""
    where = f"--where {_shown(expr if expr is not None else raw)}"
    pattern = raw.encode("utf-8")
    if len(pattern) > MAX_REGEX_BYTES:
        raise FilterError(f"{where}: regular expression of {len(pattern)} bytes; at most "
                          f"{MAX_REGEX_BYTES}")
    depth = _nesting(pattern)
    if depth > MAX_REGEX_NESTING:
        raise FilterError(f"{where}: regular expression nests groups {depth} deep; at most "
                          f"{MAX_REGEX_NESTING}")
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1
    options.dot_nl = True
    options.log_errors = False
    options.max_mem = _REGEX_MEMORY
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        why = exc.args[0] if exc.args else exc
        why = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise FilterError(f"{where}: bad regular expression (RE2 syntax: no backreferences or "
                          f"lookaround): {why}") from None


@dataclass
class RecordFilter:
    """Parsed conditions plus the partition counts the hash-based fields need."""

    conditions: list[Condition] = field(default_factory=list)
    offsets_partitions: int = 50
    transaction_partitions: int = 50
    #: the topic's partition count: ``key=K`` then reads only K's partition (default partitioner)
    key_partitions: int | None = None
    include_control: bool = True
    #: producer ids of ``transactional_id`` (filled by read_filtered from __transaction_state)
    txn_producer_ids: set[int] | None = None

    def of(self, name: str) -> list[Condition]:
        return [c for c in self.conditions if c.field == name]

    # ---- pushdown bounds (half-open, inclusive start)
    def bounds(self, name: str) -> tuple[int | None, int | None]:
        lo: int | None = None
        hi: int | None = None
        for c in self.of(name):
            vals = c.value if c.op == "in" else [c.value]
            if c.op in ("=", "in"):
                c_lo, c_hi = min(vals), max(vals) + 1
            elif c.op == ">=":
                c_lo, c_hi = c.value, None
            elif c.op == ">":
                c_lo, c_hi = c.value + 1, None
            elif c.op == "<":
                c_lo, c_hi = None, c.value
            elif c.op == "<=":
                c_lo, c_hi = None, c.value + 1
            else:
                continue
            if c_lo is not None:
                lo = c_lo if lo is None else max(lo, c_lo)
            if c_hi is not None:
                hi = c_hi if hi is None else min(hi, c_hi)
        # one past the type's end (``offset<=MAX``, ``offset>MAX``) stays a number readers hold
        top = FIELD_RANGES[name][2] if name in FIELD_RANGES else None
        if top is not None and hi is not None and hi > top:
            hi = None
        if top is not None and lo is not None and lo > top:
            lo = top
        return lo, hi

    def wants_partition(self, topic: str, partition: int) -> bool:
        for c in self.of("topic"):
            if topic != c.value:
                return False
        if not _numeric_ok(self.of("partition"), partition):
            return False
        for c in self.of("group"):
            if topic != "__consumer_offsets" or partition != partition_for_group(c.value, self.offsets_partitions):
                return False
        if self.key_partitions and not topic.startswith("__"):
            for c in self.of("key"):
                if c.op == "=" and c.value is not None and \
                        partition != partition_for_key(c.value, self.key_partitions):
                    return False
        return True

    # ---- one batch / one record at a time (dump)
    def batch_may_match(self, base_offset: int, last_offset: int, max_timestamp: int, producer_id: int,
                        producer_epoch: int, leader_epoch: int) -> bool:
        """False when the batch header alone rules every record out."""
        lo, hi = self.bounds("offset")
        if (lo is not None and last_offset < lo) or (hi is not None and base_offset >= hi):
            return False
        t_lo, _ = self.bounds("timestamp")
        if t_lo is not None and max_timestamp < t_lo:
            return False
        return (_numeric_ok(self.of("producer_id"), producer_id)
                and _numeric_ok(self.of("producer_epoch"), producer_epoch)
                and _numeric_ok(self.of("leader_epoch"), leader_epoch))

    def record_matches(self, topic: str, partition: int, offset: int, timestamp: int, key: bytes | None,
                       value: bytes | None, producer_id: int, producer_epoch: int, leader_epoch: int) -> bool:
        numbers = {"offset": offset, "timestamp": timestamp, "producer_id": producer_id,
                   "producer_epoch": producer_epoch, "leader_epoch": leader_epoch, "partition": partition}
        for c in self.conditions:
            if c.field in numbers:
                if not _numeric_ok([c], numbers[c.field]):
                    return False
            elif c.field == "topic":
                if topic != c.value:
                    return False
            elif c.field in BYTES:
                if not _bytes_ok(key if c.field == "key" else value, c):
                    return False
            elif c.field == "group":
                if topic != "__consumer_offsets" or key is None or _group_of(key) != c.value.encode("utf-8"):
                    return False
            elif c.field == "transactional_id":
                if topic == "__transaction_state":
                    if key is None or _group_of(key) != c.value.encode("utf-8"):
                        return False
                elif producer_id not in (self.txn_producer_ids or set()):
                    return False
        return True

    # ---- rows
    def row_mask(self, rb: pa.RecordBatch) -> pa.Array:
        mask = pa.array([True] * rb.num_rows, pa.bool_())
        for c in self.conditions:
            mask = pc.and_(mask, self._mask(c, rb))
        return mask

    def _mask(self, c: Condition, rb: pa.RecordBatch) -> pa.Array:
        if c.field in _COLUMN:
            col = rb.column(_COLUMN[c.field])
            if c.op == "in":
                return pc.fill_null(pc.is_in(col, pa.array(c.value, col.type)), False)
            fn = {"=": pc.equal, "!=": pc.not_equal, "<": pc.less, "<=": pc.less_equal,
                  ">": pc.greater, ">=": pc.greater_equal}[c.op]
            return pc.fill_null(fn(col, pa.scalar(c.value, col.type)), False)
        if c.field == "topic":
            return pc.fill_null(pc.equal(rb.column("topic"), c.value), False)
        if c.field in BYTES:
            return _bytes_mask(rb.column(c.field), c)
        if c.field == "group":
            want = c.value.encode("utf-8")
            keys = rb.column("key").to_pylist()
            return pa.array([k is not None and _group_of(k) == want for k in keys], pa.bool_())
        if c.field == "transactional_id":
            want = c.value.encode("utf-8")
            pids = self.txn_producer_ids or set()
            topics = rb.column("topic").to_pylist()
            keys = rb.column("key").to_pylist()
            prod = rb.column("producer_id").to_pylist()
            return pa.array([(_group_of(k) == want if k is not None else False)
                             if t == "__transaction_state" else (p in pids)
                             for t, k, p in zip(topics, keys, prod, strict=True)], pa.bool_())
        raise FilterError(f"cannot apply {c.text!r}")  # pragma: no cover


def _numeric_ok(conds: Sequence[Condition], value: int) -> bool:
    for c in conds:
        if c.op == "in" and value not in c.value:
            return False
        if c.op != "in" and not {"=": value == c.value, "!=": value != c.value, "<": value < c.value,
                                 "<=": value <= c.value, ">": value > c.value,
                                 ">=": value >= c.value}[c.op]:
            return False
    return True


def _group_of(key: bytes) -> bytes | None:
    """The string after the int16 version of a coordinator record key (group id in
    ``__consumer_offsets`` keys, transactional id in ``__transaction_state`` keys)."""
    if len(key) < 4:
        return None
    n = int.from_bytes(key[2:4], "big", signed=True)
    if n < 0 or 4 + n > len(key):
        return None
    return key[4:4 + n]


def _bytes_ok(v: bytes | None, c: Condition) -> bool:
    if c.op == "=":
        return v == c.value
    if c.op == "!=":
        return v != c.value
    if c.op == "^=":
        return v is not None and v.startswith(c.value)
    return v is not None and c.value.search(v) is not None


def _bytes_mask(col: pa.Array, c: Condition) -> pa.Array:
    if c.op in ("=", "!=") and c.value is None:
        m = pc.is_null(col)
        return m if c.op == "=" else pc.invert(m)
    if c.op == "=":
        return pc.fill_null(pc.equal(col, pa.scalar(c.value, pa.binary())), False)
    if c.op == "!=":
        return pc.fill_null(pc.not_equal(col, pa.scalar(c.value, pa.binary())), True)
    if c.op == "^=":
        return pc.fill_null(pc.starts_with(col, pattern=c.value), False) if _ascii(c.value) else \
            pa.array([v is not None and v.startswith(c.value) for v in col.to_pylist()], pa.bool_())
    pattern = c.value
    return pa.array([v is not None and pattern.search(v) is not None for v in col.to_pylist()], pa.bool_())


def _ascii(b: bytes) -> bool:
    # pyarrow's starts_with on binary compares bytes, but takes its pattern as str
    return all(x < 0x80 for x in b)


def parse_where(expressions: Iterable[str], **options: Any) -> RecordFilter:
    """``["offset>=10", "key^=order-"]`` -> :class:`RecordFilter` (options: offsets_partitions,
    transaction_partitions, key_partitions, include_control)."""
    return RecordFilter([parse_condition(e) for e in expressions], **options)


# --------------------------------------------------------------------------- reading

@dataclass
class FilterStats:
    partitions_total: int = 0
    partitions_read: int = 0
    segments_total: int = 0
    segments_read: int = 0
    bytes_total: int = 0
    #: bytes of the segments opened (the reader walks their batch headers; records are
    #: decoded only for batches whose header can match)
    bytes_read: int = 0
    rows: int = 0


def _max_time(log_path: str) -> int | None:
    """Largest timestamp a rolled segment's ``.timeindex`` records (its last entry is the one
    ``onBecomeInactiveSegment`` appends), None when unknown."""
    from segtools.files.indexes import read_time_index

    ti = log_path[:-4] + ".timeindex" if log_path.endswith(".log") else None
    if ti is None or not os.path.isfile(ti):
        return None
    try:
        entries = read_time_index(ti)
    except Exception:  # noqa: BLE001 - a damaged index only costs the pushdown
        return None
    if len(entries) == 0:
        return None
    return int(entries["timestamp"].max())


def _transaction_producers(sources: Sequence[Any], flt: RecordFilter) -> set[int]:
    from segtools.internal_topics.transaction_state import decode_value
    from segtools.records.columnar import iter_record_batches

    out: set[int] = set()
    wanted = {c.value for c in flt.of("transactional_id")}
    found_partition = False
    for src in sources:
        if src.topic != "__transaction_state":
            continue
        if src.partition not in {partition_for_group(t, flt.transaction_partitions) for t in wanted}:
            continue
        found_partition = True
        for seg in src.segments:
            for rb in iter_record_batches(seg, topic=src.topic, partition=src.partition, include_control=False):
                for k, v in zip(rb.column("key").to_pylist(), rb.column("value").to_pylist(), strict=True):
                    gid = _group_of(k) if k is not None else None
                    if gid is None or gid.decode("utf-8", "replace") not in wanted:
                        continue
                    try:
                        data = decode_value(v)
                    except Exception:  # noqa: BLE001 - a damaged record names no producer
                        continue
                    if data:
                        for name in ("producerId", "previousProducerId", "nextProducerId"):
                            if data.get(name, -1) >= 0:
                                out.add(int(data[name]))
    if not found_partition:
        parts = sorted({partition_for_group(t, flt.transaction_partitions) for t in wanted})
        raise FilterError(f"transactional_id needs __transaction_state partition(s) {parts} among the "
                          "inputs (the id is written nowhere else); or filter on producer_id")
    return out


def transaction_producer_ids(paths: Sequence[str | os.PathLike[str]], flt: RecordFilter) -> set[int]:
    """The producer ids ``transactional_id`` conditions stand for, looked up in the
    ``__transaction_state`` partitions among ``paths`` (FilterError when none is there)."""
    from segtools.files.sources import resolve

    return _transaction_producers(list(resolve([os.fspath(p) for p in paths]).partitions), flt)


_CACHE: dict[tuple[tuple[str, ...], tuple[int, ...] | None], RecordFilter] = {}


def compiled(where: Sequence[str], producer_ids: Iterable[int] | None = None) -> RecordFilter:
    """A RecordFilter for ``where`` (cached: commands call this per segment), with the producer
    ids of its ``transactional_id`` conditions when already looked up."""
    ids = tuple(sorted(producer_ids)) if producer_ids is not None else None
    key = (tuple(where), ids)
    flt = _CACHE.get(key)
    if flt is None:
        flt = parse_where(where)
        flt.txn_producer_ids = set(ids) if ids is not None else None
        _CACHE[key] = flt
    return flt


def iter_filtered(paths: Sequence[str | os.PathLike[str]], flt: RecordFilter, *,
                  stats: FilterStats | None = None) -> Iterator[pa.RecordBatch]:
    """Matching records of every replica under ``paths`` (RECORD_SCHEMA, ``broker`` set when
    known), partition by partition."""
    from segtools.files.sources import resolve
    from segtools.records.columnar import iter_record_batches

    stats = stats if stats is not None else FilterStats()
    resolution = resolve([os.fspath(p) for p in paths])
    sources = list(resolution.partitions)
    if flt.of("transactional_id") and flt.txn_producer_ids is None:
        flt.txn_producer_ids = _transaction_producers(sources, flt)
    start_offset, end_offset = flt.bounds("offset")
    start_ts, end_ts = flt.bounds("timestamp")
    for src in sources:
        sizes = list(src.segment_sizes) or [os.path.getsize(s) for s in src.segments]
        stats.partitions_total += 1
        stats.segments_total += len(src.segments)
        stats.bytes_total += sum(sizes)
        if not flt.wants_partition(src.topic, src.partition):
            continue
        stats.partitions_read += 1
        bases = [stem_offset(s) for s in src.segments]
        for i, seg in enumerate(src.segments):
            nxt = bases[i + 1] if i + 1 < len(bases) else None
            base = bases[i]
            if end_offset is not None and base is not None and base >= end_offset:
                continue
            if start_offset is not None and nxt is not None and nxt <= start_offset:
                continue
            if start_ts is not None and nxt is not None:   # rolled segments only
                top = _max_time(seg)
                if top is not None and top < start_ts:
                    continue
            stats.segments_read += 1
            stats.bytes_read += sizes[i]
            for rb in iter_record_batches(seg, topic=src.topic or None,
                                          partition=src.partition if src.partition >= 0 else None,
                                          broker=src.broker, include_control=flt.include_control,
                                          start_offset=start_offset, end_offset=end_offset,
                                          start_timestamp=start_ts, end_timestamp=end_ts):
                out = rb.filter(flt.row_mask(rb)) if flt.conditions else rb
                if out.num_rows:
                    stats.rows += out.num_rows
                    yield out


def read_filtered(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
                  where: RecordFilter | Iterable[str], *, stats: FilterStats | None = None,
                  **options: Any) -> pa.Table:
    """The records under ``paths`` matching ``where`` (a RecordFilter or ``--where`` strings)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    flt = where if isinstance(where, RecordFilter) else parse_where(where, **options)
    batches = list(iter_filtered(paths, flt, stats=stats))
    return pa.Table.from_batches(batches, schema=RECORD_SCHEMA) if batches else RECORD_SCHEMA.empty_table()
