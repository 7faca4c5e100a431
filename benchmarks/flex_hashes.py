"""Hashes of dump's and tier's output on every file that holds flexible-encoded data (issue 24,
"one flexible-message engine"): run before and after a change to the flexible-message engine
and compare the two JSON files.

    python benchmarks/flex_hashes.py OUT.json [ROOT ...]
    python benchmarks/flex_hashes.py --compare BEFORE.json AFTER.json

Every ``.log``/``.checkpoint`` under the roots (default: samples/ and tests/data/) is dumped
plain, with ``--deep-iteration --print-data-log`` (text and json: control records' values) and
with the decoder its topic calls for (text, json and Kafka 3.9's text); an Aiven tier built with
the tier tests' encoder (unencrypted: deterministic) goes through ``segtools tier --json``,
``segtools tier`` and the remote-log-metadata decoder. Stdout and exit status are hashed.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

from click.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from segtools.cli.main import cli  # noqa: E402

DECODERS = {
    "__consumer_offsets": "--offsets-decoder",
    "__transaction_state": "--transaction-log-decoder",
    "__cluster_metadata": "--cluster-metadata-decoder",
    "__remote_log_metadata": "--remote-log-metadata-decoder",
    "__share_group_state": "--share-group-state-decoder",
}
TIER_DIR = Path("/tmp/flex_hashes_tier")


def modes(path: Path) -> list[list[str]]:
    out = [[], ["--deep-iteration", "--print-data-log"],
           ["--deep-iteration", "--print-data-log", "--output", "json"]]
    topic = path.parent.name.rsplit("-", 1)[0]
    flag = DECODERS.get(topic)
    if flag:
        out += [[flag], [flag, "--output", "json"], [flag, "--kafka-version", "3.9"]]
    return out


def run(runner: CliRunner, args: list[str]) -> str:
    res = runner.invoke(cli, args, catch_exceptions=True)
    h = hashlib.sha256(res.stdout_bytes).hexdigest()[:16]
    return f"{res.exit_code}:{h}"


def build_tier() -> tuple[Path, Path]:
    from tests.tier import test_aiven_audit as t
    if TIER_DIR.exists():
        shutil.rmtree(TIER_DIR)
    TIER_DIR.mkdir()
    tier = t.build(TIER_DIR, encrypted=False)
    return Path(tier.broker), Path(tier.bucket)


def collect(out: Path, roots: list[Path]) -> None:
    runner = CliRunner()
    result: dict[str, str] = {}
    files = sorted(p for r in roots for p in r.rglob("*")
                   if p.is_file() and p.suffix in (".log", ".checkpoint")
                   and p.name[:1].isdigit())
    for p in files:
        for m in modes(p):
            result[f"dump {' '.join(m)} {p}"] = run(runner, ["dump", "-q", *m, str(p)])
    broker, bucket = build_tier()
    for extra in ([], ["--json"]):
        result[f"tier {extra}"] = run(runner, ["tier", str(broker), "--remote", str(bucket),
                                               *extra])
    for p in sorted(broker.rglob("*.log")):
        if "__remote_log_metadata" in str(p):
            for m in (["--remote-log-metadata-decoder"],
                      ["--remote-log-metadata-decoder", "--output", "json"]):
                result[f"dump {' '.join(m)} {p}"] = run(runner, ["dump", "-q", *m, str(p)])
    out.write_text(json.dumps(result, indent=1, sort_keys=True))
    print(f"{len(files)} files, {len(result)} file x mode outputs -> {out}")


def compare(before: Path, after: Path) -> int:
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    diff = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    print(f"{len(a)} before, {len(b)} after, {len(diff)} differ")
    for k in diff[:40]:
        print(f"  {k}: {a.get(k)} -> {b.get(k)}")
    return 1 if diff else 0


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    roots = [Path(r) for r in sys.argv[2:]] or [REPO / "samples", REPO / "tests" / "data"]
    collect(Path(sys.argv[1]), roots)
