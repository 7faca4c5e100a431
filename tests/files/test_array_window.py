"""The columnar engines' numpy window on the one segment-file object
(``SegmentFile.array_window`` / ``files.read_window.ArrayWindow``) and export's grouped read
(``read_window.read_files``): the bytes they hold are the file's bytes as plain Python reads
them, a file that shrinks or is rewritten under them is one ``FileChangedError`` naming a
position, and the read-ahead and pread fallback give the same bytes as a direct read."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from segtools.errors import FileChangedError, InputError
from segtools.files.read_window import read_files
from segtools.records.columnar.window import _SegmentFile
from segtools.records.segment_file import SegmentFile


def _file(tmp_path: Path, n: int, name: str = "00000000000000000000.log") -> tuple[Path, bytes]:
    data = os.urandom(n)
    path = tmp_path / name
    path.write_bytes(data)
    return path, data


@pytest.mark.parametrize("read_ahead,preadv", [(True, True), (False, False)])
def test_windows_hold_the_file_bytes(tmp_path: Path, read_ahead: bool, preadv: bool) -> None:
    path, data = _file(tmp_path, 10_000)
    with SegmentFile(str(path)).array_window(1000, read_ahead=read_ahead, preadv=preadv) as win:
        pos = 0
        while pos < len(data):
            win.load(pos)
            assert win.base == pos and not win.array.flags.writeable
            assert win.array.tobytes() == data[pos:pos + 1000]
            win.prefetch(pos + 1000)
            pos += 1000
        assert win.at_eof
        win.load(2500, 4000)   # more than a window when asked
        assert win.array.tobytes() == data[2500:6500]
        assert win.crc_step_read(9990, 10).tobytes() == data[9990:]


def test_a_file_that_shrinks_between_windows_is_one_file_changed_error(tmp_path: Path) -> None:
    path, _ = _file(tmp_path, 10_000)
    with SegmentFile(str(path)).array_window(1000, read_ahead=False) as win:
        win.load(0)
        os.truncate(path, 5_500)
        with pytest.raises(FileChangedError, match=r"file changed while reading .*shrank.*near position 5500"):
            win.load(5000)
        # the streamed CRC's reads give what is left; the caller names the change
        assert win.crc_step_read(5000, 1000).shape[0] == 500


def test_damage_read_from_a_rewritten_file_is_a_change(tmp_path: Path) -> None:
    path, data = _file(tmp_path, 4_000)
    with _SegmentFile(str(path), 4096) as mf:
        mf.load(0)
        mf.check_unchanged(100, 50)   # nothing changed: no error
        with open(path, "r+b") as fh:   # same size, other bytes
            fh.seek(120)
            fh.write(bytes(b ^ 0xFF for b in data[120:130]))
        with pytest.raises(FileChangedError, match="bytes read twice differ.*near position 100"):
            mf.check_unchanged(100, 50)
    with _SegmentFile(str(path), 4096) as mf:
        mf.load(0)
        with open(path, "ab") as fh:
            fh.write(b"x")
        with pytest.raises(FileChangedError, match="size 4000 -> 4001 bytes"):
            mf.check_unchanged()


def test_errors_name_the_display_path_and_refuse_non_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="s3://bucket/seg.log"):
        _SegmentFile(str(tmp_path / "missing.log"), display="s3://bucket/seg.log")
    with pytest.raises(InputError, match="not a regular file"):
        _SegmentFile(str(tmp_path))


def test_read_files_is_the_files_back_to_back_or_none(tmp_path: Path) -> None:
    files = [_file(tmp_path, n, f"{i:020d}.log") for i, n in enumerate([300, 0, 1234])]
    paths = [str(p) for p, _ in files]
    sizes = [len(d) for _, d in files]
    got = read_files(paths, sizes)
    assert got is not None and got.dtype == np.uint8
    assert got.tobytes() == b"".join(d for _, d in files)
    assert read_files(paths, [300, 0, 1000]) is None            # not the size listed
    assert read_files([*paths, str(tmp_path)], [*sizes, 0]) is None   # a directory
    assert read_files([*paths, str(tmp_path / "gone.log")], [*sizes, 1]) is None
