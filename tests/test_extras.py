"""pyspark and numba are extras: without them dump, export, in-process compare and the readers
work, and a command that needs Spark says what to install (exit 2, one line)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "generated" / "S7-simple-unclean-election"


def _run_without(blocked: tuple[str, ...], args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a subprocess where importing any of ``blocked`` fails, as if the extra
    were not installed."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "sitecustomize.py").write_text(textwrap.dedent(f"""
        import sys
        class _Block:
            def find_spec(self, name, path=None, target=None):
                if name.split('.')[0] in {blocked!r}:
                    raise ModuleNotFoundError(f"No module named {{name!r}}")
                return None
        sys.meta_path.insert(0, _Block())
    """))
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "segtools", *args], capture_output=True, text=True,
                          env=env, timeout=300, check=False)


def test_without_pyspark_and_numba_the_core_commands_work(tmp_path: Path) -> None:
    brokers = [str(SAMPLE / f"broker-{i}") for i in (1, 2, 3)]
    dump = _run_without(("pyspark", "numba"), ["dump", str(SAMPLE / "broker-1" / "orders-0")], tmp_path)
    assert dump.returncode == 0, dump.stderr
    assert "baseOffset: 0" in dump.stdout
    compare = _run_without(("pyspark", "numba"), ["compare", *brokers, "--no-spark"], tmp_path)
    assert compare.returncode == 1, compare.stderr          # the sample lost records
    assert "UNCLEAN" in compare.stdout or "lost" in compare.stdout
    export = _run_without(("pyspark", "numba"), ["export", brokers[0], "--out", str(tmp_path / "pq")], tmp_path)
    assert export.returncode == 0, export.stderr
    assert list((tmp_path / "pq").glob("*.parquet"))


def test_spark_without_pyspark_is_one_line_with_the_install_hint(tmp_path: Path) -> None:
    brokers = [str(SAMPLE / f"broker-{i}") for i in (1, 2, 3)]
    result = _run_without(("pyspark",), ["compare", *brokers, "--spark"], tmp_path)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "pip install 'segtools[spark]'" in errors[0]
    assert "Traceback" not in result.stderr
