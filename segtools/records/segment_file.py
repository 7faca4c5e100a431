"""One ``.log`` segment file, opened read-only: Kafka's ``FileRecords`` as our tools read it.

Kafka's storage reads a segment through one object (clients/.../common/record/FileRecords.java:
``batchesFrom(start)`` over ``FileLogInputStream``); here :class:`SegmentFile` is that object
for every reader but the columnar engines' and dump's vectorised text's own hot loops (the
object reader ``records.batches``, dump's index peek and ``--skip-corrupt``, the log writer's
recovery walk, the transactions report's marker reads, the bundle's redacted copy, export's
invalid-tail walk, the real engine's log-end peek):

- the file is opened read-only (``O_RDONLY``, never written, never mapped) and its size,
  modification time and inode are taken once at open (:class:`ReadWindow`);
- every read stays below that size, so a file that shrinks under the reader is one
  :class:`~segtools.errors.FileChangedError` naming the position, never SIGBUS or a silent
  short batch; :meth:`check_unchanged` tells growth, a rewrite or a replacement afterwards;
- reads go through a bounded window with read-ahead (:meth:`get`), so memory is the window
  plus one batch, whatever the file size;
- :meth:`batches_from` steps from batch to batch with the one batch walk
  (:mod:`segtools.records.batch_walk`); what a batch is worth beyond framing is the caller's.
"""

from __future__ import annotations

from collections.abc import Iterator

from segtools.errors import FormatError
from segtools.files.read_window import DEFAULT_WINDOW, ReadWindow
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

    def __init__(self, path: str, window: int = DEFAULT_WINDOW, *, fd: int | None = None) -> None:
        super().__init__(path, window, fd=fd)
        #: where the last :meth:`batches_from` walk stopped (``SCAN_END``, a torn tail, or the
        #: reason Kafka's walk throws); None while a walk is under way or before one
        self.stop: Step | None = None

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
