"""Every command answers --help, is documented in the README, and bad usage exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from segtools.cli.main import SUBCOMMANDS, cli

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_command_has_help_and_is_documented(name):
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    assert f"segtools {name}" in README


def test_unknown_command_is_a_usage_error():
    result = CliRunner().invoke(cli, ["no-such-command"])
    assert result.exit_code == 2


REPO = Path(__file__).resolve().parents[2]


def _help(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_help_shows_examples_that_use_real_flags(name):
    """Two or three examples per command, each a `segtools NAME ...` line whose --flags all
    exist on the command (so the examples cannot drift from the options)."""
    import shlex

    text = _help([name, "--help"])
    assert "Examples:" in text
    examples = [line.strip() for line in text.split("Examples:", 1)[1].splitlines()
                if line.strip().startswith(f"segtools {name}")]
    assert 2 <= len(examples) <= 3, examples
    command = cli.get_command(None, name)  # type: ignore[arg-type]
    flags = {opt for p in command.params for opt in (*p.opts, *p.secondary_opts)}
    for example in examples:
        for token in shlex.split(example.split(" | ")[0]):
            if token.startswith("--"):
                assert token in flags, f"{example!r}: {token} is not a {name} option"


@pytest.mark.parametrize("args", [[]] + [[name] for name in sorted(SUBCOMMANDS)])
def test_help_cites_only_documents_that_ship(args):
    import re

    text = _help([*args, "--help"])
    assert "../shared" not in text and "shared/" not in text
    cited = re.findall(r"[\w./-]*\.md\b", text)
    for doc in cited:
        assert "/" in doc or doc == "README.md", \
            f"bare document name {doc!r}: say where it is (docs/...)"
        assert (REPO / doc).is_file(), f"{doc} is cited by --help but not in the repository"


def _v2_batch(base_offset: int, value: bytes) -> bytes:
    """One v2 batch written by kafka-python (an independent writer)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    builder.append(0, timestamp=1_700_000_000_000, key=None, value=value, headers=[])
    raw = bytearray(builder.build())
    raw[0:8] = base_offset.to_bytes(8, "big")
    return bytes(raw)


def test_an_impossible_batch_size_is_a_finding_everywhere(tmp_path):
    """Issue 16: one answer for a batch size field below Kafka's 14-byte minimum (Kafka's
    CorruptRecordException). The bytes were read and what precedes is reported or exported:
    a finding, exit 1, in dump and export alike, and the README says so."""
    import struct

    import pyarrow.parquet as pq

    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    bad = part / "00000000000000000000.log"
    bad.write_bytes(_v2_batch(0, b"before") + struct.pack(">qi", 1, 5) + b"\0" * 40)
    (part / "00000000000000000002.log").write_bytes(_v2_batch(2, b"next segment"))
    position = len(_v2_batch(0, b"before"))

    dump = CliRunner().invoke(cli, ["dump", str(part)])
    assert dump.exit_code == 1, dump.output
    errors = [line for line in dump.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1
    assert "00000000000000000000.log" in errors[0] and f"position {position}" in errors[0]
    assert "smaller than minimum record overhead (14)" in errors[0]

    out = tmp_path / "pq"
    export = CliRunner().invoke(cli, ["export", str(tmp_path / "logs"), "--out", str(out)])
    assert export.exit_code == 1, export.output
    errors = [line for line in export.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "Traceback" not in export.output
    assert "00000000000000000000.log" in errors[0] and f"position {position}" in errors[0]
    values = sorted(v for f in out.rglob("*.parquet")
                    for v in pq.read_table(f).column("value").to_pylist())
    assert values == [b"before", b"next segment"]
    assert not (out / "_PARTIAL").exists()

    exit_codes = README.split("### Exit codes", 1)[1].split("###", 1)[0]
    row_1 = next(line for line in exit_codes.splitlines() if line.startswith("| 1 |"))
    row_2 = next(line for line in exit_codes.splitlines() if line.startswith("| 2 |"))
    assert "size field is impossible" in row_1 and "size field" not in row_2


def test_spark_export_tasks_return_the_finding_too(tmp_path):
    """What each Spark task of `export --master` sends to the driver: its files, then its
    findings (the driver splits them), so Spark and in-process exports agree on exit 1."""
    import struct

    from segtools.export import ExportOptions, _spark_task, partition_folder, plan_export

    part = tmp_path / "logs" / "t-0"
    part.mkdir(parents=True)
    (part / "00000000000000000000.log").write_bytes(
        _v2_batch(0, b"before") + struct.pack(">qi", 1, 5) + b"\0" * 40)
    options = ExportOptions()
    [src] = plan_export([str(tmp_path / "logs")], str(tmp_path / "pq"), options)
    out = _spark_task(src, str(tmp_path / "pq"), options, partition_folder(src, options))
    files = [o for o in out if not isinstance(o, str)]
    findings = [o for o in out if isinstance(o, str)]
    assert [f.rows for f in files] == [1]
    assert len(findings) == 1 and "smaller than minimum record overhead (14)" in findings[0]


def test_version_names_the_kafka_releases_it_matches():
    from segtools.dump.options import KAFKA_VERSIONS as DUMP_TEXTS
    from segtools.realcluster.kafka_runtime import KAFKA_VERSION, KAFKA_VERSIONS
    from segtools.version import __version__

    text = _help(["--version"])
    assert text.splitlines()[0] == f"segtools, version {__version__}"
    assert all(v in text for v in (*DUMP_TEXTS, *KAFKA_VERSIONS)) and f"default {KAFKA_VERSION}" in text
