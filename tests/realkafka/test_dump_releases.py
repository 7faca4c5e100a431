"""`segtools dump --kafka-version X` against the real kafka-dump-log of every other release X
(4.0.0, 4.1.0, 4.2.0, 4.3.1): a smoke set per release. The newest release is compared in full
by test_dump_parity.py; the whole matrix (every file, 500+ mutants per release) is
``tests/realkafka/parity_report.py --all-releases``.

Why a smoke set suffices in CI: outside the internal-topic decoders the text of a release line
does not change (4.0-4.2 run the Scala tool of 3.x, 4.3+ the Java one), and the smoke set holds
every decoder case, a sample of every file kind and mutants of the internal topics.
"""

from __future__ import annotations

from pathlib import Path

import parity_harness as h
import pytest

from segtools.realcluster.kafka_runtime import KAFKA_VERSION, KAFKA_VERSIONS

# 4.2.0 prints what 4.1.0 prints (both the Scala tool with LEADER_CHANGE JSON): `long` keeps the
# CI suite under its time budget; `pytest -m long` and parity_report.py --all-releases run it.
OTHER_RELEASES = [pytest.param(v, marks=pytest.mark.long) if v == "4.2.0" else v
                  for v in KAFKA_VERSIONS if v != KAFKA_VERSION]
#: one file comparison in this many of the plain (non-decoder) cases
SAMPLE_EVERY = 40
MUTANTS = 30


def _smoke_cases(ws: Path) -> list[h.Case]:
    decoders = ("--offsets-decoder", "--transaction-log-decoder", "--cluster-metadata-decoder")
    cases = []
    plain = 0
    for case in h.cases_for(h.kafka_files(ws), ws):
        p = ws / case.args[-1]
        log = p.with_name(p.name.split(".")[0] + ".log")
        if case.kind in ("log", "index", "timeindex") and log.exists() \
                and log.stat().st_size > 160 * 1024:
            continue   # the real tool's time-index check is quadratic
        if any(flag in case.args for flag in decoders):
            cases.append(case)
        else:
            plain += 1
            if plain % SAMPLE_EVERY == 0:
                cases.append(case)
    # a real KRaft metadata log with LEADER_CHANGE control records (decoded from 4.1 on)
    kraft = "tests/data/realdata/kafka-3.6-kraft-flink-stack/logdir/__cluster_metadata-0/" \
            "00000000000000000000.log"
    cases.append(h.Case(f"{kraft} --deep-iteration --print-data-log",
                        ["--deep-iteration", "--print-data-log", "--files", kraft], "log"))
    return cases


@pytest.mark.parametrize("version", OTHER_RELEASES)
def test_release_text_matches_its_real_tool(version: str, kafka_dump_log_of, parity_ws: Path) -> None:
    kafka_dump_log = kafka_dump_log_of(version)
    assert kafka_dump_log.version == version
    cases = _smoke_cases(parity_ws)
    assert {"--transaction-log-decoder", "--offsets-decoder"} <= {a for c in cases for a in c.args}
    mutants = h.make_mutants(
        [p for p in h.mutant_sources(parity_ws)
         if p.parent.name.startswith(("__transaction_state", "__consumer_offsets"))
         or "samples/dump" in str(p)],
        MUTANTS, 22, parity_ws / f"mutants-{version}")
    cases += [c for _, c in h.mutant_cases(mutants, parity_ws)]
    ours = [h.run_ours(c.args, parity_ws, kafka_dump_log.release) for c in cases]
    kafka = kafka_dump_log.run_jobs([c.args for c in cases], parity_ws)
    different = []
    tally = {h.IDENTICAL: 0, h.CLEAN_ERROR: 0, h.DIFFERENT: 0}
    for case, k, o in zip(cases, kafka, ours):
        verdict = h.compare(k, o, case.kind)
        tally[verdict.kind] += 1
        if not verdict.ok and h.known_difference(case, k, o, verdict) is None:
            different.append(f"{case.name}: {verdict.reason}")
    assert not different, "\n".join(different[:30])
    assert tally[h.IDENTICAL] > 0.7 * len(cases), tally


@pytest.mark.parametrize("version", ["4.0.0", "4.1.0", "4.3.1", "4.4.0"])
def test_transaction_text_of_each_release(version: str, kafka_dump_log_of, parity_ws: Path) -> None:
    """The written __transaction_state (every state, NextProducerEpoch, a state id no release
    knows, an unknown value version): 4.0 prints 3.x's text and dies where its Scala
    TransactionLog dies, 4.1-4.3 print the coordinator JSON with the status id and
    nextProducerEpoch, 4.4 the status name."""
    kafka_dump_log = kafka_dump_log_of(version)
    log = "built/__transaction_state-0/00000000000000000000.log"
    jobs = [["--transaction-log-decoder", "--files", log],
            ["--transaction-log-decoder", "--skip-record-metadata", "--files", log]]
    ours = [h.run_ours(job, parity_ws, kafka_dump_log.release) for job in jobs]
    kafka = kafka_dump_log.run_jobs(jobs, parity_ws)
    for k, o in zip(kafka, ours):
        verdict = h.compare(k, o)
        assert verdict.ok, verdict.reason
    text = kafka[0].stdout
    if version == "4.0.0":
        assert "transaction_metadata::transactionalId=txn-flex-2" in text
        assert kafka[0].crashed and ours[0].status == 1
        return
    assert kafka[0].stdout == ours[0].stdout
    assert '"nextProducerEpoch":12' in text
    if version == "4.4.0":
        assert '"transactionStatus":"PrepareCommit"' in text and '"transactionStatus":"9"' in text
    else:
        assert '"transactionStatus":2,' in text and '"transactionStatus":9,' in text
