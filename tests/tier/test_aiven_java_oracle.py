"""Aiven objects made by Java: tests/tier/aiven_oracle/AivenOracle.java encrypts and compresses a
real segment with the libraries and calls Aiven's plugin uses (the JDK's AES/GCM/NoPadding,
BouncyCastle's RSA/NONE/OAEPWithSHA3-512AndMGF1Padding, zstd-jni), resolved by Maven from
tests/tier/aiven_oracle/pom.xml (the plugin itself is not on Maven Central). segtools must read
them back to the broker's own bytes: this pins what the Python encoder of the other tests
cannot, e.g. which hash BouncyCastle's padding name puts into MGF1."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from segtools.tier import aiven

pytestmark = pytest.mark.slow   # a JVM (and Maven when ~/.m2 lacks the two jars)

HERE = Path(__file__).resolve().parent / "aiven_oracle"
REAL = (Path(__file__).resolve().parent.parent / "data" / "realdata" /
        "kafka-3.6-kraft-flink-stack" / "logdir" / "customers_keyed-0")


#: the pom's two artifacts as Maven lays them out in ~/.m2
JARS = ("org/bouncycastle/bcprov-jdk18on/1.79/bcprov-jdk18on-1.79.jar",
        "com/github/luben/zstd-jni/1.5.6-10/zstd-jni-1.5.6-10.jar")


def _classpath(mvn: str, tmp: Path) -> str:
    """The pom's jars: straight from ~/.m2 when Maven already has them (Maven itself takes
    15-20 s to say so on a loaded 2-core machine), else resolved by Maven."""
    repo = Path.home() / ".m2" / "repository"
    if all((repo / j).is_file() for j in JARS):
        return ":".join(str(repo / j) for j in JARS)
    cp_file = tmp / "classpath.txt"
    subprocess.run([mvn, "-q", "-B", "-f", str(HERE / "pom.xml"), "dependency:build-classpath",
                    f"-Dmdep.outputFile={cp_file}"], check=True, timeout=600,
                   stdin=subprocess.DEVNULL, capture_output=True)
    return cp_file.read_text().strip()


def test_java_encrypted_real_segment_reads_back(tmp_path: Path) -> None:
    java, mvn = shutil.which("java"), shutil.which("mvn")
    if java is None or mvn is None:   # the suite's machines have both: a missing one fails
        pytest.fail("this test needs java and mvn on PATH")
    classpath = _classpath(mvn, tmp_path)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (tmp_path / "pub.der").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo))
    pem = tmp_path / "priv.pem"
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    files = {".log": REAL / "00000000000000000000.log",
             ".index": REAL / "00000000000000000000.index",
             ".timeindex": REAL / "00000000000000000000.timeindex",
             ".snapshot": REAL / "00000000000000027482.snapshot",
             ".leader_epoch_checkpoint": REAL / "leader-epoch-checkpoint"}
    objects = tmp_path / "objects"
    objects.mkdir()
    proc = subprocess.run(
        [java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
         "-cp", classpath, str(HERE / "AivenOracle.java"),
         str(tmp_path / "pub.der"), str(objects / "seg"), "262144",
         *(str(p) for p in files.values())],
        timeout=300, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "out"
    out.mkdir()
    m = aiven.decode_segment(aiven.local_opener(str(objects)), "seg", str(out / "seg"),
                             aiven.PrivateKey(str(pem)))
    assert m.compression and m.encryption is not None and len(list(m.chunks())) == 12
    for suffix, original in files.items():
        assert (out / ("seg" + suffix)).read_bytes() == original.read_bytes(), suffix
