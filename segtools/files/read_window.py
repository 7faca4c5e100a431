"""A bounded read window over one evidence file (the byte layer of
``segtools.records.segment_file.SegmentFile``; salvage's scan).

Why not ``mmap``: a mapped file that another process truncates kills the reader with SIGBUS
on the next touch of a page past the new end (issue 23: salvage exited 135 in 4 of 6 runs).
``pread`` into a window instead returns fewer bytes, which is turned into one
``FileChangedError``; resident memory is the window (plus one batch when a batch is larger),
whatever the file size.

Every read stays below the size the file had when opened, so a short read means it shrank;
:meth:`ReadWindow.check_unchanged` compares size, modification time and inode with the open
(growth, a rewrite, a replacement by rename).
"""

from __future__ import annotations

import os
import stat
from types import TracebackType

from segtools.errors import FileChangedError, InputError, display_path, os_input_error

__all__ = ["ReadWindow", "DEFAULT_WINDOW", "check_not_pseudo_file"]

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


class ReadWindow:
    """File bytes ``[base, base + len(buf))`` of a file opened read-only; :meth:`get` moves the
    window. Raises :class:`FileChangedError` when the file turns out shorter than at open."""

    def __init__(self, path: str, window: int = DEFAULT_WINDOW, *, fd: int | None = None) -> None:
        """``fd``: a descriptor the caller opened read-only itself (its own open flags and
        errors, e.g. the bundle's ``O_NOFOLLOW``); the window owns and closes it."""
        self.path = path
        if fd is not None:
            self.fd = fd
        else:
            try:
                # O_NONBLOCK: a FIFO swapped in must not block the open (no effect on regular
                # files)
                self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            except OSError as exc:
                raise os_input_error(path, exc, "cannot open") from None
        try:
            self.stat = os.fstat(self.fd)
            if not stat.S_ISREG(self.stat.st_mode):
                raise InputError(f"{display_path(path)} is not a regular file")
            check_not_pseudo_file(self.fd, self.stat, path)
        except BaseException:
            os.close(self.fd)
            raise
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
            raise InputError(f"{display_path(self.path)}: read failed at byte {pos}: "
                             f"{exc.strerror or exc}") from None

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
        if now.st_size != before.st_size:
            raise self.changed(f"size {before.st_size} -> {now.st_size} bytes", min(now.st_size, before.st_size))
        if now.st_mtime_ns != before.st_mtime_ns:
            raise self.changed("modified", 0)
        try:
            named = os.stat(self.path)
        except OSError:
            raise self.changed("the path was removed or renamed", 0) from None
        if (named.st_ino, named.st_dev) != (before.st_ino, before.st_dev):
            raise self.changed("the path now names another file", 0)
