"""compare's byte-exact copy check (forensics.inputs.byte_exact_copies) lists a log dir one
folder at a time and stops at the first folder that differs. Its answer must be the one of its
definition: two log dirs are copies when the regular files of the log dir and of its compared
partition dirs (relative path -> size) are the same and so are their bytes; the first earlier
dir that matches is the original. The definition is written out here, plainly, and both are
run on random trees: copies, a byte changed at the same size, a file grown, a file or a
partition dir missing, an empty partition dir, links, an empty log dir."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from segtools.forensics.inputs import byte_exact_copies

pytestmark = pytest.mark.fast


def _definition(log_dirs: dict[str, list[str]]) -> dict[str, str]:
    def listing(root: str, pdirs: list[str]) -> dict[str, int]:
        out = {}
        for folder in (root, *pdirs):
            for name in os.listdir(folder):
                path = os.path.join(folder, name)
                if os.path.isfile(path) and not os.path.islink(path):
                    out[os.path.relpath(path, root)] = os.path.getsize(path)
        return out

    def content(root: str, names: dict[str, int]) -> list[tuple[str, bytes]]:
        return [(n, Path(root, n).read_bytes()) for n in sorted(names)]

    listed = {d: listing(d, p) for d, p in log_dirs.items()}
    order = list(log_dirs)
    copies: dict[str, str] = {}
    for i, d in enumerate(order):
        if not listed[d]:
            continue
        for e in order[:i]:
            if e not in copies and listed[e] == listed[d] and content(d, listed[d]) == content(e, listed[e]):
                copies[d] = e
                break
    return copies


def _broker(root: Path, rng: random.Random) -> None:
    root.mkdir(parents=True)
    (root / "meta.properties").write_text(f"node.id={rng.randint(1, 3)}\n")
    for p in range(rng.randint(1, 4)):
        part = root / f"t-{p}"
        part.mkdir()
        for s in range(rng.randint(0, 3)):
            (part / f"{s * 10:020d}.log").write_bytes(rng.randbytes(rng.randint(0, 40)))
            if rng.random() < 0.5:
                (part / f"{s * 10:020d}.index").write_bytes(bytes(rng.randint(0, 16)))


def _vary(root: Path, rng: random.Random) -> None:
    """One change (or none) to a copied log dir."""
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    parts = sorted(p for p in root.iterdir() if p.is_dir())
    kind = rng.choice(["none", "none", "flip", "grow", "drop_file", "drop_dir", "empty_dir",
                       "link", "extra_file"])
    if kind == "flip" and files:
        f = rng.choice(files)
        data = bytearray(f.read_bytes())
        if data:
            data[rng.randrange(len(data))] ^= 0xFF
            f.write_bytes(bytes(data))
    elif kind == "grow" and files:
        with open(rng.choice(files), "ab") as fh:
            fh.write(b"x")
    elif kind == "drop_file" and files:
        rng.choice(files).unlink()
    elif kind == "drop_dir" and parts:
        shutil.rmtree(rng.choice(parts))
    elif kind == "empty_dir":
        (root / "t-9").mkdir(exist_ok=True)
    elif kind == "link" and files:
        target = rng.choice(files)
        link = target.with_name(target.name + ".lnk")
        link.symlink_to(target)
    elif kind == "extra_file" and parts:
        (rng.choice(parts) / "leader-epoch-checkpoint").write_text("0\n0\n")


@pytest.mark.parametrize("seed", range(200))
def test_the_copy_check_answers_as_its_definition(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    dirs: list[Path] = []
    for k in range(rng.randint(2, 5)):
        d = tmp_path / f"b{k}"
        if dirs and rng.random() < 0.6:
            shutil.copytree(rng.choice(dirs), d, symlinks=True)
            _vary(d, rng)
        elif rng.random() < 0.1:
            d.mkdir()       # an empty log dir: never a copy, never an original
        else:
            _broker(d, rng)
        dirs.append(d)
    # compare's partition dirs: those its specs name (a dir of the tree may be left out)
    log_dirs = {str(d): sorted(str(p) for p in d.iterdir() if p.is_dir() and rng.random() < 0.95)
                for d in dirs}
    assert byte_exact_copies(log_dirs) == _definition(log_dirs)


def test_copies_are_found_without_listing_every_partition_of_distinct_brokers(tmp_path: Path,
                                                                              monkeypatch) -> None:
    import segtools.forensics.inputs as inputs

    rng = random.Random(7)
    dirs = {}
    for b in range(4):
        root = tmp_path / f"broker-{b}"
        root.mkdir()
        (root / "meta.properties").write_text(f"node.id={b}\n")
        for p in range(50):
            part = root / f"t-{b * 50 + p}"     # each broker its own partitions
            part.mkdir()
            (part / f"{0:020d}.log").write_bytes(rng.randbytes(30))
        dirs[str(root)] = sorted(str(p) for p in root.iterdir() if p.is_dir())
    shutil.copytree(tmp_path / "broker-2", tmp_path / "copy-of-2")
    dirs[str(tmp_path / "copy-of-2")] = sorted(str(p) for p in (tmp_path / "copy-of-2").iterdir() if p.is_dir())
    listed: list[str] = []
    real = inputs._folder_files

    def counting(root: str, folder: str):
        listed.append(folder)
        return real(root, folder)

    monkeypatch.setattr(inputs, "_folder_files", counting)
    assert byte_exact_copies(dirs) == {str(tmp_path / "copy-of-2"): str(tmp_path / "broker-2")}
    # the copy and its original whole (2 x 51 folders), the others a few folders each
    assert len(set(listed)) < 2 * 51 + 4 * 3


def test_a_partition_dir_compared_on_one_side_only(tmp_path: Path) -> None:
    """A folder only one side compares counts as empty on the other: with files in it the two
    are not copies; empty, they are."""
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        (root / "t-0").mkdir(parents=True)
        (root / "meta.properties").write_text("node.id=1\n")
        (root / "t-0" / f"{0:020d}.log").write_bytes(b"same bytes")
        (root / "t-1").mkdir()
    (a / "t-1" / f"{0:020d}.log").write_bytes(b"only in a")
    both = {str(a): [str(a / "t-0"), str(a / "t-1")], str(b): [str(b / "t-0")]}
    assert byte_exact_copies(both) == {} == _definition(both)
    (a / "t-1" / f"{0:020d}.log").unlink()
    assert byte_exact_copies(both) == {str(b): str(a)} == _definition(both)
