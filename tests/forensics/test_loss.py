"""Stage 3 matching: lost records, relocation (S10), duplicates, acks and the JSON encoding."""

from __future__ import annotations

import json

import pytest

from segtools.errors import InputError
from segtools.forensics.classify import DivergentRange
from segtools.forensics.loss import AckIndex, lost_records, text_or_base64
from segtools.forensics.model import RecordFacts


def rec(offset, epoch, value, *, key=None, pid=-1, seq=-1, control=False):
    return RecordFacts(offset=offset, leader_epoch=epoch, key=key, value=value, producer_id=pid,
                       producer_epoch=0 if pid >= 0 else -1, sequence=seq, is_control=control)


def test_s10_relocated_by_producer_sequence_and_by_content():
    # A's divergent [701..704]@e3 (pid 42, seq 10..13) re-sent to C at [703..706]@e4
    rng = DivergentRange(1, "A", 701, 705, [(701, 705, 703)])
    divergent = {(1, "A"): [rec(701 + i, 3, b"v%d" % i, pid=42, seq=10 + i) for i in range(4)]
                 + [rec(705, 3, b"plain", key=b"k")]}
    reference = [rec(701, 4, b"other"), rec(702, 4, b"plain", key=b"k"), rec(708, 4, b"plain", key=b"k")] + \
                [rec(703 + i, 4, b"v%d" % i, pid=42, seq=10 + i) for i in range(4)]
    lost, findings = lost_records([rng], divergent, reference, {(701, 3): True})
    assert [(x.offset, x.relocated_to, x.committed, x.acked) for x in lost] == [
        (701, 703, True, True), (702, 704, True, False), (703, 705, False, False), (704, 706, False, False),
        (705, None, False, False)]          # same content twice in the lineage: ambiguous, not relocated
    codes = sorted(f.code for f in findings)
    assert codes == ["DUPLICATE", "RELOCATED"]


def test_records_the_reference_holds_at_same_offset_and_epoch_are_not_lost():
    rng = DivergentRange(2, "B", 5, 7)
    divergent = {(2, "B"): [rec(5, 1, b"a"), rec(6, 2, b"b"), rec(7, 2, b"c", control=True)]}
    lost, _ = lost_records([rng], divergent, [rec(5, 1, b"a")], None)
    assert [(x.offset, x.acked) for x in lost] == [(6, None)]      # no --acks: acked is null


def test_json_encoding_of_keys_and_values():
    assert text_or_base64(b"caf\xc3\xa9") == "café"
    assert text_or_base64(b"\xff\x00") == {"base64": "/wA="}
    assert text_or_base64(None) is None


def test_ack_index_reads_acks_jsonl_and_rejects_garbage(tmp_path):
    good = tmp_path / "acks.jsonl"
    good.write_text("\n".join(json.dumps(x) for x in [
        {"topic": "t", "partition": 0, "key": "k", "value": "v", "acks": "1", "ok": True, "offset": 3,
         "leader_epoch": 2, "error": None},
        {"topic": "t", "partition": 0, "key": "k", "value": "w", "acks": "all", "ok": False, "offset": None,
         "leader_epoch": None, "error": "NOT_ENOUGH_REPLICAS"}]) + "\n")
    idx = AckIndex.load(good)
    assert idx.acked("t", 0, 3, 2) and not idx.acked("t", 0, 3, 1)
    assert idx.for_partition("t", 0) == {(3, 2): True}
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(InputError, match="line 1"):
        AckIndex.load(bad)
    with pytest.raises(InputError):
        AckIndex.load(tmp_path / "missing.jsonl")


def test_acks_all_acknowledgement_proves_commitment_beyond_a_stale_hw_checkpoint():
    from forensics_helpers import dense, replica

    from segtools.forensics.classify import classify_partition
    from segtools.forensics.loss import apply_lost_evidence

    # S8 shape: A's tail [505..509]@e3 above its (stale) HWC 505; B leads e4 from 505
    a = replica(1, dense([(480, 509, 3)]), hw=505, clean=False)
    b = replica(2, dense([(480, 504, 3)]), hw=505, lec=[(3, 480), (4, 505)])
    verdict = classify_partition([a, b])
    rv = next(r for r in verdict.replicas if r.broker == 1)
    assert rv.status == "DIVERGED_UNCOMMITTED"
    divergent = {(1, ""): [rec(o, 3, b"v%d" % o) for o in range(505, 510)]}
    # acks=1 acknowledgements say nothing about commitment
    lost, _ = lost_records(verdict.divergent_ranges, divergent, [], {(505, 3): True}, set())
    apply_lost_evidence(verdict, lost)
    assert rv.status == "DIVERGED_UNCOMMITTED" and not any(x.committed for x in lost)
    # an acks=all acknowledgement does: the leader acked only after the HW passed the record
    lost, _ = lost_records(verdict.divergent_ranges, divergent, [], {(505, 3): True, (506, 3): True},
                           {(505, 3), (506, 3)})
    apply_lost_evidence(verdict, lost)
    assert [x.offset for x in lost if x.committed] == [505, 506]
    assert (rv.status, rv.divergent["committed_records"]) == ("COMMITTED_LOSS", 2)


def test_reference_filter_keeps_only_what_matching_needs():
    from segtools.forensics.loss import ReferenceFilter

    keep = ReferenceFilter([rec(10, 3, b"x", key=b"k"), rec(11, 3, b"y", pid=7, seq=4)])
    assert keep.keep(rec(10, 4, b"other"))                 # same offset: the "held?" check
    assert keep.keep(rec(20, 4, b"x", key=b"k"))           # same content elsewhere
    assert keep.keep(rec(21, 4, b"changed", pid=7, seq=4))  # same producer sequence
    assert not keep.keep(rec(22, 4, b"x"))                  # key differs: other content
    assert not keep.keep(rec(23, 4, b"z", pid=7, seq=5))
