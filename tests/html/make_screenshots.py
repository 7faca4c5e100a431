"""Regenerate docs/report-*.png: the HTML report of two generated samples, compared in
process (with their acks and metadata logs), screenshotted in headless Chromium.

    python tests/html/make_screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cdp_chromium import Chromium  # noqa: E402
from conftest import REPO, compare_sample  # noqa: E402

from segtools.report_html import write_html  # noqa: E402

#: sample -> (png, height shown: the summary and the first partitions)
SHOTS = {"S7-simple-unclean-election": ("report-unclean-election.png", 1500),
         "b-unclean-stale-return": ("report-unclean-stale-return.png", 1250)}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, Chromium() as browser:
        for sample, (png, height) in SHOTS.items():
            page_path = Path(tmp) / f"{sample}.html"
            write_html(compare_sample(sample), page_path, source=f"samples/generated/{sample}")
            page = browser.open(page_path.as_uri(), width=1100, height=900)
            page.screenshot(str(REPO / "docs" / png), width=1100, max_height=height)
            errors = page.console_errors()
            if errors:
                raise SystemExit(f"{sample}: console errors {errors}")
            print(f"docs/{png}")


if __name__ == "__main__":
    main()
