"""Issue 23: "the salvage manifest claims tampering it cannot know". The bytes of a damaged
range do not say whether a disk, a crash or a person changed them, and the CRC does not
cover baseOffset or partitionLeaderEpoch: the manifest and the marker beside the rebuilt
segment say what was checked and what was not, and name no cause. The input is a real
broker's segment (tests/data/realdata) with one CRC-covered byte and one baseOffset byte
flipped here."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner
from segment_extents import batch_extents

from segtools.cli.main import cli

REL = "kafka-3.6-kraft-flink-stack/logdir/connect-offsets-14/00000000000000000000.log"
#: words of intent or cause that no check of the bytes can establish
_CAUSES = re.compile(r"tamper|attack|malicious|deliberate|intentional|forged|manipulat", re.I)


def test_the_manifest_says_what_was_checked_and_names_no_cause(realdata: Path, tmp_path: Path) -> None:
    data = bytearray((realdata / REL).read_bytes())
    extents = batch_extents(bytes(data))
    start, _ = extents[3]
    data[start + 40] ^= 0x01          # inside the CRC-covered part: a CRC mismatch
    start2, _ = extents[len(extents) // 2]
    data[start2 + 1] ^= 0x40          # baseOffset: not covered by the CRC
    part = tmp_path / "in" / "orders-0"
    part.mkdir(parents=True)
    seg = part / "00000000000000000000.log"
    seg.write_bytes(bytes(data))
    result = CliRunner().invoke(cli, ["salvage", str(seg), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1, result.output

    manifest_text = (tmp_path / "out" / "manifest.json").read_text()
    marker_text = (tmp_path / "out" / "orders-0" / "segtools-salvage.json").read_text()
    for text in (manifest_text, marker_text, result.output):
        assert not _CAUSES.search(text), _CAUSES.search(text)
    manifest = json.loads(manifest_text)
    reasons = {d["reason"] for d in manifest["segments"][0]["dropped"]}
    assert reasons == {"corrupt", "inconsistent_header"}
    checks = " ".join(manifest["checks"])
    # what was not checked is named, including that the cause cannot be told
    assert "not checked" in checks
    assert "baseOffset and partitionLeaderEpoch" in checks
    assert "the disk, a crash or a person" in checks
