"""Issue 24: the README is a front door (small, linking to the map) and docs/README.md is the
map: every document in docs/ is indexed there and every link of both resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#\s]+)")


def test_the_readme_stays_a_front_door():
    size = len((REPO / "README.md").read_bytes())
    assert size <= 10 * 1024, f"README.md is {size} bytes: move reference material to docs/"


def test_every_doc_is_indexed_in_the_map():
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    linked = set(LINK.findall(index))
    on_disk = {p.name for p in (REPO / "docs").glob("*.md")} - {"README.md"}
    assert on_disk - linked == set(), "not indexed in docs/README.md"


@pytest.mark.parametrize("doc", ["README.md", "docs/README.md", "docs/USAGE.md",
                                 "docs/SIMULATOR.md"])
def test_every_relative_link_resolves(doc):
    path = REPO / doc
    for target in LINK.findall(path.read_text(encoding="utf-8")):
        if "://" in target:
            continue
        assert (path.parent / target).exists(), f"{doc} links to missing {target}"
