"""Columnar fast path: segments straight into Arrow (CONTRACT.md sections 5 and 7).

* :func:`iter_batch_batches` / :func:`read_batch_table`: one row per batch (``BATCH_SCHEMA``):
  header fields, location and CRC validity, no record decoding.
* :func:`iter_record_batches` / :func:`read_records`: one row per record (``RECORD_SCHEMA``):
  Spark's Kafka source columns first, then forensic columns.

Paths mean what :func:`segtools.files.sources.resolve` says (a segment, a partition dir, a broker dir,
a folder of broker dirs), URIs included: an object (``s3://``...) is read like ``iter_batches``
reads it, one segment at a time through a temporary local copy (:func:`_open_segment`).

Files are opened read-only, read through one reusable window and walked like Kafka's
``FileLogInputStream`` (FORMATS.md 1.8): a torn tail ends the walk silently, a size field below
14 raises ``CorruptBatchError``. Output comes in bounded chunks (``max_rows`` rows, at most
``_CHUNK_BYTES`` of record bytes), so memory stays flat however large the segment. Batches
whose CRC does not match still give rows, with ``crc_valid`` False; bytes that cannot be decoded
at all raise a ``FormatError`` that names file, position, base offset and field.

Engines: ``"numba"`` (kernels in :mod:`segtools.records.jit_kernel`), ``"python"``
(:mod:`segtools.records.v2_decoder`, identical results), ``"auto"`` (numba when importable). Legacy
magic 0/1 entries are read through the object reader (:mod:`segtools.records.batches`).
"""

from __future__ import annotations

import contextlib
import datetime
import os
import stat
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pyarrow as pa

from segtools.errors import (
    CorruptBatchError,
    FileChangedError,
    FormatError,
    InputError,
    SegtoolsError,
    display_path,
    os_input_error,
)
from segtools.formats.record_batch import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG_MASK,
    DELETE_HORIZON_FLAG_MASK,
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    V2_MIN_BATCH_LENGTH,
)
from segtools.primitives import codecs as _codecs
from segtools.primitives import crc as _crc
from segtools.primitives.codecs import COMPRESSION_NAMES
from segtools.primitives.limits import DEFAULT_MAX_BATCH_BYTES, resolve_max_batch_bytes
from segtools.records.batch_walk import borrows_header, next_batch, stops_silently, walk_error
from segtools.records.faults import (
    RECORD_BATCH_OVERHEAD,
    SCAN_MORE,
    SCAN_SIZE_TOO_SMALL,
    SCAN_TOO_LARGE,
    SCAN_TORN_TAIL,
    SCAN_V2_TOO_SHORT,
    ST_SIZE,
    RecordFault,
    record_error,
)
from segtools.records.schema import BATCH_SCHEMA, HEADER_TYPE, RECORD_SCHEMA
from segtools.records.v2_decoder import check_v2_batch

__all__ = ["iter_batch_batches", "iter_record_batches", "read_batch_table", "read_records",
           "available_engines"]

#: batches per header-scan call (bounds the per-chunk header columns to a few MB)
_SCAN_CHUNK = 65536
#: bytes read per window; resident memory is about two windows (current + read-ahead)
#: whatever the file size
_SCAN_BYTES = 16 * 1024 * 1024
_HAVE_PREADV = hasattr(os, "preadv")
#: record bytes (compressed or not) gathered into one output chunk; keeps every binary column
#: far below Arrow's 2 GiB offset limit (CONVENTIONS.md pitfall 7)
_CHUNK_BYTES = 64 * 1024 * 1024
#: older name of segtools.primitives.limits.DEFAULT_MAX_BATCH_BYTES, the one bound on a batch (on disk
#: and decompressed) that every reader applies
DEFAULT_MAX_UNCOMPRESSED = DEFAULT_MAX_BATCH_BYTES
#: CRC-32C of a batch larger than the window is computed over reads of this size
_CRC_STEP = 4 * 1024 * 1024

_COMPRESSION_NAMES = ["none", "gzip", "snappy", "lz4", "zstd",
                      "unknown(5)", "unknown(6)", "unknown(7)"]


def available_engines() -> list[str]:
    """Engines usable here: always "python", plus "numba" when numba imports."""
    return (["numba"] if _load_kernel() is not None else []) + ["python"]


_KERNEL: Any = None
_KERNEL_TRIED = False


#: FORMATS.md 1.9 worked example: one batch, null key, value "a", crc 0x965A94B1
_WORKED_EXAMPLE = bytes.fromhex(
    "0000000000000000000000390000000002965a94b10000000000000000018bcfe568000000018bcfe568"
    "00ffffffffffffffffffffffffffff000000010e00000001026100")


class _InMemory:
    """The attributes of :class:`_SegmentFile` the kernels read, over bytes in memory."""

    def __init__(self, data: bytes) -> None:
        self.path = "<self-test>"
        self.array = np.frombuffer(data, dtype=np.uint8)
        self.view = memoryview(data)
        self.base = 0
        self.filled = self.size = len(data)


def _kernel_works(kernel: Any) -> bool:
    """Compile (or load from cache) every kernel on the spec's worked example and check the
    answer, so a broken numba/llvmlite install means the python engine, not a crash later."""
    sf = _InMemory(_WORKED_EXAMPLE)
    h, _next, _status = _scan_chunk(sf, 0, kernel, 4)  # type: ignore[arg-type]
    _finish_chunk(sf, h, kernel)  # type: ignore[arg-type]
    rc = _decode_kernel(kernel, sf, h, [(0, len(h), None, None, None)])  # type: ignore[arg-type]
    return (len(h) == 1 and bool(_done(h.crc_valid)[0]) and rc.value.to_pylist() == [b"a"]
            and rc.key.to_pylist() == [None] and rc.timestamp_ms.tolist() == [1_700_000_000_000])


def _load_kernel() -> Any:
    global _KERNEL, _KERNEL_TRIED
    if not _KERNEL_TRIED:
        _KERNEL_TRIED = True
        _KERNEL = None
        try:
            from segtools.records import jit_kernel

            if _kernel_works(jit_kernel):
                _KERNEL = jit_kernel
            else:  # pragma: no cover - would mean a miscompiled kernel
                warnings.warn("segtools: numba kernel self-test failed; using the python engine",
                              RuntimeWarning, stacklevel=2)
        except ImportError:  # numba missing: the python engine takes over
            pass
        except Exception as exc:  # noqa: BLE001 - numba/llvmlite broken in some other way
            warnings.warn(f"segtools: numba kernel unusable ({type(exc).__name__}: {exc}); "
                          "using the python engine", RuntimeWarning, stacklevel=2)
    return _KERNEL


def _pick_engine(engine: str) -> Any:
    """The kernel module for "numba"/"auto", None for "python"."""
    if engine == "python":
        return None
    if engine not in ("auto", "numba"):
        raise InputError(f"unknown engine {engine!r}: use 'auto', 'numba' or 'python'")
    kernel = _load_kernel()
    if kernel is None and engine == "numba":
        raise InputError("engine 'numba' requested but numba is not importable; use engine='python'")
    return kernel


# ------------------------------------------------------------------------------------------
# inputs


@dataclass(frozen=True)
class _Segment:
    path: str
    topic: str | None
    partition: int | None
    broker: int | None


def _segments(path: str | os.PathLike[str] | bytes, topic: str | None, partition: int | None,
              broker: int | None) -> list[_Segment]:
    """Segment files under ``path``, as :func:`segtools.files.sources.resolve` finds them."""
    from segtools.files.remote import local_path
    from segtools.files.sources import resolve

    resolution = resolve([path])
    resolution.warn(stacklevel=4)
    found: list[_Segment] = []
    for source in resolution.partitions:
        t = topic if topic is not None else (_text(source.topic) or None)
        part = partition if partition is not None else (
            source.partition if source.partition >= 0 else None)
        b = broker if broker is not None else source.broker
        # a file:// segment is read at its local path, an object store's through _open_segment
        found.extend(_Segment(local_path(seg), t, part, b) for seg in source.segments)
    return found


def _located(path: str | os.PathLike[str] | bytes, topic: str | None, partition: int | None,
             broker: int | None, located: bool) -> list[_Segment]:
    """The segments to read: ``path`` itself when the caller ``located`` it (one segment file
    discovery already listed, with its topic, partition and broker), else :func:`_segments`.
    Discovery per file costs more than reading a small segment (about 1.5 ms: stat, real path,
    the broker's meta.properties), which made tools that read segment by segment slow on
    partitions of many small segments."""
    if not located:
        return _segments(path, topic, partition, broker)
    from segtools.files.remote import local_path

    return [_Segment(local_path(os.fsdecode(path)), _text(topic), partition, broker)]


@contextlib.contextmanager
def _open_segment(seg: _Segment, window: int | None = None) -> Iterator[_SegmentFile]:
    """``seg`` opened for reading: a local file as it is, an object (``s3://``, ``gs://``,
    ``hdfs://``...) through the private temporary copy :func:`segtools.files.remote.local_file`
    streams it to (as ``iter_batches`` reads it), removed when the block ends. Errors name
    ``seg.path``, the URI, never the copy."""
    from segtools.files.remote import local_file

    with local_file(seg.path) as local, _SegmentFile(local, window, display=seg.path) as mf:
        yield mf


def _text(name: str | None) -> str | None:
    """A name from the file system as Arrow can store it: bytes that are not UTF-8 (kept by
    Python as surrogates) become U+FFFD instead of failing the string conversion."""
    if name is None:
        return None
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return os.fsencode(name).decode("utf-8", "replace")


_READ_AHEAD: Any = None   # one background reader thread, created on first use
#: read the next window in the background while the current one is checked and decoded
_PREFETCH = True


def _read_ahead_executor() -> Any:
    global _READ_AHEAD
    # a forked child (Spark's Python workers) inherits the executor but not its thread
    if _READ_AHEAD is None or _READ_AHEAD[0] != os.getpid():
        from concurrent.futures import ThreadPoolExecutor

        _READ_AHEAD = (os.getpid(), ThreadPoolExecutor(max_workers=1,
                                                       thread_name_prefix="segtools-read"))
    return _READ_AHEAD[1]


#: read windows of closed files, reused by the next file opened: a fresh 16 MiB buffer is
#: 4,096 page faults at its first read (~25 ms of CPU per 32 MiB segment after other work
#: had the allocator return its pages). At most _SPARE_WINDOWS are kept (about 32 MiB).
_SPARE: list[np.ndarray] = []
_SPARE_WINDOWS = 2
_SPARE_MIN = 1 << 20
_SPARE_LOCK = threading.Lock()


def _take_window(size: int) -> np.ndarray | None:
    with _SPARE_LOCK:
        for k, buf in enumerate(_SPARE):
            if buf.shape[0] >= size:
                return _SPARE.pop(k)
    return None


def _give_window(buf: np.ndarray) -> None:
    """Keep a closed file's window for the next file (a forked child starts with the
    parent's list, which is harmless: the buffers are its own copy-on-write pages)."""
    if buf.shape[0] < _SPARE_MIN:
        return
    with _SPARE_LOCK:
        if len(_SPARE) < _SPARE_WINDOWS:
            _SPARE.append(buf)


class _SegmentFile:
    """A segment opened read-only and read through a reusable window (two buffers, so the
    next window can be read while the current one is in use).

    ``pread`` into a fixed buffer beats ``mmap`` here: mapping page-cache pages costs more than
    copying them (measured on this VM: 3.0 ms to map+touch 32 MB vs 2.6 ms to read it), and
    resident memory stays at two windows whatever the file size. ``array`` (read-only uint8)
    and ``view`` hold file bytes [base, base + filled).
    """

    #: the header scan's reused output columns (see _scan_chunk)
    _scan_out: dict[str, np.ndarray] | None = None

    def __init__(self, path: str, window: int | None = None, display: str | None = None) -> None:
        # ``display``: the name errors give (an object's URI when ``path`` is its local copy)
        self.path = display if display is not None else path
        self.name = os.path.basename(self.path)
        try:
            # O_NONBLOCK: opening a FIFO must not wait for a writer (no effect on regular files)
            self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            raise os_input_error(self.path, exc, "cannot open") from None
        try:
            st = os.fstat(self._fd)
        except OSError as exc:
            os.close(self._fd)
            raise os_input_error(self.path, exc, "cannot stat") from None
        if not stat.S_ISREG(st.st_mode):
            os.close(self._fd)
            raise InputError(f"{display_path(self.path)} is not a regular file")
        self._stat = st
        self._settled = False
        self.size = st.st_size
        self._window = max(64, window if window is not None else _SCAN_BYTES)
        self._bufs = [np.empty(0, dtype=np.uint8), np.empty(0, dtype=np.uint8)]
        self._cur = 0
        self._pending: tuple[int, int, int, Any] | None = None   # pos, want, buffer, future
        self.base = 0
        self.filled = 0
        self.array = self._bufs[0]
        self.view = memoryview(b"")

    def _buffer(self, index: int, size: int) -> np.ndarray:
        if self._bufs[index].shape[0] < size:
            spare = _take_window(size)
            # no more than the file holds: a 16 MiB window per one-batch segment was an
            # allocation (and its page faults) per file for a few hundred bytes
            self._bufs[index] = spare if spare is not None else np.empty(
                max(size, min(self._window, self.size)), dtype=np.uint8)
        return self._bufs[index]

    def _read(self, buf: np.ndarray, pos: int, want: int) -> int:
        """pread ``want`` bytes at ``pos`` into ``buf``; fewer only at (a shrunk) EOF."""
        target = memoryview(cast(bytearray, buf))   # numpy arrays are buffers; numpy's stubs say not
        got = 0
        while got < want:
            if _HAVE_PREADV:
                n = os.preadv(self._fd, [target[got:want]], pos + got)
            else:  # platforms without preadv: one extra copy
                chunk = os.pread(self._fd, want - got, pos + got)
                n = len(chunk)
                target[got:got + n] = chunk
            if n <= 0:
                break
            got += n
        return got

    def prefetch(self, pos: int) -> None:
        """Start reading the window at ``pos`` into the spare buffer."""
        if not _PREFETCH or self._pending is not None or pos >= self.size:
            return
        want = min(self._window, self.size - pos)
        spare = 1 - self._cur
        buf = self._buffer(spare, want)
        future = _read_ahead_executor().submit(self._read, buf, pos, want)
        self._pending = (pos, want, spare, future)

    def _collect(self) -> tuple[int, int, int, int] | None:
        """Wait for the background read: (pos, want, buffer, got), or None."""
        if self._pending is None:
            return None
        pos, want, index, future = self._pending
        self._pending = None
        try:
            got = future.result()
        except OSError as exc:
            raise InputError(f"{self.path}: read failed at {pos}: {exc.strerror or exc}") from exc
        return pos, want, index, got

    def load(self, pos: int, need: int = 0) -> None:
        """Make file bytes from ``pos`` current: a window, or ``need`` bytes if that is more."""
        want = min(max(self._window, need), self.size - pos)
        done = self._collect()
        if done is not None and done[0] == pos and done[1] >= want:
            _pos, _want, index, got = done
        else:
            index = self._cur if done is None else done[2]   # a buffer nobody looks at now
            if done is None and self.filled:
                index = 1 - self._cur
            buf = self._buffer(index, want)
            try:
                got = self._read(buf, pos, want)
            except OSError as exc:
                raise InputError(f"{self.path}: read failed at {pos}: "
                                 f"{exc.strerror or exc}") from exc
        if got < want:   # reads stay below the size at open: a short one means it shrank
            raise self.changed("the file shrank", pos)
        self._cur = index
        self.base = pos
        self.filled = got
        self.array = self._bufs[index][:got]
        self.array.flags.writeable = False
        self.view = memoryview(cast(bytearray, self.array))

    @property
    def at_eof(self) -> bool:
        return self.base + self.filled >= self.size

    def changed(self, why: str, pos: int | None = None) -> FileChangedError:
        return FileChangedError(f"{display_path(self.path)}: file changed while reading "
                                f"({why}), near position {self.base if pos is None else pos}")

    def check_unchanged(self, pos: int | None = None, n: int = 0) -> None:
        """Raise ``FileChangedError`` when size or modification time differ from the open, or
        the loaded bytes [pos, pos + n) read back differently: called where a read found
        damage, which a concurrent writer (truncate and rewrite) causes without any
        corruption on disk. Healthy files never get here."""
        if not self._settled:   # once per file: give a writer in mid-rewrite time to show
            self._settled = True
            import time

            from segtools.records.batches import _SETTLE_CHECKS, _SETTLE_SECONDS

            for _ in range(_SETTLE_CHECKS - 1):
                time.sleep(_SETTLE_SECONDS)
                self._compare(pos, n)
            time.sleep(_SETTLE_SECONDS)
        self._compare(pos, n)

    def _compare(self, pos: int | None, n: int) -> None:
        if pos is not None and n > 0:
            rel = pos - self.base
            if 0 <= rel and rel + n <= self.filled:
                seen = bytes(self.view[rel:rel + n])
                try:
                    again = os.pread(self._fd, n, pos)
                except OSError:
                    again = b""
                if again != seen:
                    raise self.changed("bytes read twice differ", pos)
        try:
            now = os.fstat(self._fd)
        except OSError:
            return
        before = self._stat
        if (now.st_size != before.st_size or now.st_mtime_ns != before.st_mtime_ns
                or now.st_ino != before.st_ino):
            raise self.changed("size or modification time", pos)

    def crc_step_read(self, pos: int, n: int) -> np.ndarray:
        """``n`` bytes at ``pos`` in a scratch buffer (streamed CRC of large batches)."""
        buf = getattr(self, "_scratch", None)
        if buf is None or buf.shape[0] < n:
            buf = self._scratch = np.empty(max(n, _CRC_STEP), dtype=np.uint8)
        try:
            got = self._read(buf, pos, n)
        except OSError as exc:
            raise os_input_error(self.path, exc) from None
        return buf[:got]

    def close(self) -> None:
        if self._pending is not None:   # never close the fd under a running read
            try:
                self._pending[3].result()
            except OSError:
                pass
            self._pending = None
        self.view = memoryview(b"")
        self.array = np.empty(0, dtype=np.uint8)
        for buf in self._bufs:
            _give_window(buf)
        self._bufs = []
        os.close(self._fd)

    def __enter__(self) -> _SegmentFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ------------------------------------------------------------------------------------------
# header scan


@dataclass
class _Headers:
    """Header columns of one scan chunk (numpy arrays, one entry per batch)."""

    position: np.ndarray
    base_offset: np.ndarray
    batch_length: np.ndarray
    partition_leader_epoch: np.ndarray
    magic: np.ndarray
    crc: np.ndarray
    attributes: np.ndarray
    last_offset_delta: np.ndarray
    base_timestamp: np.ndarray
    max_timestamp: np.ndarray
    producer_id: np.ndarray
    producer_epoch: np.ndarray
    base_sequence: np.ndarray
    records_count: np.ndarray
    crc_valid: np.ndarray | None = None
    # legacy entries: filled from the object reader
    last_offset: np.ndarray | None = None
    timestamp_type: np.ndarray | None = None
    legacy: dict[int, Any] | None = None
    base: int = 0          # file position of the window the positions point into

    def __len__(self) -> int:
        return int(self.position.shape[0])


def _done(column: np.ndarray | None) -> np.ndarray:
    """A column ``_finish_chunk`` (``_fill_legacy``) has filled: typed as set (no check)."""
    return cast(np.ndarray, column)


_HEADER_DTYPES = {
    "position": np.int64, "base_offset": np.int64, "batch_length": np.int64,
    "partition_leader_epoch": np.int32, "magic": np.int8, "crc": np.int64,
    "attributes": np.int16, "last_offset_delta": np.int32, "base_timestamp": np.int64,
    "max_timestamp": np.int64, "producer_id": np.int64, "producer_epoch": np.int16,
    "base_sequence": np.int32, "records_count": np.int32,
}


def _scan_chunk(sf: _SegmentFile, rel: int, kernel: Any, max_batches: int,
                limit: int = DEFAULT_MAX_BATCH_BYTES) -> tuple[_Headers, int, int]:
    """Headers of the window from window offset ``rel``: (headers, next window offset, status).
    The walk is :mod:`segtools.records.batch_walk`'s (the kernel's ``scan_headers`` is its twin), over
    the window: a status is judged against the window's end (:func:`_raise_scan_status` judges
    against the file's)."""
    # an entry takes at least 26 bytes (12 + RECORD_OVERHEAD_V0), which bounds the row count
    max_batches = max(1, min(max_batches, (sf.filled - rel) // 26 + 1))
    if kernel is not None:
        # the kernel's output columns are reused window after window (allocating fourteen
        # columns of up to 65,536 rows per call cost more than scanning a 1 MiB window);
        # the rows found are copied out
        out = getattr(sf, "_scan_out", None)
        if out is None or out["position"].shape[0] < max_batches:
            out = {name: np.empty(max_batches, dtype=dt) for name, dt in _HEADER_DTYPES.items()}
            sf._scan_out = out
        n, next_rel, status = kernel.scan_headers(
            sf.array, rel, sf.filled, max_batches, sf.filled, limit, out["position"],
            out["base_offset"],
            out["batch_length"], out["partition_leader_epoch"], out["magic"], out["crc"],
            out["attributes"], out["last_offset_delta"], out["base_timestamp"],
            out["max_timestamp"], out["producer_id"], out["producer_epoch"],
            out["base_sequence"], out["records_count"])
        if 4 * n > out["position"].shape[0]:   # mostly filled: hand the columns over
            cols: dict[str, Any] = {name: arr[:n] for name, arr in out.items()}
            sf._scan_out = None
        else:
            cols = {name: arr[:n].copy() for name, arr in out.items()}
    else:
        from segtools.records import v2_decoder

        lists, next_rel, status = v2_decoder.scan_headers(sf.view, rel, sf.filled, max_batches,
                                                           sf.filled, limit)
        cols = {name: np.asarray(lists[name], dtype=dt) for name, dt in _HEADER_DTYPES.items()}
    cols["position"] = cols["position"] + sf.base
    return _Headers(**cols, base=sf.base), int(next_rel), int(status)


def _check_crcs(sf: _SegmentFile, h: _Headers, kernel: Any) -> np.ndarray:
    """crc_valid per batch: CRC-32C of bytes [21, end) for v2 (legacy filled in later)."""
    if kernel is not None and kernel.HARDWARE_CRC_IN_KERNEL:
        out = np.empty(len(h), dtype=bool)
        kernel.crc_check(sf.array, h.base, h.position, h.batch_length, h.magic, h.crc,
                         V2_MIN_BATCH_LENGTH, out)
        return out
    v2 = h.magic >= 2
    starts = h.position - h.base + ATTRIBUTES_OFFSET
    ends = np.maximum(h.position - h.base + LOG_OVERHEAD + h.batch_length, starts)
    computed = np.zeros(len(h), dtype=np.uint32)
    if kernel is not None and kernel.HARDWARE_CRC_IN_KERNEL:
        kernel.crc_ranges(sf.array, starts, ends, computed)
    else:
        view = sf.view
        for i in np.flatnonzero(v2).tolist():
            computed[i] = _crc.crc32c(view[int(starts[i]):int(ends[i])])
    # DefaultRecordBatch.isValid(): a batch shorter than its 61-byte header never is
    valid: np.ndarray = v2 & (computed.astype(np.int64) == h.crc) & (h.batch_length >= V2_MIN_BATCH_LENGTH)
    return valid


def _raise_scan_status(mf: _SegmentFile, pos: int, limit: int) -> None:
    """Raise the walk's error where it stopped at file position ``pos`` (inside the loaded
    window), judged against the whole file (:func:`segtools.records.batch_walk.next_batch`)."""
    error = walk_error(next_batch(mf.view, pos - mf.base, pos, mf.size, mf.size, limit),
                       path=mf.path, file_size=mf.size, limit=limit)
    if error is not None:
        mf.check_unchanged(pos, min(HEADER_SIZE_UP_TO_MAGIC, mf.base + mf.filled - pos))
        raise error


def _legacy_batch(mf: _SegmentFile, pos: int, size: int, limit: int) -> Any:
    """The object reader's view of one legacy (magic 0/1) entry: its fields and records."""
    from segtools.records.batches import SegmentBatch

    rel = pos - mf.base
    return SegmentBatch.from_bytes(bytes(mf.view[rel:rel + 12 + size]), path=mf.path,
                                  position=pos, max_batch_bytes=limit)


def _fill_legacy(h: _Headers, mf: _SegmentFile, limit: int = DEFAULT_MAX_BATCH_BYTES) -> None:
    """Columns of magic 0/1 entries from the object reader; v2 columns derived from headers."""
    h.last_offset = h.base_offset + h.last_offset_delta
    h.timestamp_type = np.where((h.attributes & TIMESTAMP_TYPE_MASK) != 0, 1, 0).astype(np.int8)
    legacy_rows = np.flatnonzero(h.magic < 2)
    if not legacy_rows.size:
        return
    h.legacy = {}
    for i in legacy_rows.tolist():
        b = _legacy_batch(mf, int(h.position[i]), int(h.batch_length[i]), limit)
        h.legacy[i] = b
        h.base_offset[i] = b.base_offset
        h.last_offset[i] = b.last_offset
        h.partition_leader_epoch[i] = b.partition_leader_epoch
        h.crc[i] = b.crc
        _done(h.crc_valid)[i] = bool(b.crc_valid)
        h.attributes[i] = b.attributes
        h.last_offset_delta[i] = b.last_offset_delta
        h.base_timestamp[i] = b.base_timestamp
        h.max_timestamp[i] = b.max_timestamp
        h.producer_id[i] = b.producer_id
        h.producer_epoch[i] = b.producer_epoch
        h.base_sequence[i] = b.base_sequence
        h.records_count[i] = b.records_count
        h.timestamp_type[i] = {"NoTimestampType": -1, "CreateTime": 0,
                               "LogAppendTime": 1}[b.timestamp_type]


def _scan_window(sf: _SegmentFile, kernel: Any, rel: int, max_batches: int,
                 limit: int = DEFAULT_MAX_BATCH_BYTES) -> tuple[list[_Headers], int, int]:
    """Header chunks of the loaded window from ``rel``: (chunks, next window offset, status).
    CRCs and legacy fields are not filled yet (see :func:`_finish_chunk`)."""
    chunks = []
    while True:
        h, rel, status = _scan_chunk(sf, rel, kernel, max_batches, limit)
        if len(h):
            chunks.append(h)
        if status != SCAN_MORE:
            return chunks, rel, status


def _finish_chunk(sf: _SegmentFile, h: _Headers, kernel: Any,
                  limit: int = DEFAULT_MAX_BATCH_BYTES) -> _Headers:
    h.crc_valid = _check_crcs(sf, h, kernel)
    _fill_legacy(h, sf, limit)
    if not h.crc_valid.all():
        # a mismatch read from a file being rewritten is not on disk: read those batches again
        for i in np.flatnonzero(~h.crc_valid).tolist():
            sf.check_unchanged(int(h.position[i]), int(h.batch_length[i]) + 12)
    return h


def _streamed_header(sf: _SegmentFile, pos: int, total: int, limit: int) -> _Headers:
    """The header row of a v2 batch larger than the window, its CRC-32C computed over
    streamed reads so memory does not grow with the batch."""
    from segtools.records.batches import V2_HEADER

    head = bytes(sf.crc_step_read(pos, RECORD_BATCH_OVERHEAD))
    if len(head) < RECORD_BATCH_OVERHEAD:
        raise sf.changed("the file shrank", pos)
    values = V2_HEADER.unpack_from(head)
    crc = _crc.crc32c(head[21:])
    done = RECORD_BATCH_OVERHEAD
    while done < total:
        chunk = sf.crc_step_read(pos + done, min(_CRC_STEP, total - done))
        if not chunk.shape[0]:
            raise sf.changed("the file shrank", pos)
        crc = _crc.crc32c(memoryview(cast(bytearray, chunk)), crc)
        done += int(chunk.shape[0])
    row = (pos, values[0], values[1]) + values[2:]
    cols: dict[str, Any] = {name: np.array([v], dtype=dt) for (name, dt), v in zip(_HEADER_DTYPES.items(), row)}
    h = _Headers(**cols, base=sf.base)
    h.crc_valid = np.array([crc == values[4]])
    _fill_legacy(h, sf, limit)
    if not h.crc_valid[0]:
        sf.check_unchanged()
    return h


def _iter_headers(sf: _SegmentFile, kernel: Any, max_batches: int = _SCAN_CHUNK,
                  limit: int = DEFAULT_MAX_BATCH_BYTES,
                  need_bytes: bool = True, start: int = 0) -> Iterator[_Headers]:
    """Header chunks of one file in file order, walked like FileLogInputStream. Each chunk's
    bytes stay in ``sf``'s window until the consumer asks for the next chunk. Raises after
    yielding what came before the damage.

    A window's headers are walked first (cheap), so the read of the next window can start in
    the background while this one's CRCs are computed and its records decoded.

    A batch above ``limit`` on disk raises ``BatchTooLargeError`` before it is read. A v2
    batch larger than the window is read whole only when ``need_bytes`` (records are
    decoded); otherwise its CRC is computed over streamed reads.

    ``start``: the byte position of a batch to begin the walk at (0: the file's start)."""
    sf.load(start)
    while True:
        chunks, rel, status = _scan_window(sf, kernel, 0, max_batches, limit)
        next_pos = sf.base + rel
        # a short v2 batch whose borrowed header bytes lie past the window: read on from it
        fatal = status in (SCAN_SIZE_TOO_SMALL, SCAN_TOO_LARGE) or (
            status == SCAN_V2_TOO_SHORT and (sf.at_eof or rel == 0))
        if not fatal and not sf.at_eof and rel > 0:
            sf.prefetch(next_pos)
        for h in chunks:
            yield _finish_chunk(sf, h, kernel, limit)
        if fatal:
            _raise_scan_status(sf, next_pos, limit)
        if sf.at_eof:
            if status == SCAN_TORN_TAIL:   # a tail cut by a concurrent writer is no finding
                sf.check_unchanged(next_pos, min(12, sf.base + sf.filled - next_pos))
            return            # SCAN_END or a torn tail: Kafka stops here without an error
        if rel == 0:
            # one batch larger than the window: the walk's decision against the whole file
            step = next_batch(sf.view, 0, next_pos, sf.size, sf.size, limit)
            if stops_silently(step.status):
                return
            _raise_scan_status(sf, next_pos, limit)
            total = step.size
            if not need_bytes and not borrows_header(total, step.magic) and step.magic >= 2:
                yield _streamed_header(sf, next_pos, total, limit)
                sf.load(next_pos + total)
                continue
            sf.load(next_pos, total)
            chunks, next_rel, status = _scan_window(sf, kernel, 0, 1, limit)
            for h in chunks:
                yield _finish_chunk(sf, h, kernel, limit)
            if status in (SCAN_SIZE_TOO_SMALL, SCAN_V2_TOO_SHORT, SCAN_TOO_LARGE):
                _raise_scan_status(sf, sf.base + next_rel, limit)
            if next_rel == 0:    # the file shrank while we read it
                raise sf.changed("the file shrank")
            next_pos = sf.base + next_rel
        sf.load(next_pos)


# ------------------------------------------------------------------------------------------
# Arrow helpers


_CONST_STRINGS: dict[tuple[str, int], pa.Array] = {}
#: below this many rows a constant column is built, not looked up (a lookup keyed on a
#: segment's file name would never hit again)
_CONST_CACHE_ROWS = 4096


def _const_string(value: str | None, n: int) -> pa.Array:
    """``n`` copies of ``value`` as a string array of exactly ``n`` rows.

    Never a slice of a longer array: a caller that keeps the rows (compare keeps one partition's
    batch rows) would keep the whole longer array alive; a cached 65,536-row column per
    segment name cost compare ~2 MB per segment. Full-size chunks reuse a cached column."""
    if value is None:
        return pa.nulls(n, pa.string())
    key = (value, n)
    if n >= _CONST_CACHE_ROWS:
        cached = _CONST_STRINGS.get(key)
        if cached is not None:
            return cached
    raw = value.encode("utf-8")
    if len(raw) * n >= 1 << 31:   # beyond 32-bit offsets (Arrow says so; never for Kafka's names)
        return pa.repeat(pa.scalar(value, pa.string()), n)
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(len(raw))
    arr = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(raw * n)])
    if n >= _CONST_CACHE_ROWS:
        if len(_CONST_STRINGS) >= 16:
            _CONST_STRINGS.clear()
        _CONST_STRINGS[key] = arr
    return arr


def _const_int32(value: int | None, n: int) -> pa.Array:
    if value is None:
        return pa.nulls(n, pa.int32())
    return _np_arrow(np.full(n, value, dtype=np.int32), _INT32)


_INT8, _INT32, _INT64, _BOOL = pa.int8(), pa.int32(), pa.int64(), pa.bool_()
_TS_US = pa.timestamp("us", tz="UTC")
_NP_TYPES = {_INT8: np.int8, _INT32: np.int32, _INT64: np.int64, _TS_US: np.int64}


def _np_arrow(values: np.ndarray, typ: pa.DataType) -> pa.Array:
    """A numpy column as an Arrow array without nulls, wrapped (``pa.array`` costs several
    times as much per call, which a partition of one-batch segments pays per segment)."""
    if typ == _BOOL:   # no faster way than pa.array's own
        return pa.array(values, _BOOL)
    values = np.ascontiguousarray(values, dtype=_NP_TYPES[typ])
    return pa.Array.from_buffers(typ, int(values.shape[0]), [None, pa.py_buffer(values)])


_COMPRESSION_DICT = pa.array(_COMPRESSION_NAMES, pa.string())
_TS_TYPE_NAMES = ["NoTimestampType", "CreateTime", "LogAppendTime"]
_TS_TYPE_DICT = pa.array(_TS_TYPE_NAMES, pa.string())


def _timestamp_type_column(ts_type: np.ndarray) -> pa.Array:
    """Timestamp type names per batch (-1/0/1): a cached constant column when all agree."""
    if ts_type.shape[0] and (ts_type == ts_type[0]).all():
        return _const_string(_TS_TYPE_NAMES[int(ts_type[0]) + 1], int(ts_type.shape[0]))
    return _TS_TYPE_DICT.take(pa.array(ts_type.astype(np.int32) + 1))


def _batch_table(h: _Headers, seg: _Segment) -> pa.RecordBatch:
    n = len(h)
    codec = (h.attributes & COMPRESSION_CODEC_MASK).astype(np.int32)
    return pa.RecordBatch.from_arrays([
        _const_string(seg.topic, n),
        _const_int32(seg.partition, n),
        _const_int32(seg.broker, n),
        _const_string(_text(os.path.basename(seg.path)), n),
        _np_arrow(h.position, _INT64),
        _np_arrow(h.batch_length + 12, _INT32),
        _np_arrow(h.base_offset, _INT64),
        _np_arrow(_done(h.last_offset), _INT64),
        _np_arrow(h.batch_length, _INT32),
        _np_arrow(h.partition_leader_epoch, _INT32),
        _np_arrow(h.magic, _INT8),
        _np_arrow(h.crc, _INT64),
        pa.array(h.crc_valid, pa.bool_()),
        pa.array(h.attributes, pa.int16()),
        _compression_column(codec),
        _timestamp_type_column(_done(h.timestamp_type)),
        pa.array(((h.attributes & TRANSACTIONAL_FLAG_MASK) != 0) & (h.magic >= 2), pa.bool_()),
        pa.array(((h.attributes & CONTROL_FLAG_MASK) != 0) & (h.magic >= 2), pa.bool_()),
        pa.array(((h.attributes & DELETE_HORIZON_FLAG_MASK) != 0) & (h.magic >= 2), pa.bool_()),
        _np_arrow(h.last_offset_delta, _INT32),
        _np_arrow(h.base_timestamp, _INT64),
        _np_arrow(h.max_timestamp, _INT64),
        _np_arrow(h.producer_id, _INT64),
        pa.array(h.producer_epoch, pa.int16()),
        _np_arrow(h.base_sequence, _INT32),
        _np_arrow(h.records_count, _INT32),
    ], schema=BATCH_SCHEMA)


# ------------------------------------------------------------------------------------------
# public API: batches


def iter_batch_batches(path: str | os.PathLike[str] | bytes, *, topic: str | None = None,
                       partition: int | None = None, broker: int | None = None,
                       engine: str = "auto", max_rows: int = _SCAN_CHUNK,
                       max_batch_bytes: int | None = None,
                       max_uncompressed_bytes: int | None = None,
                       located: bool = False) -> Iterator[pa.RecordBatch]:
    """One ``BATCH_SCHEMA`` row per batch (legacy: per outer message), in bounded chunks.

    A batch above ``max_batch_bytes`` on disk raises ``BatchTooLargeError``; a batch larger
    than the read window is checked (CRC-32C) over streamed reads, never held whole.
    ``located``: ``path`` is one segment file as discovery
    (:func:`segtools.files.sources.resolve`) listed it, and ``topic``, ``partition``, ``broker``
    are its identity; it is read without being discovered again."""
    limit = resolve_max_batch_bytes(max_batch_bytes, max_uncompressed_bytes=max_uncompressed_bytes)
    kernel = _pick_engine(engine)
    rows = max(1, int(max_rows))
    for seg in _located(path, topic, partition, broker, located):
        # no record bytes are kept: a window that stays in the CPU's cache between the copy
        # and the CRC beats a large one (issue 25: 16 MiB windows ran at half the copy+CRC
        # floor); the windows' header chunks are joined up to max_rows rows per table
        with _open_segment(seg, _HEADER_WINDOW) as mf:
            try:
                held: list[_Headers] = []
                count = 0
                headers = _iter_headers(mf, kernel, rows, limit, need_bytes=False)
                while True:
                    try:
                        h = next(headers)
                    except StopIteration:
                        break
                    except Exception:
                        if held:   # what came before the damage comes out first
                            yield _batch_table(_join_headers(held), seg)
                        raise
                    if held and count + len(h) > rows:
                        yield _batch_table(_join_headers(held), seg)
                        held, count = [], 0
                    held.append(h)
                    count += len(h)
                if held:
                    yield _batch_table(_join_headers(held), seg)
            except FormatError:
                mf.check_unchanged()
                raise
            except OSError as exc:
                raise os_input_error(seg.path, exc) from None


#: read window of the header scan without record bytes (iter_batch_batches)
_HEADER_WINDOW = 1 << 20


def _join_headers(chunks: list[_Headers]) -> _Headers:
    """Finished header chunks as one (the columns _batch_table reads; no legacy objects)."""
    if len(chunks) == 1:
        return chunks[0]
    cols: dict[str, Any] = {name: np.concatenate([getattr(c, name) for c in chunks]) for name in _HEADER_DTYPES}
    h = _Headers(**cols)
    h.crc_valid = np.concatenate([_done(c.crc_valid) for c in chunks])
    h.last_offset = np.concatenate([_done(c.last_offset) for c in chunks])
    h.timestamp_type = np.concatenate([_done(c.timestamp_type) for c in chunks])
    return h


def read_batch_table(path: str | os.PathLike[str], **kw: Any) -> pa.Table:
    """All batches under ``path`` as one table (concatenation of :func:`iter_batch_batches`)."""
    return pa.Table.from_batches(list(iter_batch_batches(path, **kw)), schema=BATCH_SCHEMA)


def scan_batches(path: str | os.PathLike[str], **kw: Any) -> pa.Table:
    """Deprecated name of :func:`read_batch_table`: it returns a whole table, and ``scan_*``
    means lazy to Polars users (docs/CONVENTIONS.md, public API names)."""
    import warnings

    warnings.warn("segtools.scan_batches is now segtools.read_batch_table (it returns a whole table)",
                  DeprecationWarning, stacklevel=2)
    return read_batch_table(path, **kw)


# ------------------------------------------------------------------------------------------
# record decoding


@dataclass
class _RowChunk:
    """Decoded rows of a group of batches; ``batch`` indexes the scan chunk's headers."""

    offset: np.ndarray
    timestamp_ms: np.ndarray
    sequence: np.ndarray
    batch: np.ndarray
    key: pa.Array
    value: pa.Array
    headers: pa.Array
    record_crc_ok: np.ndarray | None = None   # legacy inner-message CRCs


def _arena(specs: list[tuple[int, Any]]) -> list[np.ndarray]:
    """Uninitialised arrays carved from one pool allocation (one allocation per chunk instead
    of seventeen: each large one cost ~0.1 ms); 64-byte aligned like Arrow's own buffers.

    Arrow's default memory pool reuses the same memory chunk after chunk, where glibc's heap
    kept growing with the file (its mmap threshold rises after the first large free). Measured
    on a 64 MB segment: peak RSS 373 MB with mimalloc (flat at 256 MB), 309 MB with jemalloc
    but half the speed, so the default pool stays."""
    layout = []
    size = 0
    for n, dtype in specs:
        dt = np.dtype(dtype)
        layout.append((size, n, dt))
        size += -(-(max(n, 1) * dt.itemsize) // 64) * 64
    buf = pa.allocate_buffer(max(size, 64))
    return [np.frombuffer(buf, dtype=dt, count=n, offset=off) for off, n, dt in layout]


def _binary_from_buffers(n: int, offsets: np.ndarray, valid: np.ndarray, data: np.ndarray,
                         typ: pa.DataType = pa.binary()) -> pa.Array:  # noqa: B008 - an immutable type
    valid_bool = valid[:n].astype(bool)
    null_count = int(n - np.count_nonzero(valid_bool))
    bitmap = pa.py_buffer(np.packbits(valid_bool, bitorder="little")) if null_count else None
    return pa.Array.from_buffers(typ, n, [bitmap, pa.py_buffer(offsets[:n + 1]),
                                          pa.py_buffer(data)], null_count=null_count)


#: one range of batch indexes [s, e) to decode: plain (addresses None: the bytes are in the
#: window) or decompressed (per batch the address and length of its records, kept alive by
#: the last item)
_Part = tuple[int, int, Any, Any, Any]


def _decode_kernel(kernel: Any, mf: _SegmentFile, h: _Headers, parts: list[_Part]) -> _RowChunk:
    """Run the numba kernel over the batches of ``parts`` (ranges of indexes into ``h``, in
    file order)."""
    idx = (np.arange(parts[0][0], parts[0][1], dtype=np.int64) if len(parts) == 1 else
           np.concatenate([np.arange(a, b, dtype=np.int64) for a, b, *_ in parts]))
    nb = len(idx)
    # a run of batches is a contiguous range: slices, not gathers
    contiguous = nb > 0 and int(idx[-1]) - int(idx[0]) + 1 == nb
    sel: Any = slice(int(idx[0]), int(idx[-1]) + 1) if contiguous else idx
    src = np.zeros(nb, dtype=np.int8)
    start = h.position[sel] - h.base + RECORD_BATCH_OVERHEAD
    end = h.position[sel] - h.base + 12 + h.batch_length[sel]
    dec_addr = np.zeros(nb, dtype=np.int64)
    j = 0
    for a, b, addr, length, _keep in parts:
        if addr is not None:
            # the kernel reads each payload where the codec left it (the part keeps it alive
            # through the call): no gathering copy
            src[j:j + b - a] = 1
            start[j:j + b - a] = 0
            end[j:j + b - a] = length
            dec_addr[j:j + b - a] = addr
        j += b - a
    region = end - start
    counts = h.records_count[sel]
    # each record takes at least 7 bytes, so this bounds rows however hostile the count is
    cap_rows = int(np.minimum(np.maximum(counts, 0), region // 7).sum())
    total = int(region.sum())
    cap_headers = total // 2
    (o_offset, o_ts, o_seq, o_batch, k_off, v_off, h_off, k_valid, v_valid, h_valid,
     hk_off, hv_off, hv_valid, k_data, v_data, hk_data, hv_data) = _arena([
        (cap_rows, np.int64), (cap_rows, np.int64), (cap_rows, np.int32), (cap_rows, np.int32),
        (cap_rows + 1, np.int32), (cap_rows + 1, np.int32), (cap_rows + 1, np.int32),
        (cap_rows, np.uint8), (cap_rows, np.uint8), (cap_rows, np.uint8),
        (cap_headers + 1, np.int32), (cap_headers + 1, np.int32), (cap_headers, np.uint8),
        (total, np.uint8), (total, np.uint8), (total, np.uint8), (total, np.uint8)])
    st = np.zeros(ST_SIZE, np.int64)
    err, bad = kernel.decode_records(
        mf.array, dec_addr, src, start, end, h.base_offset[sel], h.base_timestamp[sel],
        h.max_timestamp[sel], (h.attributes[sel] & TIMESTAMP_TYPE_MASK) != 0,
        h.base_sequence[sel], counts,
        o_offset, o_ts, o_seq, o_batch, k_off, k_valid, k_data, v_off, v_valid, v_data,
        h_off, h_valid, hk_off, hk_data, hv_off, hv_valid, hv_data, st)
    if err:
        i = int(idx[int(bad)])
        fault = RecordFault(int(err), int(st[9]), int(st[6]), int(st[10]), int(st[7]),
                            int(st[11]), int(st[12]))
        raise record_error(fault, path=mf.path, position=int(h.position[i]),
                           base_offset=int(h.base_offset[i]),
                           compression=_compression_name(h, i) if src[int(bad)] else None)
    n, nh = int(st[0]), int(st[1])
    key = _binary_from_buffers(n, k_off, k_valid, k_data[:int(st[2])])
    value = _binary_from_buffers(n, v_off, v_valid, v_data[:int(st[3])])
    hk_valid = np.ones(nh, np.uint8)
    hkeys = _binary_from_buffers(nh, hk_off, hk_valid, hk_data[:int(st[4])], pa.string())
    if st[8]:  # a header key that is not UTF-8: decode like Java (replacement characters)
        hkeys = pa.array([b.decode("utf-8", "replace") for b in
                          hkeys.cast(pa.binary()).to_pylist()], pa.string())
    hvals = _binary_from_buffers(nh, hv_off, hv_valid, hv_data[:int(st[5])])
    structs = pa.StructArray.from_arrays([hkeys, hvals], fields=list(HEADER_TYPE.value_type))
    hv_bool = h_valid[:n].astype(bool)
    h_nulls = int(n - np.count_nonzero(hv_bool))
    headers = pa.Array.from_buffers(
        HEADER_TYPE, n,
        [pa.py_buffer(np.packbits(hv_bool, bitorder="little")) if h_nulls else None,
         pa.py_buffer(h_off[:n + 1])], null_count=h_nulls, children=[structs])
    if contiguous:
        batch = o_batch[:n] + np.int32(idx[0])
    else:
        batch = idx[o_batch[:n]].astype(np.int32) if n else np.zeros(0, np.int32)
    return _RowChunk(o_offset[:n], o_ts[:n], o_seq[:n], batch, key, value, headers)


def _slice_rows(rc: _RowChunk, start: int, stop: int) -> _RowChunk:
    """Rows [start, stop) of a row chunk (views, no copies)."""
    return _RowChunk(rc.offset[start:stop], rc.timestamp_ms[start:stop], rc.sequence[start:stop],
                     rc.batch[start:stop], rc.key.slice(start, stop - start),
                     rc.value.slice(start, stop - start), rc.headers.slice(start, stop - start),
                     None if rc.record_crc_ok is None else rc.record_crc_ok[start:stop])


def _rows_to_chunk(rows: list[tuple[Any, ...]], batch_of_row: list[int], crc_ok: list[bool] | None = None) -> _RowChunk:
    offsets = np.fromiter((r[0] for r in rows), np.int64, len(rows))
    ts = np.fromiter((r[1] for r in rows), np.int64, len(rows))
    seq = np.fromiter((r[2] for r in rows), np.int32, len(rows))
    keys = pa.array([r[3] for r in rows], pa.binary())
    values = pa.array([r[4] for r in rows], pa.binary())
    headers = pa.array([None if r[5] is None else [{"key": k, "value": v} for k, v in r[5]]
                        for r in rows], HEADER_TYPE)
    return _RowChunk(offsets, ts, seq, np.asarray(batch_of_row, np.int32), keys, values, headers,
                     None if crc_ok is None else np.asarray(crc_ok, bool))


def _compression_name(h: _Headers, i: int) -> str:
    codec = int(h.attributes[i]) & COMPRESSION_CODEC_MASK
    return COMPRESSION_NAMES.get(codec, f"unknown({codec})")


def _decode_python(mf: _SegmentFile, h: _Headers, idx: np.ndarray, payloads: dict[int, bytes]) -> _RowChunk:
    from segtools.records import v2_decoder

    rows: list[tuple[Any, ...]] = []
    batch_of_row: list[int] = []
    for i in idx.tolist():
        data = payloads.get(i)
        if data is None:
            rel = int(h.position[i]) - h.base
            data = bytes(mf.view[rel + RECORD_BATCH_OVERHEAD:rel + 12 + int(h.batch_length[i])])
        try:
            got = v2_decoder.decode_batch_records(
                data, int(h.base_offset[i]), int(h.base_timestamp[i]), int(h.max_timestamp[i]),
                bool(h.attributes[i] & TIMESTAMP_TYPE_MASK), int(h.base_sequence[i]),
                int(h.records_count[i]))
        except RecordFault as fault:
            raise record_error(fault, path=mf.path, position=int(h.position[i]),
                               base_offset=int(h.base_offset[i]),
                               compression=_compression_name(h, i) if i in payloads else None
                               ) from None
        rows.extend(got)
        batch_of_row.extend([i] * len(got))
    return _rows_to_chunk(rows, batch_of_row)


def _decode_legacy(mf: _SegmentFile, h: _Headers, first: int, last: int,
                   max_rows: int) -> Iterator[_RowChunk]:
    """Rows of legacy entries ``first..last`` (inner messages of compressed wrappers) via the
    object reader, gathered into chunks of about ``max_rows`` rows."""
    rows: list[tuple[Any, ...]] = []
    batch_of_row: list[int] = []
    crc_ok: list[bool] = []
    for i in range(first, last):
        batch = h.legacy[i]  # type: ignore[index]
        try:
            for r in batch.records():
                rows.append((r.offset, r.timestamp, -1, r.key, r.value, r.headers or None))
                crc_ok.append(r.crc_valid is not False)
                batch_of_row.append(i)
        except FormatError as exc:
            if rows:
                yield _rows_to_chunk(rows, batch_of_row, crc_ok)
            raise exc.located(path=mf.path, position=int(h.position[i]),
                              base_offset=int(h.base_offset[i])) from None
        if len(rows) >= max_rows:
            yield _rows_to_chunk(rows, batch_of_row, crc_ok)
            rows, batch_of_row, crc_ok = [], [], []
    if rows:
        yield _rows_to_chunk(rows, batch_of_row, crc_ok)


def _decompress(mf: _SegmentFile, h: _Headers, i: int, max_uncompressed: int) -> bytes:
    return _decompress_task(*_compressed_payload(mf, h, i), max_uncompressed)


def _compressed_payload(mf: _SegmentFile, h: _Headers, i: int) -> tuple[memoryview, int, str, int, int, int]:
    """The compressed records section of batch ``i``, with what errors need.

    A view into the read window, not a copy (the copy cost as much CPU as lz4 itself): the
    window of ``h`` stays current until every batch of ``h`` is consumed (the next window is
    read into the other buffer), and a task still running after the reader is abandoned only
    reads bytes its memoryview keeps alive, whose result nobody takes."""
    pos = int(h.position[i])
    rel = pos - h.base
    data = mf.view[rel + RECORD_BATCH_OVERHEAD:rel + 12 + int(h.batch_length[i])]
    return (data, int(h.attributes[i]) & COMPRESSION_CODEC_MASK, mf.path, pos, int(h.base_offset[i]),
            int(h.records_count[i]))


def _decompress_task(data: bytes | memoryview, codec: int, path: str, pos: int, base_offset: int,
                     count: int, max_uncompressed: int) -> bytes:
    check_v2_batch(path=path, position=pos, base_offset=base_offset,
                   size=RECORD_BATCH_OVERHEAD + len(data), count=count, codec=codec,
                   limit=max_uncompressed)
    try:
        return _codecs.decompress(codec, data, magic=2, max_size=max_uncompressed)
    except FormatError as exc:  # located where the compressed records start, as batches.py
        raise exc.located(path=path, position=pos + RECORD_BATCH_OVERHEAD,
                          base_offset=base_offset) from None
    except SegtoolsError:
        raise
    except Exception as exc:  # noqa: BLE001 - a codec library's own error on hostile bytes
        raise CorruptBatchError(f"cannot decompress {_COMPRESSION_NAMES[codec]} records: {exc}",
                                path=path, position=pos + RECORD_BATCH_OVERHEAD,
                                base_offset=base_offset,
                                field="records") from exc


#: Compressed batches are decompressed ahead of the decoder on worker threads, in groups of
#: ``_GROUP`` batches (one hand-off per batch cost more than it saved), at most
#: ``_GROUPS_AHEAD`` groups in flight. The codecs release the GIL, so with a spare core
#: decompression overlaps record decoding; the bound keeps a run of bombs to at most
#: ``_GROUP * _GROUPS_AHEAD`` payloads of at most ``max_uncompressed`` bytes each.
_GROUP = 8
_GROUPS_AHEAD = 4
_POOL: Any = None
_POOL_PID = 0


def _decompress_pool() -> Any:
    """The worker pool, or None on a single core. A pool inherited through fork() has no
    threads in the child (Spark forks its Python workers), so each process makes its own."""
    global _POOL, _POOL_PID
    workers = min(4, os.cpu_count() or 1)
    if workers < 2:
        return None
    if _POOL is None or _POOL_PID != os.getpid():
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="segtools-decompress")
        _POOL_PID = os.getpid()
    return _POOL


def _decompress_group(tasks: list[tuple[memoryview, int, str, int, int, int]],
                      max_uncompressed: int) -> list[bytes | SegtoolsError]:
    """Payloads, or the error in place of one, so the caller raises it in batch order (after
    yielding the good batches before it) and later batches are not decompressed in vain."""
    out: list[bytes | SegtoolsError] = []
    for task in tasks:
        try:
            out.append(_decompress_task(*task, max_uncompressed))
        except SegtoolsError as exc:
            # without its traceback: it would tie this frame (and ``out``) into a cycle that
            # keeps every payload alive until the cyclic GC runs
            out.append(exc.with_traceback(None))
            break
    return out


def _decompressed_run(mf: _SegmentFile, h: _Headers, s: int, e: int,
                      max_uncompressed: int) -> Iterator[tuple[int, bytes]]:
    """``(i, payload)`` for the compressed batches ``s..e-1``, in order."""
    pool = _decompress_pool() if e - s > _GROUP else None
    if pool is None:
        for i in range(s, e):
            yield i, _decompress(mf, h, i, max_uncompressed)
        return
    from collections import deque

    pending: deque[tuple[int, list[Any], Any]] = deque()
    nxt = s
    try:
        while nxt < e or pending:
            while nxt < e and len(pending) < _GROUPS_AHEAD:
                stop = min(e, nxt + _GROUP)
                tasks = [_compressed_payload(mf, h, i) for i in range(nxt, stop)]
                pending.append((nxt, tasks, pool.submit(_decompress_group, tasks,
                                                        max_uncompressed)))
                nxt = stop
            first, tasks, future = pending.popleft()
            # a group no worker has started yet (the cores are busy elsewhere) is decompressed
            # here rather than waited for
            results = (_decompress_group(tasks, max_uncompressed)
                       if not future.done() and future.cancel() else future.result())
            for k, payload in enumerate(results):
                if isinstance(payload, SegtoolsError):
                    raise payload
                yield first + k, payload
    finally:  # abandoned or failed: drop what is queued, let running tasks finish
        for _, _, future in pending:
            future.cancel()


_TS_LIMIT = np.iinfo(np.int64).max // 1000


def _timestamps_us(ts_ms: np.ndarray) -> pa.Array:
    """ms -> Arrow timestamp[us, UTC]; values that overflow in microseconds become null."""
    ok = (ts_ms <= _TS_LIMIT) & (ts_ms >= -_TS_LIMIT)
    if ok.all():
        return _np_arrow(ts_ms * 1000, _TS_US)
    us = np.where(ok, ts_ms, 0) * 1000
    return pa.array(us, _TS_US, mask=~ok)


def _per_row(values: np.ndarray, b: np.ndarray, lo: int, hi: int, dtype: Any) -> np.ndarray:
    """values[b] as ``dtype``; a broadcast fill when every batch in [lo, hi] agrees (common:
    one producer, one epoch), which is much cheaper than a gather."""
    window = values[lo:hi + 1]
    if window.shape[0] and (window == window[0]).all():
        return np.full(b.shape[0], window[0], dtype=dtype)
    gathered: np.ndarray = values[b].astype(dtype, copy=False)
    return gathered


def _compression_column(codec: np.ndarray) -> pa.Array:
    """Codec names per row: a slice of a cached constant column when every row has the same
    codec (the usual case; a gather of strings per row cost 4% of read_records on lz4)."""
    if codec.shape[0] and (codec == codec[0]).all():
        return _const_string(_COMPRESSION_NAMES[int(codec[0])], int(codec.shape[0]))
    return _COMPRESSION_DICT.take(pa.array(codec.astype(np.int32)))


def _record_batch(rc: _RowChunk, h: _Headers, seg: _Segment) -> pa.RecordBatch:
    n = int(rc.offset.shape[0])
    b = rc.batch
    lo, hi = (int(b.min()), int(b.max())) if n else (0, -1)
    attrs = _per_row(h.attributes, b, lo, hi, np.int16)
    magic = _per_row(h.magic, b, lo, hi, np.int8)
    v2 = magic >= 2
    crc_valid = _per_row(_done(h.crc_valid), b, lo, hi, bool)
    if rc.record_crc_ok is not None:
        crc_valid = crc_valid & rc.record_crc_ok
    return pa.RecordBatch.from_arrays([
        rc.key,
        rc.value,
        _const_string(seg.topic, n),
        _const_int32(seg.partition, n),
        _np_arrow(rc.offset, _INT64),
        _timestamps_us(rc.timestamp_ms),
        _np_arrow(_per_row(_done(h.timestamp_type), b, lo, hi, np.int32), _INT32),
        rc.headers,
        _np_arrow(_per_row(h.partition_leader_epoch, b, lo, hi, np.int32), _INT32),
        _np_arrow(h.base_offset[b], _INT64),
        _np_arrow(_per_row(h.producer_id, b, lo, hi, np.int64), _INT64),
        _np_arrow(_per_row(h.producer_epoch, b, lo, hi, np.int32), _INT32),
        _np_arrow(rc.sequence, _INT32),
        _np_arrow(((attrs & TRANSACTIONAL_FLAG_MASK) != 0) & v2, _BOOL),
        _np_arrow(((attrs & CONTROL_FLAG_MASK) != 0) & v2, _BOOL),
        _const_int32(seg.broker, n),
        _np_arrow(rc.timestamp_ms, _INT64),
        _np_arrow(magic, _INT8),
        _compression_column(attrs & COMPRESSION_CODEC_MASK),
        _np_arrow(crc_valid, _BOOL),
        _np_arrow(h.position[b], _INT64),
        _const_string(_text(os.path.basename(seg.path)), n),
    ], schema=RECORD_SCHEMA)


@dataclass(frozen=True)
class _Filters:
    include_control: bool
    start_offset: int | None
    end_offset: int | None
    start_timestamp: int | None
    end_timestamp: int | None

    @property
    def rows_filtered(self) -> bool:
        return any(v is not None for v in (self.start_offset, self.end_offset,
                                             self.start_timestamp, self.end_timestamp))

    def batch_skip(self, h: _Headers) -> np.ndarray:
        """Batches that cannot hold a wanted row: only decided on trustworthy (CRC-valid) v2
        headers, so a corrupt header never hides records."""
        skip = np.zeros(len(h), bool)
        if not self.include_control:
            skip |= (h.magic >= 2) & ((h.attributes & CONTROL_FLAG_MASK) != 0)
        trusted = _done(h.crc_valid) & (h.magic >= 2)
        last = h.base_offset + h.last_offset_delta
        if self.start_offset is not None:
            skip |= trusted & (last < self.start_offset)
        if self.end_offset is not None:
            skip |= trusted & (h.base_offset >= self.end_offset)
        return skip

    def row_mask(self, rc: _RowChunk) -> np.ndarray:
        mask = np.ones(rc.offset.shape[0], bool)
        if self.start_offset is not None:
            mask &= rc.offset >= self.start_offset
        if self.end_offset is not None:
            mask &= rc.offset < self.end_offset
        if self.start_timestamp is not None:
            mask &= rc.timestamp_ms >= self.start_timestamp
        if self.end_timestamp is not None:
            mask &= rc.timestamp_ms < self.end_timestamp
        return mask


def _ms(value: Any) -> int | None:
    """Timestamp filter value in epoch ms: int ms or datetime (naive = UTC; pandas Timestamp
    is a datetime)."""
    if value is None:
        return None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:      # naive means UTC, as everywhere in segtools output
            value = value.replace(tzinfo=datetime.UTC)
        return int(round(value.timestamp() * 1000))
    raise InputError(f"timestamp filter must be epoch milliseconds or a datetime, got {value!r}")


def _iter_row_chunks(mf: _SegmentFile, kernel: Any, filters: _Filters, max_rows: int,
                     max_uncompressed: int, start: int = 0,
                     seen: list[_Headers] | None = None) -> Iterator[tuple[_RowChunk, _Headers]]:
    """Decoded rows of one file in groups of at most ``max_rows`` rows / ``_CHUNK_BYTES``.

    Runs of uncompressed v2 batches are cut with cumulative sums (no Python work per batch);
    compressed batches are decompressed one by one; legacy entries go one by one through the
    object reader.
    """
    for h in _iter_headers(mf, kernel, limit=max_uncompressed, start=start):
        if seen is not None:   # every batch's header, also of batches without rows
            seen.append(h)
        n = len(h)
        region = h.batch_length + 12 - RECORD_BATCH_OVERHEAD
        # each record takes at least 7 bytes: a hostile recordsCount cannot inflate buffers
        cap = np.minimum(np.maximum(h.records_count, 0), region // 7)
        codec = h.attributes & COMPRESSION_CODEC_MASK
        # DefaultRecordBatch.iterator(): a v2 batch of count 0 yields nothing, whatever its
        # record bytes hold (they are neither decompressed nor checked for leftovers)
        short = h.batch_length < V2_MIN_BATCH_LENGTH
        empty = (h.magic >= 2) & (h.records_count == 0) & ~short
        # shorter than the v2 header or a negative count: check_v2_batch raises the object
        # reader's error (any magic >= 2 is decoded as v2, as Kafka does)
        odd = (h.magic >= 2) & (short | (h.records_count < 0))
        kind = np.where(filters.batch_skip(h) | empty, _SKIP,
                        np.where(h.magic < 2, _LEGACY, np.where(
                            odd, _ODD, np.where(codec == 0, _PLAIN, _PACKED))))
        plain = kind == _PLAIN
        cum_cap = np.concatenate([[0], np.cumsum(np.where(plain, cap, 0))])
        cum_bytes = np.concatenate([[0], np.cumsum(np.where(plain, region, 0))])
        cuts = np.flatnonzero(np.diff(kind)) + 1
        run_starts = np.concatenate([[0], cuts]).tolist()
        run_ends = np.concatenate([cuts, [n]]).tolist()

        parts: list[_Part] = []   # [start, end) ranges of batch indexes, see _Part
        payloads: dict[int, bytes] = {}   # the python engine's decompressed records
        rows = 0
        nbytes = 0

        # flush() is called inside the loops below and must see the current parts/h/payloads
        def flush() -> _RowChunk:
            if kernel is not None:
                return _decode_kernel(kernel, mf, h, parts)  # noqa: B023
            idx = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b, *_ in parts])  # noqa: B023
            return _decode_python(mf, h, idx, payloads)  # noqa: B023

        for s, e in zip(run_starts, run_ends):
            k = kind[s]
            if k == _SKIP:
                continue
            if k == _ODD:
                if parts:
                    yield flush(), h
                check_v2_batch(path=mf.path, position=int(h.position[s]),
                               base_offset=int(h.base_offset[s]),
                               size=int(h.batch_length[s]) + LOG_OVERHEAD,
                               count=int(h.records_count[s]), codec=int(codec[s]),
                               limit=max_uncompressed)
            if k == _LEGACY:
                if parts:
                    yield flush(), h
                    parts, payloads, rows, nbytes = [], {}, 0, 0
                for rc in _decode_legacy(mf, h, s, e, max_rows):
                    yield rc, h
                continue
            if k == _PLAIN:
                while s < e:
                    j_rows = int(np.searchsorted(cum_cap, cum_cap[s] + (max_rows - rows), "right")) - 1
                    j_bytes = int(np.searchsorted(cum_bytes, cum_bytes[s] + (_CHUNK_BYTES - nbytes),
                                                  "right")) - 1
                    j = min(j_rows, j_bytes, e)
                    if j <= s:
                        if parts:              # no room left: emit, then retry with a fresh chunk
                            yield flush(), h
                            parts, payloads, rows, nbytes = [], {}, 0, 0
                            continue
                        j = s + 1              # one batch larger than a chunk: never split
                    parts.append((s, j, None, None, None))
                    rows += int(cum_cap[j] - cum_cap[s])
                    nbytes += int(cum_bytes[j] - cum_bytes[s])
                    s = j
                continue
            if kernel is not None:   # compressed, numba engine: many batches per call
                packed = _packed_run(kernel, mf, h, s, e, max_uncompressed)
                while True:
                    try:
                        item = next(packed)
                    except StopIteration:
                        break
                    except FormatError:
                        if parts:  # the good batches before the broken one come out first
                            yield flush(), h
                        raise
                    if len(item) == 2:   # one payload from the library: scalar bookkeeping
                        i, payload = item
                        c1 = min(max(int(h.records_count[i]), 0), len(payload) // 7)
                        if parts and (rows + c1 > max_rows or nbytes + len(payload) > _CHUNK_BYTES):
                            yield flush(), h
                            parts, payloads, rows, nbytes = [], {}, 0, 0
                        last = parts[-1] if parts else None
                        if last is not None and last[1] == i and isinstance(last[2], list):
                            parts[-1] = (last[0], i + 1, last[2], last[3], last[4])
                        else:
                            last = (i, i + 1, [], [], [])
                            parts.append(last)
                        last[2].append(pa.py_buffer(payload).address)
                        last[3].append(len(payload))
                        last[4].append(payload)
                        rows += c1
                        nbytes += len(payload)
                        continue
                    a, b, addr, length, keep = item
                    c = np.minimum(np.maximum(h.records_count[a:b], 0), length // 7)
                    cum_c = np.concatenate([[0], np.cumsum(c)])
                    cum_b = np.concatenate([[0], np.cumsum(length)])
                    q = 0
                    while q < b - a:
                        j_rows = int(np.searchsorted(cum_c, cum_c[q] + (max_rows - rows), "right")) - 1
                        j_bytes = int(np.searchsorted(cum_b, cum_b[q] + (_CHUNK_BYTES - nbytes),
                                                      "right")) - 1
                        j = min(j_rows, j_bytes, b - a)
                        if j <= q:
                            if parts:
                                yield flush(), h
                                parts, payloads, rows, nbytes = [], {}, 0, 0
                                continue
                            j = q + 1
                        parts.append((a + q, a + j, addr[q:j], length[q:j], keep))
                        rows += int(cum_c[j] - cum_c[q])
                        nbytes += int(cum_b[j] - cum_b[q])
                        q = j
                continue
            decompressed = _decompressed_run(mf, h, s, e, max_uncompressed)   # compressed
            while True:
                try:
                    i, payload = next(decompressed)
                except StopIteration:
                    break
                except FormatError:
                    if parts:  # the good batches before the broken one come out first
                        yield flush(), h
                    raise
                c1 = min(max(int(h.records_count[i]), 0), len(payload) // 7)
                if parts and (rows + c1 > max_rows or nbytes + len(payload) > _CHUNK_BYTES):
                    yield flush(), h
                    parts, payloads, rows, nbytes = [], {}, 0, 0
                if parts and parts[-1][1] == i:   # ranges of batch indexes, not an array a batch
                    parts[-1] = (parts[-1][0], i + 1, None, None, None)
                else:
                    parts.append((i, i + 1, None, None, None))
                payloads[i] = payload
                rows += c1
                nbytes += len(payload)
        if parts:
            yield flush(), h


#: compressed input per call of the lz4/snappy kernel; its arena holds _PACK_RATIO times that
#: plus room for the largest LZ4 block (a batch that does not fit goes into the next arena)
_PACK_INPUT = 2 << 20
_PACK_RATIO = 4
_PACK_SLACK = 4 << 20


_JIT_CODECS: Any = None
_JIT_CODECS_TRIED = False


def _jit_codecs() -> Any:
    """segtools.records.jit_codecs once it has compiled (or loaded from cache) and decoded a
    tiny xerial snappy stream right; None otherwise (a broken numba install means the codec
    libraries, as for every codec before, not a crash)."""
    global _JIT_CODECS, _JIT_CODECS_TRIED
    if not _JIT_CODECS_TRIED:
        _JIT_CODECS_TRIED = True
        try:
            from segtools.records import jit_codecs as jc

            stream = np.frombuffer(_codecs.XERIAL_HEADER + b"\0\0\0\x03\x01\x00a", np.uint8)
            arena = np.zeros(64, np.uint8)
            starts, ends = np.zeros(1, np.int64), np.full(1, stream.shape[0], np.int64)
            out_start, out_len = np.zeros(1, np.int64), np.zeros(1, np.int64)
            done, status = jc.decompress_many(stream, starts, ends,
                                              np.full(1, jc.CODEC_SNAPPY, np.int8), 64, arena,
                                              out_start, out_len)
            if (done, status, bytes(arena[:int(out_len[0])])) == (1, jc.DONE, b"a"):
                _JIT_CODECS = jc
        except Exception as exc:  # noqa: BLE001 - numba/llvmlite broken in some way
            warnings.warn(f"segtools: numba codec kernel unusable ({type(exc).__name__}: {exc}); "
                          "decompressing batch by batch", RuntimeWarning, stacklevel=2)
    return _JIT_CODECS


def _packed_run(kernel: Any, mf: _SegmentFile, h: _Headers, s: int, e: int,
                max_uncompressed: int) -> Iterator[_Part | tuple[int, bytes]]:
    """The compressed batches ``s..e-1`` decompressed, in order: lz4 and snappy payloads many
    at a time into an arena (:mod:`segtools.records.jit_codecs`), as a part for
    :func:`_decode_kernel`; other codecs, and any batch that kernel refuses, one by one through
    :mod:`segtools.primitives.codecs` (:func:`_decompressed_run`: ``(index, payload)``), which
    raises the error if the batch is broken."""
    jc = _jit_codecs()
    if jc is None:
        yield from _decompressed_run(mf, h, s, e, max_uncompressed)
        return
    codec = (h.attributes[s:e] & COMPRESSION_CODEC_MASK).astype(np.int8)
    # check_v2_batch's count bound, refused here so the library path raises it
    fits = h.records_count[s:e] <= max_uncompressed // 7
    ok = ((codec == jc.CODEC_LZ4) | (codec == jc.CODEC_SNAPPY)) & fits
    cuts = np.flatnonzero(np.diff(ok.astype(np.int8))) + 1
    bounds = [0, *cuts.tolist(), e - s]
    begin = h.position[s:e] - h.base + RECORD_BATCH_OVERHEAD
    finish = h.position[s:e] - h.base + 12 + h.batch_length[s:e]
    cum_in = np.concatenate([[0], np.cumsum(finish - begin)])
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        if not ok[lo]:
            yield from _decompressed_run(mf, h, s + lo, s + hi, max_uncompressed)
            continue
        p = lo
        while p < hi:
            q = max(p + 1, min(hi, int(np.searchsorted(cum_in, cum_in[p] + _PACK_INPUT, "right")) - 1))
            arena_buf = pa.allocate_buffer(_PACK_RATIO * int(cum_in[q] - cum_in[p]) + _PACK_SLACK)
            arena = np.frombuffer(arena_buf, dtype=np.uint8)
            out_start = np.empty(q - p, np.int64)
            out_len = np.empty(q - p, np.int64)
            done, status = jc.decompress_many(mf.array, begin[p:q], finish[p:q], codec[p:q],
                                              max_uncompressed, arena, out_start, out_len)
            done = int(done)
            if done:
                yield (s + p, s + p + done, out_start[:done] + arena_buf.address,
                       out_len[:done], arena_buf)
            p += done
            if status == jc.DONE or (status == jc.FULL and done):
                continue
            # refused (or alone too large for an arena): the library decides
            yield from _decompressed_run(mf, h, s + p, s + p + 1, max_uncompressed)
            p += 1


_SKIP, _PLAIN, _PACKED, _LEGACY, _ODD = 0, 1, 2, 3, 4


def iter_record_batches(path: str | os.PathLike[str] | bytes, *, topic: str | None = None,
                        partition: int | None = None, broker: int | None = None,
                        max_rows: int = 65536, include_control: bool = True,
                        start_offset: int | None = None, end_offset: int | None = None,
                        start_timestamp: Any = None, end_timestamp: Any = None,
                        engine: str = "auto", max_batch_bytes: int | None = None,
                        max_uncompressed_bytes: int | None = None,
                        start_position: int = 0, located: bool = False) -> Iterator[pa.RecordBatch]:
    """Records under ``path`` as ``RECORD_SCHEMA`` RecordBatches of at most ``max_rows`` rows
    (the rows of one larger Kafka batch come as several slices).

    Filters: ``start_offset`` inclusive, ``end_offset`` exclusive; ``start_timestamp``
    inclusive, ``end_timestamp`` exclusive (epoch ms or datetime, compared with the record
    timestamp as Kafka reports it); ``include_control=False`` drops control batches.
    ``max_batch_bytes`` (older name ``max_uncompressed_bytes``) bounds one batch on disk and
    decompressed (segtools.primitives.limits); above it ``BatchTooLargeError`` names the batch.
    ``start_position``: for one segment file, the byte position of a batch (``position`` of
    :func:`iter_batch_batches`) to start reading at; the bytes before it are not read.
    ``located``: as for :func:`iter_batch_batches` (one segment file, identity as given).
    """
    limit = resolve_max_batch_bytes(max_batch_bytes, max_uncompressed_bytes=max_uncompressed_bytes)
    kernel = _pick_engine(engine)
    filters = _Filters(include_control, start_offset, end_offset, _ms(start_timestamp),
                       _ms(end_timestamp))
    rows = max(1, int(max_rows))
    for seg in _located(path, topic, partition, broker, located):
        with _open_segment(seg) as mf:
            try:
                for rc, h in _iter_row_chunks(mf, kernel, filters, rows, limit, start_position):
                    n = int(rc.offset.shape[0])
                    # one Kafka batch can hold more rows than max_rows: its decoded rows are
                    # turned into Arrow max_rows at a time, so only the decoded columns and
                    # one output batch are held at once
                    for start in range(0, n, rows):
                        part = rc if n <= rows else _slice_rows(rc, start, min(n, start + rows))
                        rb = _record_batch(part, h, seg)
                        if filters.rows_filtered:
                            rb = rb.filter(pa.array(filters.row_mask(part)))
                            if not rb.num_rows:
                                continue
                        yield rb
            except FormatError:
                mf.check_unchanged()
                raise
            except OSError as exc:
                raise os_input_error(seg.path, exc) from None


def read_records(path: str | os.PathLike[str] | bytes, **kw: Any) -> pa.Table:
    """All records under ``path`` as one table (concatenation of :func:`iter_record_batches`)."""
    return pa.Table.from_batches(list(iter_record_batches(path, **kw)), schema=RECORD_SCHEMA)


# ------------------------------------------------------------------------------------------
# many small segments


#: segments up to this size are read with their neighbours as one group
SMALL_SEGMENT_BYTES = 1 << 20
_GROUP_BYTES = 8 << 20
_GROUP_FILES = 256


class _Unusual(Exception):
    """Internal: a group of small segments holds something the per-file reader must judge."""


class _Concatenated:
    """The :class:`_SegmentFile` interface over small segment files read back to back into one
    buffer, all of it loaded. Whatever would make the per-file reader look again (a bad CRC,
    a torn tail, a read past the end) is :class:`_Unusual`: the group is then read file by
    file, so every error and finding is the per-file reader's own."""

    def __init__(self, data: np.ndarray, path: str) -> None:
        self.path = path
        self.name = os.path.basename(path)
        data.flags.writeable = False
        self.array = data
        self.view = memoryview(cast(bytearray, data))
        self.base = 0
        self.filled = self.size = int(data.shape[0])
        self.at_eof = True

    def load(self, pos: int, need: int = 0) -> None:
        if pos != 0:
            raise _Unusual

    def prefetch(self, pos: int) -> None:
        pass

    def changed(self, why: str, pos: int | None = None) -> Exception:
        return _Unusual()

    def check_unchanged(self, pos: int | None = None, n: int = 0) -> None:
        raise _Unusual

    def crc_step_read(self, pos: int, n: int) -> np.ndarray:
        raise _Unusual


def _read_group(paths: list[str], sizes: list[int]) -> np.ndarray | None:
    """The files' bytes back to back, or None when one is not a regular file of the size
    discovery listed (the per-file reader reports it)."""
    buf = np.empty(max(1, sum(sizes)), dtype=np.uint8)
    mv = memoryview(cast(bytearray, buf))
    at = 0
    for path, size in zip(paths, sizes):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size != size:
                return None
            got = os.preadv(fd, [mv[at:at + size]], 0) if _HAVE_PREADV and size else 0
            if got != size:
                return None
        except OSError:
            return None
        finally:
            os.close(fd)
        at += size
    return buf[:at]


class SmallSegments:
    """Records of a partition replica's small segments (up to ``SMALL_SEGMENT_BYTES``), decoded
    a group of neighbours at a time: one header walk, one decode and one Arrow batch for up to
    ``_GROUP_FILES`` files, handed out per segment as zero-copy slices. Per-file set-up (the
    read window, the header and row columns, 22 Arrow columns) cost several times reading a
    one-batch segment, so exporting partitions of thousands of such segments was slow
    (issue 23).

    A group is used only when it reads exactly as its files do one by one: every file a run of
    complete batches with valid CRCs, ending at its own end. Anything else (damage, a torn tail,
    a file changed since discovery) makes :meth:`batches` return None for the group's files:
    the caller reads them with :func:`iter_record_batches`, whose errors and findings are the
    reference. Rows are those of :func:`iter_record_batches` with the same filters."""

    def __init__(self, segments: list[str], sizes: list[int], *, topic: str | None,
                 partition: int | None, broker: int | None, engine: str = "auto",
                 include_control: bool = True, max_batch_bytes: int | None = None) -> None:
        self._segments = segments
        self._sizes = sizes
        self._index = {seg: i for i, seg in enumerate(segments)}
        self._seg = _Segment("", _text(topic), partition, broker)
        self._kernel = _pick_engine(engine)
        self._filters = _Filters(include_control, None, None, None, None)
        self._limit = resolve_max_batch_bytes(max_batch_bytes)
        self._rows: dict[int, tuple[pa.RecordBatch, int, int] | None] = {}

    def batches(self, segment: str) -> list[pa.RecordBatch] | None:
        """The segment's rows (no batch for a segment without rows), or None: read it alone."""
        i = self._index.get(segment)
        if i is None or self._sizes[i] > SMALL_SEGMENT_BYTES:
            return None
        if i not in self._rows:
            self._rows = {}   # groups are read in order: the previous one is done
            self._decode_from(i)
        got = self._rows.get(i)
        if got is None:
            return None
        rb, start, n = got
        return [rb.slice(start, n)] if n else []

    def _decode_from(self, first: int) -> None:
        last = first
        total = 0
        while (last < len(self._segments) and last - first < _GROUP_FILES
               and self._sizes[last] <= SMALL_SEGMENT_BYTES
               and total + self._sizes[last] <= _GROUP_BYTES):
            total += self._sizes[last]
            last += 1
        paths = self._segments[first:last]
        sizes = self._sizes[first:last]
        decoded = self._decode(paths, sizes) if len(paths) > 1 else None
        for k in range(len(paths)):
            self._rows[first + k] = None if decoded is None else decoded[k]

    def _decode(self, paths: list[str], sizes: list[int]) -> list[tuple[pa.RecordBatch, int, int]] | None:
        data = _read_group(paths, sizes)
        if data is None:
            return None
        sf = _Concatenated(data, paths[0])
        seen: list[_Headers] = []
        parts: list[pa.RecordBatch] = []
        try:
            for rc, h in _iter_row_chunks(sf, self._kernel, self._filters, _SCAN_CHUNK,  # type: ignore[arg-type]
                                          self._limit, seen=seen):
                parts.append(_record_batch(rc, h, self._seg))
        except Exception:  # noqa: BLE001 - any error: the per-file reader reads and reports it
            return None
        starts = np.zeros(len(sizes) + 1, dtype=np.int64)
        np.cumsum(sizes, out=starts[1:])
        if not seen:
            return None if starts[-1] else [(_EMPTY_ROWS, 0, 0)] * len(paths)
        pos = np.concatenate([h.position for h in seen])
        end = pos + 12 + np.concatenate([h.batch_length for h in seen])
        valid = np.concatenate([_done(h.crc_valid) for h in seen])
        # every file a run of whole batches: each file's start is a batch's start (or the end)
        # and the last batch ends where the last file does
        begins = starts[:-1][np.asarray(sizes) > 0]
        if (int(end[-1]) != int(starts[-1]) or not valid.all()
                or not np.isin(begins, pos).all()):
            return None
        rb = (parts[0] if len(parts) == 1 else pa.concat_batches(parts)) if parts else _EMPTY_ROWS
        counts = np.zeros(len(paths), dtype=np.int64)
        if rb.num_rows:   # positions and names of the files, not of the concatenation
            position = rb.column("batch_position").to_numpy()
            owner = np.searchsorted(starts, position, "right") - 1
            counts = np.bincount(owner, minlength=len(paths))
            rb = rb.set_column(rb.schema.get_field_index("batch_position"), "batch_position",
                               _np_arrow(position - starts[owner], _INT64))
            rb = rb.set_column(rb.schema.get_field_index("segment"), "segment",
                               _names(paths, counts))
        first_row = np.zeros(len(paths) + 1, dtype=np.int64)
        np.cumsum(counts, out=first_row[1:])
        return [(rb, int(first_row[k]), int(counts[k])) for k in range(len(paths))]


_EMPTY_ROWS = pa.RecordBatch.from_pylist([], schema=RECORD_SCHEMA)


def _names(paths: list[str], counts: np.ndarray) -> pa.Array:
    """The ``segment`` column: each file's name repeated for its rows."""
    names = [(_text(os.path.basename(p)) or "").encode("utf-8") for p in paths]
    lengths = np.repeat(np.array([len(b) for b in names], dtype=np.int64), counts)
    offsets = np.zeros(lengths.shape[0] + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = b"".join(b * int(c) for b, c in zip(names, counts.tolist()))
    return pa.Array.from_buffers(pa.string(), int(lengths.shape[0]),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data)])
