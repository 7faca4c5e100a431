"""segtools.files.outputs, the output-safety rules every writing command shares (issue 9, issue 16)."""

from __future__ import annotations

import os

import pytest

from segtools.files.outputs import (
    PARTIAL_MARKER,
    SUCCESS_MARKER,
    UnsafeOutputError,
    atomic_file,
    atomic_write,
    check_output_file,
    check_output_location,
    partial_run,
    prepare_output_dir,
)


@pytest.fixture
def evidence(tmp_path):
    root = tmp_path / "cluster"
    (root / "broker-1/orders-0").mkdir(parents=True)
    (root / "broker-1/orders-0/00000000000000000000.log").write_bytes(b"segment bytes")
    (root / "broker-1/replication-offset-checkpoint").write_text("0\n1\norders 0 5\n")
    return root


def test_output_inside_an_input_is_refused_by_path_and_by_real_path(evidence, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(evidence, target_is_directory=True)
    for out, inputs in [(evidence / "pq", [evidence]), (evidence / "broker-1/x/y", [evidence]),
                        (evidence, [evidence]), (link / "pq", [evidence]), (evidence / "pq", [link]),
                        (evidence / "broker-1/orders-0/00000000000000000000.log",
                         [evidence / "broker-1/orders-0/00000000000000000000.log"])]:
        with pytest.raises(UnsafeOutputError, match="inside the input"):
            check_output_location(out, inputs)
    check_output_location(tmp_path / "pq", [evidence, link])            # beside the evidence: fine
    check_output_location(tmp_path / "cluster-pq", [evidence])          # a name prefix is not inside


def test_an_output_file_that_is_an_input_file_is_refused(evidence, tmp_path):
    checkpoint = evidence / "broker-1/replication-offset-checkpoint"
    hard = tmp_path / "report.json"
    os.link(checkpoint, hard)
    with pytest.raises(UnsafeOutputError, match="hard link"):
        check_output_file(hard, [evidence], flag="--report")
    other = tmp_path / "other.json"
    other.write_text("{}")
    check_output_file(other, [evidence], flag="--report")
    with pytest.raises(UnsafeOutputError, match="exists"):
        check_output_file(other, [evidence], flag="--report", overwrite=False)


def test_atomic_write_replaces_a_hard_link_without_writing_through(evidence, tmp_path):
    checkpoint = evidence / "broker-1/replication-offset-checkpoint"
    before = checkpoint.read_bytes()
    hard = tmp_path / "out.json"
    os.link(checkpoint, hard)
    atomic_write(hard, '{"new": 1}')
    assert hard.read_text() == '{"new": 1}' and checkpoint.read_bytes() == before


def test_a_failed_atomic_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_file(target) as fh:
            fh.write("half")
            raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_non_empty_output_folder_needs_force(tmp_path):
    out = tmp_path / "out"
    prepare_output_dir(out)
    prepare_output_dir(out)                                             # empty: fine
    (out / "x").write_text("keep")
    with pytest.raises(UnsafeOutputError, match="not empty"):
        prepare_output_dir(out)
    prepare_output_dir(out, force=True)
    assert (out / "x").read_text() == "keep"


def test_partial_marker_stays_when_the_run_fails_and_success_replaces_it(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(KeyboardInterrupt):
        with partial_run(out, command="segtools export"):
            assert (out / PARTIAL_MARKER).is_file()
            raise KeyboardInterrupt
    assert "interrupted" in (out / PARTIAL_MARKER).read_text()
    assert not (out / SUCCESS_MARKER).exists()
    with partial_run(out, command="segtools export") as run:
        run.summary = {"rows": 3}
    assert not (out / PARTIAL_MARKER).exists()
    assert '"rows": 3' in (out / SUCCESS_MARKER).read_text()
