"""Inputs and outputs on object stores and other pyarrow filesystems.

Every command takes ``s3://``, ``gs://``, ``hdfs://`` and ``file://`` URIs besides local
paths. The filesystem is ``pyarrow.fs.FileSystem.from_uri``, so credentials come the standard
way for each store (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``AWS_PROFILE`` and
``~/.aws``; ``GOOGLE_APPLICATION_CREDENTIALS``; the Hadoop configuration), and a custom S3
endpoint comes from ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` (honoured by pyarrow's S3
filesystem) or ``?endpoint_override=host:port&scheme=http`` in the URI.

Discovery (listing, ``meta.properties``) is :mod:`segtools.files.sources`. The readers open local
files (``pread`` on a descriptor), so a remote file is read through a local copy:

* :func:`local_file` streams one object to a private temporary file (a Spark executor reading
  one segment, export reading one segment) and removes it afterwards;
* :func:`mirror_inputs` copies the Kafka files of URI inputs (what discovery listed, nothing
  else) into one temporary tree with the same folder names, for the commands that read many
  small files beside the segments (dump, in-process compare); :meth:`Mirror.rewrite` turns
  the temporary paths in their output back into the URIs.

Nothing is ever written to an input filesystem here; copies are read with
``open_input_stream`` only.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

from segtools.errors import InputError

__all__ = ["is_uri", "is_remote", "open_uri", "uri_location", "local_file", "fetch",
           "Mirror", "mirror_inputs", "file_size", "local_path", "RewritingStream", "origin_specs"]

_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_CHUNK = 1 << 20
#: schemes whose pyarrow path is "bucket/key" (the URI's authority and path)
_BUCKET_SCHEMES = ("s3", "gs", "gcs")
_FILESYSTEMS: dict[str, Any] = {}


def is_uri(path: str | os.PathLike[str]) -> bool:
    """``scheme://...`` (``file://`` included)."""
    return isinstance(path, str) and _SCHEME_RE.match(path) is not None


def is_remote(path: str | os.PathLike[str]) -> bool:
    """A URI that is not ``file://``: read through pyarrow, never with ``open``."""
    return is_uri(path) and not str(path).lower().startswith("file://")


def local_path(path: str) -> str:
    """The local path of a ``file://`` URI; other paths unchanged."""
    if str(path).lower().startswith("file://"):
        return unquote(urlparse(path).path)
    return path


def uri_location(uri: str) -> tuple[str, str]:
    """``(scheme://authority, /path)`` of a URI without touching the network: what
    :mod:`segtools.files.outputs` compares (same bucket, prefix inside a prefix). ``file://``
    URIs become local paths (``("", path)``)."""
    if uri.lower().startswith("file://"):
        return "", os.path.abspath(local_path(uri))
    parsed = urlparse(uri)
    path = "/" + parsed.path.strip("/")
    return f"{parsed.scheme.lower()}://{parsed.netloc}", path


def open_uri(uri: str) -> tuple[Any, str]:
    """``(pyarrow filesystem, path inside it)`` for a URI; InputError when pyarrow cannot
    make the filesystem (unknown scheme, no hdfs client, bad URI)."""
    from pyarrow import fs as pafs

    parsed = urlparse(uri)
    scheme = parsed.scheme.lower()
    # the configuration pyarrow reads from the environment is part of the key (a changed
    # endpoint or profile gets a new filesystem)
    key = f"{scheme}://{parsed.netloc}?{parsed.query}" + repr(sorted(
        (k, v) for k, v in os.environ.items() if k.startswith(("AWS_", "GOOGLE_", "GCE_"))))
    if scheme in _BUCKET_SCHEMES and key in _FILESYSTEMS:
        # one filesystem per bucket: from_uri may ask S3 for the bucket's region each time
        return _FILESYSTEMS[key], f"{parsed.netloc}/{unquote(parsed.path).strip('/')}".rstrip("/")
    try:
        filesystem, inner = pafs.FileSystem.from_uri(uri)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises ValueError, OSError, ArrowInvalid...
        raise InputError(f"{uri}: cannot open filesystem: {exc}") from None
    if scheme in _BUCKET_SCHEMES:
        _FILESYSTEMS[key] = filesystem
    return filesystem, inner


def file_size(path: str) -> int:
    """Size of a local file or of an object."""
    if not is_remote(path):
        return os.path.getsize(local_path(path))
    filesystem, inner = open_uri(path)
    info = filesystem.get_file_info(inner)
    return int(info.size or 0)


def fetch(uri: str, dest: str) -> None:
    """Stream the object ``uri`` to the new local file ``dest`` (bounded memory)."""
    filesystem, inner = open_uri(uri)
    try:
        with filesystem.open_input_stream(inner) as src, open(dest, "xb") as dst:
            while True:
                chunk = src.read(_CHUNK)
                if not chunk:
                    break
                dst.write(chunk)
    except FileNotFoundError:
        raise InputError(f"cannot read {uri}: No such file or directory") from None
    except OSError as exc:
        raise InputError(f"cannot read {uri}: {exc}") from None


@contextlib.contextmanager
def local_file(path: str) -> Iterator[str]:
    """A local path holding the bytes of ``path``: the path itself when it is local (or a
    ``file://`` URI), else a temporary copy under the object's own name (names carry the base
    offset the readers need), removed when the block ends."""
    if not is_remote(path):
        yield local_path(path)
        return
    from segtools.errors import FormatError

    tmpdir = tempfile.mkdtemp(prefix="segtools-remote-")
    try:
        local = os.path.join(tmpdir, path.rstrip("/").rsplit("/", 1)[-1] or "object")
        fetch(path, local)
        try:
            yield local
        except FormatError as exc:   # located at the object, not at its temporary copy
            if exc.path == local:
                exc.path = path
                # Kafka's wording names the file in the message too ("... in file <path>.")
                exc.reason = exc.reason.replace(local, path)
                exc.args = (exc._render(),)
            raise
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


@dataclass
class Mirror:
    """Local copies of URI inputs: ``paths`` are the inputs to hand to the readers (local
    inputs unchanged), ``pairs`` the (local prefix, URI prefix) of each copied input."""

    paths: list[str] = field(default_factory=list)
    pairs: list[tuple[str, str]] = field(default_factory=list)
    root: str | None = None

    @property
    def active(self) -> bool:
        return bool(self.pairs)

    def origin(self, path: str) -> str:
        """The URI a mirrored local path stands for (other paths unchanged)."""
        for local, uri in self.pairs:
            if path == local or path.startswith(local + "/"):
                return uri + path[len(local):]
        return path

    def rewrite(self, text: str) -> str:
        """``text`` with every mirrored prefix replaced by its URI."""
        for local, uri in self.pairs:
            text = text.replace(local, uri)
        return text

    def rewrite_json(self, obj: Any) -> Any:
        """A JSON-able value with the mirrored prefixes replaced in every string."""
        if not self.pairs:
            return obj
        if isinstance(obj, str):
            return self.rewrite(obj)
        if isinstance(obj, list):
            return [self.rewrite_json(v) for v in obj]
        if isinstance(obj, tuple):
            return tuple(self.rewrite_json(v) for v in obj)
        if isinstance(obj, dict):
            return {self.rewrite_json(k) if isinstance(k, str) else k: self.rewrite_json(v)
                    for k, v in obj.items()}
        return obj


def _files_to_copy(uri: str) -> list[str]:
    """Every file discovery found under one URI input: the log dirs' own files, each
    partition dir's files (segments, indexes, snapshots, checkpoints) and the controller's
    metadata log of a cluster folder."""
    from segtools.files.sources import resolve

    res = resolve([uri], check_copies=False)
    item = res.inputs[0]
    found: list[str] = []
    for ld in item.log_dirs:
        found.extend(ld.root_files)
    for part in [*item.all_partitions, *res.metadata_logs]:
        found.extend(part.files or part.segments)
    return list(dict.fromkeys(found))


@contextlib.contextmanager
def mirror_inputs(paths: Sequence[str]) -> Iterator[Mirror]:
    """Copy the Kafka files of every remote input into one temporary tree (removed when the
    block ends) and yield the :class:`Mirror`. Each input keeps its own name and its parent's
    name (a segment's parent names its partition, a broker dir's parent is the cluster folder).
    Local inputs are returned as they are."""
    mirror = Mirror()
    remote = [p for p in paths if is_remote(p)]
    if not remote:
        mirror.paths = [local_path(p) if is_uri(p) else p for p in paths]
        yield mirror
        return
    mirror.root = tempfile.mkdtemp(prefix="segtools-mirror-")
    try:
        for i, raw in enumerate(paths):
            if not is_remote(raw):
                mirror.paths.append(local_path(raw) if is_uri(raw) else raw)
                continue
            uri = raw.rstrip("/")
            parent_uri, _, name = uri.rpartition("/")
            parent_name = parent_uri.rsplit("/", 1)[-1] if "/" in parent_uri.split("://", 1)[-1] else "root"
            base = os.path.join(mirror.root, str(i), parent_name or "root")
            os.makedirs(base)
            mirror.pairs.append((base, parent_uri))
            mirror.paths.append(os.path.join(base, name))
            for f in _files_to_copy(uri):
                rel = f[len(parent_uri):].lstrip("/")
                dest = os.path.join(base, rel)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                fetch(f, dest)
            if not os.path.exists(mirror.paths[-1]):
                os.makedirs(mirror.paths[-1])   # nothing Kafka in it: the readers say so
        # longest local prefix first, so a nested one is replaced before its parent
        mirror.pairs.sort(key=lambda pair: -len(pair[0]))
        yield mirror
    finally:
        shutil.rmtree(mirror.root, ignore_errors=True)


class RewritingStream:
    """A text stream that writes through :meth:`Mirror.rewrite` (dump and compare print the
    temporary paths of a mirror; the user sees the URIs)."""

    def __init__(self, stream: Any, mirror: Mirror) -> None:
        self._stream = stream
        self._mirror = mirror

    def write(self, text: Any) -> int:
        self._stream.write(self._mirror.rewrite(text) if isinstance(text, str) else text)
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding...
        return getattr(self._stream, name)


def origin_specs(specs: Sequence[Any], mirror: Mirror) -> list[Any]:
    """Compare's replica specs with their mirrored paths turned back into URIs, for runners
    whose executors read the segments themselves (Spark); unchanged without a mirror."""
    if not mirror.active:
        return list(specs)
    from dataclasses import replace

    return [replace(s, partition_dir=mirror.origin(s.partition_dir), log_dir=mirror.origin(s.log_dir),
                    segments=[(mirror.origin(p), n) for p, n in s.segments]) for s in specs]
