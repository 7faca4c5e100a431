"""Tiered storage (KIP-405) forensics: the state history of every remote segment, lineage
against the replicas' leader-epoch chains, and coverage of [log start, log end) by FINISHED
remote segments and local segments. docs/TIER.md is the user guide."""

from segtools.tier.audit import Finding, TierReport, audit

__all__ = ["Finding", "TierReport", "audit"]
