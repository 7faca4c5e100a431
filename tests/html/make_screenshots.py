"""Regenerate docs/report-*.png: the HTML report of three generated samples (one written by a
real Kafka cluster), as
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

#: sample -> (png, height shown: the summary and the first partitions)
SHOTS = {"S7-simple-unclean-election": ("report-unclean-election.png", 1750),
         "b-unclean-stale-return": ("report-unclean-stale-return.png", 1600),
         # written by a real Kafka 4.3.1 cluster (segtools simulate --engine kafka): the replicas
         # as they were before the crashed acks=1 leaders came back
         "real-durability-matrix/snapshots/acks1-before-restart": ("report-real-acks1-leader-crash.png", 1600)}


def main() -> None:
    sys.path.insert(0, str(HERE))
    from cdp_chromium import Chromium
    from click.testing import CliRunner

    from segtools.cli.main import cli
    from segtools.forensics.report_html import write_html

    with tempfile.TemporaryDirectory() as tmp, Chromium() as browser:
        for sample, (png, height) in SHOTS.items():
            name = sample.replace("/", "_")
            page_path, report = Path(tmp) / f"{name}.html", Path(tmp) / f"{name}.json"
            folder = f"samples/generated/{sample}"
            os.chdir(REPO)
            acks = f"samples/generated/{sample.split('/')[0]}/acks.jsonl"
            res = CliRunner().invoke(cli, ["compare", folder, "--no-spark", "--acks", acks,
                                           "--report", str(report)])
            if res.exit_code != 1:
                raise SystemExit(f"{sample}: compare exited {res.exit_code}: {res.output}")
            write_html(json.loads(report.read_text()), page_path, source=folder)
            page = browser.open(page_path.as_uri(), width=1100, height=900)
            page.screenshot(str(REPO / "docs" / png), width=1100, max_height=height)
            errors = page.console_errors()
            if errors:
                raise SystemExit(f"{sample}: console errors {errors}")
            print(f"docs/{png}")


if __name__ == "__main__":
    main()
