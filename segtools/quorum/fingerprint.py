"""Which Kafka release wrote a controller's metadata dir (docs/QUORUM.md "Version fingerprint").

Three kinds of evidence, each a lower bound (what a release can write, every later release
can write too; a newer release may still write old versions, so no upper bound is claimed):

* ``metadata.version`` levels (FeatureLevelRecords of ``bootstrap.checkpoint``, snapshots, log);
* record versions and record types (a RegisterBrokerRecord of version 4 needs Kafka 4.3);
* the bootstrap layout: a VotersRecord in ``0-0.checkpoint`` (a dynamic quorum formatted with
  ``--standalone`` or ``--initial-controllers``) needs Kafka 3.9.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from segtools.errors import SegtoolsError
from segtools.quorum.image import versioned_records
from segtools.quorum.nodes import ControllerNode

#: newest production metadata.version level of each release, as each release's own
#: ``kafka-storage version-mapping --release-version R`` prints it (measured with the Kafka
#: 4.4.0 jar). Levels above a release's production maximum need
#: ``unstable.feature.versions.enable``, which this table assumes off.
RELEASE_MAX_LEVEL: tuple[tuple[str, int], ...] = (
    ("3.3", 7), ("3.4", 8), ("3.5", 11), ("3.6", 14), ("3.7", 19), ("3.8", 20), ("3.9", 21),
    ("4.0", 25), ("4.1", 27), ("4.2", 29), ("4.3", 30), ("4.4", 33),
)


#: (record type, version) -> the first release that can write it. 3.3-3.9: the
#: ``validVersions`` of metadata/src/main/resources/common/metadata/*Record.json at the
#: apache/kafka release tags 3.3.1, 3.4.0, ..., 3.8.0, 3.9.0-rc3; 4.0-4.4:
#: ``HIGHEST_SUPPORTED_VERSION`` of each record class in that release's kafka-metadata jar
#: (javap). Pairs every release in the table writes are left out: they tell nothing.
RECORD_FIRST_RELEASE: dict[tuple[str, int], str] = {
    ("REGISTER_BROKER_RECORD", 2): "3.4", ("ZK_MIGRATION_RECORD", 0): "3.4",
    ("REMOVE_USER_SCRAM_CREDENTIAL_RECORD", 0): "3.5",
    ("BEGIN_TRANSACTION_RECORD", 0): "3.6", ("END_TRANSACTION_RECORD", 0): "3.6",
    ("ABORT_TRANSACTION_RECORD", 0): "3.6", ("REMOVE_DELEGATION_TOKEN_RECORD", 0): "3.6",
    ("BROKER_REGISTRATION_CHANGE_RECORD", 2): "3.7", ("PARTITION_CHANGE_RECORD", 1): "3.7",
    ("PARTITION_CHANGE_RECORD", 2): "3.7", ("PARTITION_RECORD", 1): "3.7",
    ("PARTITION_RECORD", 2): "3.7", ("REGISTER_BROKER_RECORD", 3): "3.7",
    ("REGISTER_CONTROLLER_RECORD", 0): "3.7",
    ("REGISTER_BROKER_RECORD", 4): "4.3", ("BROKER_REGISTRATION_CHANGE_RECORD", 3): "4.3",
    ("UNREGISTER_CONTROLLER_RECORD", 0): "4.4",
}
#: the highest version of each record type the newest release of the table (4.4) writes: a
#: higher one was written by a newer Kafka
NEWEST_RECORD_VERSION: dict[str, int] = {
    "REGISTER_BROKER_RECORD": 4, "BROKER_REGISTRATION_CHANGE_RECORD": 3,
    "PARTITION_RECORD": 2, "PARTITION_CHANGE_RECORD": 2,
}
#: a VotersRecord in the bootstrap snapshot 0-0.checkpoint: ``kafka-storage format
#: --standalone`` / ``--initial-controllers`` (KIP-853), first in 3.9.0 (apache/kafka commit
#: 129e7fb, KAFKA-16518, is in the tags 3.9.0-rc0 and later, not in 3.8.x)
DYNAMIC_BOOTSTRAP_RELEASE = "3.9"


def release_key(release: str) -> tuple[int, ...]:
    """"4.10" after "4.9": releases compare as numbers."""
    return tuple(int(x) for x in release.split("."))


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
    #: every lower bound found: (release, what, file)
    evidence: tuple[tuple[str, str, str], ...] = ()
    newer_than_known: bool = False           # something only a release after the table wrote

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "release_min": self.release_min, "note": self.note,
                "metadata_version_levels": [[lvl, where] for lvl, where in self.levels],
                "evidence": [{"release_min": r, "what": w, "file": f}
                             for r, w, f in self.evidence],
                "newer_than_known": self.newer_than_known}


def _scan(path: str, levels: list[tuple[int, str]], found: dict[tuple[str, int], str],
          newer: list[str]) -> None:
    # unreadable records are the audit's findings, not the fingerprint's
    where = os.path.basename(path)
    for _o, _t, name, version, data in versioned_records(path, skip_unreadable=True):
        if name == "FEATURE_LEVEL_RECORD" and data.get("name") == "metadata.version":
            levels.append((int(data["featureLevel"]), where))
        if (name, version) in RECORD_FIRST_RELEASE:
            found.setdefault((name, version), where)
        top = NEWEST_RECORD_VERSION.get(name)
        if top is not None and version > top:
            newer.append(f"{name} version {version} in {where}")


def fingerprint(node: ControllerNode, *, bootstrap_only: bool = False) -> Fingerprint:
    """The release range of the node's metadata dir; ``bootstrap_only``: of the files
    ``kafka-storage format`` wrote (``bootstrap.checkpoint``, ``0-0.checkpoint``), which date
    the formatting."""
    seen: list[tuple[int, str]] = []
    found: dict[tuple[str, int], str] = {}
    newer: list[str] = []
    # bootstrap.checkpoint beside __cluster_metadata-0: the features kafka-storage format chose
    boot = os.path.join(os.path.dirname(os.path.normpath(node.partition_dir)),
                        "bootstrap.checkpoint")
    snaps = [s.path for s in node.snapshots
             if not bootstrap_only or (s.end_offset, s.epoch) == (0, 0)]
    files = ([boot] if os.path.isfile(boot) else []) + snaps + \
        ([] if bootstrap_only else sorted({b.path for b in node.batches}))
    for path in files:
        try:
            _scan(path, seen, found, newer)
        except SegtoolsError as e:
            node.problems.append(f"{path}: unreadable: {e}")
    evidence: list[tuple[str, str, str]] = []
    if seen:
        top = max(lvl for lvl, _ in seen)
        release = first_release(top)
        where = next(w for lvl, w in seen if lvl == top)
        if release is None:
            newer.append(f"metadata.version {top} in {where}")
        else:
            evidence.append((release, f"metadata.version {top}", where))
    for (name, version), where in sorted(found.items()):
        evidence.append((RECORD_FIRST_RELEASE[(name, version)], f"{name} version {version}",
                         where))
    if node.bootstrap_voters is not None:
        evidence.append((DYNAMIC_BOOTSTRAP_RELEASE, "a VotersRecord in the bootstrap snapshot "
                         "(formatted with --standalone or --initial-controllers)",
                         "00000000000000000000-0000000000.checkpoint"))
    newest = RELEASE_MAX_LEVEL[-1][0]
    if newer:
        return Fingerprint(node.name, tuple(seen), None,
                           f"{'; '.join(newer)}: written by a Kafka newer than {newest} (the "
                           "newest release known here)", tuple(evidence), True)
    if not evidence:
        return Fingerprint(node.name, (), None, "cannot tell: no metadata.version record, "
                           "record version or bootstrap layout that dates the release")
    best = max(evidence, key=lambda e: release_key(e[0]))
    return Fingerprint(node.name, tuple(seen), best[0],
                       f"{best[1]} ({best[2]}): written by Kafka {best[0]} or later",
                       tuple(evidence))
