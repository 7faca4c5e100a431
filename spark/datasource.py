"""``kafka_segments``: a Spark (>= 4.0) Python data source over Kafka log segments.

Name
    ``kafka_segments`` (never ``kafka``: Spark's JVM Kafka source would win that name).

Path Support
    A segment file, a partition dir, a broker log dir, or a folder of ``broker-<id>`` dirs,
    on any filesystem pyarrow knows (local paths, ``file://``, ``hdfs://``, ``s3://``).

Partitioning Strategy
    Segment files are grouped into ``InputPartition`` s by bytes, in (topic, partition,
    broker, base offset) order: a group closes once it holds ``GROUP_BYTES`` (128 MiB,
    counting each file as at least ``OPEN_COST_BYTES``, 1 MiB, like Spark's own file
    sources), so a big segment is a task of its own and thousands of small or empty segments
    share a few tasks (one task per file cost ~45 ms of Spark overhead each: 10,000 empty
    segments took 444 s).

Performance Notes
    ``read()`` yields Arrow record batches from ``segtools.records.columnar`` (no per-row Python
    objects), with ``pa.binary`` columns as Spark requires. Local files are read in place;
    remote ones are copied to a local temporary file first (one segment at a time).

Options (all strings)
    ``level``: ``records`` (default, CONTRACT.md section 5) or ``batches`` (one row per batch).
    ``broker``: broker id stamped in the ``broker`` column (default: from ``meta.properties``
    or a ``broker-<id>`` folder name). ``replica_map``: JSON ``{partition_dir: id}``; reads
    only those dirs and stamps ``id`` as ``broker`` (used by compare). ``start_offset`` /
    ``end_offset``: record offsets to keep (records level; segments outside are skipped).
    ``errors``: ``raise`` (default) or ``stop`` (end a segment at unreadable bytes).
    ``topics`` / ``partitions``: comma lists; other segments are never opened.
    ``group_bytes``: bytes of segments per task (default 128 MiB; 1 = one task per segment).
    ``errors=column``: a segment that stops at unreadable bytes ends with one row whose
    ``read_error`` column (added to the schema) holds the reader's message; other rows have it
    null. Nothing is read twice to find out why a segment stopped.
    ``plan``: JSON list of replicas ``{topic, partition, broker, dir, bases, sizes}`` (base
    offsets and file sizes as base64 of little-endian int64; ``paths`` instead of ``bases``
    when the files are not named ``<dir>/<20-digit base offset>.log``), as :func:`plan_json`
    writes it: read exactly these segments, with no discovery of its own (compare discovers
    once, on the driver, and passes its plan here). Tasks are slices of replicas
    (``RunGroup``), about 16 bytes a segment wherever the plan is held.
    ``columns``: comma list of the schema's columns to produce (others are never built).

Examples
    >>> import segtools.spark
    >>> segtools.spark.register(spark)
    >>> spark.read.format("kafka_segments").load("/var/lib/kafka/data").count()
    >>> spark.read.format("kafka_segments").option("level", "batches").load("broker-1/orders-0")
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from segtools.formats.names import stem_offset


@dataclass(frozen=True)
class SegmentPartition(InputPartition):
    """One segment file to read: everything a worker needs, as plain picklable values."""

    uri: str               # filesystem URI or local path of the segment file
    topic: str
    partition: int
    broker: int | None
    base_offset: int               # from the file name (formats.names.stem_offset); -1: none
    next_base_offset: int | None   # base offset of the next segment, for offset pruning
    size: int = 0                  # bytes, for grouping


#: Bytes per task (a group of segments), and the least a file counts for (its open cost).
GROUP_BYTES = 128 << 20
OPEN_COST_BYTES = 1 << 20


@dataclass(frozen=True)
class SegmentGroup(InputPartition):
    """Several segment files read by one task, in order."""

    segments: tuple[SegmentPartition, ...]


def group_segments(parts: list[SegmentPartition], *, group_bytes: int = GROUP_BYTES,
                   open_cost: int = OPEN_COST_BYTES) -> list[SegmentGroup]:
    """Consecutive segments packed into groups of about ``group_bytes`` (each file counted as at
    least ``open_cost``); order is kept, so every group reads its files in plan order."""
    groups: list[SegmentGroup] = []
    current: list[SegmentPartition] = []
    weight = 0
    for p in parts:
        cost = max(p.size, open_cost)
        if current and weight + cost > group_bytes:
            groups.append(SegmentGroup(tuple(current)))
            current, weight = [], 0
        current.append(p)
        weight += cost
    if current:
        groups.append(SegmentGroup(tuple(current)))
    return groups


def _open_fs(path: str) -> tuple[Any, str]:
    """(filesystem, path inside it) for a local path or any URI pyarrow understands."""
    from pyarrow import fs as pafs

    if "://" in path:
        return pafs.FileSystem.from_uri(path)
    import os

    return pafs.LocalFileSystem(), os.path.abspath(path)


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def segment_bases(segments: Sequence[str]) -> list[tuple[int, int | None]]:
    """(base offset, next segment's base offset) of each segment, read from the file names as
    Kafka reads them (formats.names.stem_offset). A name without one (a renamed copy) has base
    -1 and is never the reason to skip its neighbour: only used to skip segments outside an
    offset range."""
    bases = [stem_offset(seg) for seg in segments]
    return [(-1 if base is None else base, bases[i + 1] if i + 1 < len(bases) else None)
            for i, base in enumerate(bases)]


def plan_segments(path: str, *, broker: int | None = None,
                  replica_map: dict[str, int] | None = None) -> list[SegmentPartition]:
    """Every segment file under ``path`` (or under the dirs of ``replica_map``), one
    partition each, in (topic, partition, broker, base offset) order. What ``path`` stands
    for is decided by :func:`segtools.files.sources.resolve`, as for every other command."""
    from segtools.files.sources import resolve

    resolution = resolve([path], check_copies=False)
    resolution.warn()
    norm_map = {_open_fs(k)[1].rstrip("/"): v for k, v in (replica_map or {}).items()}
    parts: list[SegmentPartition] = []
    for src in resolution.partitions:
        if replica_map is not None:
            key = _open_fs(src.partition_dir or "")[1].rstrip("/")
            if key not in norm_map:
                continue
            stamp: int | None = norm_map[key]
        elif broker is not None:
            stamp = broker
        else:
            stamp = src.broker
        for i, (seg, (base, nxt)) in enumerate(zip(src.segments, segment_bases(src.segments))):
            parts.append(SegmentPartition(seg, src.topic, src.partition, stamp, base, nxt,
                                          src.segment_sizes[i]))
    parts.sort(key=lambda p: (p.topic, p.partition, -1 if p.broker is None else p.broker, p.base_offset, p.uri))
    return parts


@dataclass(frozen=True, eq=False)
class SegmentRun:
    """Consecutive segments of one replica, as arrays: 16 bytes a segment (a
    ``SegmentPartition`` of each, built on the planner and pickled into every task, cost
    ~600 bytes a segment on the driver alone). ``paths`` is set only when the files are not
    all ``<folder>/<20-digit base offset>.log``; the segment's base offset then comes from
    its name as :func:`segment_bases` reads it."""

    topic: str
    partition: int
    broker: int | None
    folder: str
    bases: Any                       # array('q') of base offsets (unused when ``paths``)
    sizes: Any                       # array('q') of file sizes
    paths: tuple[str, ...] | None
    next_base_offset: int | None     # base offset of the replica's segment after the run

    def __len__(self) -> int:
        return len(self.sizes)

    def parts(self) -> Iterator[SegmentPartition]:
        """The run's segments, one ``SegmentPartition`` at a time (made where they are read)."""
        import os

        from segtools.formats.names import LOG_SUFFIX, filename_prefix_from_offset

        n = len(self.sizes)
        if self.paths is not None:
            bases = segment_bases(self.paths)
            for i, (base, nxt) in enumerate(bases):
                yield SegmentPartition(self.paths[i], self.topic, self.partition, self.broker, base,
                                       self.next_base_offset if i + 1 == n else nxt, self.sizes[i])
            return
        for i in range(n):
            base = self.bases[i]
            yield SegmentPartition(os.path.join(self.folder, filename_prefix_from_offset(base) + LOG_SUFFIX),
                                   self.topic, self.partition, self.broker, base,
                                   self.bases[i + 1] if i + 1 < n else self.next_base_offset, self.sizes[i])

    def slice(self, start: int, stop: int) -> SegmentRun:
        """Segments ``[start, stop)`` of the run."""
        n = len(self.sizes)
        if self.paths is not None:
            # as segment_bases: the next name's offset (None when it has none)
            nxt = stem_offset(self.paths[stop]) if stop < n else self.next_base_offset
            return SegmentRun(self.topic, self.partition, self.broker, self.folder, self.bases,
                              self.sizes[start:stop], self.paths[start:stop], nxt)
        return SegmentRun(self.topic, self.partition, self.broker, self.folder, self.bases[start:stop],
                          self.sizes[start:stop], None, self.bases[stop] if stop < n else self.next_base_offset)


@dataclass(frozen=True)
class RunGroup(InputPartition):
    """Slices of replicas read by one task, in order (what a ``plan`` is split into)."""

    runs: tuple[SegmentRun, ...]

    def parts(self) -> Iterator[SegmentPartition]:
        for run in self.runs:
            yield from run.parts()


def group_runs(runs: Sequence[SegmentRun], *, group_bytes: int = GROUP_BYTES,
               open_cost: int = OPEN_COST_BYTES) -> list[RunGroup]:
    """:func:`group_segments` over runs, without an object per segment: a group closes before
    the segment that would take it past ``group_bytes`` (each file counted as at least
    ``open_cost``; a segment heavier than that alone is a group of its own)."""
    import numpy as np

    groups: list[RunGroup] = []
    current: list[SegmentRun] = []
    weight = 0
    for run in runs:
        n = len(run)
        if n == 0:
            continue
        cum = np.cumsum(np.maximum(np.frombuffer(run.sizes, dtype=np.int64), open_cost))
        i = 0
        while i < n:
            done = int(cum[i - 1]) if i else 0
            # segments i..k-1 fit in what is left of the group
            k = int(np.searchsorted(cum, done + group_bytes - weight, side="right"))
            if k <= i:
                if current:                      # the next segment does not fit: close the group
                    groups.append(RunGroup(tuple(current)))
                    current, weight = [], 0
                    continue
                k = i + 1                        # heavier than a group: alone
            current.append(run.slice(i, k) if (i, k) != (0, n) else run)
            weight += int(cum[k - 1]) - done
            i = k
    if current:
        groups.append(RunGroup(tuple(current)))
    return groups


def plan_json(runs: Sequence[SegmentRun]) -> str:
    """The ``plan`` option's value: one JSON object per replica, its base offsets and sizes
    as base64 of little-endian int64 (about 21 bytes a segment)."""
    import base64

    import numpy as np

    little = np.dtype(np.int64).newbyteorder("<")   # the plan's own encoding, not a Kafka layout

    def b64(values: Any) -> str:
        return base64.b64encode(np.asarray(values, dtype=little).tobytes()).decode("ascii")

    return json.dumps([{"topic": r.topic, "partition": r.partition, "broker": r.broker, "dir": r.folder,
                        "sizes": b64(r.sizes), **({"paths": list(r.paths)} if r.paths is not None
                                                  else {"bases": b64(r.bases)})}
                       for r in runs])


def plan_from_json(text: str) -> list[SegmentRun]:
    """The runs of a ``plan`` option (one per replica)."""
    import base64
    from array import array

    import numpy as np

    little = np.dtype(np.int64).newbyteorder("<")

    def arr(field: str) -> Any:
        return array("q", np.frombuffer(base64.b64decode(field), dtype=little).astype(np.int64).tobytes())

    runs = []
    for r in json.loads(text):
        paths = tuple(str(p) for p in r["paths"]) if r.get("paths") is not None else None
        runs.append(SegmentRun(str(r["topic"]), int(r["partition"]),
                               None if r.get("broker") is None else int(r["broker"]), str(r.get("dir") or ""),
                               array("q") if paths is not None else arr(r["bases"]), arr(r["sizes"]), paths,
                               None))
    return runs


def _arrow_schema(options: Any) -> Any:
    """The Arrow schema these options produce (level, ``errors=column``, ``columns``)."""
    import pyarrow as pa

    from segtools.records.schema import BATCH_SCHEMA, RECORD_SCHEMA

    level = options.get("level", "records")
    if level not in ("records", "batches"):
        from segtools.errors import InputError

        raise InputError(f"kafka_segments: level must be 'records' or 'batches', got {level!r}")
    schema = BATCH_SCHEMA if level == "batches" else RECORD_SCHEMA
    if options.get("errors") == "column":
        schema = schema.append(pa.field("read_error", pa.string()))
    columns = [c.strip() for c in (options.get("columns") or "").split(",") if c.strip()]
    if columns:
        missing = [c for c in columns if c not in schema.names]
        if missing:
            from segtools.errors import InputError

            raise InputError(f"kafka_segments: no column {missing[0]!r} (columns: {', '.join(schema.names)})")
        schema = pa.schema([schema.field(c) for c in columns])
    return schema


def read_segment(part: SegmentPartition, *, level: str = "records", start_offset: int | None = None,
                 end_offset: int | None = None, errors: str = "raise") -> Iterator[Any]:
    """Arrow record batches (RECORD_SCHEMA or BATCH_SCHEMA) of one segment."""
    import pyarrow as pa

    from segtools.errors import BatchTooLargeError, SegtoolsError
    from segtools.records import columnar
    from segtools.records.schema import BATCH_SCHEMA, RECORD_SCHEMA

    schema = BATCH_SCHEMA if level == "batches" else RECORD_SCHEMA
    if level != "batches":
        if end_offset is not None and part.base_offset >= end_offset:
            return
        if start_offset is not None and part.next_base_offset is not None and part.next_base_offset <= start_offset:
            return
    kw: dict[str, Any] = {"topic": part.topic, "partition": part.partition, "broker": part.broker}
    # a planned segment is located already: discovering it again cost ~1.5 ms per file
    if level == "batches":
        it = columnar.iter_batch_batches(part.uri, located=True, **kw)
    else:
        it = columnar.iter_record_batches(part.uri, start_offset=start_offset, end_offset=end_offset,
                                          located=True, **kw)
    try:
        for rb in it:
            if rb.num_rows == 0:
                continue
            if rb.schema != schema:
                rb = pa.Table.from_batches([rb]).cast(schema).to_batches()[0]
            if errors == "column":
                rb = rb.append_column("read_error", pa.nulls(rb.num_rows, pa.string()))
            yield rb
    except SegtoolsError as exc:
        # a batch above the limit is never "unreadable bytes": the caller must see it
        if errors not in ("stop", "column") or isinstance(exc, BatchTooLargeError):
            raise
        if errors == "column":
            from segtools.forensics.pipeline import error_batch

            yield error_batch(part.topic, part.partition, part.broker, _basename(part.uri), str(exc),
                              schema.append(pa.field("read_error", pa.string())))


class KafkaSegmentsReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = options
        self.level = options.get("level", "records")

    def __getstate__(self) -> dict[str, Any]:
        # Spark pickles the reader into the function every task runs: a task gets its own
        # slices of the plan as its partition, never the whole plan (it was shipped to each
        # of ~200 tasks at 100,000 segments a replica)
        state = dict(self.__dict__)
        state["options"] = {k: v for k, v in self.options.items() if k != "plan"}
        return state

    def partitions(self) -> list[SegmentGroup] | list[RunGroup]:  # type: ignore[override]
        size = self.options.get("group_bytes")
        group_bytes = int(size) if size else GROUP_BYTES
        if self.options.get("plan"):
            return group_runs(plan_from_json(self.options["plan"]), group_bytes=group_bytes)
        return group_segments(self._segments(), group_bytes=group_bytes)

    def _segments(self) -> list[SegmentPartition]:
        path = self.options.get("path")
        replica_map = self.options.get("replica_map")
        rmap = {str(k): int(v) for k, v in json.loads(replica_map).items()} if replica_map else None
        broker = self.options.get("broker")
        if not path:
            if not rmap:
                from segtools.errors import InputError

                raise InputError("kafka_segments needs a path: .load(PATH)")
            parts: list[SegmentPartition] = []
            for pdir in rmap:
                parts.extend(plan_segments(pdir, replica_map={pdir: rmap[pdir]}))
            return parts
        parts = plan_segments(path, broker=int(broker) if broker else None, replica_map=rmap)
        # Pruning by options, not pushFilters: a reader implementing pushFilters fails on
        # sessions where spark.sql.python.filterPushdown.enabled is off (the default).
        topics = {t.strip() for t in self.options.get("topics", "").split(",") if t.strip()}
        partitions = {int(x) for x in self.options.get("partitions", "").split(",") if x.strip()}
        return [p for p in parts if (not topics or p.topic in topics)
                and (not partitions or p.partition in partitions)]

    # Spark hands back only the partitions partitions() made: ours, narrower than InputPartition
    def read(self, partition: RunGroup | SegmentGroup | SegmentPartition) -> Iterator[Any]:  # type: ignore[override]
        start = self.options.get("start_offset")
        end = self.options.get("end_offset")
        segments: Iterable[SegmentPartition] = (
            partition.parts() if isinstance(partition, RunGroup)
            else partition.segments if isinstance(partition, SegmentGroup) else (partition,))
        columns = [c.strip() for c in (self.options.get("columns") or "").split(",") if c.strip()]
        # small segments' batches are handed to Spark gathered (each batch handed over costs
        # a round trip through Spark's Python data source, more than a one-batch segment's read)
        pending: list[Any] = []
        rows = size = 0
        for segment in segments:
            for rb in read_segment(segment, level=self.level, start_offset=int(start) if start else None,
                                   end_offset=int(end) if end else None,
                                   errors=self.options.get("errors", "raise")):
                rb = rb.select(columns) if columns else rb
                # the buffers' size, not nbytes: nbytes cost ~120 us on a one-row batch, more than
                # reading a one-batch segment; a slice counts all of its buffers (handed on sooner)
                nbytes = rb.get_total_buffer_size()
                if rb.num_rows >= GATHER_ROWS or nbytes >= GATHER_BYTES:   # large: as it is
                    if pending:
                        yield _gathered(pending)
                        pending, rows, size = [], 0, 0
                    yield rb
                    continue
                pending.append(rb)
                rows += rb.num_rows
                size += nbytes
                if rows >= GATHER_ROWS or size >= GATHER_BYTES:
                    yield _gathered(pending)
                    pending, rows, size = [], 0, 0
        if pending:
            yield _gathered(pending)


#: small batches are gathered into one of up to this many rows / bytes before they go to Spark
GATHER_ROWS = 65536
GATHER_BYTES = 16 << 20


def _gathered(batches: list[Any]) -> Any:
    import pyarrow as pa

    return batches[0] if len(batches) == 1 else pa.concat_batches(batches)


class KafkaSegmentsDataSource(DataSource):
    """Kafka log segments as a Spark DataFrame (records or batches); see the module docs."""

    @classmethod
    def name(cls) -> str:
        return "kafka_segments"

    def schema(self) -> str:
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(_arrow_schema(self.options))  # type: ignore[return-value]

    def reader(self, schema: Any) -> KafkaSegmentsReader:
        options = dict(self.options)
        if "plan" in self.options:
            # called where Spark plans the read; the data source is pickled into every task's
            # function after this (for its name): the plan stays with the reader, which plans
            # the partitions from it and does not pickle it
            del self.options["plan"]
        return KafkaSegmentsReader(options)
