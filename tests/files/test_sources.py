"""segtools.files.sources: one meaning per path shape, for every entry point.

Trees are built in tmp_path from the small generated sample files in samples/ (a few KB each).
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli
from segtools.dump import paths as dump_paths
from segtools.errors import InputError, SegtoolsError
from segtools.export import ExportOptions, export, plan_export
from segtools.files.sources import InputPathWarning, parse_partition_dir_name, resolve
from segtools.records import columnar
from segtools.records.batches import iter_batches

REPO = Path(__file__).resolve().parents[2]
S0 = REPO / "samples" / "generated" / "S0-healthy-baseline"
S12 = REPO / "samples" / "generated" / "S12-empty-disk-leader"
SEG = "00000000000000000000.log"
UID = "0123456789abcdef0123456789abcdef"


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    """tmp/cluster: broker-1, broker-2 (with a -future copy of orders-0), an empty broker-3,
    the controller's metadata log, a snapshots/ folder, notes; tmp/evidence: loose segment;
    tmp/etc: folders and files but no Kafka files."""
    cluster = tmp_path / "cluster"
    for b in (1, 2):
        shutil.copytree(S0 / f"broker-{b}", cluster / f"broker-{b}")
    future = cluster / "broker-2" / f"orders-1.{UID}-future"
    future.mkdir()
    shutil.copy(S0 / "broker-2" / "orders-0" / SEG, future / SEG)
    (cluster / "broker-3").mkdir()
    shutil.copytree(S12 / "controller", cluster / "controller")
    shutil.copytree(S0 / "broker-1", cluster / "snapshots" / "old" / "broker-1")
    (cluster / "notes.txt").write_text("incident 42\n")
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    shutil.copy(S0 / "broker-3" / "orders-0" / SEG, evidence / SEG)
    etc = tmp_path / "etc"
    for sub in ("ssl-1", "apt", "systemd-2/system", "empty-0"):
        (etc / sub).mkdir(parents=True)
    (etc / "ssl-1" / "openssl.cnf").write_text("x")
    (etc / "hosts").write_text("127.0.0.1 localhost\n")
    return tmp_path


SHAPES = {
    "cluster": "cluster",
    "log_dir": "cluster/broker-2",
    "partition_dir": "cluster/broker-1/orders-0",
    "state_partition_dir": f"cluster/broker-2/orders-1.{UID}-future",
    "segment": f"cluster/broker-1/orders-0/{SEG}",
    "segment_folder": "evidence",
    "metadata_log": "cluster/controller",
    "nothing": "etc",
}


def test_issue_11_example_read_batches_and_scan_batches_agree_on_a_cluster_folder() -> None:
    """Issue 11: iter_batches(folder of broker dirs) yielded 0 batches, read_batch_table 60 rows."""
    import segtools

    objects = list(segtools.iter_batches(S0))
    table = segtools.read_batch_table(S0)
    assert objects and len(objects) == table.num_rows
    assert [b.base_offset for b in objects] == table.column("base_offset").to_pylist()
    assert segtools.resolve(S0).inputs[0].kind == "cluster"


def test_kinds(tree: Path) -> None:
    for kind, rel in SHAPES.items():
        got = resolve([tree / rel]).inputs[0].kind
        assert got == kind.replace("state_", ""), rel


def test_cluster_means_its_broker_dirs(tree: Path) -> None:
    res = resolve([tree / "cluster"])
    item = res.inputs[0]
    assert [Path(ld.path).name for ld in item.log_dirs] == ["broker-1", "broker-2", "broker-3"]
    assert [ld.broker for ld in item.log_dirs] == [1, 2, 3]
    # the empty broker-3 is an empty broker, never a partition named broker-3
    assert item.log_dirs[2].partitions == []
    assert all(p.topic != "broker" for p in res.partitions)
    assert [w.code for w in res.warnings] == ["empty_broker_dir"]
    assert "broker-3" in res.warnings[0].message
    # the controller's log is kept apart, snapshots/ and notes.txt are not evidence to read
    assert [Path(m.partition_dir).name for m in res.metadata_logs] == ["__cluster_metadata-0"]
    assert {(p.topic, p.partition, p.broker, p.state) for p in res.partitions} == {
        ("orders", 0, 1, ""), ("orders", 0, 2, ""), ("orders", 1, 2, "future")}
    assert not any("snapshots" in s for s in res.segment_paths())


def test_a_cluster_without_listing_its_brokers(tree: Path, monkeypatch) -> None:
    """list_brokers=False (compare's search for the controller's log): the same kind, broker
    dirs and metadata log as a full resolve, and no broker's partition dir is listed."""
    from segtools.files import sources

    full = resolve([tree / "cluster"])
    listed: list[str] = []
    real_list = sources._Fs.list

    def spy(self, path):
        listed.append(path)
        return real_list(self, path)

    monkeypatch.setattr(sources._Fs, "list", spy)
    quick = resolve([tree / "cluster"], list_brokers=False)
    assert quick.inputs[0].kind == full.inputs[0].kind == "cluster"
    assert [ld.path for ld in quick.inputs[0].log_dirs] == [ld.path for ld in full.inputs[0].log_dirs]
    assert [m.partition_dir for m in quick.metadata_logs] == [m.partition_dir for m in full.metadata_logs]
    assert quick.partitions == []
    assert not [p for p in listed if "orders-" in p], listed       # no broker's partition dir
    assert any(p.endswith("__cluster_metadata-0") for p in listed)  # the controller's, read


def test_segments_ordered_by_base_offset(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    for base in (100, 5, 20):   # lexically 100 < 20 < 5
        shutil.copy(S0 / "broker-1" / "orders-0" / SEG, part / f"{base:020d}.log")
    (part / "00000000000000000007.log.deleted").write_bytes(b"")
    (part / "leader-epoch-checkpoint").write_text("0\n0\n")
    src = resolve([part]).partitions[0]
    assert [Path(s).name[:20].lstrip("0") for s in src.segments] == ["5", "20", "100"]
    assert (src.topic, src.partition, src.state) == ("t", 0, "")


def test_etc_like_folder_resolves_to_nothing(tree: Path) -> None:
    res = resolve([tree / "etc"])
    assert res.inputs[0].kind == "nothing" and res.partitions == [] and res.empty
    assert list(iter_batches(tree / "etc")) == []
    assert columnar.read_batch_table(tree / "etc").num_rows == 0
    assert dump_paths.expand(str(tree / "etc")) == []
    with pytest.raises(InputError, match="no Kafka files found"):
        export([tree / "etc"], str(tree / "out"))


def test_cli_export_and_compare_refuse_a_folder_without_kafka_files(tree: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["export", str(tree / "etc"), "--out", str(tree / "out")])
    assert res.exit_code == 2, res.output
    assert "no Kafka files found" in res.output and "Traceback" not in res.output
    res = runner.invoke(cli, ["compare", str(tree / "etc"), "--no-spark"])
    assert res.exit_code == 2, res.output
    assert "no Kafka files found" in res.output and "CONSISTENT" not in res.output
    assert not (tree / "out").exists()


def test_same_dir_twice_is_read_once(tree: Path) -> None:
    b1 = tree / "cluster" / "broker-1"
    link = tree / "link-to-broker-1"
    link.symlink_to(b1, target_is_directory=True)
    for inputs in ([b1, b1], [b1, link], [b1, b1 / "orders-0"]):
        res = resolve(inputs)
        assert len(res.partitions) == 1, inputs
        assert [w.code for w in res.warnings] == ["duplicate_input"]
        assert str(b1) in res.warnings[0].message or str(b1) in (res.warnings[0].target or "")
    # compare lists one replica and says why
    out = tree / "r.json"
    run = CliRunner().invoke(cli, ["compare", str(b1), str(link), "--no-spark", "--report", str(out)])
    assert run.exit_code in (0, 1), run.output
    assert "once" in run.output
    doc = json.loads(out.read_text())
    assert len(doc["partitions"][0]["replicas"]) == 1


def test_a_segment_inside_a_dir_given_whole_is_read_once(tree: Path) -> None:
    """The resolver is the one place that drops repeats (issue 11): a segment file named next
    to its partition dir (in either order) is one replica; dump keeps it (Kafka's tool dumps a
    file named twice twice); compare's unique_inputs is the resolver's answer."""
    from segtools.forensics.inputs import unique_inputs

    part = tree / "cluster" / "broker-1" / "orders-0"
    seg = part / SEG
    for inputs in ([part, seg], [seg, part], [tree / "cluster" / "broker-1", seg]):
        res = resolve(inputs)
        assert [p.partition_dir for p in res.partitions] == [str(part)], inputs
        assert [w.code for w in res.warnings] == ["duplicate_input"], inputs
    kept = resolve([part, seg], keep_duplicate_files=True)
    assert len(kept.partitions) == 2 and kept.warnings == []
    link = tree / "link-to-orders-0"
    link.symlink_to(part, target_is_directory=True)
    paths, notes = unique_inputs([str(part), str(tree / "etc"), str(link), str(part) + "/"])
    assert paths == [str(part), str(tree / "etc")]
    assert len(notes) == 2 and all(f"same directory as {part}" in n for n in notes)


def test_byte_exact_copy_of_a_broker_is_noticed(tree: Path) -> None:
    b1 = tree / "cluster" / "broker-1"
    copy = tree / "copy-of-b1"
    shutil.copytree(b1, copy)   # new mtimes, same bytes
    res = resolve([b1, copy])
    assert [n.code for n in res.notices] == ["copy_of_broker"]
    assert res.notices[0].path == str(copy) and res.notices[0].target == str(b1)
    assert "not an independent replica" in res.notices[0].message
    # a different broker, or the same broker id with other bytes, is no copy
    assert resolve([b1, tree / "cluster" / "broker-2"]).notices == []
    seg = copy / "orders-0" / SEG
    data = bytearray(seg.read_bytes())
    data[-1] ^= 0xFF
    seg.write_bytes(bytes(data))
    assert resolve([b1, copy]).notices == []


def test_compare_says_a_copy_is_not_an_independent_replica(tree: Path) -> None:
    b1 = tree / "cluster" / "broker-1"
    shutil.copytree(b1, tree / "copy")
    run = CliRunner().invoke(cli, ["compare", str(b1), str(tree / "copy"), "--no-spark"])
    assert run.exit_code in (0, 1), run.output
    assert "not an independent replica" in run.output


def _outside(tmp_path: Path) -> Path:
    out = tmp_path / "elsewhere"
    shutil.copytree(S0 / "broker-3" / "orders-0", out / "orders-0")
    return out


def test_partition_dir_link_out_of_the_input_is_skipped(tree: Path) -> None:
    elsewhere = _outside(tree)
    b1 = tree / "cluster" / "broker-1"
    (b1 / "orders-1").symlink_to(elsewhere / "orders-0", target_is_directory=True)
    res = resolve([b1])
    assert [(p.topic, p.partition) for p in res.partitions] == [("orders", 0)]
    assert [w.code for w in res.warnings] == ["link_outside_input"]
    w = res.warnings[0]
    assert w.path == str(b1 / "orders-1") and w.target == str((elsewhere / "orders-0").resolve())
    with pytest.warns(InputPathWarning, match="outside the given inputs"):
        paths = {Path(b.path).parent.name for b in iter_batches(b1)}
    assert paths == {"orders-0"}
    # a link inside the inputs is followed
    res = resolve([b1, elsewhere])
    assert {(p.topic, p.partition) for p in res.partitions} == {("orders", 0), ("orders", 1)}


def test_segment_link_out_of_the_input_is_skipped_everywhere(tree: Path) -> None:
    elsewhere = _outside(tree)
    part = tree / "cluster" / "broker-1" / "orders-0"
    (part / "00000000000000099999.log").symlink_to(elsewhere / "orders-0" / SEG)
    res = resolve([part])
    assert [Path(s).name for s in res.partitions[0].segments] == [SEG]
    assert res.warnings[0].code == "link_outside_input"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputPathWarning)
        assert {Path(b.path).name for b in iter_batches(part)} == {SEG}
        assert set(columnar.read_batch_table(part).column("segment").to_pylist()) == {SEG}
    assert not any("99999" in f for f in dump_paths.expand(str(part)))
    dump = CliRunner().invoke(cli, ["dump", str(part)])
    assert "outside the given inputs" in dump.output
    exp = CliRunner().invoke(cli, ["export", str(part), "--out", str(tree / "pq")])
    assert exp.exit_code == 0, exp.output
    assert "outside the given inputs" in exp.output
    report = tree / "r.json"
    cmp = CliRunner().invoke(cli, ["compare", str(tree / "cluster"), "--no-spark",
                                   "--report", str(report)])
    assert "outside the given inputs" in cmp.output
    assert "outside the given inputs" in report.read_text()   # the report lists it too


# ------------------------------------------------------------------ unusable paths


def _entry_points():
    return [
        ("resolve", lambda p: resolve([p])),
        ("iter_batches", lambda p: list(iter_batches(p))),
        ("read_batch_table", lambda p: columnar.read_batch_table(p)),
        ("read_records", lambda p: columnar.read_records(p)),
        ("plan_export", lambda p: plan_export([p], "/nonexistent-out", ExportOptions())),
    ]


def _bad_inputs(tmp_path: Path) -> dict[str, object]:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    part_loop = tmp_path / "a" / "t-0"
    part_loop.mkdir(parents=True)
    shutil.copy(S0 / "broker-1" / "orders-0" / SEG, part_loop / SEG)
    (part_loop / "00000000000000000100.log").symlink_to(part_loop / "00000000000000000100.log")
    bad_name = tmp_path / "b" / "t-0"
    bad_name.mkdir(parents=True)
    shutil.copy(S0 / "broker-1" / "orders-0" / SEG, bad_name / SEG)
    os.close(os.open(os.fsencode(bad_name) + b"/0000\xff.log", os.O_CREAT | os.O_WRONLY))
    bad_dir = tmp_path / "c"
    bad_dir.mkdir()
    (bad_dir / "meta.properties").write_text("broker.id=1\n")
    os.mkdir(os.fsencode(bad_dir) + b"/orders\xff-0")
    shutil.copy(S0 / "broker-1" / "orders-0" / SEG, os.fsdecode(os.fsencode(bad_dir) + b"/orders\xff-0/") + SEG)
    return {
        "symlink loop": loop,
        "symlink loop in a partition dir": part_loop,
        "name of 300 characters": tmp_path / ("x" * 300),
        "non-UTF-8 segment name": Path(os.fsdecode(os.fsencode(bad_name) + b"/0000\xff.log")),
        "non-UTF-8 partition dir name": bad_dir,
    }


@pytest.mark.parametrize("case", ["symlink loop", "symlink loop in a partition dir",
                                  "name of 300 characters"])
@pytest.mark.parametrize("entry", [name for name, _ in _entry_points()])
def test_unusable_paths_are_input_errors(tmp_path: Path, case: str, entry: str) -> None:
    path = _bad_inputs(tmp_path)[case]
    call = dict(_entry_points())[entry]
    with pytest.raises(SegtoolsError) as info:
        call(path)
    assert isinstance(info.value, InputError)
    message = str(info.value)
    message.encode("utf-8")   # printable: no lone surrogates
    shown = {"symlink loop": "symlink loop", "symlink loop in a partition dir": "symlink loop",
             "name of 300 characters": "x" * 300}[case]
    assert shown in message
    if case == "symlink loop in a partition dir":
        assert "00000000000000000100.log" in message


def test_unlistable_partition_dir_is_an_input_error(tree: Path, monkeypatch) -> None:
    real = os.scandir
    part = tree / "cluster" / "broker-1" / "orders-0"

    def denied(path="."):
        if os.fspath(path).rstrip("/").endswith("orders-0"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", denied)
    for call in (lambda: resolve([part]), lambda: list(iter_batches(tree / "cluster")),
                 lambda: columnar.read_records(tree / "cluster" / "broker-1")):
        with pytest.raises(InputError, match="cannot read .*orders-0: Permission denied"):
            call()


def test_unlistable_unrelated_folder_in_a_cluster_is_a_warning(tree: Path, monkeypatch) -> None:
    real = os.scandir

    def denied(path="."):
        if os.fspath(path).rstrip("/").endswith("snapshots"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", denied)
    res = resolve([tree / "cluster"])
    assert len(res.partitions) == 3
    assert "unlistable_dir" in [w.code for w in res.warnings]


@pytest.mark.parametrize("case", ["non-UTF-8 segment name", "non-UTF-8 partition dir name"])
def test_non_utf8_names_are_kept_or_refused_by_name(tmp_path: Path, case: str) -> None:
    path = _bad_inputs(tmp_path)[case]
    kept = resolve([path])     # the readers read them (U+FFFD in Arrow columns)
    assert kept.segment_paths()
    with pytest.raises(InputError) as info:
        resolve([path], non_utf8="raise")
    message = str(info.value)
    message.encode("utf-8")   # printable: no lone surrogates
    assert "not UTF-8" in message and "\\xff" in message


def test_bytes_path_means_the_same_as_its_str(tree: Path) -> None:
    for rel in ("cluster", f"cluster/broker-1/orders-0/{SEG}"):
        assert resolve([os.fsencode(tree / rel)]).segment_paths() == \
            resolve([tree / rel]).segment_paths()
    with pytest.raises(InputError):
        resolve([12345])


# ------------------------------------------------------------------ one meaning everywhere


def _batch_keys_objects(path: Path) -> list[tuple]:
    out = []
    for b in iter_batches(path):
        try:
            topic, partition, _ = parse_partition_dir_name(Path(b.path).parent.name)
        except InputError:
            topic, partition = None, None
        out.append((topic, partition, Path(b.path).name, b.position, b.base_offset, b.crc))
    return out


def _batch_keys_arrow(path: Path) -> list[tuple]:
    t = columnar.read_batch_table(path).to_pydict()
    return list(zip(t["topic"], t["partition"], t["segment"], t["position"], t["base_offset"],
                    t["crc"]))


def _segments_read_batches(path: Path) -> list[str]:
    seen: list[str] = []
    for b in iter_batches(path):
        if not seen or seen[-1] != b.path:
            seen.append(b.path)
    return seen


def _segments_dump(path: Path) -> list[str]:
    return [f for f in dump_paths.expand(str(path)) if f.endswith(".log")]


def _segments_export(path: Path) -> list[str]:
    return [s for src in plan_export([path], "/nonexistent-out", ExportOptions(by_broker=True))
            for s in src.segments]


def _segments_spark(path: Path) -> list[str]:
    from segtools.spark.datasource import plan_segments

    return [p.uri for p in plan_segments(str(path))]


@pytest.mark.parametrize("shape", [s for s in SHAPES if s != "nothing"])
def test_every_entry_point_reads_the_same_batches(tree: Path, shape: str) -> None:
    path = tree / SHAPES[shape]
    expected = resolve([path]).segment_paths()
    assert expected, shape
    assert _segments_read_batches(path) == [s for s in expected if os.path.getsize(s)]
    assert sorted(_segments_dump(path)) == sorted(expected)
    assert _segments_export(path) == expected
    assert sorted(_segments_spark(path)) == sorted(expected)
    objects = _batch_keys_objects(path)
    assert objects and objects == _batch_keys_arrow(path)
    records = columnar.read_records(path).to_pydict()
    got = list(zip(records["segment"], records["batch_position"], records["offset"]))
    want = [(Path(b.path).name, b.position, r.offset) for b in iter_batches(path)
            for r in b.records()]
    assert got == want


# ------------------------------------------------------------------ URIs (pyarrow.fs)


def _strip(uri: str, scheme: str) -> str:
    assert uri.startswith(scheme), uri
    return uri[len(scheme):]


def test_file_uri_means_the_local_path(tree: Path) -> None:
    from segtools.spark.datasource import plan_segments

    local = resolve([tree / "cluster"])
    uri = resolve([f"file://{tree / 'cluster'}"])
    assert [_strip(s, "file://") for s in uri.segment_paths()] == local.segment_paths()
    assert [(p.topic, p.partition, p.broker, p.state) for p in uri.partitions] == \
        [(p.topic, p.partition, p.broker, p.state) for p in local.partitions]
    assert sorted(_strip(p.uri, "file://") for p in plan_segments(f"file://{tree / 'cluster'}")) \
        == sorted(local.segment_paths())


def test_other_uris_go_through_pyarrow_fs(tree: Path, monkeypatch) -> None:
    """A URI is listed by the pyarrow filesystem from_uri gives (a local one stands in for S3
    here) and resolves to the same shapes, brokers and segments as the local path."""
    from pyarrow import fs as pafs

    import segtools.files.sources as sources

    listed: list[str] = []

    class Recording:
        """A LocalFileSystem that records what it is asked to list."""

        def __init__(self) -> None:
            self.fs = pafs.LocalFileSystem()

        def get_file_info(self, arg):
            listed.append(getattr(arg, "base_dir", arg))
            return self.fs.get_file_info(arg)

        def open_input_file(self, path):
            return self.fs.open_input_file(path)

    monkeypatch.setattr(sources, "_from_uri", lambda uri: (Recording(), uri[len("test://"):]))
    for rel in ("cluster", "cluster/broker-2", "cluster/broker-1/orders-0", "evidence", "etc"):
        local = resolve([tree / rel])
        remote = resolve([f"test://{tree / rel}"])
        assert remote.inputs[0].kind == local.inputs[0].kind, rel
        assert [_strip(s, "test://") for s in remote.segment_paths()] == local.segment_paths()
        assert [(p.topic, p.partition, p.broker, p.state) for p in remote.partitions] == \
            [(p.topic, p.partition, p.broker, p.state) for p in local.partitions]
    assert listed, "the pyarrow filesystem was not used"
