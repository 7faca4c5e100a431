"""Which Kafka release wrote a controller's metadata dir, from its ``metadata.version`` levels
(docs/QUORUM.md "Version fingerprint").

A ``metadata.version`` level is first available in one release and stays available in every
later one (a newer release may run at an older level until it is finalized), so each level
seen gives a lower bound; no upper bound is claimed. Levels come from the FeatureLevelRecords
of ``bootstrap.checkpoint`` (written by ``kafka-storage format``), the snapshots and the log.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from segtools.errors import SegtoolsError
from segtools.quorum.image import metadata_records
from segtools.quorum.nodes import ControllerNode

#: newest production metadata.version level of each release, as each release's own
#: ``kafka-storage version-mapping --release-version R`` prints it (measured with the Kafka
#: 4.4.0 jar). Levels above a release's production maximum need
#: ``unstable.feature.versions.enable``, which this table assumes off.
RELEASE_MAX_LEVEL: tuple[tuple[str, int], ...] = (
    ("3.3", 7), ("3.4", 8), ("3.5", 11), ("3.6", 14), ("3.7", 19), ("3.8", 20), ("3.9", 21),
    ("4.0", 25), ("4.1", 27), ("4.2", 29), ("4.3", 30), ("4.4", 33),
)


def first_release(level: int) -> str | None:
    """The first release whose production metadata.version reaches ``level`` (None: newer
    than every release in the table)."""
    for release, top in RELEASE_MAX_LEVEL:
        if level <= top:
            return release
    return None


@dataclass(frozen=True)
class Fingerprint:
    node: str
    levels: tuple[tuple[int, str], ...]      # (metadata.version level, where seen)
    release_min: str | None                  # "4.3": written by 4.3 or later
    note: str

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "release_min": self.release_min, "note": self.note,
                "metadata_version_levels": [[lvl, where] for lvl, where in self.levels]}


def _levels(path: str) -> list[int]:
    # unreadable records are the audit's findings, not the fingerprint's
    return [int(data["featureLevel"]) for _o, _t, name, data in metadata_records(path, skip_unreadable=True)
            if name == "FEATURE_LEVEL_RECORD" and data.get("name") == "metadata.version"]


def fingerprint(node: ControllerNode) -> Fingerprint:
    """The release range of the node's metadata dir."""
    seen: list[tuple[int, str]] = []
    # bootstrap.checkpoint beside __cluster_metadata-0: the features kafka-storage format chose
    boot = os.path.join(os.path.dirname(os.path.normpath(node.partition_dir)),
                        "bootstrap.checkpoint")
    files = ([boot] if os.path.isfile(boot) else []) + [s.path for s in node.snapshots] + \
        sorted({b.path for b in node.batches})
    for path in files:
        try:
            seen.extend((lvl, os.path.basename(path)) for lvl in _levels(path))
        except SegtoolsError as e:
            node.problems.append(f"{path}: unreadable: {e}")
    if not seen:
        return Fingerprint(node.name, (), None, "cannot tell: no metadata.version record")
    top = max(lvl for lvl, _ in seen)
    release = first_release(top)
    if release is None:
        return Fingerprint(node.name, tuple(seen), None,
                           f"metadata.version {top} is newer than Kafka "
                           f"{RELEASE_MAX_LEVEL[-1][0]} (the newest release known here)")
    return Fingerprint(node.name, tuple(seen), release,
                       f"metadata.version {top}: written by Kafka {release} or later")
