"""Flexible-message engines (issue 24: "two flexible-message engines remain").

Kafka's flexible versions (KIP-482) encode lengths and counts as unsigned varints (compact
strings, bytes and arrays: ``n + 1``, 0 = null) and end every struct with a tagged-field
section. A module that reads unsigned varints itself -- imports the primitive reader
``read_uvarint``, uses construct's ``UnsignedVarint``, or defines its own ``*uvarint*``
function -- is an engine for that encoding. This test scans production source with ``ast``
and holds every such module to the list below (``segtools/primitives/varint.py``, the varint
primitive itself, aside).

Counted at commit 278f4a4: 3 (the issue counted 2; the third was found by this scan):
``internal_topics/protocol.py`` (the interpreter of Kafka's message specs), ``formats/primitives.py``
(construct's compact types and tagged section, which the KRaft control values decoded through)
and ``tier/aiven.py`` (the tiered-storage plugin's custom metadata, a tagged-field section read
by hand with its own varint loop).

Now 1: ``primitives/messages.py``, the one engine. The message specs are data in
``formats/messages.py`` (vocabulary), ``formats/control.py`` (the KRaft control values),
``formats/tiered_storage.py`` (Aiven's custom metadata) and ``internal_topics/*_schemas.py``;
construct's compact types are gone from ``formats/primitives.py``.
"""

from __future__ import annotations

import ast

from source_scan import scan_production

PRIMITIVE = "segtools/primitives/varint.py"

#: module -> what it decodes with its own flexible-encoding reader
ENGINES = {
    "segtools/primitives/messages.py": "Kafka's generated messages: internal topics, KRaft metadata "
                                       "records and control values, plugin metadata",
}
BEFORE = 3
AFTER = 1


def uvarint_readers(tree: ast.AST) -> set[str]:
    """How ``tree`` reads unsigned varints itself (empty: it does not)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "read_uvarint" for a in node.names):
            found.add("imports read_uvarint")
        elif isinstance(node, ast.Name) and node.id == "UnsignedVarint":
            found.add("construct UnsignedVarint")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and "uvarint" in node.name.lower() and _reads(node):
            found.add(f"defines {node.name}()")
    return found


def _reads(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A varint reader loops over bytes; a writer (``uvarint(value) -> bytes``) builds them
    from an argument without looping over input: a ``while`` loop that subscripts marks a reader."""
    return any(isinstance(n, ast.While) and any(isinstance(m, ast.Subscript) for m in ast.walk(n))
               for n in ast.walk(fn))


def production_engines() -> dict[str, set[str]]:
    # every rule names "uvarint": only those files are parsed
    return scan_production(uvarint_readers, words=("uvarint",), aside=frozenset({PRIMITIVE}))


def test_flexible_message_engines_are_the_listed_ones() -> None:
    found = production_engines()
    assert sorted(found) == sorted(ENGINES), (
        "modules reading Kafka's flexible encoding (unsigned varints) themselves; decode "
        "through segtools.primitives.messages instead, or list them here with a reason:\n"
        + "\n".join(f"{m}: {sorted(h)}" for m, h in sorted(found.items())))
    assert len(ENGINES) == AFTER <= BEFORE


def test_the_scan_sees_each_kind_of_engine() -> None:
    src = """
from segtools.primitives.varint import read_uvarint
x = UnsignedVarint
def read_uvarint_here(buf):
    while True:
        b = buf[0]
def uvarint(value):
    return bytes([value])
"""
    assert uvarint_readers(ast.parse(src)) == {
        "imports read_uvarint", "construct UnsignedVarint", "defines read_uvarint_here()"}
