"""The spec that runs (issue 24): the small files -- checkpoints, producer snapshots,
partition.metadata, meta.properties, quorum-state, .kafka_cleanshutdown -- decode in production
through the construct declarations of ``formats/``, and the KRaft control values (and the
tiered-storage plugin's custom metadata) through their message specs there, read by the one
flexible-message engine (``segtools.primitives.messages``).

* counts the construct objects and message specs production modules import from
  ``segtools.formats`` (0 before issue 24) and requires at least today's numbers;
* fails when a hand-written parser of those files comes back: integer parsing, line splitting
  or a ``struct`` unpack with a format not derived from a declaration in the readers;
* feeds mutated bytes of each small file to its production reader: only ``SegtoolsError``
  may come out, never ``construct.ConstructError`` or a builtin exception.
"""

from __future__ import annotations

import ast
import importlib
import os
import tempfile
from pathlib import Path
from typing import Any

import construct
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from segtools.errors import CorruptBatchError, SegtoolsError
from segtools.files import checkpoints as cp
from segtools.files.snapshots import read_producer_snapshot
from segtools.formats.messages import Message
from segtools.records.control import (
    KRAFT_VERSION,
    KRAFT_VOTERS,
    LEADER_CHANGE,
    SNAPSHOT_FOOTER,
    SNAPSHOT_HEADER,
    decode_control_value,
)

REPO = Path(__file__).resolve().parents[2]
PRODUCTION_DIRS = ("segtools", "cli", "spark")
#: construct objects production used before issue 24 (the issue's count) and now (13 while
#: the KRaft control values were construct declarations; they are message specs now)
BEFORE = 0
AFTER = 7
#: message specs production imports from formats/: the five KRaft control values, Aiven's
#: custom metadata
AFTER_MESSAGES = 6


def _construct_names_used(kind: type = construct.Construct) -> set[str]:
    """``module.Name`` of every distinct ``kind`` object (construct objects by default) a
    production module imports from formats/ (a dict or tuple of declarations, e.g.
    KRAFT_CONTROL_MESSAGES, counts each one)."""
    seen: dict[int, str] = {}
    for d in PRODUCTION_DIRS:
        for path in sorted((REPO / d).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                        "segtools.formats"):
                    module = importlib.import_module(node.module or "")
                    for alias in node.names:
                        obj = getattr(module, alias.name, None)
                        items = obj.items() if isinstance(obj, dict) else \
                            enumerate(obj) if isinstance(obj, (tuple, list)) else [(None, obj)]
                        for key, item in items:
                            if isinstance(item, kind):
                                suffix = "" if key is None else f"[{key!s}]"
                                seen.setdefault(id(item), f"{node.module}.{alias.name}{suffix}")
    return set(seen.values())


def test_production_decodes_through_construct_declarations() -> None:
    used = _construct_names_used()
    assert len(used) >= AFTER > BEFORE, sorted(used)
    specs = _construct_names_used(Message)
    assert len(specs) >= AFTER_MESSAGES, sorted(specs)
    assert {f"segtools.formats.control.KRAFT_CONTROL_MESSAGES[{t}]" for t in range(2, 7)} <= specs
    # the readers of each small file use their declaration
    for name in ("checkpoints.OffsetCheckpointFile", "checkpoints.LeaderEpochCheckpointFile",
                 "root_files.PartitionMetadataText", "root_files.PropertiesFile",
                 "root_files.JsonObjectDocument", "root_files.CleanShutdownDocument",
                 "producer_snapshot.ProducerSnapshotHeader"):
        assert f"segtools.formats.{name}" in used, name


#: the production readers of the small files, and the calls that would mean parsing by hand
#: there (text: integers, line splitting, JSON; binary: unpacking, varints, base64)
_TEXT = {"int", "split", "rsplit", "splitlines", "partition", "parse_java_int", "java_split",
         "loads", "decode", "finditer", "fromhex"}
_BINARY = {"unpack", "unpack_from", "iter_unpack", "from_bytes", "read_uvarint", "read_varint",
           "urlsafe_b64encode", "urlsafe_b64decode", "decode", "frombuffer"}
READERS = {"segtools/files/checkpoints.py": _TEXT, "segtools/files/snapshots.py": _BINARY,
           "segtools/records/control.py": _BINARY,
           # dump's Kafka 4.x wording of a rejected snapshot reads the header again
           "segtools/dump/state_dump.py": _BINARY}
#: unpacking with a format derived from a declaration (formats.primitives.struct_format) is
#: allowed where construct is too slow: the snapshot entry array, the fixed control key and
#: end-transaction marker (one per transaction)
DERIVED = {("segtools/files/snapshots.py", "iter_unpack"),
           ("segtools/records/control.py", "unpack_from")}


def _hand_parsing(rel: str, forbidden: set[str]) -> list[str]:
    tree = ast.parse((REPO / rel).read_text(encoding="utf-8"))
    found = []

    def visit(node: ast.AST, in_writer: bool) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # writers build text/bytes (int() coerces their arguments); only reading counts
            in_writer = node.name.startswith(("write", "_escape")) or node.name.endswith("_bytes")
        if isinstance(node, ast.Call) and not in_writer:
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) \
                else ""
            if name in forbidden:
                fmt = node.args[0] if node.args else None
                derived = (rel, name) in DERIVED and (
                    name == "iter_unpack" or (isinstance(fmt, ast.Name)
                                              and fmt.id.endswith("_STRUCT_FORMAT")))
                if not derived:
                    found.append(f"{rel}:{node.lineno} {name}(")
        for child in ast.iter_child_nodes(node):
            visit(child, in_writer)

    visit(tree, False)
    return found


@pytest.mark.parametrize("rel", sorted(READERS))
def test_no_hand_written_small_file_parser(rel: str) -> None:
    assert _hand_parsing(rel, READERS[rel]) == []


def test_the_guard_can_fail(tmp_path: Path) -> None:
    """A reader that splits lines and parses integers itself is caught."""
    rel = "tests_tmp_reader.py"
    (REPO / rel).write_text("import struct\ndef f(t, b):\n    return [int(x) for x in t.split()],"
                            " struct.unpack_from('>hh', b, 0)\n")
    try:
        assert _hand_parsing(rel, _TEXT | _BINARY) == [
            f"{rel}:3 int(", f"{rel}:3 split(", f"{rel}:3 unpack_from("]
    finally:
        os.unlink(REPO / rel)


# ------------------------------------------------------------- mutated bytes: only SegtoolsError

_SEEDS: dict[str, tuple[str, bytes]] = {
    "offset": ("replication-offset-checkpoint", b"0\n2\nfoo 0 17\nbar 3 42\n"),
    "epoch": ("leader-epoch-checkpoint", b"0\n2\n0 0\n3 1500\n"),
    "pm": ("partition.metadata", b"version: 0\ntopic_id: x6A6Wj6nS0Sa1-EbZ3jtvQ"),
    "props": ("meta.properties", b"#\n#Thu Jan 01\nversion=1\nnode.id=3\ncluster.id=Ab\\u0043\n"),
    "quorum": ("quorum-state", b'{"leaderId":1,"leaderEpoch":5,"votedId":-1,"data_version":0}'),
    "clean": (".kafka_cleanshutdown", b'{"version":0,"brokerEpoch":12}'),
}
_READ = {"offset": cp.read_offset_checkpoint, "epoch": cp.read_leader_epoch_checkpoint,
         "pm": cp.read_partition_metadata, "props": cp.read_meta_properties,
         "quorum": cp.read_quorum_state, "clean": cp.read_clean_shutdown,
         "snapshot": read_producer_snapshot}


def _snapshot_seed() -> bytes:
    from segtools.files.snapshots import producer_snapshot_bytes
    return producer_snapshot_bytes([(1000, 2, 9, 120, 3, 1_700_000_000_000, -1, -1),
                                    (1001, 0, 4, 130, 0, 1_700_000_000_001, 7, 125)])


def _mutate(data: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    out = bytearray(data)
    for kind, where, byte in edits:
        i = where % (len(out) + 1)
        if kind == 0 and i < len(out):
            out[i] = byte                       # overwrite
        elif kind == 1:
            out[i:i] = bytes([byte])            # insert
        elif kind == 2:
            del out[i:i + 1 + byte % 8]         # delete a few bytes
        else:
            del out[i:]                         # truncate
    return bytes(out)


_EDITS = st.lists(st.tuples(st.integers(0, 3), st.integers(0, 200), st.integers(0, 255)),
                  min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(_READ)), edits=_EDITS)
def test_mutated_small_files_raise_only_segtools_errors(kind: str, edits: Any) -> None:
    name, seed = _SEEDS[kind] if kind in _SEEDS else ("00000000000000000100.snapshot",
                                                      _snapshot_seed())
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, name)
        with open(path, "wb") as fh:
            fh.write(_mutate(seed, edits))
        try:
            _READ[kind](path)
        except SegtoolsError as exc:
            assert not isinstance(exc, construct.ConstructError)
            assert exc.__cause__ is None or not isinstance(exc.__cause__, construct.ConstructError)


_VALUE_SEEDS = {
    LEADER_CHANGE: bytes.fromhex("0000 00000002 03 00000001 00 00000002 00 02 00000002 00 00"
                                 .replace(" ", "")),
    SNAPSHOT_HEADER: bytes.fromhex("0000 0000000000002710 00".replace(" ", "")),
    SNAPSHOT_FOOTER: bytes.fromhex("0000 00".replace(" ", "")),
    KRAFT_VERSION: bytes.fromhex("0000 0001 00".replace(" ", "")),
    KRAFT_VOTERS: (bytes.fromhex("0000 02 00000001".replace(" ", "")) + bytes(range(16))
                   + b"\x02\x0bCONTROLLER\x0alocalhost\x23\x85\x00" + bytes.fromhex("0000 0001 00 00 00")),
}


@settings(max_examples=300, deadline=None)
@given(type_id=st.sampled_from(sorted(_VALUE_SEEDS)), edits=_EDITS)
def test_mutated_kraft_control_values_raise_only_corrupt_batch_error(type_id: int,
                                                                     edits: Any) -> None:
    try:
        decode_control_value(type_id, _mutate(_VALUE_SEEDS[type_id], edits))
    except CorruptBatchError as exc:
        assert exc.field is not None and exc.field.startswith("control.value")


def test_kraft_value_errors_name_the_field_by_its_path() -> None:
    value = _VALUE_SEEDS[KRAFT_VOTERS]
    with pytest.raises(CorruptBatchError) as info:
        decode_control_value(KRAFT_VOTERS, value[:40])     # ends inside the endpoint's host
    assert info.value.field == "control.value.voters[0].endpoints[0].host"
    # the engine's wording for a string past the end (Java's String bounds check)
    assert info.value.reason == "VotersRecord: offset 36, count 9, length 40"


def test_kraft_values_follow_kafkas_generated_readers() -> None:
    """Kafka's generated ``LeaderChangeMessageData.read`` (kafka-clients 4.x) throws "non-nullable
    field voters was serialized as null" for a null array and ignores bytes after the message."""
    null_voters = bytes.fromhex("0000 00000002 00 01 00".replace(" ", ""))
    with pytest.raises(CorruptBatchError) as info:
        decode_control_value(LEADER_CHANGE, null_voters)
    assert info.value.field == "control.value.voters"
    assert "null" in info.value.reason
    value = decode_control_value(LEADER_CHANGE, _VALUE_SEEDS[LEADER_CHANGE] + b"\xff\xff")
    assert value == {"version": 0, "leaderId": 2, "voters": [{"voterId": 1}, {"voterId": 2}],
                     "grantingVoters": [{"voterId": 2}]}
