"""Tests compare through the front door (issue 24).

``segtools.compare()`` resolves and checks its inputs (duplicates, links out of the input,
copies, cluster conflicts) before it runs the pipeline; a test that calls the runner beneath
it tests a compare no user runs. Before this step 16 test files called
``forensics.pipeline.compare_in_process`` (and the Spark tests ``spark.compare_job.run_compare``,
its twin); the side door is gone and no test may import either name.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SIDE_DOORS = {"compare_in_process", "run_compare"}


def side_door_uses(tree: ast.AST) -> list[tuple[str, int]]:
    """``(name, line)`` of each import, call or attribute naming a side door."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found += [(a.name, node.lineno) for a in node.names if a.name in SIDE_DOORS]
        elif isinstance(node, ast.Name) and node.id in SIDE_DOORS:
            found.append((node.id, node.lineno))
        elif isinstance(node, ast.Attribute) and node.attr in SIDE_DOORS:
            found.append((node.attr, node.lineno))
    return found


def test_no_test_compares_through_a_side_door() -> None:
    here = Path(__file__).name
    uses = {}
    for path in sorted(TESTS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if path.name != here and any(name in text for name in SIDE_DOORS):   # parse only those
            found = side_door_uses(ast.parse(text))
            if found:
                uses[path.relative_to(TESTS).as_posix()] = found
    assert uses == {}, f"compare through segtools.compare() (engine='spark' for Spark): {uses}"


def test_the_side_door_is_gone() -> None:
    from segtools.forensics import pipeline

    assert not hasattr(pipeline, "compare_in_process")


def test_the_scan_sees_a_side_door() -> None:
    src = ("from segtools.forensics.pipeline import compare_in_process\n"
           "compare_in_process([d])\njob.run_compare(s, [d])\nsegtools.compare([d])\n")
    assert side_door_uses(ast.parse(src)) == [
        ("compare_in_process", 1), ("compare_in_process", 2), ("run_compare", 3)]
