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


def test_small_replicas_are_written_without_dictionaries_and_read_back_the_same(tmp_path):
    # a replica under DICTIONARY_MIN_BYTES: no dictionary pages (they cost the writer per
    # column, per file), the same Arrow types and values as a large replica's file
    import pyarrow.parquet as pq

    from segtools.export import DICTIONARY_MIN_BYTES
    from segtools.records.schema import RECORD_SCHEMA
    from segtools.writer import NewRecord
    from segtools.writer.batch_builder import build_batch

    bdir = tmp_path / "broker-1"
    for name, batches in (("tiny-0", 1), ("large-0", 0)):
        (bdir / name).mkdir(parents=True)
        data, offset = bytearray(), 0
        while (batches and offset < batches) or (not batches and len(data) < 2 * DICTIONARY_MIN_BYTES):
            data += build_batch([NewRecord(b"k", b"v" * 100, (("h", b"x"),), 1_700_000_000_000 + offset)],
                                base_offset=offset)
            offset += 1
        (bdir / name / "00000000000000000000.log").write_bytes(bytes(data))
    (bdir / "meta.properties").write_text("version=0\nbroker.id=1\n")
    export([str(bdir)], str(tmp_path / "out"), ExportOptions(), jobs=1)

    def encodings(topic: str) -> tuple[Any, set[str]]:
        (path,) = (tmp_path / "out").rglob(f"part-{topic}+*.parquet")
        meta = pq.ParquetFile(path).metadata.row_group(0)
        names = {meta.column(i).path_in_schema: meta.column(i).encodings for i in range(meta.num_columns)}
        return pq.read_table(path), {e for e in names["topic"]}

    tiny, tiny_enc = encodings("tiny")
    large, large_enc = encodings("large")
    assert not any("DICTIONARY" in e for e in tiny_enc), tiny_enc
    assert any("DICTIONARY" in e for e in large_enc), large_enc
    assert tiny.schema == large.schema == RECORD_SCHEMA
    assert tiny.column("topic").to_pylist() == ["tiny"]
    assert tiny.column("value").to_pylist() == [b"v" * 100]
