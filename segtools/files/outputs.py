"""Output safety shared by every command that writes (CONTRACT.md section 1).

Inputs are evidence: an output may not land inside any input the user named (checked by real
path, whatever shape the input has), may not be an input file under another name (hard link),
and replaces nothing silently. Files are written to a temporary name in the same directory and
renamed into place, so a reader never sees half a file and an existing directory entry that is
a hard link to an input is replaced, never written through. A run that writes a folder marks it
``_PARTIAL`` until it ends and ``_SUCCESS`` when it ends well (the Spark/Hadoop convention; both
names start with ``_`` so Spark, pyarrow and DuckDB's ``*.parquet`` globs skip them).

API: :func:`input_roots`, :func:`check_output_location`, :func:`check_output_file`,
:func:`prepare_output_dir`, :func:`atomic_write`, :func:`atomic_file`, :func:`partial_run`.

Object-store outputs (``s3://``, ``gs://``, ``hdfs://``; ``file://`` is a local path): an
output in the same bucket whose prefix is, or is inside, an input prefix is refused; an
existing object is replaced only when allowed; ``_PARTIAL``/``_SUCCESS`` are objects under
the output prefix, written by the same rules (see ``partial_run``'s ``filesystem``).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from segtools.errors import InputError
from segtools.files.real_paths import RealPaths

PathLike = str | os.PathLike[str]

#: Written when a folder-writing run starts, removed when it ends well: a folder holding it is
#: incomplete (interrupted, killed or failed).
PARTIAL_MARKER = "_PARTIAL"
#: Written when a folder-writing run ends well (JSON summary inside; readers skip `_` files).
SUCCESS_MARKER = "_SUCCESS"
#: ``schema_version`` of the JSON in ``_SUCCESS`` (segtools/schemas/success.schema.json)
SUCCESS_SCHEMA_VERSION = 1


class UnsafeOutputError(InputError):
    """An output path that would write into the evidence or replace something silently."""


def _is_remote(path: PathLike) -> bool:
    from segtools.files.remote import is_remote

    return is_remote(os.fspath(path))


def _local(path: PathLike) -> str:
    """A local path, or the path of a ``file://`` URI."""
    from segtools.files.remote import local_path

    return local_path(os.fspath(path))


def _remote_roots(inputs: Iterable[PathLike]) -> list[tuple[str, str]]:
    """``(scheme://bucket, /prefix)`` of every object-store input."""
    from segtools.files.remote import uri_location

    return [uri_location(os.fspath(raw)) for raw in inputs if _is_remote(raw)]


def _check_remote_location(output: str, inputs: Iterable[PathLike], flag: str) -> None:
    """Same bucket (authority) and a prefix equal to or inside an input prefix: refused. On an
    object store a prefix is a string, so ``s3://b/in`` covers ``s3://b/in/x`` but not
    ``s3://b/input2``."""
    from segtools.files.remote import uri_location

    where, prefix = uri_location(output)
    for root_where, root in _remote_roots(inputs):
        if where == root_where and (prefix == root or prefix.startswith(root.rstrip("/") + "/")):
            raise UnsafeOutputError(
                f"{flag} {output} is inside the input {root_where}{root}: inputs are evidence "
                "and are never written to")


def _remote_entries(output: str) -> tuple[Any, str, Any, list[Any]]:
    """(filesystem, path, info, entries below) of a URI output."""
    from pyarrow import fs as pafs

    from segtools.files.remote import open_uri

    filesystem, inner = open_uri(output)
    info = filesystem.get_file_info(inner)
    entries: list[Any] = []
    if info.type == pafs.FileType.Directory:
        entries = filesystem.get_file_info(pafs.FileSelector(inner, recursive=False))
    return filesystem, inner, info, entries


def _real(path: PathLike) -> str:
    # realpath of a path that need not exist: the existing prefix is resolved (symlinks
    # followed), the rest is appended as written.
    return os.path.realpath(os.path.abspath(os.fspath(path)))


def input_roots(inputs: Iterable[PathLike]) -> list[str]:
    """The folders that hold evidence for the inputs the user named.

    Each path is given as written (absolute) and as its real path, so a symlink into the
    evidence and the evidence itself are both covered. A named file is a root by itself; a
    caller that treats a file's folder as evidence (a segment's partition dir) passes it too."""
    roots: list[str] = []
    seen: set[str] = set()
    real_paths = RealPaths()
    for raw in inputs:
        if _is_remote(raw):
            continue          # see _remote_roots
        path = os.path.abspath(_local(raw))
        real = real_paths(path)
        for p in (path, real):
            if p not in seen:
                seen.add(p)
                roots.append(p)
    return roots


def _inside(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)


def check_output_location(output: PathLike, inputs: Iterable[PathLike], *, flag: str = "--out") -> None:
    """Refuse an output path (file or folder) that is, or is inside, an input root.

    Both the path as written and its real path are compared with every root of
    :func:`input_roots`, so ``--out clusterB/pq`` is refused for the input ``clusterB`` (a folder
    of broker dirs) just as ``--out clusterB/broker-1/pq`` is."""
    if _is_remote(output):
        _check_remote_location(os.fspath(output), inputs, flag)
        return
    written = os.path.abspath(_local(output))
    real = _real(written)
    for root in input_roots(inputs):
        for candidate in (written, real):
            if _inside(candidate, root):
                raise UnsafeOutputError(
                    f"{flag} {os.fspath(output)} is inside the input {root}: inputs are evidence "
                    "and are never written to")


def _input_inodes(inputs: Iterable[PathLike]) -> set[tuple[int, int]]:
    found: set[tuple[int, int]] = set()
    for raw in inputs:
        if _is_remote(raw):
            continue
        path = _local(raw)
        if os.path.isfile(path):
            st = os.stat(path)
            found.add((st.st_dev, st.st_ino))
            continue
        for dirpath, _dirs, files in os.walk(path):
            for name in files:
                with contextlib.suppress(OSError):
                    st = os.stat(os.path.join(dirpath, name))
                    found.add((st.st_dev, st.st_ino))
    return found


def check_output_file(output: PathLike, inputs: Iterable[PathLike], *, flag: str = "--out",
                      overwrite: bool = True) -> None:
    """Refuse an output file inside an input root, one that is an input file (same path or a
    hard link: same device and inode as a file under an input), and -- unless ``overwrite`` --
    one that exists already."""
    check_output_location(output, inputs, flag=flag)
    if _is_remote(output):
        from pyarrow import fs as pafs

        info = _remote_entries(os.fspath(output))[2]
        if info.type == pafs.FileType.Directory:
            raise UnsafeOutputError(f"{flag} {os.fspath(output)} is a folder (a prefix with objects)")
        if info.type != pafs.FileType.NotFound and not overwrite:
            raise UnsafeOutputError(f"{flag} {os.fspath(output)} exists (use --force to replace it)")
        return
    path = _local(output)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    if (st.st_dev, st.st_ino) in _input_inodes(inputs):
        raise UnsafeOutputError(f"{flag} {path} is an input file (same file or a hard link): "
                                "inputs are evidence and are never written to")
    if not overwrite:
        raise UnsafeOutputError(f"{flag} {path} exists (use --force to replace it)")


def prepare_output_dir(output: PathLike, inputs: Iterable[PathLike] = (), *, force: bool = False,
                       flag: str = "--out", force_flag: str = "--force") -> Path:
    """Check an output folder and create it. An existing non-empty folder is refused unless
    ``force`` (then files are added to it; nothing in it is deleted here)."""
    check_output_location(output, inputs, flag=flag)
    if _is_remote(output):
        from pyarrow import fs as pafs

        filesystem, inner, info, entries = _remote_entries(os.fspath(output))
        if info.type == pafs.FileType.File:
            raise UnsafeOutputError(f"{flag} {output} exists and is not a folder")
        if entries and not force:
            raise UnsafeOutputError(f"{flag} {output} exists and is not empty "
                                    f"(use {force_flag} to write into it)")
        filesystem.create_dir(inner, recursive=True)
        return Path(inner)
    out = Path(_local(output))
    if out.exists() and not out.is_dir():
        raise UnsafeOutputError(f"{flag} {output} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise UnsafeOutputError(f"{flag} {output} exists and is not empty "
                                f"(use {force_flag} to write into it)")
    out.mkdir(parents=True, exist_ok=True)
    return out


@contextlib.contextmanager
def atomic_file(path: PathLike, mode: str = "w", *, encoding: str | None = "utf-8") -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; on success it replaces ``path`` in one rename, on
    any error (or Ctrl-C) it is removed and ``path`` is untouched."""
    target = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=folder)
    try:
        binary = "b" in mode
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write(path: PathLike, data: str | bytes) -> None:
    """Write ``data`` to ``path`` through :func:`atomic_file`. On an object store (a URI) the
    object is uploaded in one request from memory: it appears whole or not at all."""
    if _is_remote(path):
        from segtools.files.remote import open_uri

        filesystem, inner = open_uri(os.fspath(path))
        payload = data.encode("utf-8") if isinstance(data, str) else data
        with filesystem.open_output_stream(inner) as fh:
            fh.write(payload)
        return
    path = _local(path)
    with atomic_file(path, "wb" if isinstance(data, bytes) else "w") as fh:
        fh.write(data)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: how ``_SUCCESS`` is laid out, the same on a local disk and on an object store
_MARKER_JSON: dict[str, Any] = {"indent": 1, "sort_keys": False}


class _LocalMarkers:
    def write(self, path: str, text: str) -> None:
        atomic_write(path, text)

    def write_json(self, path: str, doc: dict[str, Any]) -> None:
        # streamed: the text of an export of 100,000 segments (a path each) held whole, with
        # the encoder's pieces, took ~13 MB at the end of the run
        with atomic_file(path, "w") as fh:
            json.dump(doc, fh, **_MARKER_JSON)
            fh.write("\n")

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


class _ArrowMarkers:
    """The same markers on a pyarrow filesystem (s3://, hdfs:// outputs)."""

    def __init__(self, filesystem: Any) -> None:
        self.fs = filesystem

    def write(self, path: str, text: str) -> None:
        with self.fs.open_output_stream(path) as fh:
            fh.write(text.encode("utf-8"))

    def write_json(self, path: str, doc: dict[str, Any]) -> None:
        self.write(path, json.dumps(doc, **_MARKER_JSON) + "\n")

    def delete(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError, OSError):
            self.fs.delete_file(path)


class PartialRun:
    """Handle of :func:`partial_run`: ``summary`` (a JSON-able dict) goes into ``_SUCCESS``."""

    def __init__(self) -> None:
        self.summary: dict[str, Any] = {}


@contextlib.contextmanager
def partial_run(folder: PathLike, *, command: str = "", filesystem: Any = None) -> Iterator[PartialRun]:
    """Mark ``folder`` as partial while the body runs.

    ``_PARTIAL`` is written first (and a stale ``_SUCCESS`` removed), so a folder whose run was
    interrupted, killed or failed keeps the marker; when the body ends well ``_SUCCESS`` is
    written (with ``run.summary`` as JSON) and ``_PARTIAL`` removed. ``filesystem``: a pyarrow
    filesystem for URI outputs (``folder`` is then its path)."""
    markers: Any = _LocalMarkers() if filesystem is None else _ArrowMarkers(filesystem)
    root = os.fspath(folder).rstrip("/")
    partial, success = f"{root}/{PARTIAL_MARKER}", f"{root}/{SUCCESS_MARKER}"
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    markers.delete(success)
    markers.write(partial, f"incomplete: {command or 'a segtools run'} started {started} "
                           f"(pid {os.getpid()}) has not finished; files here may be missing\n")
    run = PartialRun()
    try:
        yield run
    except BaseException as exc:
        reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"failed: {exc}"
        with contextlib.suppress(Exception):
            markers.write(partial, f"incomplete: {command or 'a segtools run'} started {started} "
                                   f"{reason}; files here may be missing\n")
        raise
    summary = {"schema_version": SUCCESS_SCHEMA_VERSION, "command": command, "started": started,
               "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **run.summary}
    markers.write_json(success, summary)
    markers.delete(partial)
