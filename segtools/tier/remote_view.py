"""The remote tier given to ``segtools tier --remote`` as a local folder in LocalTieredStorage's
layout, whatever it was: a LocalTieredStorage folder on disk is used as it is; one on an object
store (``s3://``, ``gs://``... through segtools.files.remote) is copied; Aiven's object format
(local or on an object store) is decoded segment by segment (segtools.tier.aiven) into the
plain segment and indexes. Temporary copies are removed when the ``with`` block ends; messages
about them are turned back into the objects' names by :meth:`RemoteView.show`.

Nothing is written to the remote tier: objects are only listed and read.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO, cast

from segtools.errors import InputError, SegtoolsError
from segtools.files import remote
from segtools.formats.names import filename_prefix_from_offset
from segtools.tier import aiven

FORMATS = ("auto", "local", "aiven")
#: LocalTieredStorage's ``<topic>-<partition>-<topicId>/<start>-<segmentId>.<suffix>``
_LTS_FILE = re.compile(r"(?:^|/)[^/]+-\d+-[A-Za-z0-9_-]{22}/\d{20}-[A-Za-z0-9_-]{22}\.[a-z_]+$")


@dataclass(frozen=True)
class Undecodable:
    """Objects of one remote segment that could not be turned into a segment."""

    segment_id: str
    topic: str
    partition: int
    start_offset: int
    where: str
    reason: str
    #: ``cannot_tell`` when only the private key is missing, else ``unreadable_object``
    kind: str


@dataclass
class RemoteView:
    root: str
    format: str
    undecodable: dict[str, Undecodable] = field(default_factory=dict)
    #: Aiven: segment id -> (object base key relative to the given root, bytes of its objects)
    objects: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: Aiven: segment id -> the plugin's copy of the segment's metadata in its manifest
    manifest_segments: dict[str, dict[str, Any]] = field(default_factory=dict)
    _names: dict[str, str] = field(default_factory=dict)
    _tmp: str | None = None

    def manifest_says(self, segment_id: str) -> str:
        """What the segment's manifest says it holds (Aiven's plugin copies the segment's
        metadata into it): for objects no metadata record names."""
        seg = self.manifest_segments.get(segment_id)
        if not seg:
            return ""
        def num(key: str) -> str:
            v = seg.get(key)
            return str(v) if isinstance(v, int) and not isinstance(v, bool) else "?"
        return (f"; its manifest says offsets [{num('startOffset')}, {num('endOffset')}], "
                f"uploaded by broker {num('brokerId')} at {num('eventTimestampMs')} ms")

    def show(self, text: str) -> str:
        """``text`` with the temporary paths replaced by the objects they were read from."""
        if self._tmp is None:
            return text
        return re.sub(re.escape(self._tmp) + r"[^\s,:;]*",
                      lambda m: self._names.get(m.group(0), m.group(0)), text)


def _list(root: str) -> tuple[list[tuple[str, int]], aiven.Opener, str]:
    """(relative key, size) of every object under ``root``, an opener of a relative key, and
    how to name a key in messages."""
    if remote.is_remote(root):
        from pyarrow import fs as pafs

        filesystem, inner = remote.open_uri(root)
        try:
            infos = filesystem.get_file_info(pafs.FileSelector(inner, recursive=True,
                                                               allow_not_found=False))
        except (OSError, ValueError) as e:
            raise InputError(f"{root}: cannot list the remote storage: {e}") from None
        inner = inner.rstrip("/")
        keys = [(i.path[len(inner) + 1:], int(i.size or 0)) for i in infos
                if i.type == pafs.FileType.File and i.path.startswith(inner + "/")]

        def open_(key: str) -> BinaryIO:
            try:
                return cast(BinaryIO, filesystem.open_input_stream(f"{inner}/{key}"))
            except OSError as e:
                raise InputError(f"{root.rstrip('/')}/{key}: cannot read: {e}") from None
        return sorted(keys), open_, root.rstrip("/")
    local = remote.local_path(root)
    if not os.path.isdir(local):
        raise InputError(f"{root}: not a folder")
    keys = []
    try:
        for dirpath, dirs, files in os.walk(local, onerror=_raise):
            dirs.sort()
            rel = os.path.relpath(dirpath, local)
            for name in sorted(files):
                key = name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}"
                keys.append((key, os.path.getsize(os.path.join(dirpath, name))))
    except OSError as e:
        raise InputError(f"{root}: cannot list the remote storage folder: {e.strerror}") from None
    return keys, aiven.local_opener(local), local.rstrip("/")


def _raise(e: OSError) -> None:
    raise e


def detect(keys: list[tuple[str, int]]) -> str:
    """``aiven`` when any object is named in Aiven's layout, else ``local``."""
    return "aiven" if any(aiven.KEY_RE.match(k) for k, _ in keys) else "local"


@contextlib.contextmanager
def remote_view(root: str, fmt: str = "auto",
                private_key: aiven.PrivateKey | None = None) -> Iterator[RemoteView]:
    if fmt not in FORMATS:
        raise InputError(f"remote format {fmt!r}: one of {', '.join(FORMATS)}")
    if fmt in ("auto", "local") and not remote.is_remote(root):
        keys: list[tuple[str, int]] = []
        if fmt == "auto":
            keys, _, _ = _list(root)
        if fmt == "local" or detect(keys) == "local":
            yield RemoteView(remote.local_path(root), "local")
            return
    keys, opener, shown = _list(root)
    if fmt == "auto":
        fmt = detect(keys)
    tmp = tempfile.mkdtemp(prefix="segtools-tier-")
    view = RemoteView(tmp, fmt, _tmp=tmp)
    view._names[tmp] = shown
    try:
        if fmt == "local":
            _copy_local_layout(keys, opener, shown, view)
        else:
            _decode_aiven(keys, opener, shown, private_key, view)
        yield view
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _copy_local_layout(keys: list[tuple[str, int]], opener: aiven.Opener, shown: str,
                       view: RemoteView) -> None:
    tmp = cast(str, view._tmp)
    for key, _ in keys:
        if not _LTS_FILE.search(key):
            continue
        rel = "/".join(key.split("/")[-2:])   # the partition folder and the file
        dest = os.path.join(tmp, *rel.split("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with opener(key) as src, open(dest, "xb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        view._names[dest] = f"{shown}/{key}"
        view._names[os.path.dirname(dest)] = f"{shown}/{key.rsplit('/', 1)[0]}"


def _decode_aiven(keys: list[tuple[str, int]], opener: aiven.Opener, shown: str,
                  key: aiven.PrivateKey | None, view: RemoteView) -> None:
    tmp = cast(str, view._tmp)
    groups: dict[str, dict[str, Any]] = {}
    for k, size in keys:
        m = aiven.KEY_RE.match(k)
        if m is None:
            continue
        g = groups.setdefault(m.group("sid"), {"m": m, "suffixes": set(), "size": 0})
        g["suffixes"].add(m.group("suffix"))
        g["size"] += size
        g["base"] = k[:-len(m.group("suffix"))]
    for sid, g in sorted(groups.items()):
        m = g["m"]
        topic, tid, part, start = m.group("topic"), m.group("tid"), int(m.group("part")), \
            int(m.group("start"))
        base, where = g["base"], f"{shown}/{g['base']}"
        view.objects[sid] = (base, g["size"])
        folder = os.path.join(tmp, f"{topic}-{part}-{tid}")
        prefix = os.path.join(folder, f"{filename_prefix_from_offset(start)}-{sid}")
        view._names[folder] = f"{shown}/{base.rsplit('/', 1)[0]}"
        view._names[prefix + aiven.LOG] = where + aiven.LOG
        missing = [s for s in aiven.SUFFIXES if s not in g["suffixes"]]
        if missing:
            view.undecodable[sid] = Undecodable(
                sid, topic, part, start, where,
                f"{where}: has no {', '.join(missing)} object (an upload that died before it "
                "was written, or an object deleted): the segment cannot be read",
                "unreadable_object")
            continue
        try:
            manifest = aiven.read_manifest(opener, base, display=where)
            if manifest.encryption is not None and key is None:
                view.undecodable[sid] = Undecodable(
                    sid, topic, part, start, where,
                    f"{where}: encrypted (key id {manifest.encryption.key_id!r}) and no "
                    "--private-key given: its content is not checked", "cannot_tell")
                continue
            os.makedirs(folder, exist_ok=True)
            aiven.decode_segment(opener, base, prefix, key, display=where, manifest=manifest)
            if manifest.segment is not None:
                view.manifest_segments[sid] = manifest.segment
        except SegtoolsError as e:
            for suffix in (aiven.LOG, *aiven.INDEX_SUFFIX.values()):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(prefix + suffix)
            view.undecodable[sid] = Undecodable(sid, topic, part, start, where, str(e),
                                                "unreadable_object")
