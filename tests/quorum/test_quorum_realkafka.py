"""Must-show (iii) of issue 28 on real Kafka 4.3.1: two controllers formatted with
--initial-controllers and one with --standalone under one cluster id form two quorums; the
audit reports the split. The oracle is kafka-storage itself (what it was asked to format), and
the directory ids the test generated. Formatting only: no JVM is left running."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from segtools.quorum import audit_dirs
from tests.quorum.real_controllers import controller_properties, format_controller, kafka_uuid

pytestmark = pytest.mark.realkafka

#: 4.3.1 in CI; SEGTOOLS_QUORUM_RELEASE runs the module on another release by hand
RELEASE = os.environ.get("SEGTOOLS_QUORUM_RELEASE", "4.3.1")


@pytest.fixture(scope="module")
def formatted(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[int, str]]:
    from segtools.realcluster.kafka_runtime import KafkaUnavailableError, kafka_runtime

    try:
        rt = kafka_runtime(version=RELEASE)
    except KafkaUnavailableError as exc:
        pytest.fail(f"Kafka {RELEASE} is unavailable: {exc}", pytrace=False)
    root = tmp_path_factory.mktemp("quorum-format")
    cluster_id, dir_ids = kafka_uuid(), {i: kafka_uuid() for i in (1, 2, 3)}
    ports = {1: 19191, 2: 19192, 3: 19193}     # written into the dirs only, never bound
    dirs = []
    for i in (1, 2, 3):
        d = root / f"c{i}"
        d.mkdir()
        props = controller_properties(root / f"c{i}.properties", i, ports[i], d,
                                      f"127.0.0.1:{ports[1]},127.0.0.1:{ports[2]}")
        how = (["--initial-controllers", ",".join(f"{j}@127.0.0.1:{ports[j]}:{dir_ids[j]}"
                                                  for j in (1, 2))]
               if i in (1, 2) else ["--standalone"])
        # Kafka 4.3.1 still formats all three (KAFKA-19489 is not refused at format time)
        format_controller(rt, cluster_id, props, *how)
        dirs.append(str(d))
    return dirs, dir_ids


def test_split_quorum_at_formatting_is_reported(formatted: tuple[list[str], dict[int, str]]
                                                ) -> None:
    dirs, dir_ids = formatted
    before = {p: p.stat().st_mtime_ns for d in dirs for p in Path(d).rglob("*")}
    r = audit_dirs(dirs)
    split = [f for f in r.findings if f.kind == "split-at-formatting"]
    assert len(split) == 1 and "[1, 2]" in split[0].message and "[3]" in split[0].message
    assert {n.name: n.bootstrap_voters for n in r.nodes} == {
        dirs[0]: ((1, dir_ids[1]), (2, dir_ids[2])),
        dirs[1]: ((1, dir_ids[1]), (2, dir_ids[2])),
        dirs[2]: ((3, r.nodes[2].directory_id),),
    }
    # one cluster id; only the split is found (a dir only formatted has no quorum-state yet)
    assert len({n.cluster_id for n in r.nodes}) == 1
    assert [f.kind for f in r.findings] == ["split-at-formatting"]
    # 4.3.1 formats this mix although KAFKA-19489's fix (4.2) refuses --standalone beside
    # static voters: the bug row is excluded by the bootstrap files' release, the split stays
    assert [(m.bug.key, m.verdict) for m in r.known_bugs] == [("KAFKA-19489", "excluded")]
    # inputs are evidence: nothing written
    assert {p: p.stat().st_mtime_ns for d in dirs for p in Path(d).rglob("*")} == before
    assert not any(os.path.basename(p) == "quorum-state" for p in before)


@pytest.mark.parametrize("release", ["4.0.0", "4.1.0", "4.2.0", "4.3.1", "4.4.0"])
def test_fingerprint_of_a_formatted_dir_contains_the_release(
        release: str, tmp_path: Path) -> None:
    from segtools.quorum.fingerprint import RELEASE_MAX_LEVEL
    from segtools.realcluster.kafka_runtime import kafka_runtime

    rt = kafka_runtime(version=release)
    d = tmp_path / "c1"
    d.mkdir()
    props = controller_properties(tmp_path / "c1.properties", 1, 19191, d, "127.0.0.1:19191")
    format_controller(rt, kafka_uuid(), props, "--standalone")
    (fp,) = audit_dirs([str(d)]).fingerprints
    true = ".".join(release.split(".")[:2])
    order = [r for r, _ in RELEASE_MAX_LEVEL]
    # the range [release_min, newest) contains the true release, and is tight for a fresh format
    assert fp.release_min == true, fp.note
    assert order.index(fp.release_min) <= order.index(true)


@pytest.mark.parametrize("release", ["4.1.0", "4.2.0"])
def test_kafka_19489_row_matches_what_each_release_formats(release: str, tmp_path: Path) -> None:
    """The known-bug table says KAFKA-19489 (--standalone on a node with
    controller.quorum.voters set) affects releases before 4.2: 4.1.0 must format such a node
    and 4.2.0 must refuse it. The oracle is each release's own kafka-storage."""
    from segtools.quorum.fingerprint import fingerprint, release_key
    from segtools.quorum.known_bugs import KNOWN_BUGS
    from segtools.quorum.nodes import load_node
    from segtools.realcluster.kafka_runtime import kafka_runtime
    from segtools.realcluster.processes import run_tool

    row = next(b for b in KNOWN_BUGS if b.key == "KAFKA-19489")
    assert row.fixed_in is not None
    rt = kafka_runtime(version=release)
    d = tmp_path / "c3"
    d.mkdir()
    props = controller_properties(
        tmp_path / "c3.properties", 3, 19193, d, "127.0.0.1:19193",
        "controller.quorum.voters=1@127.0.0.1:19191,2@127.0.0.1:19192,3@127.0.0.1:19193\n")
    props.write_text(props.read_text().replace("controller.quorum.bootstrap.servers=", "#"))
    res = run_tool(rt.command("kafka.tools.StorageTool", "format", "-t", kafka_uuid(), "-c",
                              str(props), "--standalone", heap="128m"), timeout=120)
    affected = release_key(row.affected_from) <= release_key(release[:3]) \
        < release_key(row.fixed_in)
    assert (res.returncode == 0) == affected, res.stdout + res.stderr
    if affected:
        # the dir the buggy format wrote dates itself inside the row's range
        fp = fingerprint(load_node(str(d)), bootstrap_only=True)
        assert fp.release_min == release[:3], fp.note
    else:
        assert "cannot specify controller.quorum.voters" in res.stdout + res.stderr
