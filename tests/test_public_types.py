"""Type checkers see the real types of segtools' lazily imported public names.

segtools/__init__.py resolves iter_batches, LogDir, ... on first attribute access (import stays
cheap); without its TYPE_CHECKING block mypy would see them as missing or Any.
"""

from __future__ import annotations

from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parent.parent

SNIPPET = """
import segtools
reveal_type(segtools.iter_batches)
reveal_type(segtools.open_log_dir)
reveal_type(segtools.read_batch_table)
reveal_type(segtools.SegmentReader)
reveal_type(segtools.compare)
"""


def test_lazy_public_names_have_real_types(tmp_path: Path) -> None:
    snippet = tmp_path / "use_segtools.py"
    snippet.write_text(SNIPPET)
    out, err, _ = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--follow-imports", "silent",
                           "--cache-dir", str(tmp_path / "cache"), str(snippet)])
    revealed = [line.split("Revealed type is ", 1)[1] for line in out.splitlines()
                if "use_segtools.py" in line and "Revealed type is" in line]
    assert len(revealed) == 5, out + err
    assert [line for line in out.splitlines() if "use_segtools.py" in line and "error:" in line] == []
    assert "Iterator[segtools.records.batches.SegmentBatch]" in revealed[0]
    assert "segtools.files.logdir.LogDir" in revealed[1]
    assert revealed[2].startswith('"def (path:')
    assert "segtools.records.batches.SegmentReader" in revealed[3]
    assert "segtools.forensics.report.CompareReport" in revealed[4]
