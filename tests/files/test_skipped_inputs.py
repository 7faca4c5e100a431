"""Inputs are never skipped without a word, and names shown to a person are one line
(issue 23): a partition dir with a newline in its name, a file in a partition dir that is no
Kafka file, a /proc file given as a segment (0 bytes by stat, bytes on read).

The segment is real broker data (tests/data/realdata) copied at test time."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from segtools.errors import InputError
from segtools.files.sources import resolve

REAL = "kafka-2.0-zk-small/logdir/subhash-0/00000000000000000000.log"


@pytest.fixture()
def broker(realdata: Path, tmp_path: Path) -> Path:
    b = tmp_path / "broker-1"
    for name in ("orders-1", "orders-0\n", "notes", "remote-log-index-cache"):
        (b / name).mkdir(parents=True)
    shutil.copy(realdata / "kafka-2.0-zk-small/logdir/meta.properties", b / "meta.properties")
    shutil.copy(realdata / REAL, b / "orders-1" / "00000000000000000000.log")
    shutil.copy(realdata / REAL, b / "orders-0\n" / "00000000000000000000.log")
    (b / "orders-1" / "00000000000000000000.log\n").write_bytes((realdata / REAL).read_bytes())
    return b


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "segtools", *args], capture_output=True, text=True,
                          timeout=120)


def test_every_skipped_dir_and_file_is_warned(broker: Path) -> None:
    res = resolve(broker)
    assert [p.partition_dir for p in res.partitions] == [str(broker / "orders-1")]
    by_code = {(w.code, Path(w.path).name) for w in res.warnings}
    assert by_code == {("skipped_dir", "orders-0\n"), ("skipped_dir", "notes"),
                       ("skipped_dir", "remote-log-index-cache"),
                       ("skipped_file", "00000000000000000000.log\n")}
    for w in res.warnings:
        assert "\n" not in w.message     # shown as \n: one line per warning
    assert any(w.message.startswith(f"{broker}/orders-0\\n: skipped, its name is not") for w in res.warnings)


def test_dump_and_export_print_the_skipped_dir_on_one_line(broker: Path, tmp_path: Path) -> None:
    for args in (("dump", str(broker)), ("export", str(broker), "--out", str(tmp_path / "out"))):
        proc = _run(*args)
        assert proc.returncode == 0, proc.stderr
        lines = [x for x in proc.stderr.splitlines() if "orders-0" in x]
        assert len(lines) == 1 and "orders-0\\n: skipped" in lines[0], proc.stderr


def test_a_proc_file_given_as_a_segment_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="size is 0 by stat but reading it gives bytes"):
        resolve("/proc/self/status")
    proc = _run("export", "/proc/self/status", "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "pseudo-file" in proc.stderr
    assert not (tmp_path / "out").exists()
    # an empty regular file is still an empty segment
    empty = tmp_path / "00000000000000000000.log"
    empty.write_bytes(b"")
    assert resolve(empty).partitions[0].segments == (str(empty),)


def test_error_lines_escape_control_characters(tmp_path: Path) -> None:
    """A name with a newline and an escape sequence in an error stays one visible line."""
    bad = tmp_path / "evil\n\x1b[2Jname"
    bad.mkdir()    # an empty folder: "no Kafka files found under PATH"
    for args in (("export", str(bad), "--out", str(tmp_path / "out")), ("dump", str(bad))):
        proc = _run(*args)
        assert proc.returncode == 2
        assert "\x1b" not in proc.stderr, repr(proc.stderr)
        errors = [x for x in proc.stderr.splitlines() if x.startswith("Error: ")]
        assert len(errors) == 1 and errors[0].endswith("evil\\n\\x1b[2Jname"), repr(proc.stderr)
        assert not [x for x in proc.stderr.splitlines() if x.startswith("name")]   # no broken line
