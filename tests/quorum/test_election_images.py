"""The HTML report's links from each election to the cluster image at that moment
(segtools.quorum.image.images_after, report_html's "Cluster at each election"). The oracle is
the simulator's truth of the sample (samples/generated/S7-simple-unclean-election/truth.json):
who was elected, in which epoch, with which ISR."""

from __future__ import annotations

import base64
import gzip
import html
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import cli

pytestmark = pytest.mark.fast

S7 = Path(__file__).resolve().parents[2] / "samples" / "generated" / "S7-simple-unclean-election"


def _with_lazy_bodies(page: str) -> str:
    bodies: list[str] = []
    for packed in re.findall(r'<script type="application/octet-stream" id="lazy-\d+">([^<]*)</script>',
                             page):
        bodies += json.loads(gzip.decompress(base64.b64decode(packed)))
    return page + "".join(bodies)


def test_each_election_links_to_the_image_after_it(tmp_path: Path) -> None:
    out = tmp_path / "compare.html"
    res = CliRunner().invoke(cli, ["compare", str(S7), "--no-spark", "--html", str(out)])
    assert res.exit_code == 1, res.output                    # records were lost
    page = _with_lazy_bodies(out.read_text())
    blocks = dict(re.findall(r'<details id="image-(\d+)"><summary>[^<]*</summary><pre>(.*?)</pre>', page,
                             re.S))
    links = set(re.findall(r'<a href="#image-(\d+)">image</a>', page))
    truth = json.loads((S7 / "truth.json").read_text())["orders-0"]["elections"]
    later = [e for e in truth if e["reason"] != "create"]
    # one image per election after the initial one, each linked from its row
    assert len(blocks) == len(later) == 1 and links == set(blocks)
    (img,) = (json.loads(html.unescape(b)) for b in blocks.values())
    (part,) = [p for p in img["partitions"] if p["partition"] == 0]
    want = later[0]
    assert (part["leader"], part["leaderEpoch"], part["isr"]) == (want["leader"], want["epoch"],
                                                                   want["isr"])
    assert img["topics"] == ["orders"]
    assert {b["id"] for b in img["brokers"]} >= {1, 2, 3}
