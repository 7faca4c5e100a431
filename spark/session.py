"""SparkSession for segtools commands: embedded ``local[*]`` by default, ``--master URL`` for a
cluster, or whatever ``spark-submit`` configured when we run under it."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from typing import Any

from segtools.errors import SegtoolsError

JAVA_HINT = ("install Java 17 or newer (e.g. 'apt-get install openjdk-17-jre-headless') or set JAVA_HOME; "
             "or run compare with --no-spark")


class SparkUnavailableError(SegtoolsError):
    """Spark cannot start here (no usable Java, or the JVM exited): a user error, exit 2."""


def require_pyspark() -> None:
    """pyspark is an extra (dump, export and in-process compare do not need it): say what to
    install instead of an ImportError."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailableError(
            "Spark is not installed: pip install 'segtools[spark]' (or run compare with --no-spark)"
        ) from None


@functools.lru_cache(maxsize=1)
def check_java() -> str:
    """The ``java`` Spark will launch (``$JAVA_HOME/bin/java``, else ``java`` on PATH), after
    checking that it runs; raises SparkUnavailableError with a hint otherwise."""
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    where = f"JAVA_HOME={home}" if home else "PATH"
    if not java or not os.access(java, os.X_OK):
        raise SparkUnavailableError(f"Spark needs Java, and there is none on {where}: {JAVA_HINT}")
    try:
        done = subprocess.run([java, "-version"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SparkUnavailableError(f"Spark needs Java, and {java} does not run ({exc}): {JAVA_HINT}") from None
    if done.returncode != 0:
        first = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no output"])[0]
        raise SparkUnavailableError(f"Spark needs Java, and {java} -version failed "
                                    f"(exit {done.returncode}: {first}): {JAVA_HINT}")
    return java


def get_spark(master: str | None = None, *, app_name: str = "segtools",
              config: dict[str, str] | None = None) -> Any:
    """Return a SparkSession with the ``kafka_segments`` data source registered.

    The Python workers must run this interpreter (pyarrow and segtools live here), so
    PYSPARK_PYTHON defaults to ``sys.executable`` (CONVENTIONS.md pitfall 6)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    require_pyspark()
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    active = SparkSession.getActiveSession()
    under_submit = "SPARK_SUBMIT" in os.environ or os.environ.get("PYSPARK_GATEWAY_PORT")
    if master:
        builder = builder.master(master)
    elif active is None and not under_submit:
        builder = builder.master("local[*]")
    defaults = {
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
    }
    if active is None and not under_submit and (master is None or master.startswith("local")):
        # workers forked from a daemon that has segtools' reader loaded (spark/daemon.py);
        # only for the local master, where the workers run this installation for sure
        defaults["spark.python.daemon.module"] = "segtools.spark.daemon"
    if active is None and not under_submit and "spark.driver.extraJavaOptions" not in (config or {}):
        # Keep the terminal for our summary: Spark's INFO/WARN start-up chatter goes nowhere
        # unless the user configured logging (SPARK_CONF_DIR) themselves.
        defaults["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{_quiet_log4j()}"
    for key, value in {**defaults, **(config or {})}.items():
        builder = builder.config(key, value)
    if active is None and not under_submit:
        check_java()
    try:
        spark = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - PySparkRuntimeError, Py4JError: the JVM did not start
        text = str(exc)
        first = (text.strip().splitlines() or [type(exc).__name__])[0]
        hint = JAVA_HINT if ("JAVA_GATEWAY" in text or "Java gateway" in text) else \
            f"check --master {master}" if master else "run compare with --no-spark"
        raise SparkUnavailableError(f"Spark did not start ({first}): {hint}") from None
    if master is None and not under_submit:
        spark.sparkContext.setLogLevel("ERROR")
    from segtools.spark import register

    register(spark)
    return spark


_LOG4J2 = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _quiet_log4j() -> str:
    import tempfile

    path = os.path.join(tempfile.gettempdir(), "segtools-log4j2.properties")
    if not os.path.exists(path):
        with open(path + f".{os.getpid()}", "w", encoding="utf-8") as fh:
            fh.write(_LOG4J2)
        os.replace(path + f".{os.getpid()}", path)
    return path
