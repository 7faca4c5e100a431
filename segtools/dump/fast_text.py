"""Column-wise deep-iteration text for v2 data batches: the hot path of `dump --deep-iteration`.

kafka-dump-log prints one line per batch and one per record (DUMP_LOG.md 3.3-3.5). For the
common batch (magic 2, any of Kafka's codecs, data or transaction marker, CRC valid, records the vectorised
engine decodes) the lines are built here a window of batches at a time: the batches are framed
and CRC-checked in one Python loop, compressed ones decompressed into one buffer, the records
decoded by the vectorised engine (segtools/records/columnar/vectorised.py, one of the engines
behind the one decoder interface) and this module is only the formatter over its columns: the
lines joined by Arrow's string kernels, then written as one buffer. Keys and values that are not
UTF-8 get Java's replacement characters (segtools/primitives/java_utf8.py) record by record.
Anything else (legacy magic, KRaft control records, a bad CRC, a torn or corrupt frame, a batch the
engine declines) stops the window at that batch and goes through the object reader and text.py,
so every edge keeps its exact text. tests/dump/test_dump_fast_path.py and
tests/records/test_one_reader.py hold the two paths to byte-identical output and errors.
"""

from __future__ import annotations

import codecs
import struct
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from segtools.dump.control import describe_control
from segtools.errors import FormatError
from segtools.formats import record_batch as _rb
from segtools.primitives import codecs as _codecs
from segtools.primitives.crc import crc32c_of
from segtools.primitives.java_utf8 import java_utf8_replace
from segtools.records.columnar.arrow_columns import string_array
from segtools.records.columnar.vectorised import decode_records, increment_sequences
from segtools.records.control import ABORT, COMMIT, decode_control_key
from segtools.records.segment_file import SegmentFile

#: bytes read per window (a batch larger than this goes through the object reader). The
#: columns and lines of one window take about 25 times its size at their peak: 2 MB keeps
#: the process near 160 MB (8 MB windows: 270 MB, and no less CPU)
WINDOW = 2 << 20
_FIRST_READ = 4 << 10  # the first read after a hand-over
_PAD = 16  # zero bytes after the window (the engine clamps its reads; these keep them defined)
_HEADER_UP_TO_MAGIC = _rb.HEADER_SIZE_UP_TO_MAGIC  # FileLogInputStream: fewer trailing bytes end the walk
_V2_OVERHEAD = _rb.RECORD_BATCH_OVERHEAD
_CRC_FROM = _rb.ATTRIBUTES_OFFSET  # the v2 CRC covers the batch from the attributes on
# baseOffset, length, leaderEpoch, magic, crc, attributes: the v2 header up to lastOffsetDelta
_FRAME = struct.Struct(_rb.HEADER_STRUCT_FORMAT[:7])
_INT32_MAX = 2**31 - 1
_CODEC_MASK = _rb.COMPRESSION_CODEC_MASK
_CONTROL_FLAG = _rb.CONTROL_FLAG_MASK
#: decompressed record bytes of one window beyond its first batch: past this the window ends
#: early, so a highly compressed window keeps the columns' memory bounded as for plain ones
_DECOMPRESSED_WINDOW = WINDOW
_INT64_MAX = np.iinfo(np.int64).max

#: the DefaultRecordBatch header as a numpy record (formats.record_batch's declaration)
_HEADER = np.dtype(_rb.HEADER_NUMPY_DTYPE)


def _arrow(values: np.ndarray) -> pa.Array:
    """An int64 or bool numpy column as an Arrow array (zero-copy for integers)."""
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


_LITERALS: dict[str, Any] = {}


def _lit(text: str) -> Any:
    """A string scalar for the compute kernels (taken from an array: ``pa.scalar`` imports
    pandas too)."""
    scalar = _LITERALS.get(text)
    if scalar is None:
        scalar = _LITERALS[text] = string_array([text])[0]
    return scalar


_TS_NAMES = ["CreateTime", "LogAppendTime"]
_TS_TYPES = string_array(_TS_NAMES)
_BOOL_NAMES = ["false", "true"]
_BOOLS = string_array(_BOOL_NAMES)
_CODEC_NAMES = [_codecs.COMPRESSION_NAMES[c] for c in range(5)]
_CODECS = string_array(_CODEC_NAMES)
_MARKER_TYPES = (ABORT, COMMIT)


def usable(out: Any) -> bool:
    """The fast path writes UTF-8 bytes: only where the text stream would write the same."""
    try:
        return codecs.lookup(getattr(out, "encoding", None) or "ascii").name == "utf-8"
    except LookupError:
        return False


class _Unusual(Exception):
    """Internal: the batch at this index needs the object reader."""


class _WindowFull(Exception):
    """Internal: the window's decompressed records reached _DECOMPRESSED_WINDOW before the
    batch at this index; the fast path goes on from it in the next window."""


class FastLogText:
    """Walks one segment from a position and prints the plain batches it meets.

    ``run(pos)`` returns ``(next_pos, finished)``: ``finished`` when the walk reached the end
    (fewer than 17 bytes left), otherwise ``next_pos`` is the first batch left to the object
    reader. ``last_offset`` and ``non_consecutive`` carry the offset-order check across both
    paths."""

    def __init__(self, path: str, end: int, max_batch_bytes: int, write: Any,
                 print_data: bool, kafka4: bool) -> None:
        self.path = path
        self.end = end
        self.max_batch_bytes = max_batch_bytes
        self.write = write
        self.print_data = print_data
        self.kafka4 = kafka4
        self.resume_at = 0
        self.window_full = False
        self._inflated: dict[int, Any] = {}
        self._buf = bytearray(WINDOW + _PAD)
        self._np = np.frombuffer(self._buf, dtype=np.uint8)
        # read-only, the size at open, the one change rule (records/segment_file.py); only
        # read_into is used: the window here is this object's own reused buffer
        self._file = SegmentFile(path, window=64)
        # a window's text is formatted and written on a second thread while the next window is
        # read and decoded (Arrow's kernels and the write release the GIL); one at a time, so
        # the memory is two windows' columns at most
        self._pool: ThreadPoolExecutor | None = None
        self._pending: tuple[Future[None], int] | None = None
        self._failed = False

    def close(self) -> None:
        try:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
        finally:
            self._file.close()

    def __enter__(self) -> FastLogText:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ framing

    def run(self, pos: int, state: Any) -> tuple[int, bool]:
        try:
            result = self._run(pos, state)
        except BaseException:
            self._wait()   # the window before prints first; a failure there is the one reported
            raise
        self._wait()
        return result

    def _wait(self) -> None:
        """Wait for the window in print; if it failed, nothing from its first batch on is
        printed (``resume_at``) and its error is raised."""
        if self._pending is None:
            return
        future, start = self._pending
        self._pending = None
        try:
            future.result()
        except BaseException:
            self.resume_at = start
            raise

    def _print(self, cols: dict[str, Any], starts: np.ndarray, sizes: np.ndarray,
               file_pos: int, state: Any) -> None:
        """Hand the window's text to the printing thread, after the window before it."""
        self._wait()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="segtools-dump")
        self._pending = (self._pool.submit(self._emit_once, cols, starts, sizes, file_pos, state),
                         file_pos + int(starts[0]))

    def _emit_once(self, *args: Any) -> None:
        if self._failed:   # a window before failed: nothing after it may be written
            return
        try:
            self._emit(*args)
        except BaseException:
            self._failed = True
            raise

    def _run(self, pos: int, state: Any) -> tuple[int, bool]:
        end = self.end
        limit = min(self.max_batch_bytes, WINDOW)
        buf = self._buf
        mv = memoryview(buf)
        unpack = _FRAME.unpack_from
        # reads start small and grow while batches keep being plain: a log whose batches are
        # mostly legacy or KRaft control hands over at once and must not read a whole window each time
        want = _FIRST_READ
        while True:
            self.resume_at = pos  # nothing from here on is printed yet
            if end - pos <= _HEADER_UP_TO_MAGIC:
                return pos, True
            want = min(want, WINDOW, end - pos)
            got = self._file.read_into(self._np, pos, want)
            if got < want:
                return pos, False  # the file shrank: the object reader reports it
            buf[got:got + _PAD] = bytes(_PAD)
            starts: list[int] = []
            sizes: list[int] = []
            p = 0
            stop = False
            need = 0
            while True:
                if end - (pos + p) <= _HEADER_UP_TO_MAGIC or p + _V2_OVERHEAD > got:
                    need = _V2_OVERHEAD
                    break
                _, size, _, magic, crc, attributes = unpack(buf, p)
                total = size + 12
                # legacy or unknown magic, a frame below the v2 header, a batch over the limit
                # or the window, an unknown codec: the object reader's (control batches stay: their
                # markers are printed here, other control types are handed over by _markers)
                if (magic != 2 or total < _V2_OVERHEAD or total > limit
                        or (attributes & _CODEC_MASK) > 4):
                    stop = True
                    break
                if p + total > got:
                    stop = pos + p + total > end  # a torn tail: the object reader's
                    need = total
                    break
                if crc32c_of(mv[p + _CRC_FROM:p + total], 0) != crc:
                    stop = True
                    break
                starts.append(p)
                sizes.append(total)
                p += total
            done = self._batches(np.array(starts, dtype=np.int64),
                                 np.array(sizes, dtype=np.int64), pos, state)
            if done < len(starts) and not self.window_full:
                return pos + starts[done], False
            if done < len(starts):  # decompressed records filled the window: go on from there
                pos += starts[done]
                want = max(want, need)
                continue
            if stop or (not starts and want >= min(WINDOW, end - pos)):
                return pos + p, end - (pos + p) <= _HEADER_UP_TO_MAGIC
            pos += p
            want = max(want * 4, need)

    # ------------------------------------------------------------------ one window

    def _batches(self, starts: np.ndarray, sizes: np.ndarray, file_pos: int, state: Any) -> int:
        """Print the leading run of plain batches of this window; returns how many."""
        nb = len(starts)
        self.window_full = False
        if nb == 0:
            return 0
        self._inflated = {}
        try:
            while True:
                # the checks run one kind after another, so a batch found unusual is not always
                # the first one: retry on the batches before it until they all pass
                try:
                    cols = self._decode(starts[:nb], sizes[:nb])
                    break
                except _WindowFull as exc:
                    nb = exc.args[0]
                    self.window_full = True
                except _Unusual as exc:
                    nb = exc.args[0]
                    self.window_full = False
                    if nb == 0:
                        return 0
        finally:
            self._inflated = {}
        self._print(cols, starts[:nb], sizes[:nb], file_pos, state)
        return nb

    def _records(self, head: np.ndarray, starts: np.ndarray,
                 sizes: np.ndarray) -> tuple[bytearray, np.ndarray, np.ndarray]:
        """The records sections of the window's batches: the window itself when no batch is
        compressed, else one buffer with every batch's records, compressed ones decompressed
        through the object reader's codecs (segtools.primitives.codecs, bounded by
        max_batch_bytes). A batch the object reader would refuse or fail on is _Unusual."""
        codec = head["attributes"].astype(np.int64) & _CODEC_MASK
        rstart = starts + _V2_OVERHEAD
        rend = starts + sizes
        if not codec.any():
            return self._buf, rstart, rend
        mv = memoryview(self._buf)
        parts: list[Any] = []
        out_start = np.empty_like(rstart)
        out_end = np.empty_like(rend)
        at = 0
        for b, (c, s, e, n) in enumerate(zip(codec.tolist(), rstart.tolist(), rend.tolist(),
                                             head["records_count"].tolist())):
            if c == 0 or n == 0:  # an empty batch is not decompressed (DefaultRecordBatch.iterator)
                part: Any = mv[s:e] if n else b""
            else:
                if n > self.max_batch_bytes // 7:  # check_v2_batch's refusal: the object reader's
                    raise _Unusual(b)
                part = self._inflated.get(s)  # decompressed once per window, also on a retry
                if part is None:
                    try:
                        part = _codecs.decompress(c, mv[s:e], magic=2,
                                                  max_size=self.max_batch_bytes)
                    except Exception:  # corrupt or over the limit: the object reader reports it
                        raise _Unusual(b) from None
                    self._inflated[s] = part
            if b and at + len(part) > _DECOMPRESSED_WINDOW:
                raise _WindowFull(b)
            parts.append(part)
            out_start[b] = at
            at += len(part)
            out_end[b] = at
        parts.append(bytes(_PAD))
        return bytearray().join(parts), out_start, out_end   # one copy

    def _decode(self, starts: np.ndarray, sizes: np.ndarray) -> dict[str, Any]:
        head = self._np[starts[:, None] + np.arange(_V2_OVERHEAD)].reshape(-1).view(_HEADER)
        counts = head["records_count"].astype(np.int64)
        base_seq = head["base_sequence"].astype(np.int64)
        # the batch line's lastSequence and a count Kafka refuses: the object reader's
        bad = (counts < 0) | (base_seq < -1) | (head["last_offset_delta"] < 0)
        if bad.any():
            raise _Unusual(int(np.argmax(bad)))
        buf, rec_start, rec_end = self._records(head, starts, sizes)
        attributes = head["attributes"].astype(np.int64)
        rows, done = decode_records(
            buf, rec_start, rec_end, head["base_offset"], head["base_timestamp"],
            head["max_timestamp"], (attributes & _rb.TIMESTAMP_TYPE_MASK) != 0, base_seq, counts)
        if done < len(starts):   # a record the vectorised engine declines: the object reader's
            raise _Unusual(done)
        control = (attributes & _CONTROL_FLAG) != 0
        return {"head": head, "counts": counts, "rows": rows, "control": control,
                "markers": _markers(rows, control) if control.any() else None}

    # ------------------------------------------------------------------ text

    def _emit(self, cols: dict[str, Any], starts: np.ndarray, sizes: np.ndarray,
              file_pos: int, state: Any) -> None:
        """The window's text: a formatter over the engine's columns (one line per batch, then
        one per record, DUMP_LOG.md 3.3-3.5)."""
        head = cols["head"]
        counts = cols["counts"]
        rows = cols["rows"]
        bidx = rows.batch
        nb = len(starts)
        n = len(bidx)
        attributes = head["attributes"].astype(np.int64)
        log_append = (attributes >> 3) & 1
        base_offset = head["base_offset"].astype(np.int64)
        base_ts = head["base_timestamp"].astype(np.int64)
        max_ts = head["max_timestamp"].astype(np.int64)
        base_seq = head["base_sequence"].astype(np.int64)
        lod = head["last_offset_delta"].astype(np.int64)

        s = _text
        # a column whose rows all print the same (a window of one producer's records: one
        # timestamp type, no key, one value size, no headers...) becomes a literal, so the
        # join runs over the columns that vary only
        c = _uniform_or_text
        headers = rows.headers
        if len(headers.values):
            hk_lists = pa.ListArray.from_arrays(headers.offsets, headers.values.field("key"))
            header_keys: Any = pc.binary_join(hk_lists, _lit(","))
        else:
            header_keys = ""
        klen = _sizes(rows.key)
        vlen = _sizes(rows.value)
        row_ts_type = log_append[bidx]
        pieces: list[Any] = [
            "| offset: ", s(rows.offset), " ",
            _named(_TS_NAMES, _TS_TYPES, row_ts_type),
            ": ", c(rows.timestamp_ms), " keySize: ", c(klen), " valueSize: ", c(vlen),
            " sequence: ", c(rows.sequence), " headerKeys: [", header_keys, "]",
        ]
        markers = cols["markers"]
        if markers is not None:   # " endTxnMarker: ..." after a control record's metadata
            pieces.append(markers)
        if self.print_data:
            # a control record's key and value are not printed (DumpLogSegments)
            data_row = ~cols["control"][bidx]
            pieces.extend(_optional(" key: ", rows.key, (klen < 0) | ~data_row))
            pieces.extend(_optional(" payload: ", rows.value, (vlen < 0) | ~data_row))
        pieces.append("\n")
        record_lines = _join(pieces, n)

        horizon = (attributes & _rb.DELETE_HORIZON_FLAG_MASK) != 0
        transactional = (attributes >> 4) & 1
        codec = attributes & _CODEC_MASK
        batch_lines = _join([
            "baseOffset: ", s(base_offset), " lastOffset: ", s(base_offset + lod),
            " count: ", c(counts), " baseSequence: ", c(base_seq),
            " lastSequence: ", c(increment_sequences(base_seq, lod)),
            " producerId: ", c(head["producer_id"].astype(np.int64)),
            " producerEpoch: ", c(head["producer_epoch"].astype(np.int64)),
            " partitionLeaderEpoch: ", c(head["partition_leader_epoch"].astype(np.int64)),
            " isTransactional: ",
            _named(_BOOL_NAMES, _BOOLS, transactional),
            " isControl: ",
            _named(_BOOL_NAMES, _BOOLS, cols["control"].astype(np.int64)),
            " deleteHorizonMs: ",
            "OptionalLong.empty" if not horizon.any() else _optional_long(base_ts, horizon),
            " position: ", s(starts + file_pos), " ",
            _named(_TS_NAMES, _TS_TYPES, log_append),
            ": ", s(max_ts), " size: ", c(sizes),
            " magic: 2 compresscodec: ",
            _named(_CODEC_NAMES, _CODECS, codec),
            " crc: ", s(head["crc"].astype(np.int64)),
            " isvalid: true\n",
        ], nb)

        # batch line b, then its records: batch b goes to b + records before it
        order = np.empty(nb + n, dtype=np.int64)
        before = np.concatenate([[0], np.cumsum(counts)[:-1]])
        order[np.arange(nb) + before] = np.arange(nb)
        order[np.arange(n) + bidx + 1] = nb + np.arange(n)
        lines = pa.concat_arrays([batch_lines, record_lines]).take(_arrow(order))
        self.write(_data(lines))
        self._check_order(rows.offset, state)

    def _check_order(self, offsets: np.ndarray, state: Any) -> None:
        """log_dump's offset-order check, column-wise: a record whose offset is not the
        previous one plus one is a non-consecutive pair (4.x also checks the first against
        -1)."""
        if len(offsets) == 0:
            return
        prev = np.empty_like(offsets)
        prev[0] = state.last_offset
        prev[1:] = offsets[:-1]
        jump = (offsets != prev + 1) | (prev == _INT64_MAX)
        if not self.kafka4:
            jump &= prev != -1
        for i in np.nonzero(jump)[0].tolist():
            state.non_consecutive.append(int(prev[i]), int(offsets[i]))
        state.last_offset = int(offsets[-1])


def _markers(rows: Any, control: np.ndarray) -> pa.Array:
    """Per record, the text DumpLogSegments appends to a control record's metadata
    (dump/control.py's describe_control; "" for data records). Only transaction markers are
    printed here: another control type, or a marker the decoder refuses, is the object
    reader's (_Unusual of its batch)."""
    ctl_rows = np.nonzero(control[rows.batch])[0]
    texts = [""] * len(rows.batch)
    keys = rows.key.take(_arrow(ctl_rows)).to_pylist()
    values = rows.value.take(_arrow(ctl_rows)).to_pylist()
    for i, key, value in zip(ctl_rows.tolist(), keys, values):
        try:
            if decode_control_key(key).type_id not in _MARKER_TYPES:
                raise _Unusual(int(rows.batch[i]))
            texts[i] = describe_control(key, value, False)[0]
        except FormatError:
            raise _Unusual(int(rows.batch[i])) from None
    return string_array(texts)


def _sizes(values: pa.Array) -> np.ndarray:
    """keySize/valueSize: each row's byte length, -1 where it is null (DumpLogSegments)."""
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int32)[values.offset:
                                                                 values.offset + len(values) + 1]
    sizes = np.diff(offsets).astype(np.int64)
    if values.null_count:   # the validity bitmap itself (numpy of an Arrow array imports pandas)
        bits = np.frombuffer(values.buffers()[0], dtype=np.uint8)
        valid = np.unpackbits(bits, bitorder="little")[values.offset:values.offset + len(values)]
        sizes[valid == 0] = -1
    return sizes


def _text_column(values: pa.Array) -> pa.Array:
    """Keys or values as kafka-dump-log's StringDecoder prints them (``new String(bytes,
    UTF_8)``): the bytes themselves when they are UTF-8, else Java's replacement characters
    (java_utf8.py, as parsers.string_decoder) for the records that are not."""
    try:
        return values.cast(pa.string())
    except pa.ArrowInvalid:
        pass
    parts: list[bytes] = []
    for chunk in values.to_pylist():
        chunk = chunk or b""
        try:
            codecs.utf_8_decode(chunk, "strict", True)
        except UnicodeDecodeError:
            chunk = java_utf8_replace(chunk).encode("utf-8")
        parts.append(chunk)
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in parts], out=offsets[1:])
    return pa.Array.from_buffers(pa.large_string(), len(parts),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(parts))]
                                 ).cast(pa.string())


def _text(values: np.ndarray) -> pa.Array:
    return _arrow(values).cast(pa.string())


def _optional(label: str, values: pa.Array, absent: np.ndarray) -> list[Any]:
    """Pieces of ``label + value``, or of nothing where the value is null (DumpLogSegments
    prints no ``key:``/``payload:`` part for a null key or value)."""
    if absent.all():
        return [""]
    text = _text_column(values)
    if not absent.any():
        return [label, text]
    joined = pc.binary_join_element_wise(_lit(label), text, _lit(""))
    return [pc.if_else(_arrow(absent), _lit(""), joined)]


def _uniform(values: np.ndarray) -> bool:
    return len(values) > 0 and bool((values == values[0]).all())


def _named(names: list[str], table: pa.Array, index: np.ndarray) -> Any:
    """``names[index]`` per row: the one name as a literal when every row has it, else a
    column taken from ``table`` (the same names as an Arrow array)."""
    if _uniform(index):
        return names[int(index[0])]
    return table.take(_arrow(index))


def _uniform_or_text(values: np.ndarray) -> Any:
    """The column's one value as a literal when every row has it, else its text column."""
    if _uniform(values):
        return str(int(values[0]))
    return _text(values)


def _optional_long(values: np.ndarray, present: np.ndarray) -> pa.Array:
    """java.util.OptionalLong.toString() per row."""
    joined = pc.binary_join_element_wise(_lit("OptionalLong["), _text(values), _lit("]"),
                                         _lit(""))
    return pc.if_else(_arrow(present), joined, _lit("OptionalLong.empty"))


def _join(pieces: list[Any], n: int | None = None) -> pa.Array:
    """The row-wise concatenation of ``pieces`` (literals and string columns): adjacent
    literals merged first; ``n`` rows when every piece is a literal."""
    merged: list[Any] = []
    for p in pieces:
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        else:
            merged.append(p)
    if all(isinstance(p, str) for p in merged):
        return string_array(["".join(merged)] * (n or 0))
    return pc.binary_join_element_wise(*[_lit(p) if isinstance(p, str) else p for p in merged],
                                       _lit(""))


def _data(lines: pa.Array) -> memoryview:
    """The concatenated bytes of a string array (its data buffer between the first and last
    offsets)."""
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)[lines.offset:lines.offset + len(lines) + 1]
    data = lines.buffers()[2]
    if data is None:
        return memoryview(b"")
    return memoryview(data)[int(offsets[0]):int(offsets[-1])]
