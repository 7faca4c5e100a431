"""One ``.log`` segment file, opened read-only: Kafka's ``FileRecords`` as our tools read it.

Kafka's storage reads a segment through one object (clients/.../common/record/FileRecords.java:
``batchesFrom(start)`` over ``FileLogInputStream``); here :class:`SegmentFile` is that object
for every reader (the object reader ``records.batches``, the columnar engines through
:meth:`array_window`, dump's vectorised text through ``read_into``, dump's index peek and
``--skip-corrupt``, the log writer's recovery walk, the transactions report's marker reads,
the bundle's redacted copy, export's invalid-tail walk, the real engine's log-end peek):

- the file is opened read-only (``O_RDONLY``, never written, never mapped) and its size,
  modification time and inode are taken once at open (:class:`ReadWindow`);
- every read stays below that size, so a file that shrinks under the reader is one
  :class:`~segtools.errors.FileChangedError` naming the position, never SIGBUS or a silent
  short batch; :meth:`check_unchanged` tells growth, a rewrite or a replacement afterwards;
- reads go through a bounded window with read-ahead (:meth:`get`), so memory is the window
  plus one batch, whatever the file size; the columnar engines read the same file into
  reused numpy windows read ahead in the background (:meth:`array_window`);
- damage read from a file that a writer is rewriting is not damage on disk:
  :meth:`check_read`, called where a read found damage, waits once per file for the writer
  to show, then raises ``FileChangedError`` when the bytes read again differ or the stat
  changed;
- :meth:`batches_from` steps from batch to batch with the one batch walk
  (:mod:`segtools.records.batch_walk`); what a batch is worth beyond framing is the caller's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

from segtools.errors import FormatError, InputError
from segtools.files.read_window import DEFAULT_WINDOW, ArrayWindow, ReadWindow, stat_change
from segtools.formats.record_batch import RECORD_BATCH_OVERHEAD
from segtools.records.batch_walk import Step, next_batch, walk_error
from segtools.records.faults import SCAN_BATCH

__all__ = ["SegmentFile", "DEFAULT_WINDOW"]


class SegmentFile(ReadWindow):
    """A segment file opened read-only with its size at open (``size``); see the module doc.

    ``window``: bytes read at a time when less is needed (read-ahead). A reader that jumps
    around (dump's index peek) passes a small window so a jump costs what it needs. ``fd``: a
    descriptor the caller opened read-only with its own flags (the bundle's ``O_NOFOLLOW``);
    the object closes it."""

    def __init__(self, path: str, window: int = DEFAULT_WINDOW, *, fd: int | None = None,
                 display: str | None = None) -> None:
        super().__init__(path, window, fd=fd, display=display)
        #: where the last :meth:`batches_from` walk stopped (``SCAN_END``, a torn tail, or the
        #: reason Kafka's walk throws); None while a walk is under way or before one
        self.stop: Step | None = None
        self._settled = False

    def array_window(self, window: int, *, read_ahead: bool = True,
                     preadv: bool = True) -> ArrayWindow:
        """This file read into reused numpy windows of ``window`` bytes (the columnar
        engines' scan); closing it closes this file."""
        return ArrayWindow(self, window, read_ahead=read_ahead, preadv=preadv)

    def check_read(self, seen: bytes | memoryview, at: int, *, settle_checks: int,
                   settle_seconds: float, position: int | None = None) -> None:
        """Called where a read found damage (a bad CRC, a torn or garbled batch), which a
        concurrent truncate-and-rewrite causes without any damage on disk. Raise
        :class:`~segtools.errors.FileChangedError` (near ``position``, else ``at``) when
        ``seen`` (bytes read at ``at``) reads back differently or the open file's size,
        modification time or inode changed. The first call per file first looks
        ``settle_checks`` times, ``settle_seconds`` apart, to give a writer in mid-rewrite
        time to show; healthy files never get here."""
        if self.fd < 0:   # closed: nothing left to compare
            return
        where = at if position is None else position
        if not self._settled:
            self._settled = True
            for _ in range(settle_checks - 1):
                time.sleep(settle_seconds)
                self._compare(seen, at, where)
            time.sleep(settle_seconds)
        self._compare(seen, at, where)

    def _compare(self, seen: bytes | memoryview, at: int, where: int) -> None:
        if len(seen):
            try:
                again = self._pread(len(seen), at)
            except InputError:
                again = b""
            if again != seen:
                raise self.changed("bytes read twice differ", where)
        try:
            now = os.fstat(self.fd)
        except OSError:
            return
        why = stat_change(self.stat, now)
        if why is not None:
            raise self.changed(why, where)

    def __enter__(self) -> SegmentFile:
        return self

    def step_at(self, position: int, *, end: int | None = None, limit: int | None = None) -> Step:
        """The one walk's decision at ``position`` (``end``: where the walk ends, the size at
        open by default, or a slice's end as in ``FileRecords.slice``; ``limit``: the
        reader's ``max_batch_bytes``). A short v2 batch may borrow header bytes up to the
        size at open, as Kafka's ``loadBatchHeader`` reads them from the file."""
        size = self.size
        stop = size if end is None or end > size else end
        buf, rel = self.get(position, RECORD_BATCH_OVERHEAD)
        return next_batch(buf, rel, position, stop, size, limit)

    def batches_from(self, position: int = 0, *, end: int | None = None,
                     limit: int | None = None) -> Iterator[Step]:
        """The batches from ``position`` on, as the walk's steps (``FileRecords.batchesFrom``);
        the walk stops where :func:`~segtools.records.batch_walk.next_batch` says, and
        :attr:`stop` then holds that step (:meth:`stop_error` its error, if Kafka throws
        there). A caller that stops early simply stops iterating."""
        self.stop = None
        pos = position
        while True:
            step = self.step_at(pos, end=end, limit=limit)
            if step.status != SCAN_BATCH:
                self.stop = step
                return
            yield step
            pos += step.size

    def stop_error(self, limit: int | None = None) -> FormatError | None:
        """The error where the last walk stopped (None: it ended silently, or no walk ran)."""
        if self.stop is None:
            return None
        return walk_error(self.stop, path=self.path, file_size=self.size, limit=limit)

    def batch_bytes(self, step: Step) -> tuple[bytes, int]:
        """``(buf, rel)``: the batch of ``step`` at ``buf[rel:rel + step.size]`` (at least its
        61 header bytes for a short v2 batch that borrows them, as the walk checked exist)."""
        size = step.size
        return self.get(step.position, size if size > RECORD_BATCH_OVERHEAD else RECORD_BATCH_OVERHEAD)

    def read_available(self, position: int, n: int) -> bytes:
        """Up to ``n`` bytes at ``position``, fewer where the file now ends before the size at
        open (a copier that notes the change itself; every other reader gets
        :class:`~segtools.errors.FileChangedError` from :meth:`read`)."""
        from segtools.errors import FileChangedError

        try:
            return self.read(position, n)
        except FileChangedError:
            pass
        # the file shrank: what is still there, read in pieces below the size at open
        parts: list[bytes] = []
        at = position
        want = max(0, min(n, self.size - position))
        while at < position + want:
            chunk = self._pread(position + want - at, at)
            if not chunk:
                break
            parts.append(chunk)
            at += len(chunk)
        return b"".join(parts)
