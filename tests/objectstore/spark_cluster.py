"""A Spark standalone cluster on 127.0.0.1: one master and two workers, separate JVMs started
with pyspark's own launcher (``bin/spark-class`` of the installed pyspark package)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class StandaloneCluster:
    master_url: str
    ui_url: str
    env: dict[str, str]
    procs: list[subprocess.Popen] = field(default_factory=list)


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _alive_workers(ui_url: str) -> int:
    try:
        with urllib.request.urlopen(ui_url + "/json/", timeout=2) as resp:   # 127.0.0.1 only
            state = json.load(resp)
    except (OSError, ValueError):     # not up yet, or not the master's page
        return -1
    if not isinstance(state, dict):
        return -1
    return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")


_MASTER_AT = re.compile(rb"Starting Spark master at (spark://\S+)")
_UI_PORT = re.compile(rb"Successfully started service 'MasterUI' on port (\d+)")


def _master_addresses(log: Path, master: subprocess.Popen, deadline: float,
                      log_tail: Callable[[], str]) -> tuple[str, str]:
    """The master's RPC URL and web UI URL, as its log reports them once both are bound."""
    while True:
        text = log.read_bytes() if log.exists() else b""
        at, ui = _MASTER_AT.search(text), _UI_PORT.search(text)
        if at and ui:
            return at.group(1).decode(), f"http://127.0.0.1:{int(ui.group(1))}"
        if master.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the standalone master did not start:\n{log_tail()}")
        time.sleep(0.2)


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in reversed(procs):
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)     # its own session: the JVM and its children
            except ProcessLookupError:
                pass
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@contextmanager
def standalone_cluster(workdir: Path, *, workers: int = 2,
                       ui_port: int | None = None) -> Iterator[StandaloneCluster]:
    """``ui_port``: the web UI port to ask the master for (a free one by default)."""
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise RuntimeError("the Spark standalone cluster needs Java 17 (JAVA_HOME or java on PATH)")
    home = spark_home()
    spark_class = str(home / "bin" / "spark-class")
    env = dict(os.environ)
    env.update(SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_MASTER_HOST="127.0.0.1",
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOG_DIR=str(workdir / "logs"), SPARK_DAEMON_MEMORY="256m",
               SPARK_NO_DAEMONIZE="1")
    # what a cluster user puts in $SPARK_CONF_DIR/spark-defaults.conf; read by spark-submit,
    # so also by the segtools driver started with this environment
    conf = workdir / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "spark-defaults.conf").write_text(
        "spark.sql.shuffle.partitions 4\n"       # 200 by default: tiny tasks on 2 small workers
        "spark.executor.memory 1g\n"
        "spark.driver.memory 1g\n")
    env["SPARK_CONF_DIR"] = str(conf)
    port, ui_port = _free_port(), ui_port or _free_port()
    cluster = StandaloneCluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{ui_port}", env)
    logs = workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)

    def launch(name: str, args: list[str]) -> None:
        out = open(logs / f"{name}.out", "wb")   # noqa: SIM115 - kept open for the JVM's life
        cluster.procs.append(subprocess.Popen([spark_class, *args], env=env, stdout=out,
                                              stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                              start_new_session=True))
        out.close()

    def log_tail() -> str:
        return "\n".join((logs / f).read_text(errors="replace")[-2000:] for f in sorted(os.listdir(logs)))

    try:
        launch("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                          "--port", str(port), "--webui-port", str(ui_port)])
        # The ports were free when picked, but another test's process (a Spark driver's UI) may
        # take one before the master binds it; the master then moves to the next port. Its log
        # says where it is: the workers and the UI poll use that, not the port we asked for.
        deadline = time.monotonic() + 120
        cluster.master_url, cluster.ui_url = _master_addresses(logs / "master.out", cluster.procs[0],
                                                               deadline, log_tail)
        for i in range(workers):
            wdir = workdir / f"worker-{i}"
            wdir.mkdir()
            launch(f"worker-{i}", ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                   "--port", str(_free_port()), "--webui-port", str(_free_port()),
                                   "--cores", "1", "--memory", "1200m", "--work-dir", str(wdir),
                                   cluster.master_url])
        while _alive_workers(cluster.ui_url) < workers:
            dead = [p for p in cluster.procs if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"the standalone cluster did not come up ({len(dead)} JVM(s) exited):\n"
                                   f"{log_tail()}")
            time.sleep(0.5)
        yield cluster
    finally:
        _stop(cluster.procs)


def leftover_processes(cluster: StandaloneCluster, workdir: Path) -> list[int]:
    """Processes of the cluster still alive: a master/worker (its command line names the
    master URL) or an executor (it runs in a worker's work dir)."""
    found = []
    address = cluster.master_url.split("//", 1)[1]
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if ("java" in cmdline and address in cmdline) or cwd.startswith(str(workdir)):
            found.append(int(entry))
    return found
