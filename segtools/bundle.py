"""Evidence bundles: what ``segtools collect`` copies from brokers' log dirs before anything
restarts, sealed by a SHA-256 manifest that ``segtools verify`` checks.

The proof of a loss lives in a stale replica's log until that broker rejoins and truncates it,
so the first step of an incident is a copy. A bundle is a folder of broker dirs (the shape every
segtools command already reads) plus:

* ``MANIFEST.json``: schema version, when and from where it was collected, and every copied
  file with its size, SHA-256, modification time and original path; files that changed while
  they were copied (a broker still writing) and inputs that were skipped are listed, never
  hidden;
* ``SHA256SUMS``: the same digests in ``sha256sum -c`` format, checkable without segtools.

Sources are opened read-only and never written; each copy is hashed from the bytes that were
read (not re-read afterwards), keeps the source's modification time (retention and the report's
incident window read it) and is made read-only. The run marks the bundle ``_PARTIAL`` until it
ends (``segtools.files.outputs.partial_run``).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from segtools.errors import InputError, display_path
from segtools.files.outputs import (
    PARTIAL_MARKER,
    SUCCESS_MARKER,
    atomic_write,
    partial_run,
    prepare_output_dir,
)
from segtools.files.sources import (
    ROOT_MARKERS,
    broker_id_of,
    is_partition_dir_name,
    parse_partition_dir_name,
)
from segtools.formats.names import SEGMENT_FILE_RE
from segtools.redact import RULES, Redactor
from segtools.version import __version__

MANIFEST = "MANIFEST.json"
SHA256SUMS = "SHA256SUMS"
#: version of MANIFEST.json's layout (docs/CONTRACT.md "segtools collect")
BUNDLE_SCHEMA_VERSION = 1
_KIND = "segtools-evidence-bundle"
_CHUNK = 1 << 20
#: the KRaft metadata log's partition dir: always collected (elections, ISR, fencing)
_METADATA_TOPIC = "__cluster_metadata"


@dataclass
class CollectedFile:
    path: str            # inside the bundle, '/'-separated
    source: str          # the original, as the user named it
    size: int
    sha256: str
    mtime_ns: int
    changed_while_copied: bool = False
    source_sha256: str | None = None   # set when the copy is redacted (differs from the source)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "source": self.source, "size": self.size,
                               "sha256": self.sha256, "mtime_ns": self.mtime_ns,
                               "changed_while_copied": self.changed_while_copied}
        if self.source_sha256 is not None:
            out["redacted"] = True
            out["source_sha256"] = self.source_sha256
        return out


@dataclass
class CollectResult:
    bundle: str
    files: list[CollectedFile] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    redactor: Redactor | None = None
    auto_metadata: str | None = None      # bundle name of a controller dir found, not named
    redaction_notes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def changed(self) -> list[CollectedFile]:
        return [f for f in self.files if f.changed_while_copied]

    @property
    def bytes(self) -> int:
        return sum(f.size for f in self.files)


@dataclass
class VerifyProblem:
    kind: str            # changed | missing | extra | incomplete | unreadable
    path: str
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.path}: {self.detail}"


@dataclass
class VerifyResult:
    bundle: str
    checked: int
    problems: list[VerifyProblem]
    manifest: dict[str, Any]

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {"schema_version": BUNDLE_SCHEMA_VERSION, "bundle": self.bundle,
                "files_checked": self.checked, "ok": self.ok,
                "problems": [{"kind": p.kind, "path": p.path, "detail": p.detail}
                             for p in self.problems]}


def _broker_dirs(path: str) -> list[str]:
    """The broker log dirs an input names: itself if it is one, else its sub-folders that are
    (a folder of broker dirs, as compare takes)."""
    if not os.path.isdir(path):
        raise InputError(f"{display_path(path)}: not a folder (collect takes broker log dirs)")
    if _is_log_dir(path):
        return [path]
    found = sorted(os.path.join(path, n) for n in os.listdir(path)
                   if os.path.isdir(os.path.join(path, n)) and _is_log_dir(os.path.join(path, n)))
    if not found:
        raise InputError(f"{display_path(path)}: not a Kafka log dir (no meta.properties, "
                         "checkpoint files or partition dirs) and holds none")
    return found


def _is_log_dir(path: str) -> bool:
    try:
        names = os.listdir(path)
    except OSError as exc:
        raise InputError(f"{display_path(path)}: cannot list ({exc.strerror})") from exc
    return any(n in ROOT_MARKERS for n in names) or any(
        is_partition_dir_name(n) and os.path.isdir(os.path.join(path, n)) for n in names)


def _bundle_name(log_dir: str, taken: set[str], prefix: str) -> str:
    node = broker_id_of(log_dir)
    base = f"{prefix}-{node}" if node is not None else (os.path.basename(log_dir.rstrip(os.sep)) or prefix)
    name, n = base, 2
    while name in taken or name in (MANIFEST, SHA256SUMS, PARTIAL_MARKER, SUCCESS_MARKER):
        name, n = f"{base}-{n}", n + 1
    taken.add(name)
    return name


def _wanted(partition_dir_name: str, topics: frozenset[str] | None) -> bool:
    if topics is None:
        return True
    try:
        topic = parse_partition_dir_name(partition_dir_name)[0]
    except InputError:
        return False
    return topic in topics or topic == _METADATA_TOPIC


def _open_source(src: str) -> int:
    """``src`` opened read-only, never through a symlink (one swapped in after the listing)."""
    return os.open(src, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))


def _copy(src: str, dst: str) -> tuple[int, str, int, bool]:
    """Copy ``src`` (opened read-only) to a new ``dst``; (size, sha256, mtime_ns, changed)."""
    digest = hashlib.sha256()
    size = 0
    fd = _open_source(src)
    try:
        before = os.fstat(fd)
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            # the size seen at open, no more: a file a live broker keeps appending to is copied
            # as it was then (and flagged below), not chased forever
            while size < before.st_size and (chunk := os.read(fd, min(_CHUNK, before.st_size - size))):
                digest.update(chunk)
                size += len(chunk)
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view):]
        finally:
            os.close(out)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    changed = (after.st_size != before.st_size or after.st_mtime_ns != before.st_mtime_ns
               or size != after.st_size)
    os.utime(dst, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.chmod(dst, 0o444)   # a copy of evidence is evidence too
    return size, digest.hexdigest(), before.st_mtime_ns, changed


def collect(inputs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str], *,
            topics: Iterable[str] | None = None,
            metadata_dirs: Sequence[str | os.PathLike[str]] = (),
            redact: bool = False, redact_salt: bytes | None = None) -> CollectResult:
    """Copy the evidence of ``inputs`` (broker log dirs, or folders of them) into the new
    folder ``out``: each broker dir's top-level files (meta.properties, the offset checkpoints,
    the clean-shutdown marker) and its partition dirs (all, or those of ``topics``, always with
    ``__cluster_metadata-0``), every file in them; ``metadata_dirs`` are controllers'
    metadata log dirs, copied whole. Writes MANIFEST.json and SHA256SUMS last.

    ``redact``: the segments of user topics are copied with their payloads replaced
    (segtools/redact.py); ``redact_salt`` (default: random, not kept) keys the pseudonyms, so
    bundles redacted with the same salt have the same pseudonyms."""
    named = [os.fspath(p) for p in inputs]
    meta_named = [os.fspath(p) for p in metadata_dirs]
    if not named and not meta_named:
        raise InputError("collect needs at least one broker log dir")
    wanted = frozenset(topics) if topics else None
    auto_metadata: str | None = None
    if not meta_named and named:
        # the controller's metadata log that compare/advise/report find next to the broker
        # dirs (segtools.forensics.api.default_metadata_log): without it in the bundle, the
        # bundle would answer with fewer causes (elections, unclean shutdowns) than the originals
        from segtools.forensics.api import default_metadata_log

        found = default_metadata_log(named)
        if found is not None:
            auto_metadata = os.path.dirname(os.path.normpath(found))
            meta_named = [auto_metadata]
    plan: list[tuple[str, str]] = []        # (source log dir, bundle dir name)
    taken: set[str] = set()
    seen: set[str] = set()
    for raw, prefix in [*((r, "broker") for r in named), *((r, "controller") for r in meta_named)]:
        for log_dir in _broker_dirs(raw):
            real = os.path.realpath(log_dir)
            if real not in seen:      # the same dir named twice (or through a link): once
                seen.add(real)
                plan.append((log_dir, _bundle_name(log_dir, taken, prefix)))
    root = prepare_output_dir(out, [*named, *meta_named])
    result = CollectResult(bundle=str(root))
    salt = b""
    if redact:
        salt = redact_salt if redact_salt is not None else os.urandom(16)
        result.redactor = Redactor(salt=salt)
    with partial_run(root, command="segtools collect") as run:
        for log_dir, name in plan:
            result.sources.append({"name": name, "path": os.path.abspath(log_dir),
                                   "node_id": broker_id_of(log_dir)})
            if auto_metadata is not None and log_dir == auto_metadata:
                result.auto_metadata = name
            _collect_dir(log_dir, root / name, name, wanted, result, top=True)
        manifest = {
            "schema_version": BUNDLE_SCHEMA_VERSION, "kind": _KIND,
            "segtools_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "host": socket.gethostname(), "topics": sorted(wanted) if wanted else None,
            "sources": result.sources, "files": [f.to_json() for f in result.files],
            "skipped": result.skipped,
            "redaction": _redaction_json(result, salt) if result.redactor is not None else None,
        }
        atomic_write(root / MANIFEST, json.dumps(manifest, indent=1) + "\n")
        atomic_write(root / SHA256SUMS, "".join(f"{f.sha256}  {f.path}\n" for f in result.files))
        run.summary = {"files": len(result.files), "bytes": result.bytes,
                       "changed_while_copied": len(result.changed), "skipped": len(result.skipped)}
    return result


def _redaction_json(result: CollectResult, salt: bytes) -> dict[str, Any]:
    r = result.redactor
    assert r is not None
    return {"redacted": True, "rules": RULES,
            # identifies the salt (bundles with equal salt_id have comparable pseudonyms)
            # without giving it away
            "salt_id": hashlib.sha256(b"segtools-salt-id" + salt).hexdigest()[:16],
            "topics_redacted": "every topic but internal ones (names starting with __)",
            "topics_kept": "internal topics (__consumer_offsets, __transaction_state, "
                           "__cluster_metadata, ...): they hold group ids, transactional ids, "
                           "client ids and hosts, and the group/transaction analyses read them",
            "files_redacted": sum(1 for f in result.files if f.source_sha256 is not None),
            "batches": r.batches, "batches_redacted": r.redacted,
            "control_batches_kept": r.control_kept, "notes": result.redaction_notes}


def _redacts(rel: str, name: str) -> bool:
    """A segment file (.log, also .deleted/.cleaned/.swap) of a user topic's partition dir."""
    m = SEGMENT_FILE_RE.match(name)
    if m is None or m.group("kind") != ".log":
        return False
    parts = rel.split("/")
    if len(parts) < 3:
        return True         # a segment outside any partition dir: payload all the same
    try:
        topic = parse_partition_dir_name(parts[1])[0]
    except InputError:
        return True         # fail closed: an unknown dir's segments are redacted
    return not topic.startswith("__")


def _copy_redacted(src: str, dst: str, redactor: Redactor, rel: str,
                   notes: list[dict[str, Any]]) -> tuple[int, str, str, int, bool]:
    """Copy ``src`` redacted; (size, sha256 of the copy, sha256 of the source, mtime_ns,
    changed). Read batch by batch through the segment-file object (pread, not mmap: a broker
    truncating the file would kill the process with SIGBUS): memory stays at one batch,
    whatever the segment's size."""
    from segtools.records.segment_file import SegmentFile

    source_digest, copy_digest = hashlib.sha256(), hashlib.sha256()
    # opened here with the bundle's flags and errors (no symlink; a PermissionError is a
    # skipped file), then read through the one segment-file object
    with SegmentFile(src, fd=_open_source(src)) as log:
        before = log.stat
        size = log.size
        read = 0

        def read_at(at: int, n: int) -> bytes:
            nonlocal read
            # fewer bytes where the file shrank since open: copied as far as it goes, and
            # flagged as changed below
            data = log.read_available(at, n)
            # reads go forward (a header, then its batch): the source digest takes each byte
            # once, in order
            if at <= read < at + len(data):
                source_digest.update(data[read - at:])
                read = at + len(data)
            return data

        first = len(redactor.notes)
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            for piece in redactor.stream(read_at, size):
                copy_digest.update(piece)
                rest = memoryview(piece)
                while rest:
                    rest = rest[os.write(out, rest):]
        finally:
            os.close(out)
        while read < size and (chunk := log.read_available(read, min(_CHUNK, size - read))):
            source_digest.update(chunk)     # the rest the redactor did not need (zero-filled)
            read += len(chunk)
        after = os.fstat(log.fd)
    notes.extend({"path": rel, **n.to_json()} for n in redactor.notes[first:])
    changed = (after.st_size != before.st_size or after.st_mtime_ns != before.st_mtime_ns
               or read != size)
    os.utime(dst, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.chmod(dst, 0o444)
    return size, copy_digest.hexdigest(), source_digest.hexdigest(), before.st_mtime_ns, changed


def _collect_dir(src: str, dst: Path, rel: str, wanted: frozenset[str] | None,
                 result: CollectResult, *, top: bool) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    with os.scandir(src) as it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        shown = display_path(entry.path)
        if entry.is_symlink():
            result.skipped.append({"path": shown, "reason": "symlink (copy its target instead)"})
            continue
        if entry.is_dir(follow_symlinks=False):
            if top and not is_partition_dir_name(entry.name):
                result.skipped.append({"path": shown, "reason": "not a partition dir"})
            elif top and not _wanted(entry.name, wanted):
                continue      # a topic the user did not ask for: not evidence of this incident
            else:
                _collect_dir(entry.path, dst / entry.name, f"{rel}/{entry.name}", wanted, result,
                             top=False)
            continue
        if not stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode):
            result.skipped.append({"path": shown, "reason": "not a regular file"})
            continue
        path = f"{rel}/{entry.name}"
        source_sha: str | None = None
        try:
            if result.redactor is not None and _redacts(path, entry.name):
                size, sha, source_sha, mtime_ns, changed = _copy_redacted(
                    entry.path, str(dst / entry.name), result.redactor, path,
                    result.redaction_notes)
            else:
                size, sha, mtime_ns, changed = _copy(entry.path, str(dst / entry.name))
        except PermissionError as exc:
            result.skipped.append({"path": shown, "reason": f"unreadable ({exc.strerror})"})
            continue
        result.files.append(CollectedFile(path, shown, size, sha, mtime_ns, changed, source_sha))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def read_manifest(bundle: str | os.PathLike[str]) -> dict[str, Any]:
    """MANIFEST.json of a bundle, checked for shape; InputError if it is not a bundle."""
    path = Path(os.fspath(bundle)) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"{display_path(bundle)}: not a segtools bundle (no {MANIFEST})") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{display_path(path)}: unreadable manifest ({exc})") from exc
    if not isinstance(data, dict) or data.get("kind") != _KIND or not isinstance(data.get("files"), list):
        raise InputError(f"{display_path(path)}: not a segtools bundle manifest")
    if data.get("schema_version") != BUNDLE_SCHEMA_VERSION:
        raise InputError(f"{display_path(path)}: manifest schema_version "
                         f"{data.get('schema_version')!r}, this segtools reads {BUNDLE_SCHEMA_VERSION}")
    return data


def verify(bundle: str | os.PathLike[str]) -> VerifyResult:
    """Re-hash every file MANIFEST.json lists; name every file that changed, is missing, or is
    in the bundle without being in the manifest, and an interrupted collect."""
    root = Path(os.fspath(bundle))
    manifest = read_manifest(root)
    problems: list[VerifyProblem] = []
    if (root / PARTIAL_MARKER).exists():
        problems.append(VerifyProblem("incomplete", PARTIAL_MARKER,
                                      "the collect run that made this bundle did not finish"))
    listed: set[str] = set()
    for item in manifest["files"]:
        rel = str(item.get("path", ""))
        if not rel or rel.startswith("/") or ".." in rel.split("/"):
            raise InputError(f"{display_path(root / MANIFEST)}: file path {rel!r} is outside the bundle")
        listed.add(rel)
        path = root / rel
        try:
            size = path.stat().st_size
            digest = _sha256(path)
        except FileNotFoundError:
            problems.append(VerifyProblem("missing", rel, "listed in the manifest, not in the bundle"))
            continue
        except OSError as exc:
            problems.append(VerifyProblem("unreadable", rel, exc.strerror or str(exc)))
            continue
        if digest != item.get("sha256") or size != item.get("size"):
            problems.append(VerifyProblem(
                "changed", rel, f"sha256 {digest} ({size} bytes), manifest says "
                                f"{item.get('sha256')} ({item.get('size')} bytes)"))
    own = {MANIFEST, SHA256SUMS, SUCCESS_MARKER, PARTIAL_MARKER}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            if rel not in listed and rel not in own:
                problems.append(VerifyProblem("extra", display_path(rel), "in the bundle, not in the manifest"))
    return VerifyResult(str(root), len(listed), problems, manifest)


def is_bundle(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder with a bundle's MANIFEST.json (not checked further)."""
    return os.path.isfile(os.path.join(os.fspath(path), MANIFEST))


def redacted_bundle_of(path: str | os.PathLike[str]) -> str | None:
    """The redacted bundle ``path`` is (or is inside), else None."""
    here = os.path.abspath(os.fspath(path))
    while True:
        if os.path.isfile(os.path.join(here, MANIFEST)):
            try:
                manifest = read_manifest(here)
            except InputError:
                return None
            return here if manifest.get("redaction") else None
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def metadata_dirs_of(bundle: str | os.PathLike[str]) -> list[str]:
    """The metadata log dirs of a bundle, for commands that read controllers (quorum): the
    controllers' dirs it holds, else every member dir holding ``__cluster_metadata-0``."""
    root = os.fspath(bundle)
    members = [str(s.get("name", "")) for s in read_manifest(root).get("sources", [])]
    has_log = [m for m in members if m and os.path.isdir(os.path.join(root, m, f"{_METADATA_TOPIC}-0"))]
    controllers = [m for m in has_log if m.startswith("controller")]
    chosen = controllers or has_log
    if not chosen:
        raise InputError(f"{display_path(root)}: the bundle holds no {_METADATA_TOPIC}-0 "
                         "(collect it with --metadata-dir)")
    return [os.path.join(root, m) for m in chosen]


__all__ = ["BUNDLE_SCHEMA_VERSION", "MANIFEST", "SHA256SUMS", "CollectResult", "CollectedFile",
           "VerifyProblem", "VerifyResult", "collect", "is_bundle", "metadata_dirs_of", "read_manifest",
           "redacted_bundle_of",
           "verify"]
