"""Every command accepts a bundle (segtools collect) as its input and answers as it does on the
originals: dump, export, compare, advise, report (compare --html), replay (of compare
--lost-out), salvage (a partition dir of the bundle), tier and quorum (the bundle stands for
the controllers' metadata dirs it holds)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "generated" / "S7-simple-unclean-election"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "segtools", *args], capture_output=True, text=True,
                          timeout=600, check=False)


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("inputs")
    incident = root / "incident"
    shutil.copytree(SAMPLE, incident)
    bundle = root / "bundle"
    brokers = sorted(str(p) for p in incident.glob("broker-*"))
    done = _run("collect", *brokers, "--out", str(bundle))
    assert done.returncode == 0, done.stderr
    assert (bundle / "controller" / "__cluster_metadata-0").is_dir()
    return incident, bundle


def _brokers(incident: Path) -> list[str]:
    return sorted(str(p) for p in incident.glob("broker-*"))


def _same(a: str, b: str, incident: Path, bundle: Path) -> None:
    def norm(text: str) -> str:
        for root in (str(bundle), str(incident)):
            text = text.replace(root + os.sep, "<in>/").replace(root, "<in>")
        return text
    assert norm(a) == norm(b)


Case = Callable[[Path, Path, Path], None]


def _dump(incident: Path, bundle: Path, tmp: Path) -> None:
    # the bundle reads as the folder of broker dirs it was collected from
    a = _run("dump", str(incident))
    b = _run("dump", str(bundle))
    assert a.returncode == b.returncode == 0, b.stderr
    _same(a.stderr.splitlines()[-1], b.stderr.splitlines()[-1], incident, bundle)   # the totals
    _same(a.stdout, b.stdout, incident, bundle)


def _export(incident: Path, bundle: Path, tmp: Path) -> None:
    a = _run("export", *_brokers(incident), "--by-broker", "--out", str(tmp / "a"))
    b = _run("export", str(bundle), "--by-broker", "--out", str(tmp / "b"))
    assert a.returncode == b.returncode == 0, b.stderr
    files = {str(p.relative_to(tmp / "a")) for p in (tmp / "a").rglob("*.parquet")}
    assert files and files <= {str(p.relative_to(tmp / "b")) for p in (tmp / "b").rglob("*.parquet")}


def _compare(incident: Path, bundle: Path, tmp: Path) -> None:
    a = _run("compare", *_brokers(incident), "--no-spark", "--report", "-")
    b = _run("compare", str(bundle), "--no-spark", "--report", "-")
    assert a.returncode == b.returncode == 1, b.stderr
    pa, pb = json.loads(a.stdout)["partitions"], json.loads(b.stdout)["partitions"]
    assert [(p["topic"], p["lost_records"]) for p in pa] == [(p["topic"], p["lost_records"]) for p in pb]


def _advise(incident: Path, bundle: Path, tmp: Path) -> None:
    acks = str(incident / "acks.jsonl")
    a = _run("advise", *_brokers(incident), "--acks", acks)
    b = _run("advise", str(bundle), "--acks", acks)
    assert a.returncode == b.returncode, b.stderr
    _same(a.stdout, b.stdout, incident, bundle)


def _report(incident: Path, bundle: Path, tmp: Path) -> None:
    b = _run("compare", str(bundle), "--no-spark", "--html", str(tmp / "b.html"))
    assert b.returncode == 1, b.stderr
    assert "COMMITTED_LOSS" in (tmp / "b.html").read_text()


def _replay(incident: Path, bundle: Path, tmp: Path) -> None:
    outs = []
    for name, inputs in (("a", _brokers(incident)), ("b", [str(bundle)])):
        c = _run("compare", *inputs, "--no-spark", "--lost-out", str(tmp / name))
        assert c.returncode == 1, c.stderr
        r = _run("replay", str(tmp / name), "--dry-run")
        outs.append(r)
    assert outs[0].returncode == outs[1].returncode == 0, outs[1].stderr
    assert "would produce" in outs[1].stdout
    _same(outs[0].stdout, outs[1].stdout, incident, bundle)


def _salvage(incident: Path, bundle: Path, tmp: Path) -> None:
    a = _run("salvage", str(incident / "broker-1" / "orders-0"), "--out", str(tmp / "a"))
    b = _run("salvage", str(bundle / "broker-1" / "orders-0"), "--out", str(tmp / "b"))
    assert a.returncode == b.returncode == 0, b.stderr
    assert a.stdout.splitlines()[0].split(":", 1)[1] == b.stdout.splitlines()[0].split(":", 1)[1]
    whole = _run("salvage", str(bundle), "--out", str(tmp / "c"))
    assert whole.returncode == 2 and "a bundle of many partitions" in whole.stderr
    assert "Traceback" not in whole.stderr


def _tier(incident: Path, bundle: Path, tmp: Path) -> None:
    a = _run("tier", *_brokers(incident))
    b = _run("tier", str(bundle))
    assert a.returncode == b.returncode, b.stderr       # no tiered storage here: both say so
    assert "Traceback" not in b.stderr
    _same(a.stderr, b.stderr, incident, bundle)


def _quorum(incident: Path, bundle: Path, tmp: Path) -> None:
    a = _run("quorum", str(incident / "controller"), "--json")
    b = _run("quorum", str(bundle), "--json")
    assert a.returncode == b.returncode, b.stderr
    _same(a.stdout, b.stdout, incident, bundle)


CASES: dict[str, Case] = {"dump": _dump, "export": _export, "compare": _compare, "advise": _advise,
                          "report": _report, "replay": _replay, "salvage": _salvage, "tier": _tier,
                          "quorum": _quorum}


@pytest.mark.parametrize("command", sorted(CASES))
def test_every_command_reads_a_bundle_as_it_reads_the_originals(command, cases, tmp_path):
    incident, bundle = cases
    CASES[command](incident, bundle, tmp_path)
