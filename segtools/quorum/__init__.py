"""The controller quorum as evidence: audit controllers' ``__cluster_metadata`` logs together
(docs/QUORUM.md).

Example::

    >>> from segtools.quorum import audit_dirs
    >>> result = audit_dirs(["c1/", "c2/", "c3/"])   # doctest: +SKIP
    >>> result.committed_end, [f.kind for f in result.findings]   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Sequence

from segtools.quorum.audit import Finding, QuorumAudit, audit
from segtools.quorum.nodes import ControllerNode, load_node

__all__ = ["ControllerNode", "Finding", "QuorumAudit", "audit", "audit_dirs", "load_node"]


def audit_dirs(paths: Sequence[str], brokers: Sequence[str] = ()) -> QuorumAudit:
    """Load each controller's metadata dir and audit them together; ``brokers``: brokers' log
    dirs whose metadata replicas are compared with the controllers'."""
    return audit([load_node(p) for p in paths], [load_node(p) for p in brokers])
