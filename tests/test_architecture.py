"""``formats/`` is the source of Kafka's layouts (docs/ARCHITECTURE.md "Layers").

Scans the package source with ``ast`` and fails when, outside ``formats/``:

* a ``struct`` format string literal appears (``struct.Struct(">qi")``, ``struct.pack(">I", ...)``):
  the format must come from a ``*_STRUCT_FORMAT`` constant declared in ``formats/`` next to the
  construct declaration it mirrors;
* an attribute bit mask (0x07, 0x08, 0x10, 0x20, 0x40) is applied to something named
  ``attributes``/``attrs``: the masks are ``formats.record_batch.*_MASK``;
* a segment file name is cut by hand (``name[:20]``, ``f"{offset:020d}"``): the rules are in
  ``formats.names``;
* (issue 24, the blind spots) a ``struct`` format string held in a variable or passed as an
  argument (``fmt = ">ii"``; ``read(path, ">qi")``) counts as a ``struct`` layout too; a numpy
  byte-order dtype string (``">i4"``, ``(name, ">i8")``) is a ``numpy_layout`` (the dtypes are
  ``formats.indexes.*_DTYPE`` and friends, derived from the declarations); a module- or
  class-level name bound to 61 or 17 (``RECORD_BATCH_OVERHEAD``, ``HEADER_SIZE_UP_TO_MAGIC`` /
  ``CRC_OFFSET``) is a ``redeclared`` layout constant.

The allow-list below is explicit and each entry says why it cannot use ``formats/`` (yet).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ["segtools", "cli", "spark"]
STRUCT_FUNCS = {"Struct", "pack", "unpack", "pack_into", "unpack_from", "calcsize", "iter_unpack"}
ATTRIBUTE_MASKS = {0x07, 0x08, 0x10, 0x20, 0x40}

#: (file, rule) -> why it is allowed
ALLOWED = {
    # codec framing (xerial snappy blocks, lz4 frame header of KAFKA-3160): compression
    # formats, not Kafka record layouts; they live with the codecs
    ("segtools/primitives/codecs.py", "struct"): "codec framing, not a Kafka record layout",
    # the primitive types (int8..float64) of the one message engine: the generated-message
    # specs, the coordinators' int16 version prefix and the tools' Integer/Long decoders
    # read them through it (read_fixed, fixed_bytes)
    ("segtools/primitives/messages.py", "struct"): "the message engine's primitive types",
    # the real engine's hand-written ProduceRequest v8 and its peek at a live broker's batch
    # lengths: Kafka's network protocol framing (request header, produce request), not a log
    # layout; kafka-python's protocol classes are not a dependency of the engine
    ("segtools/realcluster/raw_produce.py", "struct"): "Kafka wire-protocol request framing",
    ("segtools/realcluster/cluster.py", "struct"): "batch length peek while a broker writes",
    ("segtools/realcluster/heartbeat.py", "struct"): "Kafka wire-protocol request framing",
}

#: a struct format: byte order, then codes (and counts); at least one code letter
STRUCT_FORMAT_RE = re.compile(r"^[<>!=@][0-9]*[xcbB?hHiIlLqQnNefdspP][0-9xcbB?hHiIlLqQnNefdspP]*$")
#: a numpy dtype string with an explicit byte order (Kafka's layouts are big-endian)
NUMPY_LAYOUT_RE = re.compile(r"^[<>][iuf][1248]$")
#: values of the v2 header's layout constants that were redeclared outside formats/
REDECLARED_VALUES = {61, 17}


def _sources() -> list[Path]:
    files = []
    for d in SOURCE_DIRS:
        files += sorted((REPO / d).rglob("*.py"))
    return [p for p in files if ".venv" not in p.parts]


def _is_struct_call(node: ast.Call) -> bool:
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr in STRUCT_FUNCS
            and isinstance(f.value, ast.Name) and f.value.id == "struct")


def _names_attributes(node: ast.AST) -> bool:
    text = ast.unparse(node).lower()
    return "attributes" in text or "attrs" in text


@functools.cache
def _parse(path: Path, mtime_ns: int) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _redeclared(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, name)`` of module- and class-level names bound to a layout constant's value."""
    out = []
    scopes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))]
    for scope in scopes:
        for stmt in getattr(scope, "body", []):
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and isinstance(stmt.value, ast.Constant):
                value = stmt.value.value
                if type(value) is int and value in REDECLARED_VALUES:
                    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                    out += [(stmt.lineno, ast.unparse(t)) for t in targets]
    return out


def violations() -> list[tuple[str, str, int, str]]:
    found = []
    for path in _sources():
        rel = str(path.relative_to(REPO))
        tree = _parse(path, path.stat().st_mtime_ns)
        seen: set[int] = set()    # string constants already judged (a struct call's format, f-string specs)
        for node in ast.walk(tree):
            if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
                seen.update(id(c) for c in ast.walk(node.format_spec))
            elif isinstance(node, ast.Call) and _is_struct_call(node) and node.args:
                seen.add(id(node.args[0]))
        found += [(rel, "redeclared", line, name) for line, name in _redeclared(tree)]
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                    and id(node) not in seen):
                if NUMPY_LAYOUT_RE.match(node.value):   # first: ">i4" is no struct format
                    found.append((rel, "numpy_layout", node.lineno, node.value))
                elif STRUCT_FORMAT_RE.match(node.value):
                    found.append((rel, "struct", node.lineno, node.value))   # through a variable
            if isinstance(node, ast.Call) and _is_struct_call(node) and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    found.append((rel, "struct", node.lineno, first.value))
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitAnd):
                for const, other in ((node.left, node.right), (node.right, node.left)):
                    if (isinstance(const, ast.Constant) and const.value in ATTRIBUTE_MASKS
                            and _names_attributes(other)):
                        found.append((rel, "mask", node.lineno, ast.unparse(node)))
            elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
                s = node.slice
                if (s.lower is None and isinstance(s.upper, ast.Constant) and s.upper.value == 20
                        and s.step is None):
                    found.append((rel, "file_name", node.lineno, ast.unparse(node)))
            elif isinstance(node, ast.FormattedValue) and node.format_spec is not None:
                spec = ast.unparse(node.format_spec)
                if "020d" in spec:
                    found.append((rel, "file_name", node.lineno, ast.unparse(node.value)))
    return [v for v in found if (v[0], v[1]) not in ALLOWED]


def test_kafka_layouts_masks_and_file_names_come_from_formats():
    found = violations()
    assert not found, "outside formats/ (use its constants):\n" + "\n".join(
        f"  {f}:{line}: {rule}: {what}" for f, rule, line, what in found)


def test_the_scan_finds_what_it_forbids(tmp_path, monkeypatch):
    # the rules themselves: a module with one of each must give three findings
    pkg = tmp_path / "segtools"
    pkg.mkdir()
    (pkg / "bad.py").write_text(
        "import struct\n"
        "H = struct.Struct('>qi')\n"
        "def f(attributes, name, o):\n"
        "    return attributes & 0x07, name[:20], f'{o:020d}'\n")
    # issue 24's blind spots: a format through a variable or an argument, a numpy layout, a
    # redeclared 61 / 17; a text alignment spec (f'{x:>4}') is not a layout
    (pkg / "hidden.py").write_text(
        "import numpy as np\n"
        "FMT = '>ii'\n"
        "DT = np.dtype([('relative_offset', '>i4')])\n"
        "OVERHEAD = 61\n"
        "class K:\n"
        "    UP_TO_MAGIC = 17\n"
        "def g(read, path, x):\n"
        "    return read(path, '>qi'), f'{x:>4}', f'{x:<13}'\n")
    monkeypatch.setattr(__import__(__name__), "REPO", tmp_path)
    rules = sorted(rule for _, rule, _, _ in violations())
    assert rules == ["file_name", "file_name", "mask", "numpy_layout", "redeclared", "redeclared",
                     "struct", "struct", "struct"]


def test_allow_list_entries_are_still_needed():
    # an entry whose file no longer breaks its rule must be removed from ALLOWED
    saved = dict(ALLOWED)
    try:
        ALLOWED.clear()
        hits = {(f, rule) for f, rule, _, _ in violations()}
    finally:
        ALLOWED.update(saved)
    stale = sorted(set(saved) - hits)
    assert not stale, f"allow-list entries no longer needed: {stale}"


def test_struct_formats_decode_what_the_construct_declarations_build():
    # each hot-path format reads the bytes its construct declaration builds (the declaration
    # is the spec): field values chosen to be distinct and to use every byte
    import struct

    from segtools.formats import control, indexes, producer_snapshot, record_batch

    header = dict(base_offset=-2**40 + 3, batch_length=0x01020304, partition_leader_epoch=-5,
                  magic=2, crc=0xF1E2D3C4, attributes=0x7F3A, last_offset_delta=-7,
                  base_timestamp=2**50 + 9, max_timestamp=-(2**45), producer_id=2**33 + 1,
                  producer_epoch=-300, base_sequence=2**30 + 11, records_count=-2**31)
    raw = record_batch.RecordBatchHeader.build(header)
    assert struct.unpack(record_batch.HEADER_STRUCT_FORMAT, raw) == tuple(header.values())
    assert struct.unpack_from(record_batch.LOG_PREFIX_STRUCT_FORMAT, raw) == (
        header["base_offset"], header["batch_length"])
    assert struct.unpack_from(record_batch.MAGIC_STRUCT_FORMAT, raw,
                              record_batch.MAGIC_OFFSET) == (2,)
    assert struct.unpack_from(record_batch.CRC_STRUCT_FORMAT, raw,
                              record_batch.CRC_OFFSET) == (header["crc"],)
    cases = [
        (indexes.OffsetIndexEntry, indexes.OFFSET_INDEX_ENTRY_STRUCT_FORMAT,
         dict(relative_offset=-9, position=0x7F00FF01)),
        (indexes.TimeIndexEntry, indexes.TIME_INDEX_ENTRY_STRUCT_FORMAT,
         dict(timestamp=-(2**60), relative_offset=77)),
    ]
    for decl, fmt, values in cases:
        assert struct.unpack(fmt, decl.build(values)) == tuple(values.values()), fmt
    assert struct.calcsize(indexes.ABORTED_TXN_STRUCT_FORMAT) == indexes.AbortedTxnEntry.sizeof()
    assert struct.calcsize(control.CONTROL_KEY_STRUCT_FORMAT) == control.CONTROL_KEY_SIZE
    assert struct.calcsize(control.END_TXN_MARKER_STRUCT_FORMAT) == control.END_TXN_MARKER_SIZE
    assert struct.calcsize(producer_snapshot.PRODUCER_SNAPSHOT_HEADER_STRUCT_FORMAT) == \
        producer_snapshot.PRODUCER_SNAPSHOT_HEADER_SIZE


def test_v2_field_offsets_match_the_header_layout():
    # the numba kernel reads fields at these offsets; they must be where the struct puts them
    import struct

    from segtools.formats import record_batch as rb

    fmt = rb.HEADER_STRUCT_FORMAT
    offsets = [struct.calcsize(fmt[:i + 1]) for i in range(1, len(fmt) - 1)]
    assert [0, *offsets] == [0, rb.LENGTH_OFFSET, rb.PARTITION_LEADER_EPOCH_OFFSET,
                             rb.MAGIC_OFFSET, rb.CRC_OFFSET, rb.ATTRIBUTES_OFFSET,
                             rb.LAST_OFFSET_DELTA_OFFSET, rb.BASE_TIMESTAMP_OFFSET,
                             rb.MAX_TIMESTAMP_OFFSET, rb.PRODUCER_ID_OFFSET,
                             rb.PRODUCER_EPOCH_OFFSET, rb.BASE_SEQUENCE_OFFSET,
                             rb.RECORDS_COUNT_OFFSET]


# ---------------------------------------------------------------- issue 24: the map is the code

_ARCHITECTURE = REPO / "docs" / "ARCHITECTURE.md"


def _stale_names(doc: Path) -> list[str]:
    """Every dotted `segtools.x.y` (module or attribute) and every repository path `doc` names
    that does not exist."""
    import importlib
    import re
    import warnings

    text = doc.read_text(encoding="utf-8")
    dotted = set(re.findall(r"\bsegtools(?:\.[A-Za-z_]\w*)+", text))
    paths = set(re.findall(r"\b((?:segtools|formats|cli|spark|tests)/[\w/]+\.py)\b", text))
    stale = [p for p in sorted(paths) if not (REPO / p).is_file()]
    for name in sorted(dotted):
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj: object = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)   # old names still resolve
                    for attr in parts[cut:]:
                        obj = getattr(obj, attr)
            except AttributeError:
                stale.append(name)
            break
    return stale


def test_every_name_in_architecture_md_exists():
    """A stale name on the map costs the next engineer an afternoon."""
    assert "segtools.files.indexes" in _ARCHITECTURE.read_text(encoding="utf-8")
    stale = _stale_names(_ARCHITECTURE)
    assert stale == [], f"docs/ARCHITECTURE.md names what does not exist: {stale}"


def test_the_map_check_catches_a_stale_name(tmp_path):
    fake = tmp_path / "ARCHITECTURE.md"
    fake.write_text("`segtools.records.no_such_module`, `segtools.files.indexes.no_such_function`,"
                    " `segtools.files.indexes` and `segtools/no_such_file.py`\n")
    assert sorted(_stale_names(fake)) == ["segtools.files.indexes.no_such_function",
                                          "segtools.records.no_such_module",
                                          "segtools/no_such_file.py"]


def test_every_module_is_on_the_map():
    """Each module of segtools/ is named in docs/ARCHITECTURE.md (path, file name or `stem`)."""
    text = _ARCHITECTURE.read_text(encoding="utf-8")
    unnamed = []
    for path in sorted((REPO / "segtools").rglob("*.py")):
        if path.name == "__init__.py" or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(REPO)
        inner = "/".join(rel.parts[1:])
        if not any(form in text for form in (str(rel), inner, f"`{path.stem}`", path.name)):
            unnamed.append(str(rel))
    assert unnamed == [], f"modules docs/ARCHITECTURE.md does not name: {unnamed}"


def test_fixed_layouts_are_derived_not_written_twice():
    """Issue 24: a struct format beside a construct declaration is computed from it at import
    (formats.primitives.struct_format). Before: 21 literal `*_STRUCT_FORMAT` strings in formats/;
    after: 16 (the index entries, control key, end-txn marker and producer entry are derived)."""
    import re

    literal = [(path.name, line) for path in sorted((REPO / "formats").glob("*.py"))
               for line in path.read_text(encoding="utf-8").splitlines()
               if re.match(r"[A-Z_]+_STRUCT_FORMAT\s*=\s*[\"']", line)]
    assert len(literal) <= 16, literal
    derived = ("OFFSET_INDEX_ENTRY_STRUCT_FORMAT", "TIME_INDEX_ENTRY_STRUCT_FORMAT",
               "ABORTED_TXN_STRUCT_FORMAT", "CONTROL_KEY_STRUCT_FORMAT",
               "END_TXN_MARKER_STRUCT_FORMAT", "PRODUCER_ENTRY_STRUCT_FORMAT")
    assert not [line for _, line in literal if line.split("=")[0].strip() in derived]
    reader = (REPO / "segtools" / "files" / "indexes.py").read_text(encoding="utf-8")
    assert '">i4"' not in reader and '">i8"' not in reader   # the reader's dtypes come from formats/
