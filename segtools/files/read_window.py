"""Bounded read windows over one evidence file: the byte layer of
``segtools.records.segment_file.SegmentFile`` (salvage's scan uses it directly; the columnar
engines read through :class:`ArrayWindow` on it; export's grouped read of small files is
:func:`read_files`).

Why not ``mmap``: a mapped file that another process truncates kills the reader with SIGBUS
on the next touch of a page past the new end (issue 23: salvage exited 135 in 4 of 6 runs).
``pread`` into a window instead returns fewer bytes, which is turned into one
``FileChangedError``; resident memory is the window (plus one batch when a batch is larger),
whatever the file size.

Every read stays below the size the file had when opened, so a short read means it shrank
(one :class:`FileChangedError` naming the position, whichever window read it);
:meth:`ReadWindow.check_unchanged` compares size, modification time and inode with the open
(growth, a rewrite, a replacement by rename).

:class:`ArrayWindow` is the same file read into reused numpy buffers (what the numba and
numpy kernels scan), two of them so the next window is read by a background thread while the
current one is decoded. ``pread`` into a fixed buffer beats ``mmap`` here too: mapping
page-cache pages costs more than copying them (measured on this VM: 3.0 ms to map+touch 32 MB
vs 2.6 ms to read it).
"""

from __future__ import annotations

import os
import stat
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import cast

import numpy as np

from segtools.errors import FileChangedError, InputError, display_path, os_input_error

__all__ = ["ReadWindow", "ArrayWindow", "DEFAULT_WINDOW", "check_not_pseudo_file",
           "open_read_only", "read_files"]

#: bytes read at a time when less is needed (read-ahead for the walk)
DEFAULT_WINDOW = 4 << 20


def check_not_pseudo_file(fd: int, st: os.stat_result, path: str) -> None:
    """A regular file whose stat says 0 bytes but that gives bytes when read (``/proc``,
    ``/sys``) is refused: every reader sizes its walk from the stat, so it would read as an
    empty segment, 0 rows, without a word."""
    if st.st_size != 0 or not stat.S_ISREG(st.st_mode):
        return
    try:
        probe = os.pread(fd, 1, 0)
    except OSError:
        return
    if probe and os.fstat(fd).st_size != 0:
        # it grew between the stat and the read: a file being rewritten, not a pseudo-file
        raise FileChangedError(f"{display_path(path)}: file changed while reading (its size was 0, now "
                               f"{os.fstat(fd).st_size} bytes)")
    if probe:
        raise InputError(f"{display_path(path)}: its size is 0 by stat but reading it gives bytes "
                         "(a /proc or /sys pseudo-file?): not a Kafka segment")


_HAVE_PREADV = hasattr(os, "preadv")
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def open_read_only(path: str, display: str | None = None, *,
                   fd: int | None = None) -> tuple[int, os.stat_result]:
    """``path`` opened read-only (``O_NONBLOCK``: a FIFO swapped in must not block the open;
    no effect on regular files) and its stat at open; refused unless a regular file with
    bytes as its stat says. ``fd``: a descriptor the caller opened itself (checked the same
    way). Errors name ``display`` (an object's URI for its local copy), else ``path``."""
    name = path if display is None else display
    if fd is None:
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except OSError as exc:
            raise os_input_error(name, exc, "cannot open") from None
    try:
        try:
            st = os.fstat(fd)
        except OSError as exc:
            raise os_input_error(name, exc, "cannot stat") from None
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{display_path(name)} is not a regular file")
        if not st.st_size:
            check_not_pseudo_file(fd, st, name)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def stat_change(before: os.stat_result, now: os.stat_result) -> str | None:
    """Why ``now`` is not the file state ``before`` was (None: the same size, modification
    time and inode)."""
    if now.st_size != before.st_size:
        return f"size {before.st_size} -> {now.st_size} bytes"
    if now.st_mtime_ns != before.st_mtime_ns:
        return "modified"
    if now.st_ino != before.st_ino:
        return "another file"
    return None


def pread_into(fd: int, target: memoryview, pos: int, *, preadv: bool = True) -> int:
    """Fill ``target`` from ``pos``: the bytes read, fewer only at the file's end. OSError
    passes through (the caller names the file)."""
    want = len(target)
    if not want:   # (a zero-length preadv into the shared read-only empty window fails)
        return 0
    if preadv and _HAVE_PREADV:   # the common case: one call fills it
        got = os.preadv(fd, [target], pos)
        if got >= want or got <= 0:
            return max(got, 0)
    else:
        got = 0
    while got < want:
        if preadv and _HAVE_PREADV:
            n = os.preadv(fd, [target[got:want]], pos + got)
        else:   # platforms without preadv: one extra copy
            chunk = os.pread(fd, want - got, pos + got)
            n = len(chunk)
            target[got:got + n] = chunk
        if n <= 0:
            break
        got += n
    return got


class ReadWindow:
    """File bytes ``[base, base + len(buf))`` of a file opened read-only; :meth:`get` moves the
    window. Raises :class:`FileChangedError` when the file turns out shorter than at open."""

    def __init__(self, path: str, window: int = DEFAULT_WINDOW, *, fd: int | None = None,
                 display: str | None = None) -> None:
        """``fd``: a descriptor the caller opened read-only itself (its own open flags and
        errors, e.g. the bundle's ``O_NOFOLLOW``); the window owns and closes it.
        ``display``: the name errors give (an object's URI when ``path`` is its local
        copy); ``path`` is then that name and ``local`` the file opened."""
        self.local = path
        self.path = path if display is None else display
        self.fd, self.stat = open_read_only(path, display, fd=fd)
        self.size = self.stat.st_size
        self.window = max(64, window)
        self.base = 0
        self.buf = b""

    def __enter__(self) -> ReadWindow:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self.buf = b""

    def changed(self, why: str, pos: int) -> FileChangedError:
        return FileChangedError(f"{display_path(self.path)}: file changed while reading ({why}), "
                                f"near position {pos}")

    def read_into(self, buf: np.ndarray, pos: int, want: int, *, preadv: bool = True) -> int:
        """Read ``want`` bytes at ``pos`` into the caller's ``buf`` (a reused window): the count
        read, fewer only where the file now ends before the size at open (the caller decides
        whether that is a :meth:`changed`)."""
        target = memoryview(cast(bytearray, buf))   # numpy arrays are buffers; numpy's stubs say not
        try:
            return pread_into(self.fd, target[:want], pos, preadv=preadv)
        except OSError as exc:
            raise self.read_failed(pos, exc) from None

    def read_failed(self, pos: int, exc: OSError) -> InputError:
        return InputError(f"{display_path(self.path)}: read failed at byte {pos}: "
                          f"{exc.strerror or exc}")

    def read(self, pos: int, n: int) -> bytes:
        """Exactly ``min(n, size - pos)`` bytes at ``pos`` (not through the window)."""
        want = max(0, min(n, self.size - pos))
        parts: list[bytes] = []
        got = 0
        while got < want:
            chunk = self._pread(want - got, pos + got)
            if not chunk:
                raise self.changed(f"the file shrank below {self.size} bytes", pos + got)
            parts.append(chunk)
            got += len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _pread(self, n: int, pos: int) -> bytes:
        try:
            return os.pread(self.fd, n, pos)
        except OSError as exc:
            raise self.read_failed(pos, exc) from None

    def get(self, pos: int, need: int) -> tuple[bytes, int]:
        """``(buf, rel)`` with ``buf[rel:rel + k]`` the file bytes at ``pos``, where ``k`` is
        ``need`` or what is left of the file. Reads ``max(need, window)`` bytes when the
        window does not hold them (read-ahead), never past the size at open."""
        rel = pos - self.base
        if rel >= 0 and rel + need <= len(self.buf):
            return self.buf, rel   # the common case first: one check per batch of a walk
        need = max(0, min(need, self.size - pos))
        if rel >= 0 and rel + need <= len(self.buf):
            return self.buf, rel
        self.buf = b""   # release the old window before the new one is read
        self.buf = self.read(pos, max(need, self.window))
        self.base = pos
        return self.buf, 0

    def check_unchanged(self) -> None:
        """Raise :class:`FileChangedError` when the open file's size, modification time or
        inode differ from the open, or the path now names another file."""
        try:
            now = os.fstat(self.fd)
        except OSError as exc:
            raise os_input_error(self.path, exc, "cannot stat") from None
        before = self.stat
        why = stat_change(before, now)
        if why is not None:
            raise self.changed(why, min(now.st_size, before.st_size)
                               if now.st_size != before.st_size else 0)
        try:
            named = os.stat(self.local)
        except OSError:
            raise self.changed("the path was removed or renamed", 0) from None
        if (named.st_ino, named.st_dev) != (before.st_ino, before.st_dev):
            raise self.changed("the path now names another file", 0)


# ---------------------------------------------------------------- numpy windows, read ahead

_READ_AHEAD: tuple[int, ThreadPoolExecutor] | None = None   # one reader thread, made on first use


def _read_ahead_executor() -> ThreadPoolExecutor:
    global _READ_AHEAD
    # a forked child (Spark's Python workers) inherits the executor but not its thread
    if _READ_AHEAD is None or _READ_AHEAD[0] != os.getpid():
        _READ_AHEAD = (os.getpid(), ThreadPoolExecutor(max_workers=1,
                                                       thread_name_prefix="segtools-read"))
    return _READ_AHEAD[1]


#: windows of closed files, reused by the next file opened: a fresh 16 MiB buffer is 4,096
#: page faults at its first read (~25 ms of CPU per 32 MiB segment after other work had the
#: allocator return its pages). At most _SPARE_WINDOWS are kept (about 32 MiB).
_SPARE: list[np.ndarray] = []
_SPARE_WINDOWS = 2
_SPARE_MIN = 1 << 20
_SPARE_LOCK = threading.Lock()


def _spare_after_fork() -> None:
    """A forked child (export's workers) gets a lock of its own: one held by another thread
    at fork() would stay held in the child for ever."""
    global _SPARE_LOCK
    _SPARE_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_spare_after_fork)


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


#: a CRC-32C over a batch larger than the window reads this much at a time
CRC_STEP = 4 * 1024 * 1024
#: the window before its first read and after close (shared: never written, never kept);
#: three numpy allocations fewer per file opened (export reads thousands of small ones)
_NO_BYTES = np.empty(0, dtype=np.uint8)
_NO_BYTES.flags.writeable = False


class ArrayWindow:
    """File bytes ``[base, base + filled)`` of ``source`` in a reused numpy buffer: ``array``
    (read-only uint8) and ``view`` (its memoryview), what the kernels scan. Two buffers, so
    :meth:`prefetch` can read the next window in the background while the current one is in
    use. Reads stay below ``source``'s size at open, so a short one is the source's
    :class:`FileChangedError`; closing the window closes ``source``.

    ``read_ahead``: whether :meth:`prefetch` reads ahead; ``preadv``: read straight into the
    buffer (False: ``pread`` and a copy)."""

    def __init__(self, source: ReadWindow, window: int, *, read_ahead: bool = True,
                 preadv: bool = True) -> None:
        self.source = source
        self._fd = source.fd
        self.path = source.path
        self.size = source.size
        self._window = max(64, window)
        self._read_ahead = read_ahead
        self._preadv = preadv
        self._bufs = [_NO_BYTES, _NO_BYTES]
        self._cur = 0
        self._pending: tuple[int, int, int, Future[int]] | None = None   # pos, want, buffer, read
        self._scratch: np.ndarray | None = None
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
        # ReadWindow.read_into inlined: once per window, and per file on many small ones
        try:
            return pread_into(self._fd, memoryview(cast(bytearray, buf))[:want], pos,
                              preadv=self._preadv)
        except OSError as exc:
            raise self.source.read_failed(pos, exc) from None

    def prefetch(self, pos: int) -> None:
        """Start reading the window at ``pos`` into the spare buffer."""
        if not self._read_ahead or self._pending is not None or pos >= self.size:
            return
        want = min(self._window, self.size - pos)
        spare = 1 - self._cur
        buf = self._buffer(spare, want)
        future = _read_ahead_executor().submit(self._read, buf, pos, want)
        self._pending = (pos, want, spare, future)

    def load(self, pos: int, need: int = 0) -> None:
        """Make file bytes from ``pos`` current: a window, or ``need`` bytes if that is more."""
        want = min(max(self._window, need), self.size - pos)
        done = self._pending
        self._pending = None
        got = -1
        if done is not None:
            got = done[3].result()   # a failed read raises its InputError here
        if done is not None and done[0] == pos and done[1] >= want:
            index = done[2]
        else:
            index = self._cur if done is None else done[2]   # a buffer nobody looks at now
            if done is None and self.filled:
                index = 1 - self._cur
            got = self._read(self._buffer(index, want), pos, want)
        if got < want:   # reads stay below the size at open: a short one means it shrank
            raise self.source.changed(f"the file shrank below {self.size} bytes", pos + max(got, 0))
        self._cur = index
        self.base = pos
        self.filled = got
        self.array = self._bufs[index][:got]
        self.array.flags.writeable = False
        self.view = memoryview(cast(bytearray, self.array))

    def read_buffer(self, size: int) -> tuple[int, np.ndarray]:
        """The descriptor and a writable buffer of at least ``size`` bytes (one of the window's
        own), for a compiled reader that reads the file itself. Nothing is loaded after it:
        call :meth:`load` before using ``array`` again."""
        if self._pending is not None:
            self._pending[3].result()
            self._pending = None
        self.base = self.filled = 0
        self.array = _NO_BYTES
        self.view = memoryview(b"")
        return self._fd, self._buffer(self._cur, size)[:size]

    @property
    def at_eof(self) -> bool:
        return self.base + self.filled >= self.size

    def changed(self, why: str, pos: int | None = None) -> FileChangedError:
        return self.source.changed(why, self.base if pos is None else pos)

    def crc_step_read(self, pos: int, n: int) -> np.ndarray:
        """``n`` bytes at ``pos`` in a scratch buffer (a streamed CRC of a large batch); fewer
        where the file now ends before the size at open."""
        buf = self._scratch
        if buf is None or buf.shape[0] < n:
            buf = self._scratch = np.empty(max(n, CRC_STEP), dtype=np.uint8)
        return buf[:self._read(buf, pos, n)]

    def __enter__(self) -> ArrayWindow:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._pending is not None:   # never close the fd under a running read
            try:
                self._pending[3].result()
            except InputError:
                pass
            self._pending = None
        self.view = memoryview(b"")
        self.array = _NO_BYTES
        for buf in self._bufs:
            _give_window(buf)
        self._bufs = []
        self.source.close()


def read_files(paths: list[str], sizes: list[int]) -> np.ndarray | None:
    """Small files' bytes back to back in one buffer (export's grouped read of small
    segments), each opened and checked as :func:`open_read_only` does (without its error
    messages); None when one cannot be opened or read, is not a regular file of the size
    listed, or is a pseudo-file (the per-file reader then reads it and reports what it
    finds)."""
    buf = np.empty(max(1, sum(sizes)), dtype=np.uint8)
    mv = memoryview(cast(bytearray, buf))
    at = 0
    for path, size in zip(paths, sizes):
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size != size:
                return None
            if not size:
                check_not_pseudo_file(fd, st, path)
            elif (os.preadv(fd, [mv[at:at + size]], 0) if _HAVE_PREADV   # one call a file
                  else pread_into(fd, mv[at:at + size], 0)) != size:
                return None
        except (OSError, InputError):
            return None
        finally:
            os.close(fd)
        at += size
    return buf[:at]
