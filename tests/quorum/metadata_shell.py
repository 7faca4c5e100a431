"""kafka-metadata-shell as an oracle: the commands the quorum tests send it, its output read
back (``tree``/``cat`` sections after each ">> " prompt, Kafka's toString of
PartitionRegistration and BrokerRegistration), the same view of a segtools image, and one
shell run on a copy of a metadata log (tests/quorum/test_voters_realkafka.py,
test_shell_realdata.py)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from segtools.quorum.image import Image

#: the shell's commands, one output section each (the shell prints its ">> " prompt first)
SHELL_COMMANDS = ("tree /image/topics", "tree /image/cluster", "tree /image/features",
                  "cat /image/provenance", "tree /image/configs",
                  "cat /image/producerIds/nextProducerId", "tree /image/acls",
                  "tree /image/clientQuotas")
#: Kafka's codes of AclBinding's enums (org.apache.kafka.common.resource.ResourceType,
#: PatternType, org.apache.kafka.common.acl.AclOperation, AclPermissionType) as the shell
#: names them; the image keeps the records' codes
_ACL_ENUMS = {
    "resourceType": {2: "TOPIC", 3: "GROUP", 4: "CLUSTER", 5: "TRANSACTIONAL_ID",
                     6: "DELEGATION_TOKEN", 7: "USER"},
    "patternType": {3: "LITERAL", 4: "PREFIXED"},
    "operation": {2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE", 6: "DELETE", 7: "ALTER",
                  8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS",
                  11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS",
                  14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"},
    "permissionType": {2: "DENY", 3: "ALLOW"},
}
#: quota entity types as the shell names them in a node's name (``clientId(app)_user(u)``)
_QUOTA_ENTITY = {"client-id": "clientId", "user": "user", "ip": "ip"}
_ACL_FIELD = re.compile(r"(\w+)=([^,\]]*)")
#: ConfigResource.Type ids as the shell names them
_RESOURCE = {2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}
_FIELD = re.compile(r"(\w+)=(\[[^\]]*\]|'[^']*'|[^,()\[\]]*)")


def fields(text: str) -> dict[str, str]:
    """``Name(a=1, b=[1, 2], ...)`` as Kafka's toString prints it: field -> text (the first
    occurrence: nested objects' fields come later and are not asked for)."""
    out: dict[str, str] = {}
    for k, v in _FIELD.findall(text):
        out.setdefault(k, v)
    return out


def ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text)]


def tree(section: str) -> dict[tuple[str, ...], list[str]]:
    """One ``tree`` section: each ``name:`` line opens a node two spaces deeper than its
    parent; any other line is a value of the node it is indented under."""
    out: dict[tuple[str, ...], list[str]] = {}
    path: list[str] = []
    for line in section.splitlines():
        body = line.strip()
        if not body:
            continue
        depth = (len(line) - len(line.lstrip(" "))) // 2
        if body.endswith(":"):
            del path[depth:]
            path.append(body[:-1])
        else:
            out.setdefault(tuple(path[:depth]), []).append(body)
    return out


def shell_view(stdout: str) -> dict[str, Any]:
    sections = stdout.split(">> ")[1:len(SHELL_COMMANDS) + 1]
    assert len(sections) == len(SHELL_COMMANDS), stdout
    topics, cluster, features = (tree(s) for s in sections[:3])
    parts: dict[tuple[str, int], dict[str, Any]] = {}
    names: dict[str, str] = {}
    for path, values in topics.items():
        if len(path) == 3 and path[0] == "byName" and path[2] == "id":
            names[values[0]] = path[1]
        if len(path) == 3 and path[0] == "byName" and path[2].isdigit():
            f = fields(values[0])
            parts[(path[1], int(path[2]))] = {
                "replicas": ints(f["replicas"]), "isr": ints(f["isr"]),
                "elr": ints(f["elr"]), "lastKnownElr": ints(f["lastKnownElr"]),
                "leader": int(f["leader"]), "leaderEpoch": int(f["leaderEpoch"]),
                "partitionEpoch": int(f["partitionEpoch"])}
    brokers = {}
    for path, values in cluster.items():
        if len(path) == 2 and path[0] == "brokers":
            f = fields(values[0])
            rack = f["rack"]
            brokers[int(path[1])] = {
                "epoch": int(f["epoch"]), "incarnationId": f["incarnationId"],
                "fenced": f["fenced"] == "true",
                "inControlledShutdown": f["inControlledShutdown"] == "true",
                "rack": None if rack == "Optional.empty" else rack[len("Optional["):-1]}
    levels = {path[0][len("finalized_"):]: int(v[0]) for path, v in features.items()
              if path and path[0].startswith("finalized_")}
    mv = features[("metadataVersion",)][0]          # Optional[4.3-IV0]
    prov = re.match(r"offset (-?\d+), epoch (-?\d+)", sections[3].strip())
    assert prov, sections[3]
    configs: dict[tuple[str, str], dict[str, str]] = {}
    for path, values in tree(sections[4]).items():
        if len(path) == 2:                      # ("TOPIC:name", key) -> [value]
            kind, _, name = path[0].partition(":")
            configs.setdefault((kind, name), {})[path[1]] = values[0] if values else ""
    acls = {path[1]: dict(_ACL_FIELD.findall(values[0]))
            for path, values in tree(sections[6]).items()
            if len(path) == 2 and path[0] == "byId"}
    # the section's root prints as ":" (an empty name): entities are one level below it
    quotas = {(path[-2], path[-1]): float(values[0])
              for path, values in tree(sections[7]).items() if len(path) >= 2 and values}
    return {"topics": names, "partitions": parts, "brokers": brokers, "levels": levels,
            "metadata.version": mv[len("Optional["):-1], "last_offset": int(prov.group(1)),
            "configs": configs, "next_producer_id": int(sections[5].strip()),
            "acls": acls, "quotas": quotas}


def our_view(img: Image) -> dict[str, Any]:
    from segtools.quorum.fingerprint import first_release

    names = {tid: d["name"] for (k, tid), d in img.entities.items() if k == "topic"}
    parts = {(names[k[1][0]], k[1][1]): {
        "replicas": d["replicas"], "isr": d["isr"], "elr": d["eligibleLeaderReplicas"] or [],
        "lastKnownElr": d["lastKnownElr"] or [], "leader": d["leader"],
        "leaderEpoch": d["leaderEpoch"], "partitionEpoch": d["partitionEpoch"]}
        for k, d in img.entities.items() if k[0] == "partition"}
    brokers = {k[1]: {"epoch": d["brokerEpoch"], "incarnationId": d["incarnationId"],
                      "fenced": d["fenced"], "inControlledShutdown": d["inControlledShutdown"],
                      "rack": d["rack"]}
               for k, d in img.entities.items() if k[0] == "broker"}
    features = {k[1]: d["level"] for k, d in img.entities.items() if k[0] == "feature"}
    mv = features.pop("metadata.version")
    configs: dict[tuple[str, str], dict[str, str]] = {}
    for k, d in img.entities.items():
        if k[0] == "config":
            rtype, rname, key = k[1]
            configs.setdefault((_RESOURCE.get(rtype, str(rtype)), rname), {})[key] = d["value"]
    acls = {k[1]: {f: (_ACL_ENUMS[f][v] if f in _ACL_ENUMS else str(v)) for f, v in d.items()}
            for k, d in img.entities.items() if k[0] == "acl"}
    # the 4.3.1 shell prints no node for a default entity (a None name): left out of both
    quotas = {("_".join(f"{_QUOTA_ENTITY.get(t, t)}({n})" for t, n in
                        sorted(ent, key=lambda e: _QUOTA_ENTITY.get(e[0], e[0]))), key): d["value"]
              for k, d in img.entities.items() if k[0] == "quota"
              for ent, key in [k[1]] if all(n is not None for _, n in ent)}
    pids = img.entities.get(("producer-ids", None))
    return {"topics": names, "partitions": parts, "brokers": brokers, "levels": features,
            # the shell names the level (4.3-IV0); the release it belongs to is compared
            "metadata.version": f"{first_release(mv)}-", "last_offset": img.offset - 1,
            "configs": configs, "next_producer_id": pids["nextProducerId"] if pids else -1,
            "acls": acls, "quotas": quotas}


def run_shell(rt: Any, classpath: str, log_copy: Path, work: Path) -> str:
    """kafka-metadata-shell of ``rt``'s release on ``log_copy`` (a copy: Kafka's tools run on
    copies only), the SHELL_COMMANDS given on stdin; its stdout (logging off: stdout is the
    answer). A non-zero exit fails with the shell's stderr."""
    quiet = work / "log4j2-off.properties"
    quiet.write_text("status = error\nrootLogger.level = OFF\n")
    res = subprocess.run(
        [rt.java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
         f"-Dlog4j2.configurationFile={quiet}", "-cp", classpath,
         "org.apache.kafka.shell.MetadataShell", "-s", str(log_copy)],
        input="\n".join(SHELL_COMMANDS) + "\nexit\n", capture_output=True, text=True,
        timeout=120, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout
