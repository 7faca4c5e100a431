"""RealPaths answers as os.path.realpath does, for every kind of path a resolver meets."""

from __future__ import annotations

import os

import pytest

from segtools.files.real_paths import RealPaths

pytestmark = pytest.mark.fast


@pytest.fixture
def tree(tmp_path):
    real = tmp_path / "evidence" / "broker-1"
    (real / "orders-0").mkdir(parents=True)
    (real / "orders-0" / "00000000000000000000.log").write_bytes(b"")
    (real / "orders-1").mkdir()
    (tmp_path / "link-broker").symlink_to(real)                       # a linked folder
    (real / "orders-2").symlink_to(real / "orders-0")                 # a linked partition dir
    (real / "orders-3").symlink_to("orders-2")                        # relative, link to a link
    (real / "dangling").symlink_to(tmp_path / "nowhere")
    (real / "loop-a").symlink_to("loop-b")
    (real / "loop-b").symlink_to("loop-a")
    (tmp_path / "a" / "b").mkdir(parents=True)
    return tmp_path


def _paths(root):
    names = ["evidence/broker-1", "evidence/broker-1/orders-0", "evidence/broker-1/orders-1",
             "evidence/broker-1/orders-2", "evidence/broker-1/orders-3",
             "evidence/broker-1/orders-3/00000000000000000000.log",
             "link-broker", "link-broker/orders-0", "link-broker/orders-2", "link-broker/orders-3",
             "link-broker/orders-3/00000000000000000000.log",
             "evidence/broker-1/dangling", "evidence/broker-1/dangling/x",
             "evidence/broker-1/loop-a", "evidence/broker-1/missing", "missing/deeper/still",
             "a/b/../b", "a/./b", "link-broker/../broker-1/orders-1", "link-broker/orders-2/../orders-1"]
    return [os.path.join(root, n) for n in names] + [str(root), "/"]


def test_same_answer_as_realpath(tree):
    real_paths = RealPaths()
    for path in _paths(tree) * 2:        # the second round is answered from remembered folders
        assert real_paths(path) == os.path.realpath(os.path.abspath(path)), path


def test_relative_paths(tree, monkeypatch):
    monkeypatch.chdir(tree / "link-broker")
    real_paths = RealPaths()
    for path in ["orders-0", "orders-3", ".", "..", "dangling", "nope"]:
        assert real_paths(path) == os.path.realpath(path), path


def test_a_folder_looked_at_once(tree, monkeypatch):
    # the parent is resolved once: later paths under it cost one lstat each
    calls = []
    real_lstat = os.lstat
    monkeypatch.setattr(os, "lstat", lambda p, *a, **k: calls.append(p) or real_lstat(p, *a, **k))
    real_paths = RealPaths()
    real_paths(tree / "evidence" / "broker-1" / "orders-0")
    calls.clear()
    for name in ("orders-1", "missing", "orders-0"):
        real_paths(tree / "evidence" / "broker-1" / name)
    assert len(calls) == 3
