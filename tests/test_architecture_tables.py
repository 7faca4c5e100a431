"""Kafka's compression and control-record-type tables are ``formats/``' enums (issue 24).

``formats.record_batch.CompressionType`` and ``formats.control.ControlRecordType`` are the one
table of each; production derives what it needs from them (``codecs.COMPRESSION_NAMES``,
``records.control.CONTROL_TYPE_NAMES``, the writer's name -> id lookups). This test scans
production source with ``ast`` for a literal ``dict``/``list``/``tuple``/``set`` that spells two
or more codec names ("gzip", "snappy", "lz4", "zstd") or control type names ("ABORT",
"COMMIT", ...) as string constants: such a literal is a second copy of a table.

Before this step, by this rule (commit ecf8ec6): 6 compression tables (primitives/codecs,
records/columnar, simulate/scenario, writer/batch_builder, export's Parquet suffixes, cli's
Parquet choice) and 2 control-type tables (writer/batch_builder, forensics/transactions).
After: the allow-list below, each with its reason; no Kafka table outside formats/ (columnar's
Arrow dictionary is derived from ``codecs.COMPRESSION_NAMES`` since the package split).
"""

from __future__ import annotations

import ast
from pathlib import Path

from segtools.formats.control import ControlRecordType
from segtools.formats.record_batch import CompressionType

REPO = Path(__file__).resolve().parents[1]
SOURCE_DIRS = ("segtools", "cli", "spark")

CODEC_NAMES = {c.label for c in CompressionType} - {"none"}
CONTROL_NAMES = {t.name for t in ControlRecordType} - {"UNKNOWN"}

#: (file, kind) -> why the literal is allowed
ALLOWED = {
    ("segtools/export.py", "compression"):
        "Parquet codec -> output file suffix (pyarrow's codecs, not Kafka's ids)",
    ("cli/export.py", "compression"):
        "Parquet codecs offered by --compression (pyarrow's, not Kafka's)",
    ("segtools/forensics/transactions.py", "control"):
        "marker type -> transaction state of the report (a mapping of outcomes, no ids); "
        "sound21 owns the txn-state logic",
}
#: tables of each kind left outside formats/ (the allow-list's), guarded
AFTER = {"compression": 2, "control": 1}


def _spelled(node: ast.expr) -> set[str]:
    items: list[ast.expr | None] = []
    if isinstance(node, ast.Dict):
        items = [*node.keys, *node.values]
    elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = list(node.elts)
    return {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}


def table_literals(tree: ast.AST) -> list[tuple[str, int]]:
    """``(kind, line)`` of each literal spelling two or more codec or control type names
    (``__all__`` lists excepted)."""
    exports: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value:
                exports.add(id(node.value))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.expr) or id(node) in exports:
            continue
        names = _spelled(node)
        if len(names & CODEC_NAMES) >= 2:
            found.append(("compression", node.lineno))
        if len(names & CONTROL_NAMES) >= 2:
            found.append(("control", node.lineno))
    return found


def production_tables() -> dict[tuple[str, str], list[int]]:
    out: dict[tuple[str, str], list[int]] = {}
    for d in SOURCE_DIRS:
        for path in sorted((REPO / d).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            text = path.read_text(encoding="utf-8")
            if not any(name in text for name in CODEC_NAMES | CONTROL_NAMES):
                continue   # cannot spell a table: not parsed
            for kind, line in table_literals(ast.parse(text)):
                out.setdefault((rel, kind), []).append(line)
    return out


def test_no_compression_or_control_table_outside_formats() -> None:
    found = production_tables()
    extra = {k: v for k, v in found.items() if k not in ALLOWED}
    assert extra == {}, (
        "a second copy of a Kafka table: derive it from formats.record_batch.CompressionType "
        f"or formats.control.ControlRecordType instead: {extra}")
    stale = sorted(set(ALLOWED) - set(found))
    assert stale == [], f"allowed tables no longer there (drop them, lower AFTER): {stale}"
    counts = {kind: sum(1 for (_f, k) in found if k == kind) for kind in AFTER}
    assert counts == AFTER


def test_the_scan_sees_a_table() -> None:
    src = ('A = {"none": 0, "gzip": 1, "zstd": 4}\nB = ("ABORT", "COMMIT")\n'
           '__all__ = ["ABORT", "COMMIT"]\nC = {c.label: int(c) for c in CompressionType}\n'
           'D = ["gzip"]\n')
    assert table_literals(ast.parse(src)) == [("compression", 1), ("control", 2)]
