"""Inputs of the columnar readers and the one reusable read window over a segment file
(read-only, size snapshot, change checks, background read-ahead)."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from segtools.errors import (
    FileChangedError,
    InputError,
    display_path,
    os_input_error,
)

#: bytes read per window; resident memory is about two windows (current + read-ahead)
#: whatever the file size
_SCAN_BYTES = 16 * 1024 * 1024
_HAVE_PREADV = hasattr(os, "preadv")
#: CRC-32C of a batch larger than the window is computed over reads of this size
_CRC_STEP = 4 * 1024 * 1024


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


def _read_group(paths: list[str], sizes: list[int]) -> np.ndarray | None:
    """Small segment files' bytes back to back (export's grouped read), or None when one is not
    a regular file of the size discovery listed (the per-file reader reports it)."""
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
