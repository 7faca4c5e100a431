"""Who opens evidence files (issue 24): one segment-file object, one index reader.

Scans production source with ``ast`` for the calls that read a file's bytes (``open`` in a
binary read mode, ``os.open`` with ``O_RDONLY``, ``os.pread``/``preadv``, ``mmap``,
``numpy.fromfile``/``memmap``, pyarrow's ``open_input_*``, ``Path.read_bytes``) and holds
every module that makes one to the list below, each with what it reads:

* :data:`SEGMENT_READERS` read ``.log`` segments themselves. Everything else reads a segment
  through ``segtools.records.segment_file.SegmentFile`` (on ``files.read_window.ReadWindow``).
  Modules with their own ``.log`` access by this rule: 10 before this step (commit ecf8ec6:
  object reader, columnar, dump's fast text window, dump's index peek, ``--skip-corrupt``,
  ``files/read_window`` under salvage's scan and the writer's recovery walk, the
  transactions marker cache, the bundle's redacted copy, export's tail check, the
  real-cluster engine's last-offset peek); 6 after it; 3 after the object reader, export's
  tail walk and the real engine's peek moved onto it; 2 after the columnar engines' numpy
  window and export's grouped read of small files moved into the byte layer
  (``ArrayWindow``, ``read_files``); 1 after dump's fast text window read through
  ``SegmentFile`` too, guarded by :data:`AFTER`: the byte layer itself (docs/ARCHITECTURE.md).
* :data:`OTHER_READERS` open files that are not segments read as batches (small files, text
  inputs, byte-for-byte copies and digests).

A new module that opens a file fails here until it is classified; a segment reader added to
the list fails the count.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ("segtools", "cli", "spark")

#: modules that open ``.log`` segments and read them as batches themselves -> why not yet
#: through SegmentFile
SEGMENT_READERS = {
    "segtools/files/read_window.py": "the segment-file object's byte layer (SegmentFile's base, "
                                     "the columnar engines' ArrayWindow, export's grouped read "
                                     "of small files; salvage's scan uses it directly)",
}
#: the count issue 24 asks for (modules with their own .log access): 10 before, 6 after
#: 0edc4f0, 3 after the object reader, export's tail walk and the real engine's peek moved
#: onto SegmentFile, 2 once the columnar engines read through SegmentFile's ArrayWindow, now
#: (dump's fast text window reads through SegmentFile too):
AFTER = 1

#: modules that open other files (or copy any file byte for byte) -> what they read
OTHER_READERS = {
    "segtools/bundle.py": "copies every file of a log dir byte for byte; redacted segments are "
                          "read through SegmentFile on the descriptor it opened",
    "segtools/files/checkpoints.py": "checkpoint and root text files (and a directory fsync)",
    "segtools/files/indexes.py": "the one index reader (.index, .timeindex, .txnindex)",
    "segtools/files/remote.py": "copies a remote file to a local temporary copy",
    "segtools/files/salvage_marker.py": "salvage's marker file",
    "segtools/files/snapshots.py": "producer snapshots",
    "segtools/files/sources.py": "first/last 64 KiB of files for the byte-exact copy check; the "
                                 "pseudo-file probe",
    "segtools/forensics/acks.py": "the producers' acks files",
    "segtools/forensics/inputs.py": "digests of whole files (byte-exact copies)",
    "segtools/forensics/lost_out.py": "digests of the files it wrote",
    "segtools/realcluster/cluster.py": "broker log4j output",
    "segtools/realcluster/kafka_runtime.py": "downloaded Kafka jars",
    "segtools/simulate/scenario.py": "scenario files",
    "segtools/tier/aiven.py": "Aiven's remote objects (manifest, chunked and encrypted segment "
                              "objects) and the RSA private key; decodes them, never walks batches",
    "segtools/tier/remote_view.py": "copies a remote tier's objects (object store or Aiven's layout) "
                                    "into a local staging folder",
    "segtools/writer/log_writer.py": "opens its own files read-only to fsync them",
}

_NUMPY_READS = {"np.fromfile", "np.memmap", "numpy.fromfile", "numpy.memmap"}


def _name(node: ast.expr) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def file_reads(tree: ast.AST) -> set[str]:
    """The file-reading calls in ``tree`` (by kind)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        last = name.rsplit(".", 1)[-1]
        if name in ("open", "io.open"):
            mode = node.args[1] if len(node.args) > 1 else next(
                (k.value for k in node.keywords if k.arg == "mode"), None)
            if (isinstance(mode, ast.Constant) and isinstance(mode.value, str)
                    and "b" in mode.value and "r" in mode.value and "+" not in mode.value):
                found.add("open(rb)")
        elif name == "os.open":
            if any(isinstance(n, ast.Attribute) and n.attr == "O_RDONLY"
                   for arg in node.args for n in ast.walk(arg)):
                found.add("os.open(O_RDONLY)")
        elif name in ("os.pread", "os.preadv", "mmap.mmap") or name in _NUMPY_READS:
            found.add(name)
        elif last in ("open_input_file", "open_input_stream", "read_bytes"):
            found.add(f".{last}")
    return found


@functools.cache
def _production_trees() -> dict[str, ast.AST]:
    return {path.relative_to(REPO).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
            for d in SOURCE_DIRS for path in sorted((REPO / d).rglob("*.py"))}


def production_file_readers() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for rel, tree in _production_trees().items():
        reads = file_reads(tree)
        if reads:
            out[rel] = reads
    return out


def test_every_module_that_opens_a_file_is_classified() -> None:
    found = production_file_readers()
    unclassified = sorted(set(found) - set(SEGMENT_READERS) - set(OTHER_READERS))
    assert unclassified == [], (
        "these modules open files themselves; read segments through "
        "segtools.records.segment_file.SegmentFile and indexes through segtools.files.indexes, "
        "or classify them here with a reason:\n"
        + "\n".join(f"{m}: {sorted(found[m])}" for m in unclassified))
    # an entry whose module no longer opens anything is stale: drop it (the count goes down)
    stale = sorted((set(SEGMENT_READERS) | set(OTHER_READERS)) - set(found))
    assert stale == [], f"no longer open files, remove from the lists: {stale}"


def test_segment_readers_count() -> None:
    assert len(SEGMENT_READERS) == AFTER
    assert not set(SEGMENT_READERS) & set(OTHER_READERS)


def test_one_index_reader() -> None:
    """Index entries are unpacked only by files/indexes (the writer's index_files writes them):
    no other production module imports an index entry's struct format or dtype. Before this
    step three modules read index entries (files/indexes, dump's Slots, the writer's reload)."""
    layouts = {"OFFSET_INDEX_ENTRY_STRUCT_FORMAT", "TIME_INDEX_ENTRY_STRUCT_FORMAT",
               "ABORTED_TXN_STRUCT_FORMAT", "OFFSET_INDEX_DTYPE", "TIME_INDEX_DTYPE"}
    allowed = {"segtools/files/indexes.py", "segtools/writer/index_files.py"}
    users = []
    for rel, tree in _production_trees().items():
        for node in ast.walk(tree):
            if (isinstance(node, ast.ImportFrom)
                    and (node.module or "").startswith("segtools.formats")
                    and {a.name for a in node.names} & layouts and rel not in allowed):
                users.append(rel)
    assert users == []


def test_the_scan_sees_each_kind_of_read() -> None:
    src = """
open(p, "rb"); open(p, mode="rb"); open(p, "r+b"); open(p, "w"); open(p)
os.open(p, os.O_RDONLY | os.O_NONBLOCK); os.open(p, os.O_WRONLY)
os.pread(fd, 1, 0); mmap.mmap(fd, 0); np.fromfile(p); fs.open_input_file(p); q.read_bytes()
"""
    assert file_reads(ast.parse(src)) == {
        "open(rb)", "os.open(O_RDONLY)", "os.pread", "mmap.mmap", "np.fromfile",
        ".open_input_file", ".read_bytes"}
