"""A real S3-compatible server on 127.0.0.1 (moto's server mode, a separate HTTP server with
its own S3 implementation) and copies of real broker dirs uploaded to it.

The server is reached only through the standard AWS variables (AWS_ENDPOINT_URL_S3 and the
credentials), as a user's object store would be; boto3 (moto's own dependency) is the
independent client that uploads and lists."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

BUCKET = "incident-4711"


@dataclass
class S3Server:
    endpoint: str
    client: object     # boto3 S3 client

    def upload(self, local: Path, prefix: str) -> str:
        """Upload every file under ``local`` to s3://BUCKET/prefix/...; returns the URI."""
        for path in sorted(local.rglob("*")):
            if path.is_file():
                key = f"{prefix}/{path.relative_to(local).as_posix()}"
                self.client.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())
        return f"s3://{BUCKET}/{prefix}"

    def keys(self, prefix: str = "") -> dict[str, str]:
        """key -> ETag of every object under ``prefix`` (what changed is visible)."""
        out: dict[str, str] = {}
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
            for obj in page.get("Contents", []):
                out[obj["Key"]] = obj["ETag"]
        return out

    def get(self, key: str) -> bytes:
        return self.client.get_object(Bucket=BUCKET, Key=key)["Body"].read()


_ENV = {"AWS_ACCESS_KEY_ID": "segtools-test", "AWS_SECRET_ACCESS_KEY": "segtools-test",
        "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    try:
        import boto3
        from moto.server import ThreadedMotoServer
    except ImportError as exc:   # a missing test dependency fails, never skips
        pytest.fail(f"object-store tests need moto[server] (pip install -e '.[test]'): {exc}")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)   # one line per request otherwise
    # port 0: the server binds a free port itself (a port picked here first could be taken by
    # another test's process before the server's thread binds it, and start() would then wait
    # for ever)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{server.get_host_and_port()[1]}"
    saved = {k: os.environ.get(k) for k in [*_ENV, "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"]}
    os.environ.update(_ENV)
    os.environ.pop("AWS_PROFILE", None)
    # the standard variable: pyarrow (and the Spark executors, which inherit it) reach the
    # server through it, as a user's MinIO/Ceph endpoint would be given
    os.environ["AWS_ENDPOINT_URL_S3"] = endpoint
    try:
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield S3Server(endpoint, client)
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@dataclass
class Evidence:
    """The same evidence on disk and in the bucket."""

    local: dict[str, Path]
    uri: dict[str, str]
    prefixes: list[str]


@pytest.fixture(scope="session")
def evidence(s3: S3Server, realdata: Path, samples: Path) -> Evidence:
    local = {
        "realdata": realdata / "kafka-2.5-zk-first-topic",
        "scenario": samples / "generated" / "S7-simple-unclean-election",
    }
    uri = {name: s3.upload(path, f"evidence/{name}") for name, path in local.items()}
    return Evidence(local, uri, [f"evidence/{name}/" for name in local])
