"""segtools/ shows its layers (issue 11): each layer imports only the layers below it.

    errors, version, formats the exception hierarchy, the version, Kafka's layouts declared
    primitives               CRCs, varints, codecs, Java string/number rules, size limits
    files                    user paths -> log dirs and segments; indexes, checkpoints, snapshots
    records                  batches and records of .log segments (objects and Arrow)
    internal_topics          the payloads of __consumer_offsets, __transaction_state, metadata...
    applications             dump, export, forensics, simulate, writer, salvage, filters, ...

Imports count wherever they are written (the graph of tests/test_import_graph.py), so a lazy
import inside a function cannot hide an upward dependency.
"""

from __future__ import annotations

from test_import_graph import segtools_graph

# lowest first; a module belongs to the first layer whose prefix it matches, anything else of
# ours is an application
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("segtools.errors", "segtools.version", "segtools.formats")),
    ("primitives", ("segtools.primitives",)),
    ("files", ("segtools.files",)),
    ("records", ("segtools.records",)),
    ("internal_topics", ("segtools.internal_topics",)),
]
APPLICATIONS = len(LAYERS)


def layer_of(module: str) -> int:
    for rank, (_name, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return APPLICATIONS


def layer_name(rank: int) -> str:
    return LAYERS[rank][0] if rank < APPLICATIONS else "applications"


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{importer} ({layer_name(layer_of(importer))}) imports {target} "
                  f"({layer_name(layer_of(target))})"
                  for importer, targets in graph.items() for target in targets
                  if target != "segtools" and layer_of(target) > layer_of(importer))


def test_every_layer_has_modules() -> None:
    ranks = {layer_of(module) for module in segtools_graph()}
    assert ranks == set(range(APPLICATIONS + 1))


def test_no_layer_imports_a_layer_above_it() -> None:
    found = upward_imports(segtools_graph())
    assert found == [], "imports against the layering:\n" + "\n".join(found)


def test_the_check_sees_an_upward_import() -> None:
    graph = {"segtools.records.batches": {"segtools.primitives.crc"},
             "segtools.files.sources": {"segtools.records.columnar"},
             "segtools.primitives.crc": {"segtools.dump.runner"}}
    assert upward_imports(graph) == [
        "segtools.files.sources (files) imports segtools.records.columnar (records)",
        "segtools.primitives.crc (primitives) imports segtools.dump.runner (applications)",
    ]


def test_the_old_batch_name_still_resolves_with_a_warning() -> None:
    import warnings

    import segtools
    from segtools.records.batches import SegmentBatch

    assert "RecordBatch" not in segtools.__all__  # pyarrow's name is not part of our API
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert segtools.RecordBatch is SegmentBatch
    assert [str(w.message) for w in caught] == ["segtools.RecordBatch is now segtools.SegmentBatch"]
