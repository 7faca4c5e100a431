"""Export batches and records to Parquet (CONTRACT.md section 5).

Layout: every file directly in ``OUT``, named
``part-<topic>+<partition>+<first offset, 10 digits>.<codec>.parquet``
(``...+<offset>.batches.<codec>.parquet`` at batch level). Each file holds the ``topic`` and
``partition`` columns itself, so the folder adds none: Hive ``topic=``/``partition=`` folders
made pandas/pyarrow infer a second, differently typed ``topic``/``partition`` (dictionary, or
an integer for a topic named "123") and refuse the folder, and plain sub-folders are not read
by Spark's default ``spark.read.parquet(OUT)``. Flat, the default calls of pandas, pyarrow,
DuckDB (``OUT/**/*.parquet``) and Spark all read ``OUT`` with Spark's Kafka types. Every file
name starts with ``part-`` because Spark and Hadoop skip names starting with ``_`` or ``.``
(internal topics such as ``__consumer_offsets``); the rest is Kafka Connect's
``<topic>+<partition>+<offset>``. One file per source segment of 64 MiB or more; smaller
consecutive segments of a replica share a file up to that size (``FILE_BYTES``; a file per
tiny segment cost more than reading it). Written as a stream of row groups (memory flat in
segment size and count) to a hidden temporary name and renamed when complete.

With ``by_broker`` each input log dir gets one Hive folder ``replica=broker-<id>/`` (readers
add a string column ``replica``; ``broker`` stays the id read from the files). Two input log
dirs that claim the same broker id get ``replica=broker-0`` and ``replica=broker-0-2`` (…-3,
in real-path order; :func:`broker_folders` says which is which), so no input overwrites another
and their rows stay apart. ``OUT/_PARTIAL`` marks a run that has not ended well;
``OUT/_SUCCESS`` (JSON: inputs, folders, files, rows) one that has.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from segtools.filters import RecordFilter

from segtools.errors import InputError, display_path, is_utf8
from segtools.files.salvage_marker import hole_findings
from segtools.files.sources import PartitionSource, Resolution, resolve
from segtools.formats.names import stem_offset
from segtools.records import columnar  # at import: imported per segment it cost ~30 us each
from segtools.records.schema import BATCH_SCHEMA, RECORD_SCHEMA

#: Columns worth dictionary-encoding (few distinct values). Keys, values, offsets and timestamps
#: are mostly unique: pyarrow's default of trying a dictionary for every column made writing
#: 2.5x slower for nothing.
DICTIONARY_COLUMNS = frozenset({
    "topic", "partition", "timestampType", "leader_epoch", "producer_id", "producer_epoch",
    "is_transactional", "is_control", "broker", "magic", "compression", "crc_valid", "segment",
    "timestamp_type", "attributes", "partition_leader_epoch", "has_delete_horizon",
})
#: Columns written without min/max statistics: record keys, values and headers are mostly
#: unique binary, their statistics answer no useful query and cost ~10% of the writer's CPU
#: (issue 25, measured on a 32 MiB real-producer segment); every other column keeps them.
NO_STATISTICS_COLUMNS = frozenset({"key", "value", "headers"})
#: per level: the schema, its dictionary-encoded columns and those with statistics
_WRITER_COLUMNS = {level: (schema, [n for n in schema.names if n in DICTIONARY_COLUMNS],
                           [n for n in schema.names if n not in NO_STATISTICS_COLUMNS])
                   for level, schema in (("records", RECORD_SCHEMA), ("batches", BATCH_SCHEMA))}
#: A replica of fewer bytes of segments than this is written without dictionary encoding: its
#: few rows gain nothing from it, and each dictionary column chunk costs the writer ~4 us (a
#: broker of thousands of one-batch partitions writes a file per partition). The values and
#: Arrow types readers get are the same either way.
DICTIONARY_MIN_BYTES = 64 << 10
CODEC_SUFFIX = {"snappy": "snappy", "zstd": "zstd", "gzip": "gz", "none": "none", "lz4": "lz4"}


@dataclass(frozen=True)
class ExportOptions:
    level: str = "records"                  # "records" | "batches"
    topics: tuple[str, ...] = ()            # glob patterns; empty = all
    partitions: tuple[int, ...] = ()        # empty = all
    start_offset: int | None = None         # inclusive
    end_offset: int | None = None           # exclusive, like Kafka's end offsets
    start_timestamp: int | None = None      # epoch ms, inclusive
    end_timestamp: int | None = None        # epoch ms, exclusive
    include_control: bool = True
    compression: str = "snappy"
    by_broker: bool = False
    engine: str = "auto"
    max_batch_bytes: int | None = None      # None: segtools.primitives.limits.DEFAULT_MAX_BATCH_BYTES
    #: --where conditions (segtools/filters.py) and the producer ids of their transactional_id
    where: tuple[str, ...] = ()
    where_producer_ids: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.level not in ("records", "batches"):
            raise InputError(f"level must be 'records' or 'batches', got {self.level!r}")
        if self.compression not in CODEC_SUFFIX:
            raise InputError(f"compression must be one of {sorted(CODEC_SUFFIX)}, got {self.compression!r}")


@dataclass
class ExportedFile:
    path: str
    topic: str
    partition: int
    broker: int | None
    rows: int
    first_offset: int
    last_offset: int
    source_segment: str                # the first source segment with rows in the file
    crc_invalid_rows: int = 0          # rows from batches whose stored CRC does not match
    #: every source segment whose rows are in the file, in order (FILE_BYTES)
    source_segments: tuple[str, ...] = ()
    source_bytes: int = 0


@dataclass
class ExportSummary:
    files: list[ExportedFile] = field(default_factory=list)
    partitions: int = 0
    segments: int = 0
    bytes_read: int = 0
    #: corrupt batch frames (a size field Kafka rejects): the segment's rows before it are
    #: exported, the rest of that segment cannot be located; a finding (exit 1), as in dump
    findings: list[str] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    @property
    def crc_invalid_rows(self) -> int:
        return sum(f.crc_invalid_rows for f in self.files)


def select_sources(sources: Iterable[PartitionSource], options: ExportOptions) -> list[PartitionSource]:
    """Apply the --topics / --partitions filters; -delete/-future/-stray dirs stay out unless named."""
    chosen = []
    for src in sources:
        if options.topics and not any(fnmatch.fnmatchcase(src.topic, pat) for pat in options.topics):
            continue
        if options.partitions and src.partition not in options.partitions:
            continue
        if options.where and not _where(options).wants_partition(src.topic, src.partition):
            continue
        chosen.append(src)
    return chosen


def _segments_in_range(segments: tuple[str, ...], options: ExportOptions) -> Sequence[int]:
    """The indexes of the segments to read: whole segments are pruned by offset using their
    base offsets, read from the file names as Kafka reads them (formats.names.stem_offset:
    ``123.log`` is 123); a name without one is never pruned."""
    if options.start_offset is None and options.end_offset is None:
        return range(len(segments))   # no list of 100,000 base offsets for nothing
    bases = [stem_offset(s) for s in segments]
    kept = []
    for i in range(len(segments)):
        base = bases[i]
        nxt = bases[i + 1] if i + 1 < len(segments) else None
        if options.end_offset is not None and base is not None and base >= options.end_offset:
            continue
        if options.start_offset is not None and nxt is not None and nxt <= options.start_offset:
            continue
        kept.append(i)
    return kept


def file_stem(topic: str, partition: int, first_offset: int) -> str:
    """``part-<topic>+<partition>+<offset, 10 digits>``: Kafka Connect's name behind a ``part-``
    prefix, in every layout. Spark and Hadoop skip files whose names begin with ``_`` or ``.``
    (they take them for metadata), which would hide internal topics such as
    ``__consumer_offsets``; one prefix for all topics keeps a single naming scheme."""
    return f"{_replica_stem(topic, partition)}{first_offset:010d}"


def _replica_stem(topic: str, partition: int) -> str:
    """What every file name of a partition replica's files begins with (:func:`file_stem`)."""
    return f"part-{topic}+{partition}+"


#: a file being written is hidden (readers skip names beginning with ".") under this suffix,
#: renamed to its name when complete
_IN_PROGRESS = ".inprogress"


def parquet_file_name(topic: str, partition: int, first_offset: int, options: ExportOptions) -> str:
    """The name of the file that holds a segment's rows from ``first_offset`` on."""
    kind = ".batches" if options.level == "batches" else ""
    return f"{file_stem(topic, partition, first_offset)}{kind}.{CODEC_SUFFIX[options.compression]}.parquet"


def _replica_identity(src: PartitionSource) -> str:
    """The input a replica came from: its log dir (for loose segment files, the folder above
    their partition dir)."""
    return os.path.realpath(src.log_dir or os.path.dirname(src.partition_dir or ""))


def broker_folders(sources: list[PartitionSource]) -> dict[str, str]:
    """``broker-<id>`` replica name per input log dir (real path) for ``--by-broker``.

    One folder per input log dir: when several log dirs claim one broker id (two copies of a
    broker taken at different times, both saying broker 0 in meta.properties) the first, in
    real-path order, gets ``broker-0`` and the next ``broker-0-2``, ``broker-0-3``...; a log dir
    without a known id is ``broker-unknown``. Nothing is ever exported twice into one name."""
    by_id: dict[str, list[str]] = {}
    for src in sources:
        ident = _replica_identity(src)
        name = ("remote" if src.remote_tier   # a LocalTieredStorage folder
                else f"broker-{src.broker if src.broker is not None else 'unknown'}")
        if ident not in by_id.setdefault(name, []):
            by_id[name].append(ident)
    folders: dict[str, str] = {}
    for name, idents in by_id.items():
        for i, ident in enumerate(sorted(idents)):
            folders[ident] = name if i == 0 else f"{name}-{i + 1}"
    return folders


def partition_folder(src: PartitionSource, options: ExportOptions,
                     folders: dict[str, str] | None = None) -> str:
    """The folder of a replica's files relative to the output: ``""`` (all files in ``OUT``),
    or ``replica=broker-<id>[-n]`` with ``by_broker``."""
    if not options.by_broker:
        return ""
    folders = folders if folders is not None else broker_folders([src])
    return f"replica={folders[_replica_identity(src)]}"


#: a replica of at most this many segments shares a reader of small segments with its
#: neighbours in the export (see _small_segments)
SHARED_SEGMENTS = 64


def _groupable(src: PartitionSource, options: ExportOptions) -> bool:
    """Whether ``src``'s small segments may be decoded with their neighbours, where the rows are
    the per-file reader's: record level, local files of known size, no offset or time range (a
    ``--where`` filter applies to its rows as to any)."""
    return not (options.level == "batches" or not src.segments or _remote(src.segments[0])
                or len(src.segment_sizes) != len(src.segments)
                or any(v is not None for v in (options.start_offset, options.end_offset,
                                               options.start_timestamp, options.end_timestamp)))


def _small_segments(sources: list[PartitionSource], options: ExportOptions) -> columnar.SmallSegments | None:
    """The reader that decodes neighbouring small segments together, for the replicas
    ``sources`` exported one after another (a group may span replicas: a partition of one small
    segment is then no longer a file read and decoded on its own); None when none qualifies."""
    # shared by several replicas only those of few segments (a replica of many groups its
    # own; this also bounds the reader's index of segments)
    picked = [src for src in sources if _groupable(src, options)
              and (len(sources) == 1 or len(src.segments) <= SHARED_SEGMENTS)]
    if not picked:
        return None
    return columnar.SmallSegments.across(
        [(src.segments, src.segment_sizes, src.topic, src.partition, src.broker) for src in picked],
        engine=options.engine, include_control=options.include_control,
        max_batch_bytes=options.max_batch_bytes)


def _iter_tables(segment: str, src: PartitionSource, options: ExportOptions,
                 grouped: list[pa.RecordBatch] | None = None) -> Iterator[pa.RecordBatch]:
    # ``grouped``: the segment's rows as SmallSegments read them with its neighbours
    # an object-store segment is read by the Arrow reader from a private local copy (on the
    # Spark executor that exports it), removed when the segment is done
    if grouped is not None:
        tables: Iterator[pa.RecordBatch] = iter(grouped)
    elif options.level == "batches":
        for rb in columnar.iter_batch_batches(segment, topic=src.topic, partition=src.partition,
                                              broker=src.broker, located=True,
                                              max_batch_bytes=options.max_batch_bytes):
            rb = _filter_batch_rows(rb, options)
            if rb.num_rows:
                yield rb
        return
    else:
        tables = columnar.iter_record_batches(
            segment, topic=src.topic, partition=src.partition, broker=src.broker, located=True,
            include_control=options.include_control, start_offset=options.start_offset,
            end_offset=options.end_offset, start_timestamp=options.start_timestamp,
            end_timestamp=options.end_timestamp, engine=options.engine,
            max_batch_bytes=options.max_batch_bytes,
        )
    if not options.where:
        yield from tables
        return
    flt = _where(options)   # --where (segtools/filters.py): rows that do not match are dropped
    for rb in tables:
        rb = rb.filter(flt.row_mask(rb))
        if rb.num_rows:
            yield rb


def _where(options: ExportOptions) -> RecordFilter:
    from segtools.filters import compiled

    return compiled(options.where, options.where_producer_ids)


def _frame_errors_as_findings(tables: Iterator[pa.RecordBatch], findings: list[str] | None,
                              rows_so_far: Callable[[], int]) -> Iterator[pa.RecordBatch]:
    """``tables`` up to a batch whose size field is impossible (Kafka's
    CorruptRecordException: nothing after it can be located), recorded in ``findings``."""
    from segtools.errors import CompressionError, CorruptBatchError, TruncatedBatchError

    try:
        yield from tables
    except (CorruptBatchError, TruncatedBatchError) as exc:
        if (findings is None or isinstance(exc, CompressionError)
                or getattr(exc, "field", None) != "batch_length"):
            raise
        findings.append(f"{exc} ({rows_so_far()} row(s) of the segment before it exported, "
                        "the rest of the segment skipped)")


def _filter_batch_rows(rb: pa.RecordBatch, options: ExportOptions) -> pa.RecordBatch:
    # imported for these filters alone: ~30 ms of every export's start otherwise
    import pyarrow.compute as pc

    mask: Any = None

    def both(cond: Any) -> None:
        nonlocal mask
        mask = cond if mask is None else pc.and_(mask, cond)

    if options.start_offset is not None:
        both(pc.greater_equal(rb.column("last_offset"), options.start_offset))
    if options.end_offset is not None:
        both(pc.less(rb.column("base_offset"), options.end_offset))
    if options.start_timestamp is not None:
        both(pc.greater_equal(rb.column("max_timestamp"), options.start_timestamp))
    if options.end_timestamp is not None:
        both(pc.less(rb.column("base_timestamp"), options.end_timestamp))
    if not options.include_control:
        both(pc.invert(rb.column("is_control")))
    return rb if mask is None else rb.filter(mask)


def _remote(path: str) -> bool:
    from segtools.files.remote import is_remote

    return is_remote(path)


def segment_bytes(src: PartitionSource) -> int:
    """Bytes of a replica's segments (the sizes discovery listed; stat for a hand-made source)."""
    if len(src.segment_sizes) == len(src.segments):
        return sum(src.segment_sizes)
    from segtools.files.remote import file_size

    return sum(file_size(s) for s in src.segments)


def _open_filesystem(out_dir: str) -> tuple[Any, str]:
    """A pyarrow filesystem and root path: local paths, or s3:// / hdfs:// URIs."""
    from segtools.files.remote import is_remote, open_uri

    if is_remote(out_dir):
        return open_uri(out_dir)
    return _local_filesystem(out_dir, os.getcwd())


@functools.lru_cache(maxsize=8)
def _local_filesystem(out_dir: str, cwd: str) -> tuple[Any, str]:
    # once per export, not once per partition replica (~35 us each; a local filesystem object
    # holds no state); ``cwd`` is in the key because a relative out_dir depends on it
    from pyarrow import fs as pafs

    from segtools.files.remote import local_path

    return pafs.LocalFileSystem(), os.path.abspath(local_path(out_dir))


def _tail_findings(segment: str, start: int) -> list[str]:
    """dump's "Found N invalid bytes at the end" for a segment the reader finished without an
    error (it stops silently at a batch cut short, as Kafka's reader does, while dump and
    kafka-dump-log report the bytes): the one batch walk from the batch at ``start``."""
    from segtools.errors import SegtoolsError
    from segtools.records.segment_file import SegmentFile

    try:
        # the one batch walk from there; where it stops, the rest are the invalid bytes
        with SegmentFile(segment, window=64 << 10) as sf:
            for _ in sf.batches_from(start):
                pass
            size = sf.size
            pos = sf.stop.position if sf.stop is not None else size
    except SegtoolsError:
        return []           # the reader opened it a moment ago: nothing to add to its errors
    if pos >= size:
        return []
    return [f"{display_path(segment)} @ position {pos}: Found {size - pos} invalid bytes at the end of "
            f"{os.path.basename(segment)} (a batch cut short: not exported)"]


def _missing_log_findings(src: PartitionSource) -> list[str]:
    """dump's error for an offset or time index whose ``.log`` is not there: the segment's
    records are missing, which an export of the rest must not hide."""
    names = {os.path.basename(f) for f in src.files}
    out = []
    for name in sorted(names):
        stem, dot, ext = name.rpartition(".")
        if dot and ext in ("index", "timeindex") and f"{stem}.log" not in names:
            out.append(f"{display_path(os.path.join(src.partition_dir or '', name))}: its log segment "
                       f"{stem}.log does not exist (the segment's records are missing)")
    return out


#: Consecutive segments of a replica share one Parquet file while their bytes add up to at most
#: this; a segment this size or larger gets a file of its own (Kafka's default 1 GiB segments
#: always do). A file per segment cost ~3 ms of writer set-up per segment, 15x what reading a
#: one-batch segment costs, so partitions of thousands of small segments exported slowly.
FILE_BYTES = 64 << 20
#: Rows gathered before a Parquet row group is written (a one-batch segment is one row; a row
#: group per segment made files as large as the data and slow to read back). Also flushed at
#: ROW_GROUP_BYTES of Arrow data, so memory stays bounded whatever the row size.
ROW_GROUP_ROWS = 65536
ROW_GROUP_BYTES = 32 << 20
_MERGE_BATCHES = 256
#: reader batches of fewer rows than this on average are merged before they are written
_SMALL_BATCH_ROWS = 4096
#: bytes the output stream gathers before a write call (per open file)
_WRITE_BUFFER = 1 << 16


class _FileGroup:
    """One Parquet file being written: a hidden temporary name, renamed when complete; rows
    arrive as reader chunks and are written as row groups of up to ``ROW_GROUP_ROWS`` rows."""

    def __init__(self, filesystem: Any, folder: str, src: PartitionSource, options: ExportOptions,
                 first_batch: pa.RecordBatch, offset_col: str, dictionary: bool = True) -> None:
        self.filesystem, self.folder, self.src, self.options = filesystem, folder, src, options
        self.offset_col = offset_col
        self.first = first_batch.column(offset_col)[0].as_py()
        self.last = -1
        self.rows = self.invalid = 0
        self.segments: list[str] = []
        self.name = parquet_file_name(src.topic, src.partition, self.first, options)
        filesystem.create_dir(folder, recursive=True)
        # hidden while incomplete (readers skip "."), renamed when closed
        self.tmp_path = f"{folder}/.{self.name}{_IN_PROGRESS}"
        schema, dictionary_columns, statistics_columns = _WRITER_COLUMNS[options.level]
        # buffered: the writer's many small writes (a page header, a page, per column) cost
        # ~0.15 ms a file as separate write calls (a partition of one small segment is a file)
        self.stream: Any = filesystem.open_output_stream(self.tmp_path, buffer_size=_WRITE_BUFFER)
        try:
            self.writer: Any = pq.ParquetWriter(
                self.stream, schema, compression=options.compression,
                use_dictionary=dictionary_columns if dictionary else False,
                write_statistics=statistics_columns)
        except BaseException:
            self.stream.close()
            filesystem.delete_file(self.tmp_path)
            raise
        # rows not yet written: merged batches, and the reader's small batches since the last merge
        self._merged: list[pa.RecordBatch] = []
        self._pending: list[pa.RecordBatch] = []
        self._buffered_rows = self._buffered_bytes = 0

    def write(self, rb: pa.RecordBatch) -> None:
        # per call only what is O(1): a partition of one-batch segments calls this once per
        # segment. (RecordBatch.nbytes cost ~0.3 ms per call, more than reading the segment;
        # the buffer total is the same bound for the reader's sliced batches.)
        n = rb.num_rows
        self._pending.append(rb)
        self._buffered_rows += n
        self._buffered_bytes += rb.get_total_buffer_size()
        self.rows += n
        self.last = rb.column(self.offset_col)[n - 1].as_py()
        if self._buffered_rows >= ROW_GROUP_ROWS or self._buffered_bytes >= ROW_GROUP_BYTES:
            self._flush()
        elif len(self._pending) >= _MERGE_BATCHES:
            # thousands of one-row batches held as they are cost ~20 KB each (arrays, buffers);
            # only the new ones are merged (re-merging the whole buffer copied it 256 times)
            self._merge()

    def _merge(self) -> None:
        if self._pending:
            pending, self._pending = self._pending, []
            for rb in pending:
                self.invalid += rb.num_rows - rb.column("crc_valid").true_count
            if len(pending) > 1 and len(pending) * _SMALL_BATCH_ROWS > sum(rb.num_rows for rb in pending):
                # small batches are what costs memory held one by one: copied into one
                pending = [pa.concat_batches(pending)]
            # large ones go to the writer as they are (the copy cost ~10% of an export)
            self._merged.extend(pending)

    def _flush(self) -> None:
        self._merge()
        if self._merged:
            table = pa.Table.from_batches(self._merged)
            self._merged, self._buffered_rows, self._buffered_bytes = [], 0, 0
            # one row group per flush, as a single write_batch of the concatenated rows wrote
            self.writer.write_table(table, row_group_size=max(1, table.num_rows))

    def finish(self, source_bytes: int) -> ExportedFile:
        self._flush()
        self.writer.close()
        self.writer = None
        self.stream.close()   # the writer closes only a stream it opened itself
        final = f"{self.folder}/{self.name}"
        self.filesystem.move(self.tmp_path, final)
        return ExportedFile(path=final, topic=self.src.topic, partition=self.src.partition,
                            broker=self.src.broker, rows=self.rows, first_offset=self.first,
                            last_offset=self.last, source_segment=self.segments[0],
                            crc_invalid_rows=self.invalid, source_segments=tuple(self.segments),
                            source_bytes=source_bytes)

    def abandon(self) -> None:
        """An error or Ctrl-C mid-file: no half-written file left."""
        if self.writer is not None:
            try:
                self.writer.close()
            finally:
                self.writer = None
                try:
                    self.stream.close()
                finally:
                    self.filesystem.delete_file(self.tmp_path)


def export_source(src: PartitionSource, out_dir: str, options: ExportOptions,
                  on_segment: Callable[[str], None] | None = None,
                  folder: str | None = None,
                  findings: list[str] | None = None,
                  small: columnar.SmallSegments | None = None) -> list[ExportedFile]:
    """Export one partition replica: Parquet files of consecutive source segments (a segment
    of ``FILE_BYTES`` or more alone, smaller neighbours together up to that size), each named
    for its first offset; segments without rows add no file.

    ``folder``: the replica's folder relative to ``out_dir`` (default
    :func:`partition_folder`; :func:`export_sources` passes the disambiguated one).
    ``findings``: when given, a batch whose size field is impossible ends its segment with a
    finding appended here (the rows before it are kept) instead of an exception.
    ``small``: a reader of small segments shared with the replicas exported before and after
    this one (:func:`_small_segments` of all of them); default: one of this replica's own."""
    filesystem, root = _open_filesystem(out_dir)
    offset_col = "base_offset" if options.level == "batches" else "offset"
    position_col = "position" if options.level == "batches" else "batch_position"
    folder = partition_folder(src, options) if folder is None else folder
    folder = f"{root}/{folder}" if folder else root
    known_sizes = len(src.segment_sizes) == len(src.segments)
    written: list[ExportedFile] = []
    if findings is not None:
        findings.extend(_missing_log_findings(src))
        # a salvaged dir is not complete; a dir listed without salvage's marker is not looked
        # at again (a stat of a name that is not there: ~15 us, a sixth of a small replica's
        # own work outside the Parquet writer)
        listed = (src.partition_dir,) if src.salvage_marker is False and src.partition_dir else ()
        findings.extend(hole_findings(src.segments, unmarked=listed))
    current: _FileGroup | None = None
    current_bytes = 0
    # a replica's segments are all local or all in one object store
    remote = bool(src.segments) and _remote(src.segments[0])
    replica_bytes = sum(src.segment_sizes) if known_sizes else FILE_BYTES   # unknown sizes: as if large
    if small is None or not (src.segments and small.holds(src.segments[0])):
        small = _small_segments([src], options)
    try:
        for k in _segments_in_range(src.segments, options):
            segment = src.segments[k]
            # unknown size (a hand-made source): a file of its own, as if it were large
            size = src.segment_sizes[k] if known_sizes else FILE_BYTES
            if current is not None and (current_bytes + size > FILE_BYTES):
                written.append(current.finish(current_bytes))
                current, current_bytes = None, 0
            seg_rows = 0
            known = len(findings) if findings is not None else 0
            last_batch = 0      # position of the last batch seen: where the tail check starts

            def rows_so_far() -> int:
                return seg_rows  # noqa: B023 - read during this segment's iteration

            grouped = small.batches(segment) if small is not None else None
            tables = _iter_tables(segment, src, options, grouped)
            for rb in _frame_errors_as_findings(tables, findings, rows_so_far):
                if current is None:
                    current = _FileGroup(filesystem, folder, src, options, rb, offset_col,
                                         dictionary=replica_bytes >= DICTIONARY_MIN_BYTES)
                if not current.segments or current.segments[-1] != segment:
                    current.segments.append(segment)
                current.write(rb)
                seg_rows += rb.num_rows
                # rows come in file order: the last row is in the segment's last batch read
                last_batch = max(last_batch, rb.column(position_col)[rb.num_rows - 1].as_py())
            # a grouped segment is whole batches to its end by construction: no tail to report
            if findings is not None and len(findings) == known and not remote and grouped is None:
                findings.extend(_tail_findings(segment, last_batch))
            if current is not None:
                current_bytes += size
            if on_segment is not None:
                on_segment(segment)
        if current is not None:
            written.append(current.finish(current_bytes))
            current = None
    finally:
        if current is not None:
            current.abandon()
    return written


def _check_output(paths: list[str | os.PathLike[str]], out_dir: str, sources: list[PartitionSource],
                  overwrite: bool) -> None:
    """Refuse an output inside any input: the paths the user named (a folder of broker dirs
    included), their real paths, and every resolved log/partition dir."""
    from segtools.files.outputs import UnsafeOutputError, check_output_location

    named = [os.fspath(p) for p in paths]
    # each dir once: a broker's log dir is every one of its replicas' (2,000 repeats cost ~20 ms)
    resolved = list(dict.fromkeys(d for src in sources for d in (src.log_dir, src.partition_dir) if d))
    check_output_location(out_dir, named + resolved)
    if not is_utf8(out_dir):   # pyarrow's filesystems take UTF-8 paths only
        raise UnsafeOutputError(f"--out {display_path(out_dir)}: the path is not UTF-8; choose a UTF-8 name")
    from segtools.files.remote import is_remote, local_path

    if is_remote(out_dir):
        from segtools.files.outputs import prepare_output_dir

        # refuses a non-empty prefix unless --overwrite, and creates the folder (a no-op on S3)
        prepare_output_dir(out_dir, force=overwrite, force_flag="--overwrite")
        return
    out = Path(local_path(out_dir))
    if out.exists() and not out.is_dir():
        raise UnsafeOutputError(f"--out {out_dir} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        from segtools.files.outputs import PARTIAL_MARKER

        what = ("holds an export that did not finish (_PARTIAL)" if (out / PARTIAL_MARKER).exists()
                else "is not empty")
        raise UnsafeOutputError(f"--out {out_dir} {what} (use --overwrite to add to it)")


def _check_names(sources: list[PartitionSource]) -> None:
    """A partition dir whose name is not UTF-8 cannot be a Kafka topic (names are ASCII) and
    cannot go into a Parquet string column: say so in one line instead of failing mid-way."""
    for src in sources:
        if not is_utf8(src.topic):
            raise InputError(f"{display_path(src.partition_dir or src.topic)}: the folder name is not "
                             "UTF-8, so it is not a Kafka topic partition; leave it out with --topics")


def _check_collisions(sources: list[PartitionSource], options: ExportOptions) -> None:
    seen: dict[tuple[str, str, int], PartitionSource] = {}
    folders = broker_folders(sources) if options.by_broker else None
    for src in sources:
        key = (partition_folder(src, options, folders), src.topic, src.partition)
        if key in seen:
            hint = "" if options.by_broker else "; use --by-broker to export each replica under replica=broker-<id>/"
            raise InputError(
                f"{src.topic}-{src.partition} is in more than one input "
                f"({seen[key].partition_dir} and {src.partition_dir}){hint}")
        seen[key] = src


def plan_export(paths: list[str | os.PathLike[str]], out_dir: str, options: ExportOptions,
                overwrite: bool = False, resolution: Resolution | None = None) -> list[PartitionSource]:
    """Resolve and filter the inputs, and refuse unsafe or ambiguous outputs.

    ``resolution``: what :func:`segtools.files.sources.resolve` made of ``paths`` when the caller
    already asked (to print its warnings); resolved here otherwise."""
    if resolution is None:
        resolution = resolve(list(paths))   # non-UTF-8 names: _check_names after --topics
    if not resolution.partitions:
        raise InputError("no Kafka files found in: " + ", ".join(map(str, paths)))
    # the resolver has read every repeat once (a dir given twice, a link to a sibling segment)
    sources = select_sources(resolution.partitions, options)
    # a remote tier given beside one replica: one history (tier's modules are imported only
    # then: ~60 ms of every export's start)
    if not options.by_broker and any(src.remote_tier for src in sources):
        from segtools.tier.history import across_tiers

        sources = across_tiers(sources)
    _check_output(list(paths), out_dir, sources, overwrite)
    _check_names(sources)
    _check_collisions(sources, options)
    return sources


def export(paths: list[str | os.PathLike[str]], out_dir: str, options: ExportOptions | None = None,
           *, overwrite: bool = False,
           on_segment: Callable[[str], None] | None = None, jobs: int | None = None) -> ExportSummary:
    """Export on this machine: stream every selected segment to Parquet (``jobs``: see
    :func:`export_sources`)."""
    options = options or ExportOptions()
    return export_sources(plan_export(paths, out_dir, options, overwrite), out_dir, options, on_segment,
                          jobs=jobs)


def _success_summary(summary: ExportSummary, sources: list[PartitionSource], options: ExportOptions,
                     root: str) -> dict[str, Any]:
    """What ``_SUCCESS`` holds: the inputs, which folder each went to, and every file's rows."""
    def rel(path: str) -> str:
        return path[len(root):].lstrip("/") if path.startswith(root) else path

    out: dict[str, Any] = {"level": options.level, "rows": summary.rows, "files": len(summary.files),
                 "partition_replicas": summary.partitions, "segments": summary.segments}
    if options.by_broker:
        out["replicas"] = {f"replica={name}": ident for ident, name in broker_folders(sources).items()}
    out["parquet_files"] = [{"path": rel(f.path), "rows": f.rows, "source_segment": f.source_segment,
                             "source_segments": list(f.source_segments or (f.source_segment,))}
                            for f in summary.files]
    if summary.findings:
        out["findings"] = list(summary.findings)
    return out


def _run_marked(out_dir: str, sources: list[PartitionSource], options: ExportOptions,
                body: Callable[[], ExportSummary]) -> ExportSummary:
    from segtools.files.outputs import partial_run

    filesystem, root = _open_filesystem(out_dir)
    filesystem.create_dir(root, recursive=True)
    with partial_run(root, command="segtools export",
                     filesystem=filesystem if _remote(out_dir) else None) as run:
        summary = body()
        run.summary = _success_summary(summary, sources, options, root)
    return summary


def export_sources(sources: list[PartitionSource], out_dir: str, options: ExportOptions,
                   on_segment: Callable[[str], None] | None = None, *,
                   jobs: int | None = None) -> ExportSummary:
    """Export already planned sources (see :func:`plan_export`) on this machine.

    ``jobs``: 1 exports the replicas one after another in this process; N > 1 in N forked
    worker processes (:func:`export_jobs`), with the same files, findings and ``_SUCCESS``
    (results are taken in source order; ``on_segment`` is called here as each worker's
    results arrive); None picks the number (:func:`auto_jobs`).
    ``OUT/_PARTIAL`` is there until every file is written, then ``OUT/_SUCCESS``."""
    summary = ExportSummary(partitions=len(sources))
    if not sources:
        return summary
    options = _with_engine(options, sources)
    folders = broker_folders(sources) if options.by_broker else None
    workers = export_jobs(jobs, sources, out_dir)

    def body() -> ExportSummary:
        names = [partition_folder(src, options, folders) for src in sources]
        if workers > 1:
            _export_in_workers(sources, names, out_dir, options, on_segment, summary, workers)
            return summary
        for start in range(0, len(sources), CHUNK_SOURCES):   # runs of the workers' chunk size
            _export_run(sources, names, (start, min(start + CHUNK_SOURCES, len(sources))), out_dir,
                        options, on_segment, summary)
        return summary

    return _run_marked(out_dir, sources, options, body)


#: an export of fewer bytes of segments than this decodes on the vectorised engine when the
#: engine is "auto": loading numba's kernels costs ~0.45 s (import and cache) and ~105 MB of
#: RSS, which they win back only past ~28 MiB of one-record batches, the shape where the
#: vectorised engine is slowest (~16 ms/MiB slower; ~1.5 ms/MiB on 16 KB batches, and the same
#: speed on one-batch segments: 100,000 of them, 17 MB, export in 5.8-6.2 s either way, in
#: 188 MB against 293 MB)
AUTO_JIT_MIN_BYTES = 32 << 20


def _with_engine(options: ExportOptions, sources: list[PartitionSource]) -> ExportOptions:
    """``options`` with "auto" made concrete for this export's size (AUTO_JIT_MIN_BYTES), unless
    the kernels are loaded already (an earlier call in this process): then they cost nothing."""
    from segtools.records.columnar.engines import kernel_loaded

    if (options.engine != "auto" or kernel_loaded()
            or sum(segment_bytes(s) for s in sources) >= AUTO_JIT_MIN_BYTES):
        return options
    return replace(options, engine="vectorised")


# ---------------------------------------------------------------- worker processes (--jobs)

#: ``jobs=None``: at most this many workers (the writer's per-file cost is what they share out;
#: more processes mostly add memory)
AUTO_JOBS_MAX = 4
#: ``jobs=None`` uses workers only for at least this many replicas (and two per worker), or
#: for fewer that hold ``AUTO_MIN_BYTES``: two workers cost ~40 ms to start, feed and stop, and
#: a replica of one small segment ~1.5 ms to export; measured on 2 cores, two workers broke even
#: at 64 such replicas and were 1.3x faster at 128, 2x at 2,000
AUTO_MIN_SOURCES = 128
AUTO_MIN_BYTES = 64 << 20
#: replicas per task handed to a worker (fewer when there are few per worker: total / (4 N))
CHUNK_SOURCES = 64


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # no sched_getaffinity (macOS, Windows)
        return os.cpu_count() or 1


def _can_fork() -> bool:
    import multiprocessing

    # a daemonic process (an export worker, a multiprocessing pool's) may not have children
    return ("fork" in multiprocessing.get_all_start_methods()
            and not multiprocessing.current_process().daemon)


def _all_local(sources: list[PartitionSource], out_dir: str) -> bool:
    """Inputs and output on local disks: object-store clients are not used across fork()."""
    # a replica's history across tiers (tier.history) may hold local and remote segments
    return not (_remote(out_dir) or any(_remote(p) for src in sources
                                        for p in (*src.segments, src.partition_dir or "", src.log_dir or "")))


def auto_jobs(sources: list[PartitionSource]) -> int:
    """The workers ``jobs=None`` uses: min(usable CPUs, AUTO_JOBS_MAX), when the export is
    large enough to repay starting them (else 1)."""
    workers = min(_cpus(), AUTO_JOBS_MAX)
    if workers < 2 or len(sources) < 2 * workers:
        return 1
    if len(sources) >= AUTO_MIN_SOURCES or sum(segment_bytes(s) for s in sources) >= AUTO_MIN_BYTES:
        return workers
    return 1


def export_jobs(jobs: int | None, sources: list[PartitionSource], out_dir: str) -> int:
    """The worker processes an export of ``sources`` uses: 1 (this process) unless fork() is
    available and inputs and output are local; ``jobs`` (None: :func:`auto_jobs`) otherwise,
    at most one per replica."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise InputError(f"jobs must be a whole number of 1 or more (or None for automatic), got {jobs!r}")
    if jobs == 1 or len(sources) < 2 or not _can_fork() or not _all_local(sources, out_dir):
        return 1
    return min(auto_jobs(sources) if jobs is None else jobs, len(sources))


#: what forked workers export: (sources, their folders, out_dir, options), set in the parent
#: while it forks them (inherited through fork(), so sources are never pickled)
_JOB: tuple[list[PartitionSource], list[str], str, ExportOptions] | None = None


@dataclass
class _ChunkResult:
    """A worker's answer for a run of consecutive sources (only per-file summaries)."""

    files: list[ExportedFile] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)        # segments, as on_segment saw them
    segments: int = 0
    bytes_read: int = 0
    #: the exception that stopped the run, picklable (:func:`_ship_error`)
    error: tuple[Any, ...] | None = None


#: signals blocked while a worker is forked, until it has its handlers (_worker_init)
_FORK_BLOCKED = frozenset({signal.SIGINT, signal.SIGTERM})


def _worker_init() -> None:
    # Ctrl-C reaches the whole process group: the parent alone handles it (it stops the
    # workers); SIGTERM (the parent stopping them) unwinds the export so its hidden temporary
    # file is removed
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _worker_stop)
    # blocked by the parent across fork() (_export_in_workers), so that none came before these
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _FORK_BLOCKED)


def _worker_stop(signum: int, _frame: Any) -> None:
    raise SystemExit(128 + signum)


def _export_run(sources: list[PartitionSource], folders: list[str], bounds: tuple[int, int],
                out_dir: str, options: ExportOptions, on_segment: Callable[[str], None] | None,
                totals: ExportSummary | _ChunkResult) -> None:
    """Export sources ``[start, stop)`` one after another with one reader of small segments
    shared by them, adding their files, findings, segments and bytes to ``totals``: the
    sequential path's runs and each worker's chunks."""
    small = _small_segments(sources[bounds[0]:bounds[1]], options)
    for i in range(*bounds):
        src = sources[i]
        totals.files.extend(export_source(src, out_dir, options, on_segment, folder=folders[i],
                                          findings=totals.findings, small=small))
        totals.segments += len(src.segments)
        totals.bytes_read += segment_bytes(src)


def _export_chunk(bounds: tuple[int, int]) -> _ChunkResult:
    """In a worker: export sources ``[start, stop)`` as the sequential path does, up to the
    first exception (shipped back, not raised: the parent raises it)."""
    assert _JOB is not None
    sources, folders, out_dir, options = _JOB
    out = _ChunkResult()
    try:
        _export_run(sources, folders, bounds, out_dir, options, out.done.append, out)
    except Exception as exc:  # noqa: BLE001 - every exception goes to the parent
        out.error = _ship_error(exc)
    except BaseException:
        # SystemExit of SIGTERM (the parent stops the workers): it may have struck where
        # export_source cannot see a file it was opening or renaming (only the replica being
        # exported has one; the chunk's others are looked at too, as the run does not say which)
        for i in range(*bounds):
            _remove_temporary(sources[i], out_dir, folders[i])
        raise
    return out


def _remove_temporary(src: PartitionSource, out_dir: str, folder: str) -> None:
    """Delete the hidden ``.part-<topic>+<partition>+*.inprogress`` files of ``src`` (local
    outputs only: workers run for those alone)."""
    from segtools.files.remote import local_path

    root = os.path.abspath(local_path(out_dir))
    path = os.path.join(root, folder) if folder else root
    prefix = "." + _replica_stem(src.topic, src.partition)
    try:
        names = [e.name for e in os.scandir(path) if e.name.startswith(prefix) and e.name.endswith(_IN_PROGRESS)]
    except OSError:
        return
    for name in names:
        try:
            os.unlink(os.path.join(path, name))
        except OSError:
            pass


def _ship_error(exc: BaseException) -> tuple[Any, ...]:
    """``exc`` in a form that unpickles in the parent. A SegtoolsError as class, args and
    attributes (some constructors take required keywords, e.g. BatchTooLargeError's
    ``limit``, so default unpickling fails); another exception pickled whole when it
    round-trips, else its class name and message."""
    import pickle

    from segtools.errors import SegtoolsError

    if isinstance(exc, SegtoolsError):
        try:
            return ("rebuild", pickle.dumps((type(exc), exc.args, dict(exc.__dict__))))
        except Exception:  # noqa: BLE001, S110 - an attribute that does not pickle: as below
            pass
    try:
        payload = pickle.dumps(exc)
        pickle.loads(payload)
        return ("pickled", payload)
    except Exception:  # noqa: BLE001
        return ("text", f"{type(exc).__module__}.{type(exc).__qualname__}", str(exc))


def _rebuilt_error(shipped: tuple[Any, ...]) -> BaseException:
    import pickle

    if shipped[0] == "rebuild":
        cls, args, attrs = pickle.loads(shipped[1])
        exc = cls.__new__(cls)
        exc.args = args
        exc.__dict__.update(attrs)
        return exc  # type: ignore[no-any-return]
    if shipped[0] == "pickled":
        return pickle.loads(shipped[1])  # type: ignore[no-any-return]
    return RuntimeError(f"{shipped[1]}: {shipped[2]} (in an export worker process)")


def _chunks(total: int, workers: int) -> list[tuple[int, int]]:
    """Consecutive ``[start, stop)`` runs of sources: CHUNK_SOURCES each, or total / (4 N) when
    that is smaller (so every worker gets several), at least one."""
    size = max(1, min(CHUNK_SOURCES, total // (4 * workers)))
    return [(i, min(i + size, total)) for i in range(0, total, size)]


def _warm_up(options: ExportOptions) -> None:
    """Load here, once before fork(), what every worker would otherwise load for itself on its
    first segment (and the sequential path loads once): numba's kernels (~0.5 s)."""
    if options.engine in ("auto", "numba"):
        from segtools.records.columnar.engines import available_engines

        available_engines()


#: seconds the workers have, all together, to exit after SIGTERM (an error, Ctrl-C, a dead
#: worker) or after their last result; then SIGKILL
STOP_SECONDS = 5.0
#: seconds between two looks at a worker whose result is awaited (is it still alive?)
_POLL_SECONDS = 0.25


def _worker_main(k: int, workers: int, chunks: list[tuple[int, int]], writer: Any,
                 readers: list[Any]) -> None:
    """Worker ``k`` of ``workers``: chunks k, k + N, k + 2N... one after another, each result
    sent on its own pipe as soon as it is ready; stops after a chunk that failed."""
    _worker_init()
    for reader in readers:    # the read ends of the pipes made so far (this one's too)
        reader.close()
    for bounds in chunks[k::workers]:
        part = _export_chunk(bounds)
        try:
            writer.send(part)
        except (EOFError, OSError):
            return            # the parent is gone or stopped reading: nothing to tell
        except Exception as exc:  # noqa: BLE001 - a result that does not pickle: its error instead
            writer.send(_ChunkResult(error=_ship_error(exc)))
            return
        if part.error is not None:
            return
    writer.close()


def _export_in_workers(sources: list[PartitionSource], folders: list[str], out_dir: str,
                       options: ExportOptions, on_segment: Callable[[str], None] | None,
                       summary: ExportSummary, workers: int) -> None:
    """Export ``sources`` in ``workers`` forked processes, adding their results to ``summary``
    in source order; the first error in source order is raised, as sequentially.

    Chunk i (:func:`_chunks`) is worker ``i % N``'s, which sends its results in order on a pipe
    of its own; this process reads chunk after chunk from the worker that has it. No task queue,
    no lock shared between processes. On every way out but success (an error, Ctrl-C in
    ``on_segment`` or while waiting, a dead worker) the workers get SIGTERM (they remove their
    temporary files and exit), then SIGKILL after STOP_SECONDS; every worker is reaped."""
    import multiprocessing

    global _JOB
    _warm_up(options)
    chunks = _chunks(len(sources), workers)
    workers = min(workers, len(chunks))
    context = multiprocessing.get_context("fork")
    procs: list[Any] = []
    readers: list[Any] = []
    done = False
    _JOB = (sources, folders, out_dir, options)
    try:
        for k in range(workers):
            reader, writer = context.Pipe(duplex=False)
            readers.append(reader)
            proc = context.Process(target=_worker_main, args=(k, workers, chunks, writer, readers),
                                   name=f"segtools-export-{k}", daemon=True)
            procs.append(proc)
            mask = signal.pthread_sigmask(signal.SIG_BLOCK, _FORK_BLOCKED)
            try:
                proc.start()
            finally:
                writer.close()    # only the worker writes: its death is then EOF here
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)   # a Ctrl-C meanwhile: raised now
        for i in range(len(chunks)):
            part = _receive(procs[i % workers], readers[i % workers])
            summary.files.extend(part.files)
            summary.findings.extend(part.findings)
            summary.segments += part.segments
            summary.bytes_read += part.bytes_read
            if on_segment is not None:
                for segment in part.done:
                    on_segment(segment)
            if part.error is not None:
                raise _rebuilt_error(part.error)
        _reap(procs, signal_first=None)   # all results are in: the workers are exiting
        done = True
    finally:
        _JOB = None
        if not done:
            _reap(procs, signal_first=signal.SIGTERM)
        for reader in readers:
            reader.close()


def _receive(proc: Any, reader: Any) -> _ChunkResult:
    """The next result on ``reader``, from worker ``proc``; a SegtoolsError when the worker
    died before sending it (killed: out of memory, a signal)."""
    from multiprocessing.connection import wait

    from segtools.errors import SegtoolsError

    while True:
        ready = wait([reader, proc.sentinel], timeout=_POLL_SECONDS)
        if reader in ready or (ready and reader.poll(0)):
            try:
                return reader.recv()  # type: ignore[no-any-return]
            except EOFError:
                break                 # every write end closed without a result: the worker ended
        elif ready:                   # the worker ended and its pipe holds nothing
            break
    proc.join(STOP_SECONDS)
    code = proc.exitcode
    how = ("closed its pipe early" if code is None
           else f"signal {-code}" if code < 0 else f"exit code {code}")
    raise SegtoolsError(f"an export worker process (pid {proc.pid}) ended with {how} "
                        "(killed, or out of memory?); the export is incomplete")


def _reap(procs: list[Any], signal_first: int | None) -> None:
    """Wait for ``procs`` to exit (sending ``signal_first`` to those alive), STOP_SECONDS for
    all together; SIGKILL and reap any left."""
    import time

    procs = [proc for proc in procs if proc.pid is not None]   # started
    deadline = time.monotonic() + STOP_SECONDS
    try:
        if signal_first is not None:
            for proc in procs:
                if proc.exitcode is None:
                    try:
                        os.kill(proc.pid, signal_first)
                    except ProcessLookupError:
                        pass
        for proc in procs:
            proc.join(max(0.0, deadline - time.monotonic()))
    finally:
        for proc in procs:    # also after a second Ctrl-C while waiting above
            if proc.exitcode is None:
                proc.kill()
                proc.join(STOP_SECONDS)
            if proc.exitcode is not None:
                proc.close()


def _spark_task(src: PartitionSource, out_dir: str, options: ExportOptions,
                folder: str) -> list[ExportedFile | str]:
    """One Spark task: the replica's files, then its findings (as strings)."""
    findings: list[str] = []
    files: list[ExportedFile | str] = list(export_source(src, out_dir, options, folder=folder,
                                                         findings=findings))
    return files + findings


def export_with_spark(paths: list[str | os.PathLike[str]], out_dir: str, options: ExportOptions | None,
                      spark: Any, *, overwrite: bool = False,
                      resolution: Resolution | None = None) -> ExportSummary:
    """The same export, with partition replicas spread over Spark tasks.

    Each task runs :func:`export_source` on one partition replica, so the files (names and
    rows) are identical to the single-process path; only per-file summaries reach the driver.
    """
    options = options or ExportOptions()
    sources = plan_export(paths, out_dir, options, overwrite, resolution)
    summary = ExportSummary(partitions=len(sources))
    if not sources:
        return summary
    options = _with_engine(options, sources)
    folders = broker_folders(sources) if options.by_broker else None
    tasks = [(src, partition_folder(src, options, folders)) for src in sources]

    def body() -> ExportSummary:
        rdd = spark.sparkContext.parallelize(tasks, numSlices=len(tasks))
        for exported in rdd.flatMap(lambda t: _spark_task(t[0], out_dir, options, t[1])).collect():
            if isinstance(exported, str):
                summary.findings.append(exported)
            else:
                summary.files.append(exported)
        summary.files.sort(key=lambda f: (f.topic, f.partition, f.broker or -1, f.first_offset))
        summary.segments = sum(len(s.segments) for s in sources)
        summary.bytes_read = sum(segment_bytes(s) for s in sources)
        return summary

    return _run_marked(out_dir, sources, options, body)
