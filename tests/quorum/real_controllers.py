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
    """A Kafka Uuid as kafka-storage prints it: 16 random bytes, URL-safe base64, unpadded."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


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
