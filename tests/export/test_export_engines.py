"""An export's rows, files and findings do not depend on the record engine.

A small export runs on the vectorised engine and a large one on numba ("auto",
segtools.export.AUTO_JIT_MIN_BYTES); which one a test's export gets also depends on whether an
earlier test loaded numba in the same process. So every engine is run here on the same inputs,
healthy and damaged: the repository's samples, and a partition of small segments of every codec
with a torn tail and a flipped CRC."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from segtools.export import ExportOptions, export
from segtools.records.columnar import available_engines
from tests.export.test_export_small_segments import _partition

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dump"


def _damaged(root: Path) -> str:
    src, _ = _partition(root, 40)
    logs = [p for p in sorted(Path(src, "small-0").glob("*.log")) if p.stat().st_size > 100]
    logs[2].write_bytes(logs[2].read_bytes()[:-5])              # a batch cut short at the end
    raw = bytearray(logs[6].read_bytes())
    raw[20] ^= 0x20                                              # a stored CRC that no longer matches
    logs[6].write_bytes(bytes(raw))
    return src


def _export(paths: list[str], out: Path, engine: str, level: str) -> tuple[Any, ...]:
    summary = export(paths, str(out), ExportOptions(engine=engine, level=level), jobs=1)
    table = ds.dataset(str(out), format="parquet").to_table()
    rows = sorted(table.to_pylist(), key=repr)
    files = sorted(str(Path(f.path).relative_to(out)) for f in summary.files)
    return rows, files, [f.replace(str(out), "OUT") for f in summary.findings]


@pytest.mark.parametrize("level", ["records", "batches"])
@pytest.mark.parametrize("inputs", ["samples", "damaged small segments"])
def test_every_engine_exports_the_same(tmp_path, inputs, level):
    paths = [str(SAMPLES)] if inputs == "samples" else [_damaged(tmp_path / "in")]
    engines = available_engines()
    assert "vectorised" in engines and "python" in engines
    got = {engine: _export(paths, tmp_path / engine, engine, level) for engine in engines}
    reference = got["python"]
    assert reference[0], "nothing was exported"
    # the damage is reported (the torn tails, the garbage), and rows of the flipped CRC are kept
    assert reference[2], "no findings"
    if level == "records":
        assert any(not r["crc_valid"] for r in reference[0])
    for engine, result in got.items():
        assert result == reference, engine
