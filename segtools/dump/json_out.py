"""`--output ndjson` (one object per line, each with "type") and `--output json` (one document
per file). Field names are the snake_case forms of Kafka's names.

ndjson types: ``file`` (file, kind), ``header`` (log_starting_offset | snapshot_end_offset +
snapshot_epoch | kraft_bootstrap_snapshot), ``batch`` (position, size, magic, base_offset,
last_offset, v2 header fields, timestamp_type, max_timestamp, compression, crc, crc_valid),
``record`` (offset, batch_base_offset, timestamp_type, timestamp, key_size, value_size,
sequence + header_keys (v2) or crc + crc_valid (v0/v1), control; with --print-data-log also
key, payload and (v2) headers: [{"key", "value"}]), ``index_entry``, ``time_index_entry``,
``aborted_txn``, ``producer_entry``,
``checkpoint_entry``/``leader_epoch_entry``/``partition_metadata``/``property``/
``quorum_state``/``clean_shutdown``, ``note`` and ``finding`` (kind, problem, message and the
facts of the finding). Every ndjson object carries ``topic`` and ``partition``, from the
partition directory the file is in (null for broker-level files and files outside one).
json: ``{"schema_version", "type": "file", "file", "kind", "topic", "partition", "header",
"batches": [{..., "records": [...]}], "entries", "notes", "findings"}`` per file.

``schema_version`` (:data:`SCHEMA_VERSION`; segtools/schemas/dump-json and dump-ndjson): on each
json document; in ndjson on each ``file`` line (the head of that file's lines) and on every line
written outside a file (a note or finding about a path that never became one), not on every
batch or record line, so a dump of millions of records does not repeat it.

Record data (CONTRACT.md section 2): with the default StringDecoder, keys, payloads and
header values are strings when they are valid UTF-8 and ``{"base64": "..."}`` otherwise (the
text output prints Java's replacement characters instead); what --offsets-decoder,
--transaction-log-decoder and --cluster-metadata-decoder decode is a nested JSON object (a
line Kafka prints instead, such as ``<DELETE>`` or an "Error at ..." line, stays a string);
custom decoder classes give their strings as they are.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from typing import IO, Any, TextIO

from segtools.dump.options import Summaries
from segtools.dump.sinks import Sink
from segtools.forensics.loss import text_or_base64

#: files that belong to the broker, not to a partition (their folder name says nothing)
_BROKER_KINDS = frozenset({"offset_checkpoint", "meta_properties", "clean_shutdown"})


_FINDINGS_IN_MEMORY = 10000

#: ``schema_version`` of --output json/ndjson; fields are only added within a version
SCHEMA_VERSION = 1


def _spilled_items(spill: IO[str]) -> Iterator[str]:
    """The NUL-terminated JSON texts of a findings spill file, read in bounded steps (JSON
    text never holds a raw NUL: json.dumps escapes control characters)."""
    rest = ""
    while True:
        chunk = spill.read(1 << 16)
        if not chunk:
            break
        parts = (rest + chunk).split("\x00")
        rest = parts.pop()
        yield from parts
    if rest:
        yield rest


def partition_of(path: str, kind: str) -> tuple[str | None, int | None]:
    """(topic, partition) from the name of the partition directory ``path`` is in."""
    if kind in _BROKER_KINDS:
        return None, None
    from segtools.dump.paths import parse_partition_dir

    parent = os.path.basename(os.path.dirname(os.path.abspath(path)))
    parsed = parse_partition_dir(parent)
    return (None, None) if parsed is None else parsed


def _nested(text: str) -> Any:
    """A decoder's JSON text as a JSON value; other text (``<DELETE>``, error lines) as is."""
    if text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def data_value(text: str, raw: Any, mode: str) -> Any:
    """A key or payload: ``bytes`` mode renders the record's own bytes (UTF-8 text or base64),
    ``json`` mode nests a decoder's JSON, ``text`` keeps a custom decoder's string."""
    if mode == "bytes" and raw is not None:
        return text_or_base64(raw)
    if mode == "json":
        return _nested(text)
    if mode in ("txn_key", "txn_value"):
        nested = _nested(text)
        if isinstance(nested, str) and raw is not None:
            # Kafka's transaction-log text is not JSON: nest the decoded fields instead
            from segtools.internal_topics import transaction_state

            try:
                fields = (transaction_state.decode_key(raw) if mode == "txn_key"
                          else transaction_state.decode_value(raw))
                json.dumps(fields)
            except Exception:  # undecodable: the line Kafka prints ("unknown::version=7")
                return text
            return text if fields is None else fields
        return nested
    return text


def batch_dict(batch: Any) -> dict[str, Any]:
    d: dict[str, Any] = {
        "type": "batch",
        "position": batch.position,
        "size": batch.size,
        "magic": batch.magic,
        "base_offset": batch.base_offset,
        "last_offset": batch.last_offset,
    }
    if batch.magic >= 2:
        d.update(
            records_count=batch.records_count,
            base_sequence=batch.base_sequence,
            last_sequence=batch.last_sequence,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            partition_leader_epoch=batch.partition_leader_epoch,
            is_transactional=bool(batch.is_transactional),
            is_control=bool(batch.is_control),
            delete_horizon_ms=batch.delete_horizon_ms,
        )
    d.update(
        timestamp_type=batch.timestamp_type,
        max_timestamp=batch.max_timestamp,
        compression=batch.compression,
        crc=batch.crc,
        crc_valid=bool(batch.crc_valid),
    )
    return d


def record_dict(batch: Any, record: Any, metadata: bool,
                control: tuple[str, dict[str, Any]] | None,
                key: str | None, payload: str | None,
                modes: tuple[str, str] | None = None) -> dict[str, Any]:
    """``modes``: (key mode, value mode) of :func:`data_value` when data is printed."""
    d: dict[str, Any] = {"type": "record", "offset": record.offset}
    if metadata:
        d["timestamp_type"] = batch.timestamp_type
        d["timestamp"] = record.timestamp
        d["key_size"] = -1 if record.key is None else len(record.key)
        d["value_size"] = -1 if record.value is None else len(record.value)
        if batch.magic >= 2:
            d["sequence"] = record.sequence
            d["header_keys"] = [k for k, _ in record.headers]
        else:
            d["crc"] = record.crc
            d["crc_valid"] = bool(record.crc_valid)
        if control is not None:
            d["control"] = control[1]
    key_mode, value_mode = modes or ("text", "text")
    if key is not None:
        d["key"] = data_value(key, record.key, key_mode)
    if payload is not None:
        d["payload"] = data_value(payload, record.value, value_mode)
    if modes is not None and batch.magic >= 2:
        d["headers"] = [{"key": k, "value": text_or_base64(v)} for k, v in record.headers]
    return d


class NdjsonSink(Sink):
    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self.file: str | None = None
        self.topic: str | None = None
        self.partition: int | None = None
        self._dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def _emit(self, obj: dict[str, Any]) -> None:
        if self.file is None:   # a line outside any file's group carries its own version
            obj["schema_version"] = SCHEMA_VERSION
        obj["topic"] = self.topic
        obj["partition"] = self.partition
        self.out.write(self._dumps(obj) + "\n")

    def begin_file(self, path: str, kind: str) -> None:
        self.file = path
        self.topic, self.partition = partition_of(path, kind)
        self._emit({"schema_version": SCHEMA_VERSION, "type": "file", "file": path, "kind": kind})

    def end_file(self) -> None:
        self.file = None
        self.topic = self.partition = None

    def header(self, line: str, fields: dict[str, Any]) -> None:
        self._emit({"type": "header", "file": self.file, **fields})

    def batch(self, batch: Any) -> None:
        d = batch_dict(batch)
        d["file"] = self.file
        self._emit(d)

    def record(self, batch: Any, record: Any, metadata: bool,
               control: tuple[str, dict[str, Any]] | None,
               key: str | None, payload: str | None) -> None:
        d = record_dict(batch, record, metadata, control, key, payload, self.data_modes)
        d["file"] = self.file
        d["batch_base_offset"] = batch.base_offset
        self._emit(d)

    def entry(self, kind: str, line: str, fields: dict[str, Any]) -> None:
        self._emit({"type": kind, "file": self.file, **fields})

    def note(self, line: str, fields: dict[str, Any], stream: str = "out") -> None:
        self._emit({"type": "note", "file": self.file, "message": line, **fields})

    def finding(self, kind: str, fields: dict[str, Any], line: str | None = None,
                stream: str = "err") -> None:
        obj = {"type": "finding", "kind": kind, "file": self.file, **fields}
        if line is not None and "message" not in obj:
            obj["message"] = line
        self._emit(obj)


class JsonSink(Sink):
    """One JSON document per file (``json.dumps(doc, indent=2)`` layout), streamed: each batch
    is written once the next one starts, so a large segment never sits in memory as a whole.
    Notes and findings are written at the end of the document."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.err = err
        self.doc: dict[str, Any] | None = None   # type, file, kind, header (until written)
        self._batch: dict[str, Any] | None = None
        self._records_open = False                # the current batch's "records" list written to
        self._list: str | None = None            # "batches" | "entries" being written
        self._started = False                     # document head written
        self._notes: list[dict[str, Any]] = []
        self._findings: list[dict[str, Any]] = []
        self._spill: Any = None                   # findings beyond _FINDINGS_IN_MEMORY
        self._dumps = json.JSONEncoder(ensure_ascii=False, indent=2).encode

    def _value(self, value: Any, depth: int) -> str:
        return self._dumps(value).replace("\n", "\n" + "  " * depth)

    def _open_item(self, key: str) -> None:
        """Start one element of the list ``key`` (opening it, or closing another, first)."""
        write = self.out.write
        if not self._started:
            assert self.doc is not None
            write("{\n" + "".join(f"  {self._dumps(k)}: {self._value(v, 1)},\n"
                                   for k, v in self.doc.items()))
            self._started = True
        if self._list != key:
            if self._list is not None:
                write("\n  ],\n")
            write(f"  {self._dumps(key)}: [\n    ")
            self._list = key
        else:
            write(",\n    ")

    def _item(self, key: str, value: Any) -> None:
        """Write one element of the list ``key``."""
        self._open_item(key)
        self.out.write(self._value(value, 2))

    def _flush_batch(self) -> None:
        if self._records_open:
            self.out.write("\n      ]\n    }")
            self._records_open = False
        elif self._batch is not None:
            self._item("batches", self._batch)
        self._batch = None

    def begin_file(self, path: str, kind: str) -> None:
        topic, partition = partition_of(path, kind)
        self.doc = {"schema_version": SCHEMA_VERSION, "type": "file", "file": path, "kind": kind, "topic": topic,
                    "partition": partition, "header": None}
        self._batch = None
        self._records_open = False
        self._list = None
        self._started = False
        self._notes = []
        self._findings = []

    def header(self, line: str, fields: dict[str, Any]) -> None:
        assert self.doc is not None and not self._started
        self.doc["header"] = fields

    def batch(self, batch: Any) -> None:
        assert self.doc is not None
        self._flush_batch()
        d = batch_dict(batch)
        del d["type"]
        self._batch = d

    def record(self, batch: Any, record: Any, metadata: bool,
               control: tuple[str, dict[str, Any]] | None,
               key: str | None, payload: str | None) -> None:
        assert self._batch is not None
        d = record_dict(batch, record, metadata, control, key, payload, self.data_modes)
        del d["type"]
        write = self.out.write
        if not self._records_open:
            # the batch's fields, then its records one by one: a batch of millions of
            # records never sits in memory (same text as json.dumps(indent=2) of the whole)
            self._open_item("batches")
            head = self._value(self._batch, 2)
            write(head[:-len("\n    }")] + ',\n      "records": [\n        ')
            self._records_open = True
        else:
            write(",\n        ")
        write(self._dumps(d).replace("\n", "\n        "))

    def entry(self, kind: str, line: str, fields: dict[str, Any]) -> None:
        assert self.doc is not None
        self._flush_batch()
        self._item("entries", {"type": kind, **fields})

    def note(self, line: str, fields: dict[str, Any], stream: str = "out") -> None:
        if self.doc is None:  # a note about a path that never became a file document
            self.out.write(json.dumps({"schema_version": SCHEMA_VERSION, "type": "note", "message": line, **fields,
                                       "topic": None, "partition": None}) + "\n")
            return
        self._notes.append({"message": line, **fields})

    def finding(self, kind: str, fields: dict[str, Any], line: str | None = None,
                stream: str = "err") -> None:
        obj = {"kind": kind, **fields}
        if line is not None and "message" not in obj:
            obj["message"] = line
        if self.doc is None:
            self.out.write(json.dumps({"schema_version": SCHEMA_VERSION, "type": "finding", **obj, "topic": None,
                                       "partition": None}, ensure_ascii=False) + "\n")
            return
        self._findings.append(obj)
        if len(self._findings) >= _FINDINGS_IN_MEMORY:
            # millions of findings (one per repeated offset of a bomb batch) must not sit in
            # memory until the document ends: keep them as text in a temporary file
            if self._spill is None:
                self._spill = tempfile.TemporaryFile("w+", encoding="utf-8",
                                                     prefix="segtools-dump-")
            self._spill.write("".join(self._value(f, 2) + "\x00"
                                      for f in self._findings))
            self._findings = []

    def end_file(self) -> None:
        if self.doc is not None:
            self._flush_batch()
            write = self.out.write
            if not self._started:
                write("{\n" + "".join(f"  {self._dumps(k)}: {self._value(v, 1)},\n"
                                       for k, v in self.doc.items()))
            elif self._list is not None:
                write("\n  ],\n")
            if self._notes:
                write(f'  "notes": {self._value(self._notes, 1)},\n')
            if self._spill is None:
                write(f'  "findings": {self._value(self._findings, 1)}\n}}\n')
            else:
                write('  "findings": [\n    ')
                self._spill.seek(0)
                first = True
                for item in _spilled_items(self._spill):
                    write(item if first else ",\n    " + item)
                    first = False
                for f in self._findings:
                    write(",\n    " + self._value(f, 2))
                write("\n  ]\n}\n")
                self._spill.close()
                self._spill = None
        self.doc = None
        self._batch = None

    def summary(self, summaries: Summaries) -> None:
        return None
