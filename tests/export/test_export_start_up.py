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
