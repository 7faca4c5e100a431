"""StringDecoder fidelity: our decoding of malformed UTF-8 is compared with the JVM's own
``new String(bytes, UTF_8)`` (Java 17 is on the machine; Kafka's tool runs on it)."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from segtools.dump.parsers import string_decoder

JAVA_SOURCE = """
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

public class Utf8Oracle {
    public static void main(String[] args) throws Exception {
        StringBuilder out = new StringBuilder();
        for (String line : Files.readAllLines(Paths.get(args[0]))) {
            byte[] bytes = HexFormat.of().parseHex(line.trim());
            String s = new String(bytes, StandardCharsets.UTF_8);
            for (int i = 0; i < s.length(); i++) out.append(String.format("%04x", (int) s.charAt(i)));
            out.append('\\n');
        }
        Files.writeString(Paths.get(args[1]), out.toString());
    }
}
"""


def _cases() -> list[bytes]:
    rng = random.Random(20241025)
    interesting = [0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF,
                   0xF0, 0xF4, 0xF5, 0xF7, 0xF8, 0xFF, 0x90, 0xA0, 0x9F]
    cases = [b"", b"plain ascii", "h\u00e9llo \u20ac \U0001F600".encode(), b"\xed\xa0\x80",
             b"\xe2\x82", b"\xf0\x9f\x98", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xe0\x80\x80"]
    for _ in range(1500):
        n = rng.randint(1, 7)
        cases.append(bytes(rng.choice(interesting) if rng.random() < 0.8 else rng.randrange(256)
                           for _ in range(n)))
    return cases


def test_string_decoder_matches_java(tmp_path: Path) -> None:
    java = shutil.which("java")
    if java is None:
        pytest.fail("this oracle test needs Java 17 on PATH (as the Spark tests do)")
    cases = _cases()
    src = tmp_path / "Utf8Oracle.java"
    src.write_text(JAVA_SOURCE)
    inp = tmp_path / "in.txt"
    inp.write_text("\n".join(c.hex() for c in cases) + "\n")
    out = tmp_path / "out.txt"
    subprocess.run([java, str(src), str(inp), str(out)], check=True, timeout=120,
                   capture_output=True)
    java_units = out.read_text().split("\n")[:-1]
    assert len(java_units) == len(cases)
    for case, units in zip(cases, java_units):
        ours = string_decoder(case).encode("utf-16-be").hex()
        assert ours == units, case.hex()
