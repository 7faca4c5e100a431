"""The filter language (segtools/filters.py): on every real-data dir and every generated
sample, `read_filtered` returns exactly the rows a full decode filtered in pandas returns;
Kafka's hashes agree with Kafka's own placement and with kafka-python; pushdown reads less."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from segtools import read_records
from segtools.filters import (
    FilterError,
    FilterStats,
    java_string_hash,
    murmur2,
    parse_where,
    partition_for_group,
    partition_for_key,
    read_filtered,
)

REPO = Path(__file__).resolve().parents[2]
REALDATA_DIRS = ["kafka-2.0-zk-small/logdir", "kafka-2.5-zk-first-topic/early",
                 "kafka-2.5-zk-first-topic/final", "kafka-3.6-kraft-flink-stack/logdir"]
SAMPLES = sorted(p for p in (REPO / "samples" / "generated").iterdir() if p.is_dir())
ID = ["topic", "partition", "broker", "offset"]


def _frame(table) -> pd.DataFrame:
    df = table.select(["topic", "partition", "broker", "offset", "key", "value", "timestamp_ms",
                       "producer_id", "producer_epoch", "leader_epoch"]).to_pandas()
    return df.sort_values(ID, na_position="first").reset_index(drop=True)


def _group(key) -> bytes | None:
    if key is None or len(key) < 4:
        return None
    n = int.from_bytes(key[2:4], "big", signed=True)
    return key[4:4 + n] if 0 <= n and 4 + n <= len(key) else None


def _cases(df: pd.DataFrame, every: bool = True) -> list[tuple[list[str], pd.Series]]:
    """--where expressions built from values present in the data, each with the pandas mask
    that means the same thing (written independently of segtools.filters). ``every`` False
    (the small generated samples): the operators the real-data dirs already cover once each
    are left out, to keep the suite's time down."""
    cases: list[tuple[list[str], pd.Series]] = []
    mid = int(df.offset.median())
    cases.append(([f"offset>={mid}", f"offset<{mid + 50}"], (df.offset >= mid) & (df.offset < mid + 50)))
    ts = df.timestamp_ms[df.timestamp_ms > 0]
    if len(ts):
        t = int(ts.median())
        cases.append(([f"timestamp>={t}"], df.timestamp_ms >= t))
        if every:
            cases.append(([f"time<{t}", "offset>0"], (df.timestamp_ms < t) & (df.offset > 0)))
    keys = [k for k in df.key if k is not None and len(k) >= 3]
    if keys:
        k = keys[len(keys) // 2]
        prefix = k[:3]
        if all(b < 0x80 and chr(b).isalnum() for b in prefix):
            cases.append(([f"key^={prefix.decode()}"], df.key.map(lambda v: v is not None and v.startswith(prefix))))
        if every:
            cases.append(([f"key=hex:{k.hex()}"], df.key.map(lambda v: v == k)))
    if every:
        cases.append((["key=null"], df.key.isna()))
    values = [v for v in df.value if v is not None and len(v) >= 8]
    if values:
        v = values[len(values) // 3]
        word = re.escape(v[2:6]).decode("latin-1")
        pat = re.compile(word.encode("latin-1"), re.S)
        cases.append(([f"value~{word}"], df.value.map(lambda x: x is not None and pat.search(x) is not None)))
    pid = int(df.producer_id.max())
    cases.append(([f"producer_id={pid}"], df.producer_id == pid))
    if every:
        cases.append(([f"producer_id={pid},-1", "producer_epoch>=0"],
                      df.producer_id.isin([pid, -1]) & (df.producer_epoch >= 0)))
    epoch = int(df.leader_epoch.max())
    cases.append(([f"leader_epoch>={epoch}"], df.leader_epoch >= epoch))
    topic = df.topic.iloc[len(df) // 2]
    cases.append(([f"topic={topic}", "partition!=1"], (df.topic == topic) & (df.partition != 1)))
    groups = {_group(k) for k, t in zip(df.key, df.topic, strict=True) if t == "__consumer_offsets"} - {None}
    if groups:
        g = sorted(groups)[0]
        in_group = df.key.map(lambda x: _group(x) == g)
        cases.append(([f"group={g.decode()}"], (df.topic == "__consumer_offsets") & in_group))
    return cases


def _inputs() -> list[Path]:
    here = REPO / "tests" / "data" / "realdata"
    return [here / d for d in REALDATA_DIRS] + SAMPLES


@pytest.mark.parametrize("path", _inputs(), ids=lambda p: p.name if p.parent.name == "generated" else
                         "/".join(p.parts[-2:]))
def test_results_equal_a_full_decode_filtered_in_pandas(path):
    full = _frame(read_records(path))
    assert len(full) > 0
    for where, mask in _cases(full, every=path.parent.name != "generated"):
        expected = full[mask.to_numpy(dtype=bool)].reset_index(drop=True)
        got = _frame(read_filtered(path, where))
        assert len(got) == len(expected), where
        pd.testing.assert_frame_equal(got, expected, check_dtype=False, obj=str(where))


def test_group_partition_is_where_kafka_put_each_group(realdata):
    """Every group key in the real __consumer_offsets partitions sits in the partition
    Utils.abs(groupId.hashCode()) % 50 names (offsets.topic.num.partitions default 50)."""
    checked = 0
    for part in realdata.glob("*/*/__consumer_offsets-*"):
        table = read_records(part)
        n = int(part.name.rsplit("-", 1)[1])
        for key in table.column("key").to_pylist():
            g = _group(key)
            if g is None:
                continue
            assert partition_for_group(g.decode("utf-8"), 50) == n, (part, g)
            checked += 1
    assert checked > 100


def test_java_string_hash_known_values():
    # values of java.lang.String.hashCode (JLS: s[0]*31^(n-1) + ... + s[n-1])
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2**31       # Integer.MIN_VALUE
    assert partition_for_group("polygenelubricants", 50) == 0      # Utils.abs(MIN_VALUE) == 0
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00  # UTF-16 surrogate pair


def test_murmur2_agrees_with_kafka_python():
    import random

    from kafka.partitioner.default import murmur2 as oracle

    rng = random.Random(7)
    for n in list(range(0, 20)) + [100, 1000]:
        data = bytes(rng.randrange(256) for _ in range(n))
        assert murmur2(data) & 0xFFFFFFFF == oracle(data) & 0xFFFFFFFF
    assert partition_for_key(b"order-42", 12) == (oracle(b"order-42") & 0x7FFFFFFF) % 12


def test_pushdown_reads_only_what_can_match(realdata):
    root = realdata / "kafka-3.6-kraft-flink-stack" / "logdir"
    st = FilterStats()
    table = read_filtered(root, ["topic=orders", "offset>=17000"], stats=st)
    assert st.partitions_read == 1 and st.bytes_read < st.bytes_total / 4
    assert table.num_rows == 212
    st = FilterStats()
    read_filtered(root, ["group=does-not-exist"], stats=st)
    assert st.partitions_read <= 1


def test_bad_expressions_are_one_line_errors():
    for bad in ("offset~3", "key<4", "colour=red", "offset>=x", "key~(", "nonsense"):
        with pytest.raises(FilterError):
            parse_where([bad])


def test_transactional_id_needs_the_transaction_state_partition(realdata):
    with pytest.raises(FilterError, match="__transaction_state"):
        read_filtered(realdata / "kafka-2.0-zk-small" / "logdir", ["transactional_id=tx-1"])


def test_transactional_id_finds_its_producers_records(tmp_path):
    """T -> producer id through the __transaction_state record Kafka keys by T, in the
    partition Utils.abs(T.hashCode()) % 50; then that producer's records everywhere."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from segtools.internal_topics.transaction_state import encode_key, encode_value
    from segtools.writer import NewRecord, build_batch

    txn = "payments-tx"
    state = tmp_path / "broker-1" / f"__transaction_state-{partition_for_group(txn, 50)}"
    state.mkdir(parents=True)
    value = encode_value(0, {"producerId": 7001, "producerEpoch": 0, "transactionTimeoutMs": 60000,
                             "transactionStatus": 1,
                             "transactionPartitions": [{"topic": "orders", "partitionIds": [0]}],
                             "transactionLastUpdateTimestampMs": 2, "transactionStartTimestampMs": 1})
    other = encode_value(0, {"producerId": 9, "producerEpoch": 0, "transactionTimeoutMs": 60000,
                             "transactionStatus": 1, "transactionPartitions": [],
                             "transactionLastUpdateTimestampMs": 2, "transactionStartTimestampMs": 1})
    (state / "00000000000000000000.log").write_bytes(
        build_batch([NewRecord(encode_key(txn), value, timestamp=1)], base_offset=0)
        + build_batch([NewRecord(encode_key("another-tx"), other, timestamp=2)], base_offset=1))
    orders = tmp_path / "broker-1" / "orders-0"
    orders.mkdir()
    data = b""
    for base, (pid, txnl) in enumerate([(7001, True), (5, False), (7001, True), (9, True)]):
        b = DefaultRecordBatchBuilder(2, 0, txnl, pid, 0, base if pid != 5 else -1, 1 << 20)
        b.append(0, timestamp=1_700_000_000_000 + base, key=b"k%d" % base, value=b"v%d" % base, headers=[])
        raw = bytearray(b.build())
        raw[0:8] = base.to_bytes(8, "big")
        data += bytes(raw)
    (orders / "00000000000000000000.log").write_bytes(data)
    got = read_filtered(tmp_path, [f"transactional_id={txn}"])
    rows = sorted(zip(got.column("topic").to_pylist(), got.column("offset").to_pylist(), strict=True))
    assert rows == [("__transaction_state", 0), ("orders", 0), ("orders", 2)]


@pytest.mark.parametrize("where", [["offset>=100", "offset<140", "key^=1"],
                                   ["value~[Gg]old", "producer_id=33,37", "leader_epoch>=0",
                                    "timestamp>=1713539799903"],
                                   ["group=_confluent-controlcenter-7-6-0-1"]])
def test_dump_and_export_where_select_the_same_records_as_the_api(realdata, tmp_path, where):
    """The CLI flags are the same language: dump --where (ndjson records) and export --where
    (Parquet rows) give exactly read_filtered's records."""
    import json

    import pyarrow.parquet as pq
    from click.testing import CliRunner

    from segtools.cli.main import cli

    root = realdata / "kafka-3.6-kraft-flink-stack" / "logdir"
    inputs = [root / "customers_keyed-0", root / "loyalty_levels-0", root / "__consumer_offsets-36",
              root / "__consumer_offsets-34"]
    api = read_filtered(inputs, where)
    expected = sorted(zip(api.column("topic").to_pylist(), api.column("partition").to_pylist(),
                          api.column("offset").to_pylist(), strict=True))
    assert expected
    flags = [f"--where={w}" for w in where]
    runner = CliRunner()
    dumped = runner.invoke(cli, ["dump", *map(str, inputs), "--deep-iteration", "--output", "ndjson", *flags])
    assert dumped.exit_code == 0, dumped.output[-2000:]
    rows = [json.loads(ln) for ln in dumped.stdout.splitlines() if ln.startswith("{")]
    got = sorted((r["topic"], r["partition"], r["offset"]) for r in rows if r["type"] == "record")
    assert got == expected
    out = tmp_path / "pq"
    exported = runner.invoke(cli, ["export", *map(str, inputs), "--out", str(out), *flags])
    assert exported.exit_code == 0, exported.output
    table = pq.read_table(out)
    assert sorted(zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(),
                      table.column("offset").to_pylist(), strict=True)) == expected
