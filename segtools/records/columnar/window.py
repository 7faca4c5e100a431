"""Inputs of the columnar readers and their read window: a segment opened as
:class:`~segtools.records.segment_file.SegmentFile` and read through its reused numpy window
(:class:`~segtools.files.read_window.ArrayWindow`: read-only, size snapshot, the one change
rule, background read-ahead). No file access of its own."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from segtools.files.read_window import CRC_STEP, ArrayWindow, read_files
from segtools.records.segment_file import SegmentFile

#: bytes read per window; resident memory is about two windows (current + read-ahead)
#: whatever the file size
_SCAN_BYTES = 16 * 1024 * 1024
#: read straight into the window (False: pread and a copy; tests cover that fallback)
_HAVE_PREADV = hasattr(os, "preadv")
#: CRC-32C of a batch larger than the window is computed over reads of this size
_CRC_STEP = CRC_STEP


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
def _open_segment(seg: _Segment, window: int | None = None,
                  read_ahead: bool = True) -> Iterator[_SegmentFile]:
    """``seg`` opened for reading: a local file as it is, an object (``s3://``, ``gs://``,
    ``hdfs://``...) through the private temporary copy :func:`segtools.files.remote.local_file`
    streams it to (as ``iter_batches`` reads it), removed when the block ends. Errors name
    ``seg.path``, the URI, never the copy. ``read_ahead``: see :class:`_SegmentFile`."""
    from segtools.files.remote import local_file

    with local_file(seg.path) as local, _SegmentFile(local, window, display=seg.path,
                                                     read_ahead=read_ahead) as mf:
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


#: read the next window in the background while the current one is checked and decoded
_PREFETCH = True


class _SegmentFile(ArrayWindow):
    """A segment opened read-only as :class:`~segtools.records.segment_file.SegmentFile`
    opens every segment (size snapshot, the one change rule) and read through its reused
    numpy window with background read-ahead
    (:class:`~segtools.files.read_window.ArrayWindow`). ``array`` (read-only uint8) and
    ``view`` hold file bytes [base, base + filled)."""

    #: the header scan's reused output columns (see _scan_chunk)
    _scan_out: dict[str, np.ndarray] | None = None

    def __init__(self, path: str, window: int | None = None, display: str | None = None,
                 read_ahead: bool = True) -> None:
        # ``display``: the name errors give (an object's URI when ``path`` is its local copy);
        # ``read_ahead``: False where a window's work is much less than its read (the header
        # scan: a CRC per window; handing the read to another thread cost more than it hid)
        sf = SegmentFile(path, display=display)
        super().__init__(sf, window if window is not None else _SCAN_BYTES,
                         read_ahead=_PREFETCH and read_ahead, preadv=_HAVE_PREADV)
        self.segment = sf
        self.name = os.path.basename(self.path)

    def check_unchanged(self, pos: int | None = None, n: int = 0) -> None:
        """Raise ``FileChangedError`` where damage was read from a file being rewritten
        (:meth:`SegmentFile.check_read <segtools.records.segment_file.SegmentFile.check_read>`
        on the loaded bytes [pos, pos + n) when they are in the window)."""
        from segtools.records import batches

        seen = b""
        at = self.base if pos is None else pos
        rel = at - self.base
        if pos is not None and n > 0 and 0 <= rel and rel + n <= self.filled:
            seen = bytes(self.view[rel:rel + n])
        self.segment.check_read(seen, at, settle_checks=batches._SETTLE_CHECKS,
                                settle_seconds=batches._SETTLE_SECONDS)

    def __enter__(self) -> _SegmentFile:
        return self


def _read_group(paths: list[str], sizes: list[int]) -> np.ndarray | None:
    """Small segment files' bytes back to back (export's grouped read), or None when one is not
    a regular file of the size discovery listed (the per-file reader reports it)."""
    return read_files(paths, sizes)
