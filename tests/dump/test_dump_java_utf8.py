"""StringDecoder fidelity: our decoding of malformed UTF-8 is compared with the JVM's own
``new String(bytes, UTF_8)`` (Java 17 is on the machine; Kafka's tool runs on it)."""

from __future__ import annotations

import random
from pathlib import Path

from dump_builders import java_strings

from segtools.dump.parsers import string_decoder


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
    cases = _cases()
    java = java_strings(cases, tmp_path)
    for case in cases:
        assert string_decoder(case) == java[case], case.hex()
    # the oracle is not Python's "replace" in disguise
    assert sum(c.decode("utf-8", "replace") != java[c] for c in cases) > 0
