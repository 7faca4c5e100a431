"""Issue 11, "one way from paths to segments": every entry point that turns user paths into
segment files (iter_batches, read_batch_table, read_records, dump, export's planning, compare's
replica discovery, the kafka_segments Spark data source's listing) sees the same segment files
for every path shape: a segment file, a partition dir, a broker dir, a folder of broker dirs,
a symlink to each, a duplicate through a symlink and a file:// URI.

The expected files are what the test built (real paths), and the expected batches come from
walking those files by their size fields (tests/builders/segment_extents.py), not from segtools.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import warnings
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from segment_extents import batch_extents

from segtools.cli.main import cli
from segtools.export import ExportOptions, _segments_in_range, plan_export
from segtools.files.sources import InputPathWarning
from segtools.forensics.collect import discover_replicas
from segtools.records import columnar
from segtools.records.batches import iter_batches

REPO = Path(__file__).resolve().parents[2]
S0 = REPO / "samples" / "generated" / "S0-healthy-baseline"
SEG = "00000000000000000000.log"


def _local(path: str) -> str:
    """The real local path of a path or file:// URI an entry point reported."""
    return os.path.realpath(path[len("file://"):] if path.startswith("file://") else path)


def _batches(path: str | Path) -> list[tuple[int, int, int]]:
    """(position, base offset, records count) of each v2 batch, from the size fields only."""
    data = Path(path).read_bytes()
    out = []
    for start, _end in batch_extents(data):
        (base,) = struct.unpack_from(">q", data, start)
        (count,) = struct.unpack_from(">i", data, start + 57)   # v2: records count
        out.append((start, base, count))
    return out


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """cluster/broker-1 (orders-0: one segment; orders-1: two segments split from it, a
    .deleted file and a link to its own first segment), cluster/broker-2 (orders-0: a shorter
    segment), cluster/broker-2-again -> broker-2, and links/ to each shape."""
    root = tmp_path_factory.mktemp("one-resolver")
    cluster = root / "cluster"
    shutil.copytree(S0 / "broker-1", cluster / "broker-1")
    shutil.copytree(S0 / "broker-2", cluster / "broker-2")
    data = (S0 / "broker-1" / "orders-0" / SEG).read_bytes()
    extents = batch_extents(data)
    assert len(extents) >= 4
    # broker-2's segment: the first half of the batches, so its batches differ from broker-1's
    half = extents[len(extents) // 2][0]
    (cluster / "broker-2" / "orders-0" / SEG).write_bytes(data[:half])
    # broker-1/orders-1: the same batches as two segments, named by their base offsets
    o1 = cluster / "broker-1" / "orders-1"
    o1.mkdir()
    split = extents[3][0]
    (second_base,) = struct.unpack_from(">q", data, split)
    (o1 / SEG).write_bytes(data[:split])
    (o1 / f"{second_base:020d}.log").write_bytes(data[split:])
    (o1 / f"{second_base:020d}.log.deleted").write_bytes(data[split:])   # not a live segment
    (o1 / "00000000000000099999.log").symlink_to(o1 / SEG)             # the same file again
    (cluster / "broker-2-again").symlink_to(cluster / "broker-2", target_is_directory=True)
    links = root / "links"
    (links / "orders-0").mkdir(parents=True)
    (links / "orders-0" / SEG).symlink_to(cluster / "broker-1" / "orders-0" / SEG)
    (links / "orders-1").symlink_to(o1, target_is_directory=True)
    (links / "broker-1").symlink_to(cluster / "broker-1", target_is_directory=True)
    (links / "cluster").symlink_to(cluster, target_is_directory=True)

    seg_b1 = str((cluster / "broker-1" / "orders-0" / SEG).resolve())
    o1_segs = {str((o1 / SEG).resolve()), str((o1 / f"{second_base:020d}.log").resolve())}
    b1 = {seg_b1, *o1_segs}
    everything = b1 | {str((cluster / "broker-2" / "orders-0" / SEG).resolve())}
    c = str(cluster)
    shapes = {
        "segment file": ([f"{c}/broker-1/orders-0/{SEG}"], {seg_b1}),
        "partition dir": ([f"{c}/broker-1/orders-1"], o1_segs),
        "broker dir": ([f"{c}/broker-1"], b1),
        "folder of broker dirs": ([c], everything),
        "symlink to a segment file": ([f"{links}/orders-0/{SEG}"], {seg_b1}),
        "symlink to a partition dir": ([f"{links}/orders-1"], o1_segs),
        "symlink to a broker dir": ([f"{links}/broker-1"], b1),
        "symlink to the folder": ([f"{links}/cluster"], everything),
        "file:// URI of the folder": ([f"file://{c}"], everything),
        "file:// URI of a segment file": ([f"file://{c}/broker-1/orders-0/{SEG}"], {seg_b1}),
        "broker dir given twice via a symlink": ([f"{c}/broker-1", f"{links}/broker-1"], b1),
        "segment given twice via a symlink": ([f"{c}/broker-1/orders-0/{SEG}",
                                               f"{links}/orders-0/{SEG}"], {seg_b1}),
    }
    return {"root": root, "shapes": shapes}


# ------------------------------------------------------------------ the entry points

def _read_batches(paths: list[str]) -> Counter[str]:
    (path,) = paths
    return Counter(_local(b.path) for b in iter_batches(path))


def _expected_batches(files: set[str]) -> Counter[str]:
    return Counter({f: len(_batches(f)) for f in files})


def _arrow_key(files: set[str], level: str) -> Counter[tuple[str, int, int]]:
    """(segment name, batch position, batch base offset), once per batch (or per record)."""
    out: Counter[tuple[str, int, int]] = Counter()
    for f in files:
        for pos, base, count in _batches(f):
            out[(Path(f).name, pos, base)] += count if level == "records" else 1
    return out


def _scan_batches(paths: list[str]) -> Counter[tuple[str, int, int]]:
    (path,) = paths
    t = columnar.read_batch_table(path).to_pydict()
    return Counter(zip(t["segment"], t["position"], t["base_offset"]))


def _read_records(paths: list[str]) -> Counter[tuple[str, int, int]]:
    (path,) = paths
    t = columnar.read_records(path).to_pydict()
    return Counter(zip(t["segment"], t["batch_position"], t["batch_base_offset"]))


def _dump(paths: list[str]) -> set[str]:
    run = CliRunner().invoke(cli, ["dump", *paths])
    assert run.exit_code == 0, run.output
    return {_local(p) for p in re.findall(r"^Dumping (.+\.log)$", run.output, re.M)}


def _export_plan(paths: list[str], out: Path) -> set[str]:
    options = ExportOptions(by_broker=True)
    return {_local(s) for src in plan_export(list(paths), str(out), options)
            for s in (src.segments[i] for i in _segments_in_range(src.segments, options))}


def _compare_discovery(paths: list[str]) -> set[str]:
    return {_local(p) for spec in discover_replicas(paths) for p, _size in spec.segments}


def _spark_listing(paths: list[str]) -> set[str]:
    from segtools.spark.datasource import plan_segments

    (path,) = paths
    return {_local(p.uri) for p in plan_segments(path)}


SHAPES = ["segment file", "partition dir", "broker dir", "folder of broker dirs",
          "symlink to a segment file", "symlink to a partition dir", "symlink to a broker dir",
          "symlink to the folder", "file:// URI of the folder", "file:// URI of a segment file",
          "broker dir given twice via a symlink", "segment given twice via a symlink"]


@pytest.mark.parametrize("shape", SHAPES)
def test_every_entry_point_sees_the_same_segment_files(tree: dict[str, object], shape: str) -> None:
    paths, files = tree["shapes"][shape]   # type: ignore[index]
    out = Path(tree["root"]) / "out-never-written"   # type: ignore[arg-type]
    with warnings.catch_warnings():
        # the duplicates and the link to a sibling segment are said once per reader
        warnings.simplefilter("ignore", InputPathWarning)
        assert _export_plan(paths, out) == files
        assert _compare_discovery(paths) == files
        assert _dump(paths) == files
        if len(paths) == 1:   # the readers and Spark's .load take one path
            assert _read_batches(paths) == _expected_batches(files)
            assert _scan_batches(paths) == _arrow_key(files, "batches")
            assert _read_records(paths) == _arrow_key(files, "records")
            assert _spark_listing(paths) == files
    assert not out.exists()


def test_a_link_to_a_sibling_segment_is_read_once_with_a_warning(tree: dict[str, object]) -> None:
    """Formerly only export dropped it (by real path); iter_batches read the file twice."""
    o1 = Path(tree["root"]) / "cluster" / "broker-1" / "orders-1"   # type: ignore[arg-type]
    with pytest.warns(InputPathWarning, match=r"00000000000000099999\.log: same file as .*" + SEG):
        seen = _read_batches([str(o1)])
    assert seen == _expected_batches({str(o1 / SEG), *(str(p) for p in o1.glob("*.log")
                                                        if not p.is_symlink())})


# ------------------------------------------------------------------ base offsets from names


@pytest.mark.parametrize(("name", "base"), [
    # LogFileUtils.offsetFromFileName: Long.parseLong(name.substring(0, name.indexOf('.')))
    ("00000000000000000100.log", 100),
    ("123.log", 123),                                   # export used to read no base (None)
    ("00000000000000000100.log.deleted", 100),
    ("00000000000000000100.log.cleaned", 100),
    ("00000000000000000100.log.swap", 100),
    ("000000000000000001000.log", 1000),                # 21 digits: export used to read 100
    ("00000000000000000100-copy.log", None),            # parseLong throws; export read 100
    ("bad.log", None),
    ("\u00b2.log", None),                               # a digit that is no decimal
    ("9223372036854775808.log", None),                  # above Long.MAX_VALUE
])
def test_export_prunes_by_kafkas_reading_of_the_name(tmp_path: Path, name: str, base: int | None) -> None:
    """Export skips a whole segment when its name says it starts at or after --end-offset:
    with Kafka's rule, a name Kafka reads a base offset from is pruned by it; a name Kafka
    cannot read one from is always read."""
    part = tmp_path / "t-0"
    part.mkdir()
    seg = part / name
    shutil.copy(S0 / "broker-1" / "orders-0" / SEG, seg)
    from segtools.formats.names import stem_offset

    assert stem_offset(name) == base
    for end in (50, 100, 101, 1001):
        kept = [str(seg) for _ in _segments_in_range((str(seg),), ExportOptions(end_offset=end))]
        assert kept == ([] if base is not None and base >= end else [str(seg)]), (name, end)
    # the next segment's name bounds the one before it for --start-offset
    nxt = part / "zz-renamed.log" if base is None else seg
    first = part / "00000000000000000000.log"
    shutil.copy(S0 / "broker-1" / "orders-0" / SEG, first)
    pair = (str(first), str(nxt))
    kept = [pair[i] for i in _segments_in_range(pair, ExportOptions(start_offset=150))]
    assert (str(first) in kept) == (base is None or base > 150), (name, kept)


def test_loose_segments_are_ordered_by_kafkas_reading_of_the_name(tmp_path: Path) -> None:
    """Segments named one by one are read in base-offset order by Kafka's rule: ``123.log``
    after ``00000000000000000100.log``, a name without an offset first."""
    from segtools.files.sources import resolve

    part = tmp_path / "t-0"
    part.mkdir()
    names = ["00000000000000000200.log", "123.log", "renamed.log", "00000000000000000100.log"]
    for n in names:
        shutil.copy(S0 / "broker-1" / "orders-0" / SEG, part / n)
    got = resolve([str(part / n) for n in names]).segment_paths()
    assert [Path(p).name for p in got] == ["renamed.log", "00000000000000000100.log", "123.log",
                                           "00000000000000000200.log"]


# ------------------------------------------------------------------ compare's transaction log


def test_transaction_log_is_found_by_the_resolver(tmp_path: Path) -> None:
    """compare reads the producers of ``__transaction_state-N`` in each log dir: the live
    partition dirs only (not a ``-delete`` one), each segment once even when the log dir is
    given twice."""
    from segtools.forensics.transactions import _transaction_log_segments

    ld = tmp_path / "broker-1"
    shutil.copytree(S0 / "broker-1", ld)
    for name in ("__transaction_state-0", "__transaction_state-7",
                 "__transaction_state-3.0123456789abcdef0123456789abcdef-delete"):
        (ld / name).mkdir()
        shutil.copy(S0 / "broker-1" / "orders-0" / SEG, ld / name / SEG)
    (ld / "__transaction_state-7" / "notes.log").write_text("x")   # not a segment name
    link = tmp_path / "again"
    link.symlink_to(ld, target_is_directory=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputPathWarning)
        got = _transaction_log_segments([str(ld), str(link)])
    assert sorted(_local(p) for p in got) == sorted(
        str((ld / n / SEG).resolve()) for n in ("__transaction_state-0", "__transaction_state-7"))


def test_dump_orders_a_partition_dir_by_kafkas_reading_of_the_names(tmp_path: Path) -> None:
    """dump expands a dir by base offset then kind, the offset read as Kafka reads it (the
    stem; a KRaft snapshot's end offset); names without one come first, by name."""
    from segtools.dump.paths import expand

    part = tmp_path / "t-0"
    part.mkdir()
    names = ["00000000000000000200.log", "123.log", "renamed.log", "00000000000000000100.index",
             "00000000000000000100.log", "00000000000000000150-0000000001.checkpoint",
             "00000000000000000100-copy.log", "leader-epoch-checkpoint"]
    for n in names:
        (part / n).write_bytes(b"")
    assert [Path(p).name for p in expand(str(part))] == [
        "00000000000000000100-copy.log", "leader-epoch-checkpoint", "renamed.log",
        "00000000000000000100.log", "00000000000000000100.index", "123.log",
        "00000000000000000150-0000000001.checkpoint", "00000000000000000200.log"]
