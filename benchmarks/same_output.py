"""Does a change keep compare's output byte for byte? Runs ``segtools compare --no-spark``
(JSON report, summary and stderr) over every sample in samples/generated and the extra inputs
given, once with the code at ``--before`` (a folder holding an older ``segtools`` package,
e.g. ``git archive HEAD~1 segtools spark cli formats | tar -x -C /tmp/before``) and once
with this checkout, and lists the outputs that differ (the report's ``generated_at`` aside).

    python benchmarks/same_output.py --before /tmp/before
    python benchmarks/same_output.py --before /tmp/before --extra /copy/early,/copy/final

A command, not a test: CI does not run it. Inputs are only read; outputs go to a temp dir.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_STAMP = re.compile(rb'"generated_at": *"[^"]*"')


def cases(extra: list[str]) -> list[tuple[str, list[str]]]:
    out = []
    root = os.path.join(REPO, "samples", "generated")
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        acks = os.path.join(d, "acks.jsonl")
        out.append((name, [d, *(["--acks", acks] if os.path.exists(acks) else [])]))
    for i, group in enumerate(extra):
        out.append((f"extra{i}", group.split(",")))
    return out


def run(pythonpath: str | None, out: str, todo: list[tuple[str, list[str]]]) -> None:
    os.makedirs(out)
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    for name, args in todo:
        with open(os.path.join(out, name + ".txt"), "wb") as txt, open(os.path.join(out, name + ".err"), "wb") as err:
            rc = subprocess.call([sys.executable, "-m", "segtools", "compare", "--no-spark", "--report",
                                  os.path.join(out, name + ".json"), *args],
                                 stdout=txt, stderr=err, env=env, cwd=tempfile.gettempdir())
            txt.write(f"exit {rc}\n".encode())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="folder holding the older segtools package")
    ap.add_argument("--extra", action="append", default=[], help="comma list of dirs to compare, repeatable")
    args = ap.parse_args(argv)
    todo = cases(args.extra)
    with tempfile.TemporaryDirectory(prefix="same-output-") as tmp:
        run(os.path.abspath(args.before), os.path.join(tmp, "before"), todo)
        run(None, os.path.join(tmp, "after"), todo)
        differ = []
        names = sorted(os.listdir(os.path.join(tmp, "before")))
        for f in names:
            a, b = (open(os.path.join(tmp, side, f), "rb").read() for side in ("before", "after"))
            if _STAMP.sub(b"", a) != _STAMP.sub(b"", b):
                differ.append(f)
        print(f"{len(todo)} compares, {len(names) - len(differ)} of {len(names)} outputs identical")
        for f in differ:
            print(f"differs: {f}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
