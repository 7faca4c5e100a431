"""Record decoders (issue 24: "a third record decoder outside the family").

A v2 record is a run of zig-zag varints (length, timestamp and offset deltas, key, value and
header lengths; DefaultRecord.readFrom). A module that reads them itself -- imports the
primitive readers ``read_varint``/``read_varlong``, or defines its own ``*varint*``/
``*varlong*`` reader -- decodes records. This test scans production source with ``ast`` and
holds every such module to the list below (``segtools/primitives/varint.py``, the primitive
itself, and ``segtools/primitives/messages.py``, the flexible-message engine guarded by
tests/test_architecture_engines.py, aside).

Counted before this step (commit 6d3e8ef): 4 -- the Python decoder, its numba twin, dump's
fast text (its own batch loop, two varint readers, hand-written offsets; not behind the
engines' interface) and redact's in-place rewriter. Now the three engines behind one decoder
interface (``segtools.records.columnar.engines.RecordDecoder``; ``engine="python"``,
``"numba"``, ``"vectorised"``, all in tests/records/test_one_reader.py) and the rewriter; dump's
text is a formatter over the vectorised engine's columns.
"""

from __future__ import annotations

import ast
from pathlib import Path

from source_scan import scan_production

REPO = Path(__file__).resolve().parents[1]
ASIDE = frozenset({"segtools/primitives/varint.py", "segtools/primitives/messages.py"})

#: module -> what it is
DECODERS = {
    "segtools/records/v2_decoder.py": "engine 'python' (and the object reader's records)",
    "segtools/records/jit_kernel.py": "engine 'numba'",
    "segtools/records/columnar/vectorised.py": "engine 'vectorised' (dump's deep-iteration text)",
    "segtools/redact.py": "not a reader: rewrites keys and values in place inside a batch's "
                          "record bytes, so it walks field positions, not values",
}
ENGINES = {"segtools/records/v2_decoder.py", "segtools/records/jit_kernel.py",
           "segtools/records/columnar/vectorised.py"}
#: record readers outside the engines' interface (the rewriter reads no records): dump's fast
#: text before, none now
OUTSIDE_BEFORE = 1
OUTSIDE_AFTER = 0


def varint_readers(tree: ast.AST) -> set[str]:
    """How ``tree`` reads zig-zag varints itself (empty: it does not)."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(
                a.name in ("read_varint", "read_varlong") for a in node.names):
            found.add("imports read_varint/read_varlong")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and any(w in node.name.lower() for w in ("varint", "varlong")) \
                and "uvarint" not in node.name.lower() and _reads(node):
            found.add(f"defines {node.name}()")
    return found


def _reads(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A reader loops over input bytes (a loop whose body subscripts); a writer builds bytes
    from a value."""
    return any(isinstance(n, (ast.While, ast.For))
               and any(isinstance(m, ast.Subscript) and isinstance(m.ctx, ast.Load)
                       for m in ast.walk(n))
               for n in ast.walk(fn))


def production_decoders() -> dict[str, set[str]]:
    return scan_production(varint_readers, words=("varint", "varlong"), aside=ASIDE)


def test_record_decoders_are_the_listed_ones() -> None:
    found = production_decoders()
    assert sorted(found) == sorted(DECODERS), (
        "modules decoding v2 records (zig-zag varints) themselves; decode through an engine "
        "(segtools.records.columnar.engines) instead, or list them here with a reason:\n"
        + "\n".join(f"{m}: {sorted(h)}" for m, h in sorted(found.items())))
    outside = set(DECODERS) - ENGINES - {"segtools/redact.py"}
    assert len(outside) == OUTSIDE_AFTER < OUTSIDE_BEFORE


def test_every_engine_is_behind_the_decoder_interface() -> None:
    from segtools.records.columnar import engines

    assert set(engines.ENGINES) == {"auto", "numba", "vectorised", "python"}
    for name in ("numba", "vectorised", "python"):
        kernel = engines._pick_engine(name)
        assert callable(engines._pick_decoder(name, kernel))
    # dump's text decodes through the engine, not on its own
    text = (REPO / "segtools/dump/fast_text.py").read_text(encoding="utf-8")
    assert "from segtools.records.columnar.vectorised import decode_records" in text
    assert not varint_readers(ast.parse(text))


def test_the_scan_sees_each_kind_of_reader() -> None:
    src = """
from segtools.primitives.varint import read_varint
def _varint(w, pos):
    for k in range(3):
        b = w[pos + k]
def encode_varint(value, out):
    out.append(value)
"""
    assert varint_readers(ast.parse(src)) == {"imports read_varint/read_varlong",
                                              "defines _varint()"}
