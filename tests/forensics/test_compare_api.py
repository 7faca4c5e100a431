"""segtools.compare(): the same report as `segtools compare --report` and as the local runner
on every generated sample; progress only on a terminal; the public name is lazy."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import segtools
from segtools.cli.main import cli
from segtools.forensics.collect import discover_replicas
from segtools.forensics.elections import load_histories
from segtools.forensics.loss import AckIndex
from segtools.forensics.pipeline import LocalRunner
from segtools.forensics.progress import Progress

GENERATED = Path(__file__).resolve().parents[2] / "samples" / "generated"
SAMPLES = sorted(p.name for p in GENERATED.iterdir() if (p / "truth.json").is_file()) if GENERATED.is_dir() else []


def _without_time(doc: dict) -> dict:
    doc = json.loads(json.dumps(doc))
    doc["summary"].pop("generated_at")
    return doc


def test_every_sample_is_checked():
    assert len(SAMPLES) >= 20


@pytest.mark.parametrize("name", SAMPLES)
def test_api_cli_and_local_runner_give_the_same_report(name, tmp_path):
    sample = GENERATED / name
    acks = sample / "acks.jsonl"
    report = segtools.compare([sample], acks=acks)
    assert isinstance(report, segtools.CompareReport)
    assert report.runner == "in-process"

    out = tmp_path / "report.json"
    res = CliRunner().invoke(cli, ["compare", str(sample), "--no-spark", "--acks", str(acks), "--report", str(out)])
    assert res.exit_code == report.exit_code, res.output
    written = json.loads(out.read_text())
    assert _without_time(written) == _without_time(report.report_json())
    # json_text() is the file's format, byte for byte once the timestamp is the same
    doc = json.loads(report.json_text())
    doc["summary"]["generated_at"] = written["summary"]["generated_at"]
    assert json.dumps(doc, indent=1) + "\n" == out.read_text()

    # the runner alone, over the same discovery, with the same controller log the CLI found
    controller = sample / "controller"
    histories = load_histories(controller) if controller.is_dir() else None
    alone = LocalRunner().run(discover_replicas([str(sample)]), acks=AckIndex.load(acks), histories=histories)
    assert json.loads(json.dumps(alone.to_json()))["partitions"] == written["partitions"]
    assert ("metadata" in written) == bool(histories is not None and histories.brokers)


def test_engine_and_paths_forms():
    sample = GENERATED / "S7-simple-unclean-election"
    one = segtools.compare(str(sample))
    assert one.to_json() == segtools.compare([sample / "broker-1", sample / "broker-2", sample / "broker-3"],
                                             metadata_log=sample / "controller").to_json()
    with pytest.raises(ValueError):
        segtools.compare(sample, engine="hadoop")  # type: ignore[arg-type]
    with pytest.raises(segtools.InputError):
        segtools.compare(sample, master="local[1]")          # a master needs engine="spark"
    with pytest.raises(segtools.InputError):
        segtools.compare(GENERATED / "no-such-sample")


def test_progress_line_names_stage_segments_and_rate():
    sample = GENERATED / "S3-kip101-divergent-logs"
    segments = sorted(sample.glob("broker-*/*/*.log"))
    total_mib = sum(p.stat().st_size for p in segments) / 2**20
    stream = io.StringIO()
    progress = Progress(stream, interval=0.0)
    LocalRunner().run(discover_replicas([str(sample)]), progress=progress)
    text = stream.getvalue()
    lines = [x for x in text.split("\r") if x.strip()]
    assert lines[0].startswith("compare: scanning batch headers: 0/")
    assert lines[-1].startswith(f"compare: scanning batch headers: {len(segments)}/{len(segments)} segments")
    assert f"/{total_mib:,.0f} MiB" in lines[-1] and "MiB/s" in lines[-1]
    assert text.endswith("\r")                     # the line is cleared before the summary


def test_progress_only_when_stderr_is_a_terminal():
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert Progress.for_terminal(io.StringIO()) is None
    assert Progress.for_terminal(Tty()) is not None
    # a pipe: nothing but the notes and the summary
    res = subprocess.run([sys.executable, "-m", "segtools", "compare", str(GENERATED / "S7-simple-unclean-election"),
                          "--no-spark"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 1
    assert "\r" not in res.stderr and "scanning" not in res.stderr


def test_compare_is_a_lazy_public_name():
    assert "compare" in segtools.__all__ and "CompareReport" in segtools.__all__
    code = "import sys, segtools; print(any(m.startswith('segtools.forensics') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
