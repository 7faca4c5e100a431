"""Real KRaft controllers for the quorum tests: one way to name a directory id, write a
controller's properties and format its dir with Kafka's own StorageTool, so the tests differ
only in the quorum they build (issue 28)."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import pytest


def kafka_uuid() -> str:
    """A Kafka Uuid as kafka-storage prints it: 16 random bytes, URL-safe base64, unpadded;
    never starting with "-" (Kafka's Uuid.randomUuid draws again too: such an id would read
    as an option on a command line, and kafka-storage format refuses it)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def controller_properties(path: Path, node_id: int, port: int, log_dir: Path, bootstrap: str,
                          extra: str = "") -> Path:
    """Write a controller-only server.properties at ``path``: node ``node_id`` listening on
    127.0.0.1:``port``, metadata in ``log_dir``, ``bootstrap`` as its quorum bootstrap servers."""
    path.write_text(
        f"process.roles=controller\nnode.id={node_id}\ncontroller.listener.names=CONTROLLER\n"
        f"listeners=CONTROLLER://127.0.0.1:{port}\n"
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT\n"
        f"metadata.log.dir={log_dir}\nlog.dirs={log_dir}\n"
        f"controller.quorum.bootstrap.servers={bootstrap}\n{extra}")
    return path


def format_controller(rt: Any, cluster_id: str, properties: Path, *how: str) -> None:
    """``kafka-storage format`` of one controller (``how``: --standalone or
    --initial-controllers …); a refusal fails the test with Kafka's own output."""
    from segtools.realcluster.processes import run_tool

    res = run_tool(rt.command("kafka.tools.StorageTool", "format", "-t", cluster_id,
                              "-c", str(properties), *how, heap="128m"), timeout=120)
    if res.returncode != 0:
        pytest.fail(f"kafka-storage format refused {properties}: {res.stdout}{res.stderr}",
                    pytrace=False)


def combined_properties(path: Path, node_id: int, broker_port: int, controller_port: int,
                        log_dir: Path, bootstrap: str, extra: str = "") -> Path:
    """A broker+controller server.properties (the image then holds brokers and topics)."""
    path.write_text(
        f"process.roles=broker,controller\nnode.id={node_id}\n"
        "controller.listener.names=CONTROLLER\ninter.broker.listener.name=PLAINTEXT\n"
        f"listeners=PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}\n"
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{broker_port},"
        f"CONTROLLER://127.0.0.1:{controller_port}\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        f"metadata.log.dir={log_dir}\nlog.dirs={log_dir}\n"
        f"controller.quorum.bootstrap.servers={bootstrap}\n{extra}")
    return path


def broker_properties(path: Path, node_id: int, port: int, log_dir: Path, bootstrap: str,
                      extra: str = "") -> Path:
    """A broker-only server.properties: its ``__cluster_metadata-0`` is an observer's copy of
    the controllers' log."""
    path.write_text(
        f"process.roles=broker\nnode.id={node_id}\ncontroller.listener.names=CONTROLLER\n"
        f"listeners=PLAINTEXT://127.0.0.1:{port}\n"
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        f"metadata.log.dir={log_dir}\nlog.dirs={log_dir}\n"
        f"controller.quorum.bootstrap.servers={bootstrap}\n{extra}")
    return path


def shell_classpath(rt: Any) -> str:
    """The classpath of ``rt``'s release plus its kafka-metadata-shell (jvm/pom.xml's
    ``metadata-shell`` profile, resolved by Maven once and cached beside kafka_runtime's)."""
    import hashlib
    import os
    import subprocess

    from segtools.realcluster.kafka_runtime import _cache_dir, _pom

    pom = _pom()
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    cached = _cache_dir() / f"classpath-shell-{digest}-{rt.version}.txt"
    if not cached.is_file():
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        proc = subprocess.run(
            ["mvn", "-q", "-B", "-f", str(pom), "-Pmetadata-shell", "dependency:build-classpath",
             f"-Dkafka.version={rt.version}", f"-Dmdep.outputFile={tmp}"],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900, check=False)
        if proc.returncode != 0 or not tmp.is_file():
            pytest.fail(f"Maven could not resolve kafka-shell {rt.version}: "
                        f"{(proc.stdout + proc.stderr)[-2000:]}", pytrace=False)
        os.replace(tmp, cached)
    # Kafka's own jars first: slf4j 2 and its log4j2 binding win over kafka-shell's slf4j 1.7
    return f"{rt.classpath}{os.pathsep}{cached.read_text().strip()}"
