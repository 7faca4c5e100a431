"""CONTRACT.md section 1 across every command: inputs are evidence (nothing inside an input
directory is changed, created or deleted) and bad input gets exit code 1 or 2, never a
Python traceback."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli


def _fingerprint(root: Path) -> dict[str, tuple[str, int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.stat()
            digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            out[str(p.relative_to(root))] = (digest, st.st_mtime_ns, st.st_mode)
    return out


@pytest.fixture
def evidence(realdata, tmp_path) -> Path:
    """A writable copy of two real broker dirs, as an SRE would have on a laptop."""
    root = tmp_path / "evidence"
    shutil.copytree(realdata / "kafka-2.5-zk-first-topic" / "final", root / "broker-0")
    shutil.copytree(realdata / "kafka-2.0-zk-small" / "logdir", root / "broker-1")
    for dirpath, dirnames, filenames in os.walk(root):   # copies of read-only files: make writable
        for name in dirnames + filenames:
            os.chmod(Path(dirpath) / name, 0o755 if name in dirnames else 0o644)
    return root


def test_no_command_changes_its_inputs(evidence, tmp_path):
    before = _fingerprint(evidence)
    runner = CliRunner()
    b0 = evidence / "broker-0"
    seg = b0 / "__consumer_offsets-12" / "00000000000000000000.log"   # has .index and .timeindex
    commands = [
        ["dump", str(b0)],
        ["dump", "--files", f"{seg},{seg.with_suffix('.index')},{seg.with_suffix('.timeindex')}",
         "--deep-iteration", "--print-data-log", "--index-sanity-check"],
        ["dump", "--files", str(seg.with_suffix(".index")), "--verify-index-only"],
        ["dump", str(b0 / "__consumer_offsets-12"), "--offsets-decoder", "--output", "ndjson"],
        ["dump", str(b0 / "first_topic-0"), "--output", "json"],
        ["export", str(evidence), "--by-broker", "--out", str(tmp_path / "parquet")],
        ["export", str(b0), "--level", "batches", "--out", str(tmp_path / "parquet-b")],
        ["compare", str(b0), str(evidence / "broker-1"), "--no-spark",
         "--report", str(tmp_path / "report.json")],
    ]
    for args in commands:
        result = runner.invoke(cli, args)
        assert result.exit_code in (0, 1), (args, result.output)
        assert "Traceback" not in result.output
    import segtools

    for batch in segtools.iter_batches(b0):
        list(batch.records())
    segtools.read_batch_table(b0)
    segtools.read_records(evidence / "broker-1")
    assert _fingerprint(evidence) == before


def _hostile_dir(root: Path, seed: int) -> Path:
    rng = random.Random(seed)
    pdir = root / f"victim-{seed}" / "orders-0"
    pdir.mkdir(parents=True)
    noise = lambda n: bytes(rng.getrandbits(8) for _ in range(n))  # noqa: E731
    base = "00000000000000000000"
    (pdir / f"{base}.log").write_bytes(noise(rng.randint(0, 3000)))
    (pdir / f"{base}.index").write_bytes(noise(rng.choice([0, 7, 8, 64, 4096])))
    (pdir / f"{base}.timeindex").write_bytes(noise(rng.choice([0, 11, 12, 120])))
    (pdir / f"{base}.txnindex").write_bytes(noise(rng.choice([0, 33, 34, 68])))
    (pdir / f"{base}.snapshot").write_bytes(noise(rng.randint(0, 200)))
    (pdir / "leader-epoch-checkpoint").write_bytes(noise(rng.randint(0, 40)))
    (pdir / "partition.metadata").write_bytes(noise(rng.randint(0, 60)))
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint", "meta.properties"):
        (pdir.parent / name).write_bytes(noise(rng.randint(0, 60)))
    return pdir.parent


@pytest.mark.parametrize("seed", range(12))
def test_hostile_files_never_give_a_traceback(tmp_path, seed):
    log_dir = _hostile_dir(tmp_path, seed)
    runner = CliRunner()
    for args in (
        ["dump", str(log_dir), "--deep-iteration", "--print-data-log"],
        ["dump", str(log_dir), "--output", "json"],
        ["export", str(log_dir), "--out", str(tmp_path / f"out-{seed}")],
        ["compare", str(log_dir), "--no-spark"],
    ):
        result = runner.invoke(cli, args)
        assert result.exit_code in (0, 1, 2), (args, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            args, repr(result.exception), result.output)
        assert "Traceback" not in result.output


def test_missing_path_is_exit_2_for_every_command(tmp_path):
    missing = str(tmp_path / "nope")
    runner = CliRunner()
    for args in (["dump", missing], ["export", missing, "--out", str(tmp_path / "o")],
                 ["compare", missing], ["simulate", missing, "--out", str(tmp_path / "s")]):
        result = runner.invoke(cli, args)
        assert result.exit_code == 2, (args, result.output)


# --- every command x every input shape x every output shape (issue 9 "Must show") -------------
#
# A workspace holds the evidence (a folder of two small real broker dirs), a symlink into it, a
# folder for outputs and a symlink to that, and an empty working directory. Each case runs one
# command and then compares every entry of the workspace, read without following links: inside
# the inputs nothing may differ (content hash and st_mtime_ns of every file and folder, no new
# or missing entry); elsewhere only the output (by real path) may be new, and only folders
# above it may show a new mtime.

INPUTS = {
    "segment": "E/broker-0/subhash-0/00000000000000000000.log",
    "partition dir": "E/broker-0/subhash-0",
    "broker dir": "E/broker-0",
    "folder of broker dirs": "E",
    "symlink to the folder": "L",
    "path through a symlink": "L/broker-1",
}
OUTPUTS = {          # how the user names the output folder (or file: .json)
    "new": "outs/o",
    "relative": "@rel-o",                 # @: relative to the working directory ws/cwd
    "through a symlink": "OL/o",
    "existing empty folder": "outs/empty",
}


def _place(ws: Path, spec: str) -> str:
    if spec.startswith("@"):
        return spec[1:]
    head, _, rest = spec.partition("/")
    base = {"E": ws / "evidence", "L": ws / "link", "OL": ws / "outlink"}.get(head, ws / head)
    return str(base / rest) if rest else str(base)


def _inside(spec: str) -> str:
    """An output spec inside the input named by spec (its folder for a file)."""
    return (spec.rsplit("/", 1)[0] if spec.endswith(".log") else spec) + "/pq"


def _entries(root: Path) -> dict[str, tuple]:
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            st = p.lstat()
            if p.is_symlink():
                kind = ("link", os.readlink(p))
            elif p.is_dir():
                kind = ("dir",)
            else:
                kind = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
            out[str(p.relative_to(root))] = (*kind, st.st_mtime_ns, st.st_mode)
    return out


def _case(cmd, inp=None, out=None, extra=(), expect=(0, 1)):
    return (cmd, inp, out, tuple(extra), expect)


def _cases():
    cases = {}
    for name, spec in INPUTS.items():
        cases[f"dump {name}"] = _case("dump", spec, None, ["--deep-iteration", "--print-data-log"])
        both = ["--by-broker"] if spec in ("E", "L") else []     # two replicas of each partition
        cases[f"export {name} -> new"] = _case("export", spec, "outs/o", both)
        cases[f"export {name} -> inside it"] = _case("export", spec, _inside(spec), both, expect=(2,))
    cases["dump ndjson offsets-decoder"] = _case("dump", "E/broker-0", None,
                                                 ["--output", "ndjson", "--offsets-decoder"])
    cases["export folder -> inside through the symlink"] = _case("export", "E", "L/deeper/pq", ["--by-broker"],
                                                                 expect=(2,))
    cases["export symlink -> inside the real folder"] = _case("export", "L", "E/pq", ["--by-broker"], expect=(2,))
    for oname, ospec in OUTPUTS.items():
        cases[f"export folder -> {oname}"] = _case("export", "E", ospec, ["--by-broker"])
        cases[f"export path through a symlink -> {oname}"] = _case("export", "L/broker-1", ospec,
                                                                   ["--level", "batches"])
        cases[f"simulate -> {oname}"] = _case("simulate", "I/scenario.yaml", ospec, expect=(0,))
        cases[f"demo -> {oname}"] = _case("demo", None, ospec, ["--no-spark"], expect=(0,))
        cases[f"compare --no-spark -> report {oname}"] = _case(
            "compare", "E", ospec.replace("empty", "report") + ".json", ["--no-spark"])
    for name in ("broker dir", "folder of broker dirs", "symlink to the folder", "path through a symlink"):
        cases[f"compare --no-spark {name}"] = _case("compare", INPUTS[name], "outs/r.json", ["--no-spark"])
        cases[f"compare --no-spark {name} -> report inside it"] = _case(
            "compare", INPUTS[name], _inside(INPUTS[name]).replace("/pq", "/r.json"), ["--no-spark"], expect=(2,))
    cases["compare --no-spark -> report inside through the symlink"] = _case(
        "compare", "E", "L/r.json", ["--no-spark"], expect=(2,))
    return cases


CASES = _cases()


@pytest.fixture
def workspace(realdata, samples, tmp_path, monkeypatch) -> Path:
    ws = tmp_path / "ws"
    for b in (0, 1):   # ~120 KB each: two replicas of the same small broker
        shutil.copytree(realdata / "kafka-2.0-zk-small" / "logdir", ws / "evidence" / f"broker-{b}")
    (ws / "I").mkdir()
    shutil.copy(samples / "scenarios" / "S0-healthy-baseline.yaml", ws / "I" / "scenario.yaml")
    (ws / "outs" / "empty").mkdir(parents=True)
    (ws / "link").symlink_to(ws / "evidence", target_is_directory=True)
    (ws / "outlink").symlink_to(ws / "outs", target_is_directory=True)
    (ws / "cwd").mkdir()
    monkeypatch.chdir(ws / "cwd")
    return ws


def _run_and_check(ws: Path, cmd: str, inp, out, extra, expect, also: tuple[str, ...] = ()) -> None:
    """Run one case; ``also``: further outputs the command may write (compare --tables)."""
    argv = [cmd]
    if inp is not None:
        argv += [_place(ws, inp)]
    if cmd == "compare" and inp == "E/broker-0":
        argv += [_place(ws, "E/broker-1")]
    if out is not None:
        argv += ["--report" if cmd == "compare" else "--out", _place(ws, out)]
    argv += list(extra)
    out_real = Path(os.path.realpath(ws / "cwd" / _place(ws, out))) if out is not None else None
    allowed = [out_real] + [Path(os.path.realpath(_place(ws, a))) for a in also] if out_real else []
    before = _entries(ws)
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code in expect, (argv, result.output[-2000:])
    assert result.exception is None or isinstance(result.exception, SystemExit), (argv, repr(result.exception))
    assert "Traceback" not in result.output, argv
    after = _entries(ws)
    inputs = ("evidence", "I")
    for key in sorted(set(before) | set(after)):
        if before.get(key) == after.get(key):
            continue
        real = Path(os.path.realpath(ws / key))
        assert not key.startswith(inputs), (argv, "input changed or added", key)
        assert out_real is not None and expect != (2,), (argv, "a refused or output-less run wrote", key)
        if any(real == o or o in real.parents for o in allowed):
            continue
        # a folder above an output: only its mtime may change
        assert any(real in o.parents for o in allowed), (argv, "written outside the output", key)
        assert before.get(key, ())[:1] == after.get(key, ())[:1] == ("dir",), (argv, "changed", key)
    if out_real is not None and expect != (2,):
        assert out_real.exists(), (argv, "no output written")


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_every_command_leaves_every_input_untouched(workspace, case):
    _run_and_check(workspace, *CASES[case])


@pytest.mark.spark
def test_compare_on_spark_leaves_every_input_untouched(spark, workspace):
    """The one Spark case: compare with --report and --tables (which runs on Spark), through a
    symlink. Only the small topic is kept: Spark's cost grows with the partition count."""
    for offsets in (workspace / "evidence").glob("broker-*/__consumer_offsets-*"):
        shutil.rmtree(offsets)
    _run_and_check(workspace, "compare", "L", "OL/r.json", ["--tables", _place(workspace, "OL/tables")],
                   (0, 1), also=("OL/tables",))
