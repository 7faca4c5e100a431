"""export's worker processes (``jobs``, ``--jobs``): the files, findings, progress calls and
``_SUCCESS`` of N forked workers are those of the sequential path, and an error in one
partition is the sequential path's exception, with ``_PARTIAL`` left and no worker left alive."""

from __future__ import annotations

import json
import multiprocessing
import os
import struct
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from segtools.cli.main import cli
from segtools.errors import BatchTooLargeError, InputError
from segtools.export import ExportOptions, export_jobs, export_sources, plan_export
from segtools.writer import NewRecord
from segtools.writer.batch_builder import build_batch

TS = 1_700_000_000_000
#: fields of _SUCCESS that differ between two runs of the same export
VOLATILE = ("started", "finished")


def _batch(offset: int, n: int, codec: str = "none", value_bytes: int = 20) -> bytes:
    recs = [NewRecord(f"k{offset + i}".encode(), (f"v{offset + i}-" * value_bytes).encode()[:value_bytes],
                      (), TS + offset + i) for i in range(n)]
    return build_batch(recs, base_offset=offset, compression=codec, partition_leader_epoch=0)


def _write_partition(pdir: Path, segments: int, batches: int, codec: str) -> None:
    pdir.mkdir(parents=True)
    offset = 0
    for _ in range(segments):
        start, data = offset, bytearray()
        for b in range(batches):
            n = 1 + (offset + b) % 3
            data += _batch(offset, n, codec)
            offset += n
        (pdir / f"{start:020d}.log").write_bytes(bytes(data))


def _broker(root: Path) -> Path:
    """A broker dir of 11 partitions over three topics (every codec), with a CRC-invalid
    batch, a torn tail and a batch that claims 2 GiB (findings, not exceptions)."""
    bdir = root / "broker-1"
    bdir.mkdir(parents=True)
    (bdir / "meta.properties").write_text("version=0\nbroker.id=1\n")
    codecs = ("none", "gzip", "zstd", "lz4", "snappy")
    k = 0
    for topic, count in (("alpha", 4), ("beta", 4), ("gamma", 3)):
        for p in range(count):
            _write_partition(bdir / f"{topic}-{p}", segments=1 + k % 3, batches=2 + k % 2,
                             codec=codecs[k % len(codecs)])
            k += 1
    # alpha-0 (uncompressed): one byte of a value changed (the stored CRC no longer matches)
    seg = bdir / "alpha-0" / f"{0:020d}.log"
    data = bytearray(seg.read_bytes())
    data[-3] ^= 0xFF
    seg.write_bytes(bytes(data))
    # beta-2: its last segment's last batch cut short (dump's "invalid bytes at the end")
    last = sorted((bdir / "beta-2").glob("*.log"))[-1]
    last.write_bytes(last.read_bytes()[:-9])
    # gamma-0: a batch header whose length field says 2 GiB after the whole batches
    seg = bdir / "gamma-0" / f"{0:020d}.log"
    with open(seg, "ab") as fh:
        fh.write(struct.pack(">qi", 1000, 0x7FFFFFFF) + b"\x00" * 40)
    return bdir


def _run(src: Path, out: Path, jobs: int, **options: Any) -> tuple[Any, list[str]]:
    opts = ExportOptions(**options)
    sources = plan_export([src], str(out), opts)
    assert export_jobs(jobs, sources, str(out)) == min(jobs, len(sources))
    progress: list[str] = []
    summary = export_sources(sources, str(out), opts, on_segment=progress.append, jobs=jobs)
    return summary, progress


def _success(out: Path) -> dict[str, Any]:
    doc = json.loads((out / "_SUCCESS").read_text())
    for key in VOLATILE:
        doc.pop(key)
    return doc


def _files(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def _child_pids() -> list[str]:
    """The processes whose parent is this one, zombies too (a /proc scan)."""
    me = str(os.getpid())
    children = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if stat.rsplit(")", 1)[1].split()[1] == me:
                children.append(entry)
    return children


def _no_workers_left() -> None:
    assert multiprocessing.active_children() == []
    # and no process whose parent is this one (what active_children cannot see)
    assert _child_pids() == []


@pytest.mark.parametrize("options", [{}, {"level": "batches"}, {"by_broker": True, "compression": "zstd"}],
                         ids=["records", "batches", "by-broker"])
def test_two_workers_write_what_one_process_writes(tmp_path, options):
    src = _broker(tmp_path / "in")
    one, progress_one = _run(src, tmp_path / "one", 1, **options)
    two, progress_two = _run(src, tmp_path / "two", 2, **options)
    assert _files(tmp_path / "one") == _files(tmp_path / "two")
    for name in _files(tmp_path / "one"):
        if name.endswith(".parquet"):
            a, b = pq.read_table(tmp_path / "one" / name), pq.read_table(tmp_path / "two" / name)
            assert a.equals(b), name
            assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name
    assert _success(tmp_path / "one") == _success(tmp_path / "two")
    assert one.findings == two.findings
    assert len(one.findings) == 2     # the torn tail and the 2 GiB claim, in source order
    assert "gamma-0" not in one.findings[0] and "gamma-0" in one.findings[1]
    assert [f.path.replace(str(tmp_path / "one"), "") for f in one.files] == \
        [f.path.replace(str(tmp_path / "two"), "") for f in two.files]
    assert (one.rows, one.segments, one.bytes_read, one.partitions, one.crc_invalid_rows) == \
        (two.rows, two.segments, two.bytes_read, two.partitions, two.crc_invalid_rows)
    assert one.crc_invalid_rows > 0
    assert progress_one == progress_two and len(progress_one) == one.segments
    assert not (tmp_path / "two" / "_PARTIAL").exists()
    _no_workers_left()


def test_an_error_in_a_partition_is_the_sequential_exception(tmp_path):
    """A batch above --max-batch-bytes (BatchTooLargeError, whose constructor takes a required
    keyword, so it does not unpickle as it is) stops the export in both paths alike."""
    src = _broker(tmp_path / "in")
    big = src / "beta-1"
    seg = sorted(big.glob("*.log"))[-1]
    data = seg.read_bytes()
    next_offset = 10_000
    seg.write_bytes(data + _batch(next_offset, 2, value_bytes=3000))
    raised = {}
    for jobs in (1, 2):
        out = tmp_path / f"out{jobs}"
        with pytest.raises(BatchTooLargeError) as info:
            _run(src, out, jobs, max_batch_bytes=2048)
        raised[jobs] = info.value
        assert (out / "_PARTIAL").exists() and not (out / "_SUCCESS").exists()
        assert not [p for p in out.rglob(".*.inprogress")]
        _no_workers_left()
    one, two = raised[1], raised[2]
    assert type(two) is type(one)
    assert str(two) == str(one) and two.args == one.args
    assert (two.limit, two.path, two.position, two.field) == (one.limit, one.path, one.position, one.field)
    assert "beta-1" in (two.path or "") and "max_batch_bytes is 2048 bytes" in str(two)


def test_a_failing_worker_does_not_hang_and_the_first_error_in_source_order_wins(tmp_path, monkeypatch):
    """Errors in two partitions: the earlier one in source order is raised, as sequentially; an
    exception that is not a SegtoolsError arrives as itself."""
    import segtools.export as export_mod

    src = _broker(tmp_path / "in")
    real = export_mod.export_source

    def failing(source, *args, **kwargs):
        if source.topic == "beta" and source.partition == 3:
            raise InputError(f"{source.topic}-{source.partition}: refused")
        if source.topic == "gamma":
            raise ValueError("later")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(export_mod, "export_source", failing)   # forked workers inherit it
    for jobs in (1, 2):
        with pytest.raises(InputError, match=r"^beta-3: refused$"):
            _run(src, tmp_path / f"out{jobs}", jobs)
        assert (tmp_path / f"out{jobs}" / "_PARTIAL").exists()
        _no_workers_left()
    with pytest.raises(ValueError, match="^later$"):
        _run(src, tmp_path / "gamma", 2, topics=("gamma",))
    _no_workers_left()


def test_a_killed_worker_is_a_one_line_error_and_leaves_no_process(tmp_path, monkeypatch):
    """A worker killed (SIGKILL: the OOM killer) mid-export: its pipe ends without the result
    the parent waits for, which is a one-line SegtoolsError at once, not a wait forever; the
    other worker is stopped and reaped."""
    import signal
    import time

    import segtools.export as export_mod
    from segtools.errors import SegtoolsError

    src = _broker(tmp_path / "in")
    real = export_mod.export_source

    def dying(source, *args, **kwargs):
        if source.topic == "beta" and source.partition == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(export_mod, "export_source", dying)   # forked workers inherit it
    out = tmp_path / "out"
    started = time.monotonic()
    with pytest.raises(SegtoolsError) as info:
        _run(src, out, 2)
    assert time.monotonic() - started < 10
    message = str(info.value)
    assert "\n" not in message
    assert "ended with signal 9" in message and "the export is incomplete" in message, message
    assert (out / "_PARTIAL").exists() and not (out / "_SUCCESS").exists()
    assert not [p for p in out.rglob(".*.inprogress")]
    _no_workers_left()


def test_a_worker_killed_from_outside_while_results_arrive(tmp_path):
    """Every worker SIGKILLed by someone else after the first result arrived: an error, no
    hang, no process left (files they were writing may stay: SIGKILL leaves no time)."""
    import signal

    from segtools.errors import SegtoolsError

    src = _broker(tmp_path / "in")
    out = tmp_path / "out"
    opts = ExportOptions()
    sources = plan_export([src], str(out), opts)
    killed: list[int] = []

    def kill_workers(segment: str) -> None:
        if killed:
            return
        for pid in _child_pids():
            os.kill(int(pid), signal.SIGKILL)
            killed.append(int(pid))

    with pytest.raises(SegtoolsError, match=r"^an export worker process \(pid \d+\) ended with signal 9"):
        export_sources(sources, str(out), opts, on_segment=kill_workers, jobs=2)
    assert len(killed) == 2
    assert (out / "_PARTIAL").exists() and not (out / "_SUCCESS").exists()
    _no_workers_left()


def test_a_worker_that_ignores_sigterm_is_killed(tmp_path, monkeypatch):
    """The way out of an error is bounded: a worker that does not exit on SIGTERM (stuck, or
    SIGTERM ignored) is SIGKILLed after STOP_SECONDS."""
    import signal
    import time

    import segtools.export as export_mod

    src = _broker(tmp_path / "in")
    real = export_mod.export_source

    stuck = tmp_path / "stuck"

    def stuck_or_failing(source, *args, **kwargs):
        # one replica per chunk here: gamma-0 is chunk 8 (worker 0), gamma-1 chunk 9 (worker 1)
        if (source.topic, source.partition) == ("gamma", 0):
            for _ in range(600):          # fail once the other worker is stuck
                if stuck.exists():
                    break
                time.sleep(0.05)
            raise InputError("gamma-0: refused")
        if (source.topic, source.partition) == ("gamma", 1):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            stuck.touch()
            time.sleep(120)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(export_mod, "export_source", stuck_or_failing)
    monkeypatch.setattr(export_mod, "STOP_SECONDS", 1.0)
    with pytest.raises(InputError, match=r"^gamma-0: refused$"):
        _run(src, tmp_path / "out", 2)
    assert stuck.exists()
    _no_workers_left()


def test_interrupt_from_progress_stops_the_workers(tmp_path):
    """Ctrl-C while results arrive (KeyboardInterrupt in on_segment): the workers are stopped,
    OUT/_PARTIAL says interrupted, no temporary file and no worker are left."""
    src = _broker(tmp_path / "in")
    out = tmp_path / "out"
    opts = ExportOptions()
    sources = plan_export([src], str(out), opts)
    seen: list[str] = []

    def stop(segment: str) -> None:
        seen.append(segment)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        export_sources(sources, str(out), opts, on_segment=stop, jobs=2)
    assert len(seen) == 1
    assert "interrupted" in (out / "_PARTIAL").read_text() and not (out / "_SUCCESS").exists()
    assert not [p for p in out.rglob(".*.inprogress")]
    _no_workers_left()


def test_jobs_choice(tmp_path, monkeypatch):
    import segtools.export as export_mod

    src = _broker(tmp_path / "in")
    sources = plan_export([src], str(tmp_path / "out"), ExportOptions())
    assert export_jobs(1, sources, str(tmp_path / "out")) == 1
    assert export_jobs(64, sources, str(tmp_path / "out")) == len(sources)   # one per replica at most
    assert export_jobs(4, sources[:1], str(tmp_path / "out")) == 1
    assert export_jobs(4, sources, "s3://bucket/out") == 1                 # local inputs and output only
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InputError, match="jobs must be"):
            export_jobs(bad, sources, str(tmp_path / "out"))  # type: ignore[arg-type]
    monkeypatch.setattr(export_mod, "_cpus", lambda: 8)
    assert export_jobs(None, sources, str(tmp_path / "out")) == 1   # 11 small replicas: not worth workers
    many = sources * 12   # 132 (the choice reads only the count and sizes)
    assert export_jobs(None, many, str(tmp_path / "out")) == export_mod.AUTO_JOBS_MAX
    monkeypatch.setattr(export_mod, "_cpus", lambda: 1)
    assert export_jobs(None, many, str(tmp_path / "out")) == 1
    monkeypatch.setattr(multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    assert export_jobs(2, sources, str(tmp_path / "out")) == 1


def test_cli_jobs(tmp_path):
    src = _broker(tmp_path / "in")
    runner = CliRunner()
    one = runner.invoke(cli, ["export", str(src), "--out", str(tmp_path / "one"), "--jobs", "1"])
    two = runner.invoke(cli, ["export", str(src), "--out", str(tmp_path / "two"), "--jobs", "2"])
    auto = runner.invoke(cli, ["export", str(src), "--out", str(tmp_path / "auto")])
    assert one.exit_code == two.exit_code == auto.exit_code == 1, (one.output, two.output)   # the findings
    assert one.output.replace("one", "X") == two.output.replace("two", "X") == auto.output.replace("auto", "X")
    assert _success(tmp_path / "one") == _success(tmp_path / "two")
    for bad in ("0", "-1", "two"):
        res = runner.invoke(cli, ["export", str(src), "--out", str(tmp_path / f"bad{bad}"), "--jobs", bad])
        assert res.exit_code == 2, res.output
        errors = [line for line in res.output.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1 and "--jobs" in errors[0], res.output
        assert "Traceback" not in res.output
        assert not (tmp_path / f"bad{bad}").exists()
    assert "--jobs" in runner.invoke(cli, ["export", "--help"]).output
    _no_workers_left()
