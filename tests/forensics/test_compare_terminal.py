"""`segtools compare`'s terminal output: partitions with problems first, one row per replica;
partitions with nothing to look at summarised in one line; `--all` prints every row. The
oracle is the simulator's truth.json (which partitions lost records), not our own output."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from segtools.cli.main import cli

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "generated" / "real-durability-matrix"


def _rows(output: str) -> list[list[str]]:
    lines = output.splitlines()
    assert lines[0].split()[:4] == ["partition", "broker", "ref", "status"]
    rows = []
    for line in lines[1:]:
        if not line or line.startswith(("...", "answer:", "  ")) or "partition(s)" in line:
            break
        rows.append(line.split())
    return rows


def _run(*extra: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, ["compare", str(SAMPLE), "--no-spark", "--acks", str(SAMPLE / "acks.jsonl"),
                                   *extra])
    return res.exit_code, res.output


def test_problems_listed_healthy_summarised_in_one_line():
    truth = json.loads((SAMPLE / "truth.json").read_text())
    # records acknowledged to producers and gone: what --acks lets compare prove lost
    lost = {name for name, t in truth.items() if any(x["acked"] for x in t["lost"])}
    intact = {name for name, t in truth.items() if not t["lost"]}
    assert lost and intact
    code, out = _run()
    assert code == 1, out
    listed = {r[0] for r in _rows(out)}
    # every partition the simulator says lost records has its rows; none it says lost nothing
    assert lost <= listed, out
    assert not (listed & intact), out
    line = [x for x in out.splitlines() if "with no findings not listed" in x]
    assert len(line) == 1, out
    assert int(line[0].split()[0]) == len(truth) - len(listed) and "--all prints every row" in line[0]
    assert "safe" not in line[0].lower()             # the one line claims nothing; the answer does


def test_all_prints_every_replica_row():
    truth = json.loads((SAMPLE / "truth.json").read_text())
    code, out = _run("--all")
    assert code == 1, out
    rows = _rows(out)
    assert {r[0] for r in rows} == set(truth)
    assert len(rows) == sum(len(t["assignment"]) for t in truth.values())
    assert "with no findings not listed" not in out
