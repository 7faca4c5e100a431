"""export and the Arrow readers build their columns from buffers: pandas is never imported.

``pa.array`` of a numpy array asks pandas whether the input is one of its objects, which
imports it: half a second of every export's start-up (and of each of its forked workers'),
for nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "dump"


def test_export_and_the_readers_do_not_import_pandas(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import sys
        from segtools.export import ExportOptions, export
        from segtools.records.columnar import read_batch_table, read_records
        for level in ("records", "batches"):
            export([{str(SAMPLES)!r}], {str(tmp_path)!r} + "/" + level, ExportOptions(level=level))
        rows = 0
        for seg in __import__("glob").glob({str(SAMPLES)!r} + "/**/*.log", recursive=True):
            try:
                rows += read_records(seg).num_rows + read_batch_table(seg).num_rows
            except Exception:
                pass   # damaged samples: their errors are tested elsewhere
        assert rows > 0
        print(",".join(sorted(m for m in sys.modules if m.split(".")[0] == "pandas")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == ""


def test_a_small_export_does_not_load_the_jit(tmp_path: Path) -> None:
    # numba's kernels take ~0.45 s to load: more than they save below AUTO_JIT_MIN_BYTES
    code = textwrap.dedent(f"""
        import sys
        from segtools.export import ExportOptions, export
        summary = export([{str(SAMPLES)!r}], {str(tmp_path)!r} + "/out", ExportOptions())
        assert summary.rows > 0
        print(",".join(sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite"))))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == ""


def test_the_engine_auto_picks_for_an_export(monkeypatch) -> None:
    from segtools.export import AUTO_JIT_MIN_BYTES, ExportOptions, _with_engine
    from segtools.files.sources import PartitionSource
    from segtools.records.columnar import engines

    monkeypatch.setattr(engines, "_KERNEL", None)   # as in a fresh process (other tests load it)

    def sources(*sizes: int) -> list[PartitionSource]:
        return [PartitionSource("t", i, (f"/x/t-{i}/0.log",), segment_sizes=(size,))
                for i, size in enumerate(sizes)]

    auto = ExportOptions()
    assert _with_engine(auto, sources(1000, AUTO_JIT_MIN_BYTES - 1001)).engine == "vectorised"
    assert _with_engine(auto, sources(1000, AUTO_JIT_MIN_BYTES - 1000)).engine == "auto"
    assert _with_engine(auto, sources(AUTO_JIT_MIN_BYTES * 4)).engine == "auto"
    # an engine the user named is kept, whatever the size
    for engine in ("numba", "python", "vectorised"):
        assert _with_engine(ExportOptions(engine=engine), sources(10)).engine == engine


def test_auto_keeps_kernels_this_process_has_loaded(monkeypatch) -> None:
    # loaded by an earlier call (a notebook, a benchmark): they no longer cost their start-up
    from segtools.export import ExportOptions, _with_engine
    from segtools.files.sources import PartitionSource
    from segtools.records.columnar import engines

    small = [PartitionSource("t", 0, ("/x/t-0/0.log",), segment_sizes=(100,))]
    monkeypatch.setattr(engines, "_KERNEL", None)
    assert _with_engine(ExportOptions(), small).engine == "vectorised"
    monkeypatch.setattr(engines, "_KERNEL", object())
    assert _with_engine(ExportOptions(), small).engine == "auto"


def test_a_broker_of_small_partitions_loads_neither_pandas_nor_arrow_compute(tmp_path: Path) -> None:
    """The cluster shape of issue 23 (a broker of many one-segment partitions, exported by two
    forked workers, and compared with a second replica): no pandas anywhere (~0.17 s of each
    process's start) and no pyarrow.compute in a small export's workers (~45 ms each)."""
    from segtools.writer import NewRecord
    from segtools.writer.batch_builder import build_batch

    brokers = []
    for b in (1, 2):
        broker = tmp_path / f"broker-{b}"
        for p in range(40):
            seg = broker / f"t-{p}" / "00000000000000000000.log"
            seg.parent.mkdir(parents=True)
            records = [NewRecord(b"k%d" % p, b"v" * 50, ((f"h{p}", b"x"),) if p % 3 else (), 1_700_000_000_000)]
            seg.write_bytes(build_batch(records, base_offset=0, partition_leader_epoch=0))
        (broker / "meta.properties").write_text(f"version=0\nbroker.id={b}\n")
        brokers.append(str(broker))
    code = textwrap.dedent(f"""
        import sys
        from segtools.export import ExportOptions, export
        from segtools.forensics.api import compare
        summary = export([{brokers[0]!r}], {str(tmp_path / "out")!r}, ExportOptions(), jobs=2)
        assert summary.rows == 40 and len(summary.files) == 40, summary
        assert not summary.findings, summary.findings
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == "pandas" or m == "pyarrow.compute")
        compare({brokers!r})
        print(";".join([",".join(loaded),
                        ",".join(sorted(m for m in sys.modules if m.split(".")[0] == "pandas"))]))
    """)
    # the workers' imports: each worker reports what it loaded beyond the parent (below)
    probe = textwrap.dedent("""
        import os, sys
        import segtools.export as ex
        real = ex._export_chunk
        def chunk(bounds):
            out = real(bounds)
            extra = sorted(m for m in sys.modules if m.split(".")[0] == "pandas" or m == "pyarrow.compute")
            if extra:
                out.findings.append("worker loaded " + ",".join(extra))
            return out
        ex._export_chunk = chunk
    """)
    out = subprocess.run([sys.executable, "-c", probe + code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == ";"
