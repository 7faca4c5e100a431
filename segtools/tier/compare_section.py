"""The tier audit as a section of compare's report (report.json ``tier``, the HTML page's
"Remote tier"): a tiered partition is only proven whole when the audit finds nothing, so a
finding keeps compare's answer from "safe" (forensics/report.py turns each into missing
evidence of its partition)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from segtools.errors import InputError, SegtoolsError
from segtools.tier.audit import METADATA_TOPIC, audit


def tier_section(paths: Sequence[str | os.PathLike[str]], histories: Any = None) -> dict[str, Any] | None:
    """``segtools tier``'s JSON for the compared evidence; None when no
    ``__remote_log_metadata`` partition is on it (nothing was tiered, or nothing says so).
    ``histories``: compare's replayed metadata log (the audit's leaders come from the same log
    as compare's verdicts, and it is not replayed twice)."""
    try:
        return audit([os.fspath(p) for p in paths], histories=histories).to_json()
    except InputError as e:
        # only "no metadata partition" means nothing tiered: an error reading one (its path
        # names the topic too) must not pass for that
        if str(e).startswith(f"no {METADATA_TOPIC} partition"):
            return None
        failure: SegtoolsError = e
    except SegtoolsError as e:   # compare goes on; nothing tiered is proven whole then
        failure = e
    return {"schema_version": 1, "metadata_partitions": [], "partitions": [], "segments": [],
            "findings": [{"kind": "cannot_tell", "topic": METADATA_TOPIC, "partition": -1,
                          "message": f"the tier audit could not read the evidence: {failure}"}]}


def missing_evidence(section: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One missing-evidence entry per tiered partition with audit findings."""
    by_part: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for f in (section or {}).get("findings", []):
        # a finding of no one partition (the audit failed) stands for every tiered one
        if f.get("topic") and (f.get("partition", -1) >= 0 or f["topic"] == METADATA_TOPIC):
            by_part.setdefault((f["topic"], f["partition"]), []).append({
                "evidence": "remote_tier", "detail": f"{f['kind']}: {f['message']}",
                "decides": "whether every offset of the partition is held in a tier Kafka serves"})
    return [{"topic": t, "partition": p, "missing": m} for (t, p), m in sorted(by_part.items())]
