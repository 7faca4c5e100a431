"""`segtools dump` decoders of Kafka 4.x internal topics against the real kafka-dump-log (4.3.1).

The segments here are written by Kafka's own serializers (decoder_inputs.py drives
InternalTopicWriter.java over the pinned jars): every record type of Kafka 4.3's group
coordinator (streams groups included; a real streams group runs in
test_decoder_realcluster.py), share-group state, and ``__remote_log_metadata`` records made
by RemoteLogMetadataSerde (a tiered-storage broker needs a RemoteStorageManager plugin that
is not in the jars). The files a real cluster writes are in test_decoder_realcluster.py.
Our stdout must equal the real tool's byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import decoder_inputs as di
import parity_harness as h
import pytest

pytestmark = pytest.mark.realkafka


@pytest.fixture(scope="module")
def writer(tmp_path_factory: pytest.TempPathFactory) -> di.InternalTopicWriter:
    from segtools.realcluster.kafka_runtime import KafkaUnavailableError

    try:
        return di.InternalTopicWriter(tmp_path_factory.mktemp("itw"))
    except (KafkaUnavailableError, RuntimeError) as exc:
        pytest.fail(f"Kafka's serializers are needed for this test: {exc}", pytrace=False)


@pytest.fixture(scope="module")
def segments(writer: di.InternalTopicWriter, tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("decoders")
    name = "00000000000000000000.log"
    share_key = json.dumps({"groupId": "sg", "topicId": di.U1, "partition": 1})
    writer.write({
        ws / "__consumer_offsets-0" / name: di.group_jobs(),
        # a newer Kafka's tagged fields (unknown to 4.3) on values, and record types 4.3 lacks
        ws / "__consumer_offsets-1" / name: [
            "\t".join(["group", "3", '{"groupId":"g"}', "0", '{"epoch":1}', "7:0a0b0c"]),
            "\t".join(["group", "17", '{"groupId":"g"}', "0", '{"epoch":2,"metadataHash":3}',
                       "9:ff,12:"]),
            "raw\t0018000167\t00000102",     # type 24: not in 4.3
            "raw\t0009000167\t-",            # type 9: removed in 4.x (a tombstone)
            "\t".join(["group", "3", '{"groupId":"g"}', "0", '{"epoch":3}']),
        ],
        ws / "__share_group_state-0" / name: di.share_state_jobs(),
        ws / "__share_group_state-1" / name: [
            "\t".join(["share", "1", share_key, "0",
                       '{"snapshotEpoch":1,"leaderEpoch":1,"startOffset":0,"stateBatches":[]}',
                       "3:abcd"]),
            "raw\t0002\t0000"],
        ws / "__remote_log_metadata-0" / name: di.remote_log_metadata_jobs(),
        ws / "__transaction_state-0" / name: di.transaction_state_jobs(),
    })
    return ws


CASES = [
    ("--offsets-decoder", "__consumer_offsets-0"),
    ("--offsets-decoder", "__consumer_offsets-1"),
    ("--share-group-state-decoder", "__share_group_state-0"),
    ("--share-group-state-decoder", "__share_group_state-1"),
    ("--remote-log-metadata-decoder", "__remote_log_metadata-0"),
    ("--transaction-log-decoder", "__transaction_state-0"),
]


@pytest.fixture(scope="module")
def outcomes(kafka_dump_log: h.KafkaDumpLog, segments: Path) -> dict[str, tuple[h.Outcome, h.Outcome]]:
    jobs = []
    for flag, part in CASES:
        jobs.append([flag, "--files", f"{part}/00000000000000000000.log"])
        jobs.append([flag, "--skip-record-metadata", "--files", f"{part}/00000000000000000000.log"])
    ours = [h.run_ours(job, segments) for job in jobs]   # ours first: the real tool writes
    kafka = kafka_dump_log.run_jobs(jobs, segments)
    return {" ".join(job): (k, o) for job, k, o in zip(jobs, kafka, ours)}


def test_every_decoder_prints_what_kafka_dump_log_prints(outcomes) -> None:
    assert len(outcomes) == 2 * len(CASES)
    for name, (kafka, ours) in outcomes.items():
        assert not kafka.crashed, f"{name}: the real tool died: {kafka.exception[:500]}"
        assert ours.stdout == kafka.stdout, f"{name}: " + h.first_difference(kafka.stdout, ours.stdout)
        assert "Traceback" not in ours.stderr, ours.stderr


def test_the_files_exercise_every_record_type(outcomes) -> None:
    """Guards the test itself: the real tool decoded every 4.3 record type we wrote."""
    kafka, _ = outcomes["--offsets-decoder --files __consumer_offsets-0/00000000000000000000.log"]
    types = {int(line.split('key: {"type":"')[1].split('"')[0])
             for line in kafka.stdout.splitlines() if 'key: {"type":"' in line}
    assert types == set(range(24)) - {9, 18}
    assert kafka.stdout.count("payload: <DELETE>") == 4
    assert "lastAssignmentConfigs" in kafka.stdout and "assignmentEpochs" in kafka.stdout
    rlm, _ = outcomes["--remote-log-metadata-decoder --files __remote_log_metadata-0/00000000000000000000.log"]
    for kind in ("RemoteLogSegmentMetadata{", "RemoteLogSegmentMetadataUpdate{",
                 "RemoteLogSegmentMetadataSnapshot{"):
        assert rlm.stdout.count(kind) == 4, kind
    assert rlm.stdout.count("skipping.") == 14
    assert rlm.stdout.count("RemotePartitionDeleteMetadata{") == 5  # + the unknown tagged field


def test_unknown_record_types_and_tagged_fields_are_shown_as_hex(outcomes) -> None:
    """Kafka prints "Unknown record type N at offset O, skipping." and drops unknown tagged
    fields from its JSON without a word; ours prints the same stdout and adds, on stderr, one
    Warning line per hidden part with its bytes in hex. Neither changes the exit status (data a
    newer Kafka wrote is not corruption): exit 0, as for a clean file."""
    kafka, ours = outcomes["--offsets-decoder --files __consumer_offsets-1/00000000000000000000.log"]
    assert "Unknown record type 24 at offset 2, skipping." in kafka.stdout
    assert "Unknown record type 9 at offset 3, skipping." in kafka.stdout
    warnings = [line for line in ours.stderr.splitlines() if line.startswith("Warning: ")]
    assert len(warnings) == 5, ours.stderr
    assert "ConsumerGroupMetadataValue has tagged field 7" in warnings[0]
    assert "hex 0a0b0c (3 bytes)" in warnings[0]
    assert "StreamsGroupMetadataValue has tagged field 9" in warnings[1] and "hex ff (1 bytes)" in warnings[1]
    assert "tagged field 12" in warnings[2] and "(0 bytes)" in warnings[2]
    assert "record type 24 at offset 2" in warnings[3]
    assert "key hex 0018000167, value hex 00000102" in warnings[3]
    assert "record type 9 at offset 3" in warnings[4] and "value hex null" in warnings[4]
    assert ours.status == 0
    kafka, ours = outcomes["--share-group-state-decoder --files __share_group_state-1/00000000000000000000.log"]
    assert "Unknown record type 2 at offset 1, skipping." in kafka.stdout
    assert ours.status == 0 and "ShareUpdateValue has tagged field 3" in ours.stderr
    assert "record type 2 at offset 1 has no __share_group_state schema" in ours.stderr
    kafka, ours = outcomes["--share-group-state-decoder --files __share_group_state-0/00000000000000000000.log"]
    assert ours.status == 0 and "Warning: " not in ours.stderr
    # __remote_log_metadata: Kafka prints an error line for an unknown api key and drops an
    # unknown tagged field from its toString; ours notes both with their hex
    kafka, ours = outcomes["--remote-log-metadata-decoder --files __remote_log_metadata-0/00000000000000000000.log"]
    assert "skipping. org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 9" \
        in kafka.stdout
    warnings = [line for line in ours.stderr.splitlines() if line.startswith("Warning: ")]
    assert len(warnings) == 2, ours.stderr
    assert "has no __remote_log_metadata schema" in warnings[0] and "value hex 01090000" in warnings[0]
    assert "RemotePartitionDeleteMetadataRecord has tagged field 5" in warnings[1]
    assert "hex abcd (2 bytes)" in warnings[1]
    assert ours.status == 0


def test_ndjson_nests_what_kafka_prints_as_text(kafka_dump_log: h.KafkaDumpLog, segments: Path,
                                                outcomes) -> None:
    """--output ndjson decodes with the same 4.3 record types: each record's nested key and
    payload equal Kafka's text parsed as JSON."""
    import json as _json

    for flag, part in CASES[:1] + CASES[2:3]:
        kafka, _ = outcomes[f"{flag} --files {part}/00000000000000000000.log"]
        expected = []
        for line in kafka.stdout.splitlines():
            if " key: " in line:
                key, _, payload = line.split(" key: ", 1)[1].partition(" payload: ")
                expected.append((_json.loads(key), payload if payload == "<DELETE>" else _json.loads(payload)))
        ours = h.run_ours([flag, "--output", "ndjson", "--files", f"{part}/00000000000000000000.log"],
                          segments)
        got = [(d["key"], d["payload"]) for d in map(_json.loads, ours.stdout.splitlines())
               if d.get("type") == "record"]
        assert got == expected and len(got) > 4, part


def test_ndjson_reports_hidden_parts_as_findings_with_the_whole_hex(segments: Path) -> None:
    import json as _json

    ours = h.run_ours(["--offsets-decoder", "--output", "ndjson", "--files",
                       "__consumer_offsets-1/00000000000000000000.log"], segments)
    findings = [d for d in map(_json.loads, ours.stdout.splitlines()) if d.get("type") == "finding"]
    assert [(f["kind"], f["offset"], f["problem"]) for f in findings] == [
        ("unknown_tagged_field", 0, False), ("unknown_tagged_field", 1, False),
        ("unknown_tagged_field", 1, False), ("unknown_record_type", 2, False),
        ("unknown_record_type", 3, False)]
    assert (findings[0]["tag"], findings[0]["hex"]) == (7, "0a0b0c")
    assert (findings[3]["key_hex"], findings[3]["value_hex"]) == ("0018000167", "00000102")
    assert findings[4]["value_hex"] is None
    assert ours.status == 0


def test_transaction_log_decoder_words_damaged_records_as_kafka(outcomes) -> None:
    """--transaction-log-decoder is the coordinator-record parser of the other decoders: a
    string that overruns its buffer is worded as Kafka 4.x's ByteBufferAccessor words it (not
    the JDK's String bounds message), an unknown record type and an unknown tagged field are
    Kafka's text on stdout and a hex Warning on stderr, exit 0."""
    kafka, ours = outcomes["--transaction-log-decoder --files __transaction_state-0/00000000000000000000.log"]
    assert ours.stdout == kafka.stdout, h.first_difference(kafka.stdout, ours.stdout)
    for line in ("Error at offset 3, skipping. Could not read record with version 0 from value's "
                 "buffer due to: Error reading byte array of 256 byte(s): only 2 byte(s) available.",
                 "Error at offset 24, skipping. Could not read record with version 0 from key's "
                 "buffer due to: Error reading byte array of 32767 byte(s): only 0 byte(s) available.",
                 "Unknown record type 1 at offset 17, skipping.",
                 "Found an unknown record version 2 for 0 type", "payload: <DELETE>"):
        assert line in kafka.stdout, line
    assert '"transactionalId":"txn-a"' in kafka.stdout
    warnings = [line for line in ours.stderr.splitlines() if line.startswith("Warning: ")]
    assert len(warnings) == 3, ours.stderr
    assert "TransactionLogValue has tagged field 5" in warnings[0] and "hex abcd" in warnings[0]
    assert "record type 1 at offset 17" in warnings[1] and "key hex 00010003616263" in warnings[1]
    assert ours.status == 0, ours.stderr
