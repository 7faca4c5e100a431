"""Regenerate docs/report-*.png: the first screen (1280x1000) of the HTML report of three
generated samples, one per answer (lost, safe, cannot tell), as
`segtools compare samples/generated/<name> --no-spark --acks <name>/acks.jsonl --report ...`
writes it (the controller's metadata log found beside the brokers), screenshotted in
headless Chromium.

    python tests/html/make_screenshots.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

#: sample -> (png, compare's exit code, extra arguments): one incident per answer
SHOTS = {"S7-simple-unclean-election": ("report-lost.png", 1, []),
         "a-preferred-leader-return": ("report-safe.png", 0, []),
         # the brokers' dirs without the controller's metadata log: cannot tell
         "S0-healthy-baseline": ("report-cannot-tell.png", 1, [])}


def main() -> None:
    sys.path.insert(0, str(HERE))
    from cdp_chromium import Chromium
    from click.testing import CliRunner

    from segtools.cli.main import cli
    from segtools.forensics.report_html import write_html

    with tempfile.TemporaryDirectory() as tmp, Chromium() as browser:
        for sample, (png, code, extra) in SHOTS.items():
            name = sample.replace("/", "_")
            page_path, report = Path(tmp) / f"{name}.html", Path(tmp) / f"{name}.json"
            folder = f"samples/generated/{sample}"
            os.chdir(REPO)
            acks = f"samples/generated/{sample.split('/')[0]}/acks.jsonl"
            res = CliRunner().invoke(cli, ["compare", folder, "--no-spark", "--acks", acks,
                                           "--report", str(report), *extra])
            if res.exit_code != code:
                raise SystemExit(f"{sample}: compare exited {res.exit_code}: {res.output}")
            write_html(json.loads(report.read_text()), page_path, source=folder)
            page = browser.open(page_path.as_uri(), width=1280, height=1000)
            page.screenshot(str(REPO / "docs" / png), width=1280, max_height=1000)
            errors = page.console_errors()
            if errors:
                raise SystemExit(f"{sample}: console errors {errors}")
            print(f"docs/{png}")


if __name__ == "__main__":
    main()
