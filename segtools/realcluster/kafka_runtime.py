"""Locating a real Apache Kafka: a Java runtime and Kafka's jars.

segtools uses real Kafka as the authority (the real ``kafka-dump-log``, real brokers for
``simulate --engine kafka``). The jars come from one of two places:

* ``kafka_home``: an installed Kafka distribution (its ``libs/*.jar``), as users run it;
* otherwise one of the releases in ``KAFKA_VERSIONS``, resolved by Maven from the repository's
  ``jvm/pom.xml`` (its ``kafka.version`` property is set per call) into the local Maven cache,
  never downloaded by hand. The classpath Maven prints is cached in ``~/.cache/segtools`` keyed
  by the pom's hash and the release, so only the first call per release pays for Maven.

A missing Java, Maven, pom or Kafka is a user error (``KafkaUnavailableError``, exit 2) whose
message says what to install or which flag to pass.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from segtools.errors import SegtoolsError

#: the default Kafka release (must equal <kafka.version> in jvm/pom.xml; a test checks)
KAFKA_VERSION = "4.4.0"

#: the Kafka releases segtools runs for real (Maven Central serves each artifact of jvm/pom.xml
#: for them); users run every 4.x release, tests cover these
KAFKA_VERSIONS: tuple[str, ...] = ("4.0.0", "4.1.0", "4.2.0", "4.3.1", "4.4.0")

#: main class of kafka-dump-log.sh in Kafka 4.3+ (Java); 4.0-4.2 still run the Scala tool of
#: 3.x (``DUMP_LOG_MAIN_SCALA``): ``dump_log_main`` picks the one of a release
DUMP_LOG_MAIN = "org.apache.kafka.tools.DumpLogSegments"
DUMP_LOG_MAIN_SCALA = "kafka.tools.DumpLogSegments"


def dump_log_main(version: str) -> str:
    """The main class of kafka-dump-log.sh in Kafka ``version`` ("4.1.0", "4.4", ...)."""
    parts = version.split(".")
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return DUMP_LOG_MAIN  # an installed distribution of unknown version: the newest tool
    return DUMP_LOG_MAIN if (major, minor) >= (4, 3) else DUMP_LOG_MAIN_SCALA



def _pom() -> Path:
    """jvm/pom.xml of the repository, installed as package data of ``segtools.jvm``."""
    return Path(str(resources.files("segtools.jvm").joinpath("pom.xml")))


class KafkaUnavailableError(SegtoolsError):
    """Java, Maven or Kafka's jars cannot be found; the message names the fix."""


@dataclass(frozen=True)
class KafkaRuntime:
    """A Java executable and the classpath of one Kafka version."""

    java: str
    classpath: str
    version: str

    def command(self, main_class: str, *args: str, heap: str = "256m") -> list[str]:
        """The argv that runs ``main_class`` of this Kafka with a small heap."""
        return [self.java, f"-Xmx{heap}", "-Xss1m", "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1", "-cp", self.classpath, main_class, *args]


def find_java() -> str:
    """The ``java`` to run Kafka with: ``$JAVA_HOME/bin/java``, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    java = shutil.which("java")
    if java is None:
        raise KafkaUnavailableError(
            "Java not found: real Kafka needs Java 17 or newer "
            "(install it, e.g. 'apt-get install openjdk-17-jre-headless', or set JAVA_HOME)")
    return java


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "segtools"


def _maven_classpath(pom: Path, version: str) -> str:
    if not pom.is_file():
        raise KafkaUnavailableError(
            f"{pom} not found: pass --kafka-home with an installed Kafka distribution")
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    cached = _cache_dir() / f"classpath-{digest}-{version}.txt"
    if cached.is_file():
        classpath = cached.read_text().strip()
        if classpath and all(os.path.isfile(p) for p in classpath.split(os.pathsep)):
            return classpath
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaUnavailableError(
            "Maven not found: it fetches the pinned Kafka jars (install it, e.g. "
            "'apt-get install maven') or pass --kafka-home with an installed Kafka distribution")
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    proc = subprocess.run(
        [mvn, "-q", "-B", "-f", str(pom), "dependency:build-classpath",
         f"-Dkafka.version={version}", f"-Dmdep.outputFile={tmp}"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode != 0 or not tmp.is_file():
        tail = " ".join((proc.stdout + proc.stderr).split()[-40:])
        raise KafkaUnavailableError(
            f"Maven could not resolve Kafka {version} from {pom} (is Maven Central "
            f"reachable?): {tail}")
    os.replace(tmp, cached)
    return cached.read_text().strip()


def _home_classpath(kafka_home: str | os.PathLike[str]) -> str:
    libs = Path(kafka_home) / "libs"
    jars = sorted(str(p) for p in libs.glob("*.jar")) if libs.is_dir() else []
    if not jars:
        raise KafkaUnavailableError(
            f"{kafka_home}: not a Kafka distribution (no libs/*.jar); pass the folder that "
            "holds bin/ and libs/")
    return os.pathsep.join(jars)


def _home_version(kafka_home: str | os.PathLike[str]) -> str:
    for jar in sorted((Path(kafka_home) / "libs").glob("kafka-clients-*.jar")):
        return jar.name[len("kafka-clients-"):-len(".jar")]
    return "unknown"


def check_kafka_version(version: str) -> str:
    """``version`` if segtools runs that release, else a user error listing the ones it does."""
    if version not in KAFKA_VERSIONS:
        raise KafkaUnavailableError(
            f"Kafka {version} is not one of the releases segtools runs: "
            f"{', '.join(KAFKA_VERSIONS)} (or pass --kafka-home with an installed distribution)")
    return version


def kafka_runtime(kafka_home: str | os.PathLike[str] | None = None,
                  version: str | None = None) -> KafkaRuntime:
    """Java plus the classpath of ``kafka_home`` or, without it, of release ``version``
    (default ``KAFKA_VERSION``) resolved by Maven."""
    java = find_java()
    if kafka_home is not None:
        return KafkaRuntime(java, _home_classpath(kafka_home), _home_version(kafka_home))
    release = check_kafka_version(version or KAFKA_VERSION)
    return KafkaRuntime(java, _maven_classpath(_pom(), release), release)
