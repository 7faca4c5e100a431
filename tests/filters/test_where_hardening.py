"""`--where` cannot crash or hang (issue 23): numbers range-checked, regular expressions
matched in linear time (RE2), nesting limited -- each reproducer of the issue through the
CLI (dump and export) and through segtools.filters.

Segments are written by kafka-python (an independent writer); which records a pattern keeps
is checked against Python's ``re`` on the same bytes (with an equivalent pattern where ``re``
itself would backtrack for minutes)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hang_guard import no_hang

from segtools.filters import FilterError, parse_condition, parse_where, read_filtered

VALUES = [b"a" * 28 + b"!"] * 5 + [b"aaa", b"x\ny", "café".encode(), b"\xff\xfe", b"order-42"]


def _partition(root: Path, values: list[bytes] = VALUES) -> Path:
    from kafka.record.memory_records import MemoryRecordsBuilder

    part = root / "orders-0"
    part.mkdir(parents=True)
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for i, v in enumerate(values):
        builder.append(timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=v, headers=[])
    builder.close()
    (part / "00000000000000000000.log").write_bytes(bytes(builder.buffer()))
    return part


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "segtools", *args], capture_output=True,
                          text=True, timeout=timeout)


def _one_line_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.mark.parametrize("expr, needle", [
    ("offset<=99999999999999999999", "outside offset's range (int64"),
    ("offset=1,99999999999999999999", "outside offset's range"),
    ("timestamp>=-99999999999999999999", "outside timestamp's range"),
    ("producer_id!=18446744073709551616", "outside producer_id's range"),
    ("producer_epoch=40000", "outside producer_epoch's range (int16"),
    ("leader_epoch>2147483648", "outside leader_epoch's range (int32"),
    ("partition=-2147483649", "outside partition's range"),
    ("offset=" + "9" * 5000, "expected an integer, got 5000 characters"),
])
def test_numbers_beyond_their_kafka_type_are_one_line_errors(expr: str, needle: str) -> None:
    with pytest.raises(FilterError, match=re.escape(needle)):
        parse_where([expr])


def test_export_beyond_int64_is_exit_2_without_partial_output(tmp_path: Path) -> None:
    """Issue 23: a traceback, exit 1 and `_PARTIAL` left."""
    part = _partition(tmp_path / "in")
    out = tmp_path / "out"
    proc = _run("export", str(part), "--out", str(out), "--where", "offset<=99999999999999999999")
    _one_line_error(proc, "outside offset's range")
    assert not out.exists()


def test_the_type_ends_themselves_are_values_and_match_as_numbers(tmp_path: Path) -> None:
    part = _partition(tmp_path / "in")
    top = str((1 << 63) - 1)
    assert read_filtered(part, [f"offset<={top}"]).num_rows == len(VALUES)
    assert read_filtered(part, [f"offset>={-(1 << 63)}"]).num_rows == len(VALUES)
    assert read_filtered(part, [f"offset>{top}"]).num_rows == 0
    assert read_filtered(part, ["producer_epoch<=32767"]).num_rows == len(VALUES)


def test_dump_a_regex_of_1000_nested_groups_is_a_one_line_error(tmp_path: Path) -> None:
    """Issue 23: RecursionError in Python's re compiler."""
    part = _partition(tmp_path / "in")
    pattern = "(" * 1000 + "a" + ")" * 1000
    proc = _run("dump", str(part), "--deep-iteration", "--where", f"value~{pattern}")
    _one_line_error(proc, "nests groups 1000 deep; at most 100")
    assert len(proc.stderr) < 1000   # the pattern is not echoed whole


def test_nesting_counts_groups_not_escaped_or_class_parens() -> None:
    assert parse_condition("value~" + "(" * 100 + "a" + ")" * 100).value is not None
    escaped = "\\(" * 500 + "[((((]" * 200 + "[]()]"
    assert parse_condition("value~" + escaped).value.search(b"(" * 701 + b")") is not None
    with pytest.raises(FilterError, match="101 deep"):
        parse_condition("value~" + "(" * 101 + "a" + ")" * 101)


def test_catastrophic_backtracking_pattern_finishes_fast(tmp_path: Path) -> None:
    """Issue 23: `value~(a+)+$` on five 29-byte values ran past 60 s. It means `a+$`, which
    Python's re matches without backtracking: that is the oracle. No timing is asserted (the
    machine may be loaded): the pattern is compiled by RE2, whose matching is linear in the
    text, and the commands run under a timeout a backtracking engine (~2**29 steps per value)
    would exceed."""
    from segtools.filters import compile_regex

    assert type(compile_regex("(a+)+$")).__module__.startswith("re2")
    part = _partition(tmp_path / "in")
    expected = sorted(i for i, v in enumerate(VALUES) if re.search(b"a+$", v))
    table = read_filtered(part, ["value~(a+)+$"])
    assert sorted(table.column("offset").to_pylist()) == expected

    proc = _run("dump", "--deep-iteration", "--print-data-log", str(part), "--where", "value~(a+)+$",
                timeout=600)
    assert proc.returncode == 0, proc.stderr
    printed = [int(line.split("offset: ")[1].split()[0]) for line in proc.stdout.splitlines()
               if line.startswith("| offset: ")]
    assert printed == expected
    out = tmp_path / "out"
    proc = _run("export", str(part), "--out", str(out), "--where", "value~(a+)+$", timeout=600)
    assert proc.returncode == 0, proc.stderr

    import pyarrow.parquet as pq

    assert sorted(pq.read_table(out).column("offset").to_pylist()) == expected


@pytest.mark.parametrize("pattern", ["a+", "^aaa$", "x.y", "café", "caf.$", "^order-[0-9]+$",
                                     "[^a-z]", "\\xff", "(?i)ORDER", "a{28}!", "^$"])
def test_patterns_match_as_python_re_on_bytes(tmp_path: Path, pattern: str) -> None:
    """RE2 in Latin-1 mode with dot-matches-newline keeps Python re's (bytes, re.S) meaning."""
    part = _partition(tmp_path / "in")
    oracle = re.compile(pattern.encode("utf-8"), re.S)
    expected = sorted(i for i, v in enumerate(VALUES) if oracle.search(v))
    got = sorted(read_filtered(part, [f"value~{pattern}"]).column("offset").to_pylist())
    assert got == expected
    flt = parse_where([f"value~{pattern}"])
    assert [i for i, v in enumerate(VALUES)
            if flt.record_matches("orders", 0, i, 0, None, v, -1, -1, 0)] == expected


@pytest.mark.parametrize("expr", ["value~(a)\\1", "value~(?=a)", "value~(?<=a)b", "value~a{1001}"])
def test_what_re2_cannot_do_is_a_one_line_error(expr: str) -> None:
    with pytest.raises(FilterError, match="bad regular expression") as info:
        parse_where([expr])
    assert "\n" not in str(info.value)


def test_a_long_blank_run_in_a_value_parses_in_linear_time() -> None:
    # quadratic stripping of 200,000 blanks would take hours; linear takes milliseconds
    with no_hang(120):
        cond = parse_condition("key=" + " " * 200_000 + "x" + " " * 5)
    assert cond.value == b"x"   # blanks around a value are not part of it (as before)
