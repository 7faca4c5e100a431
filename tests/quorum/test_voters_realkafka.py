"""Must-show (ii) of issue 28 and the metadata shell parity, on one real 3-node dynamic quorum
(broker+controller nodes on 127.0.0.1, a snapshot every second): node 3 is removed with
``kafka-metadata-quorum remove-controller`` and added back with ``add-controller``.

Oracles, all Kafka's own: the voter set ``kafka-storage format --initial-controllers`` was
given, then the voter sets ``kafka-metadata-quorum describe --status`` and ``--replication``
print live after each change; every snapshot the controllers wrote (replay
must reproduce each); and ``kafka-metadata-shell`` of the same release on a copy of each dir
(the image at the log end: topics, partitions, brokers, features).

The release is 4.3.1; ``SEGTOOLS_QUORUM_RELEASE=4.4.0`` runs the same module by hand on 4.4.0
(tests/quorum/voters_matrix.py). Every JVM is stopped, also on failure."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from segtools.quorum import QuorumAudit, audit_dirs, load_node
from segtools.quorum.image import Image, image_at
from tests.quorum.real_controllers import (
    combined_properties,
    format_controller,
    kafka_uuid,
    shell_classpath,
)

pytestmark = pytest.mark.realkafka

RELEASE = os.environ.get("SEGTOOLS_QUORUM_RELEASE", "4.3.1")
TOPIC = "quorum-t"
NODES = (1, 2, 3)
Voters = tuple[tuple[int, str], ...]


def _wait(cond: Callable[[], object], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.3)
    pytest.fail(f"timed out waiting for {what}", pytrace=False)


def _status_voters(text: str) -> Voters:
    """CurrentVoters of ``describe --status``: a JSON list of {id, directoryId, endpoints}."""
    m = re.search(r"^CurrentVoters:\s*(\[.*\])\s*$", text, re.M)
    assert m, text
    return tuple(sorted((int(v["id"]), str(v["directoryId"])) for v in json.loads(m.group(1))))


def _replication_voters(text: str) -> Voters:
    """The Leader and Follower rows of ``describe --replication`` (NodeId, DirectoryId, ...,
    Status); Observers are not voters."""
    rows = [ln.split() for ln in text.splitlines() if ln.strip()]
    assert rows and rows[0][:2] == ["NodeId", "DirectoryId"], text
    return tuple(sorted((int(r[0]), r[1]) for r in rows[1:] if r[-1] in ("Leader", "Follower")))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from segtools.realcluster import config
    from segtools.realcluster.kafka_runtime import kafka_runtime
    from segtools.realcluster.processes import JvmProcess, run_tool

    rt = kafka_runtime(version=RELEASE)
    root = tmp_path_factory.mktemp("quorum-voters")
    (root / "log4j2.properties").write_text(config.LOG4J2)
    cports = {i: config.free_port() for i in NODES}
    bports = {i: config.free_port() for i in NODES}
    dids = {i: kafka_uuid() for i in NODES}
    cid = kafka_uuid()
    boot = ",".join(f"127.0.0.1:{cports[i]}" for i in NODES)
    initial = ",".join(f"{i}@127.0.0.1:{cports[i]}:{dids[i]}" for i in NODES)
    dirs, props = {}, {}
    for i in NODES:
        d = root / f"c{i}"
        d.mkdir()
        # a snapshot every second (any new record: NoOpRecords every 200 ms)
        props[i] = combined_properties(
            root / f"c{i}.properties", i, bports[i], cports[i], d, boot,
            "metadata.log.max.snapshot.interval.ms=1000\nmetadata.max.idle.interval.ms=200\n"
            "controller.quorum.election.timeout.ms=1000\ncontroller.quorum.fetch.timeout.ms=2000\n"
            "offsets.topic.replication.factor=1\ngroup.initial.rebalance.delay.ms=0\n"
            "broker.heartbeat.interval.ms=500\nbroker.session.timeout.ms=6000\n")
        format_controller(rt, cid, props[i], "--initial-controllers", initial)
        dirs[i] = d
    procs: dict[int, JvmProcess] = {}
    live: list[tuple[str, Voters, Voters]] = []

    def quorum_tool(*args: str) -> str:
        res = run_tool(rt.command("org.apache.kafka.tools.MetadataQuorumCommand",
                                  "--bootstrap-controller", boot, *args, heap="128m"), timeout=60)
        if res.returncode != 0:
            raise AssertionError(f"kafka-metadata-quorum {' '.join(args)}: {res.stdout}{res.stderr}")
        return res.stdout

    def capture(step: str, voter3: bool) -> None:
        # remove/add-controller answer once the change is committed: describe normally shows
        # it at once (each call is a JVM: asked again only while it lags)
        end = time.monotonic() + 30
        status = _status_voters(quorum_tool("describe", "--status"))
        while (3 in dict(status)) != voter3 and time.monotonic() < end:
            time.sleep(0.5)
            status = _status_voters(quorum_tool("describe", "--status"))
        repl = _replication_voters(quorum_tool("describe", "--replication"))
        live.append((step, status, repl))

    def snapshots(i: int) -> int:
        return len(list((dirs[i] / "__cluster_metadata-0").glob("*.checkpoint")))

    def new_snapshots() -> None:
        # each node writes a snapshot after the change: its VotersRecord is in a snapshot too
        had = {i: snapshots(i) for i in NODES}
        _wait(lambda: all(snapshots(i) > had[i] for i in NODES), 120, "a snapshot on every node")

    try:
        for i in NODES:
            argv = rt.command("kafka.Kafka", str(props[i]), heap="256m")
            argv[1:1] = [f"-Dlog4j2.configurationFile={root / 'log4j2.properties'}",
                         f"-Dkafka.logs.dir={root}"]
            procs[i] = JvmProcess(f"c{i}", argv, str(root / f"c{i}.log"))
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": ",".join(f"127.0.0.1:{bports[i]}" for i in NODES)})

        def registered() -> int:
            try:
                return len(admin.list_topics(timeout=2).brokers)
            except Exception:       # confluent_kafka.KafkaException: not listening yet
                return 0

        _wait(lambda: registered() == 3, 300, "three brokers registered")
        fut = admin.create_topics([NewTopic(TOPIC, 3, 3, config={"min.insync.replicas": "2"})])
        fut[TOPIC].result(30)
        new_snapshots()
        # the voter set formatted: what kafka-storage was told (--initial-controllers)
        live.append(("formatted", tuple(sorted(dids.items())), tuple(sorted(dids.items()))))
        quorum_tool("remove-controller", "--controller-id", "3", "--controller-directory-id",
                    dids[3])
        new_snapshots()
        capture("removed 3", False)

        def add() -> bool:
            # node 3 must be a caught-up observer first: Kafka refuses until then
            try:
                quorum_tool("--command-config", str(props[3]), "add-controller")
            except AssertionError:
                return False
            return True

        _wait(add, 60, "add-controller of node 3 accepted")
        new_snapshots()
        capture("added 3", True)
        admin.delete_topics([TOPIC])[TOPIC].result(30)      # a removal the image must show
        admin.create_topics([NewTopic(TOPIC + "2", 2, 2, config={"retention.ms": "3600000"})]
                            )[TOPIC + "2"].result(30)
        # stop: the quorum leader last (earlier stops are controlled shutdowns it commits);
        # alone it has no majority to commit its own controlled shutdown: killed, not waited for
        leader = json.loads((dirs[1] / "__cluster_metadata-0" / "quorum-state").read_text())
        last = int(leader.get("leaderId", 1))
        for i in NODES:
            if i != last:
                procs[i].terminate(20.0)
        procs[last].kill()
        yield {"root": root, "dirs": dirs, "dids": dids, "live": live, "rt": rt}
    finally:
        for p in procs.values():
            if p.alive():
                p.kill()


@pytest.fixture(scope="module")
def audited(cluster: dict[str, Any]) -> QuorumAudit:
    """One audit of the three dirs for the whole module."""
    return audit_dirs([str(cluster["dirs"][i]) for i in NODES])


def _distinct(history: list[Voters]) -> list[Voters]:
    out: list[Voters] = []
    for v in history:
        if not out or out[-1] != v:
            out.append(v)
    return out


def test_voter_history_equals_kafka_metadata_quorum_live(cluster: dict[str, Any],
                                                         audited: QuorumAudit) -> None:
    dirs: dict[int, Path] = cluster["dirs"]
    live: list[tuple[str, Voters, Voters]] = cluster["live"]
    for step, status, repl in live:
        assert status == repl, (step, status, repl)   # Kafka's two views agree
    r = audited
    history = [tuple(sorted(v.voters)) for v in r.voter_history]
    assert _distinct(history) == [status for _, status, _ in live], (
        [(v.offset, v.source, v.node, [i for i, _ in v.voters]) for v in r.voter_history],
        live, r.committed_end)
    # every node's own history (its log and snapshots) tells the same story
    for i in NODES:
        # (the audit's history keeps each (offset, voter set) once, from whichever node)
        mine = [tuple(sorted(v.voters)) for v in sorted(load_node(str(dirs[i])).voter_sets,
                                                         key=lambda v: v.offset)]
        assert _distinct(mine) == [status for _, status, _ in live], (i, mine)
    assert not [f for f in r.findings if f.kind != "divergence"], [f.message for f in r.findings]
    # voter 3 was removed and added again here, by add-controller: observed, not a finding
    assert [o.message.split(" (")[0] for o in r.observations
            if o.kind == "voter-rejoined"] == ["voter 3"]
    print(f"{RELEASE}: voter history {[s for s, _, _ in live]} = {_distinct(history)}; "
          f"{sum(len(n.snapshots) for n in r.nodes)} snapshots; committed below "
          f"{r.committed_end}")


def test_replay_reproduces_every_snapshot_written(cluster: dict[str, Any],
                                                  audited: QuorumAudit) -> None:
    dirs: dict[int, Path] = cluster["dirs"]
    r = audited
    written = {(str(dirs[i]), int(p.name.split("-")[0]))
               for i in NODES for p in (dirs[i] / "__cluster_metadata-0").glob("*.checkpoint")
               if not p.name.startswith("00000000000000000000-")}
    checked = {(n, c.end_offset) for n, c in r.snapshot_checks if c.checked}
    assert written and checked == written, (written - checked, checked - written)
    bad = [(n, c.end_offset, c.first_difference) for n, c in r.snapshot_checks
           if c.first_difference is not None]
    assert bad == []
    assert not [f for f in r.findings if f.kind == "snapshot-mismatch"]
    print(f"{RELEASE}: {len(written)} snapshots reproduced by replay")


def test_fingerprint_contains_the_release_that_ran(audited: QuorumAudit) -> None:
    true = ".".join(RELEASE.split(".")[:2])
    for fp in audited.fingerprints:
        assert fp.release_min == true and not fp.newer_than_known, fp.note
        print(f"{RELEASE} {fp.node}: {fp.note}; evidence {sorted({e[:2] for e in fp.evidence})}")


# --- kafka-metadata-shell parity -------------------------------------------------------------

#: the shell's commands, one output section each (the shell prints its ">> " prompt first)
SHELL_COMMANDS = ("tree /image/topics", "tree /image/cluster", "tree /image/features",
                  "cat /image/provenance", "tree /image/configs",
                  "cat /image/producerIds/nextProducerId")
#: ConfigResource.Type ids as the shell names them
_RESOURCE = {2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}
_FIELD = re.compile(r"(\w+)=(\[[^\]]*\]|'[^']*'|[^,()\[\]]*)")


def _fields(text: str) -> dict[str, str]:
    """``Name(a=1, b=[1, 2], ...)`` as Kafka's toString prints it: field -> text (the first
    occurrence: nested objects' fields come later and are not asked for)."""
    out: dict[str, str] = {}
    for k, v in _FIELD.findall(text):
        out.setdefault(k, v)
    return out


def _ints(text: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", text)]


def _tree(section: str) -> dict[tuple[str, ...], list[str]]:
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


def _shell_view(stdout: str) -> dict[str, Any]:
    sections = stdout.split(">> ")[1:len(SHELL_COMMANDS) + 1]
    assert len(sections) == len(SHELL_COMMANDS), stdout
    topics, cluster, features = (_tree(s) for s in sections[:3])
    parts: dict[tuple[str, int], dict[str, Any]] = {}
    names: dict[str, str] = {}
    for path, values in topics.items():
        if len(path) == 3 and path[0] == "byName" and path[2] == "id":
            names[values[0]] = path[1]
        if len(path) == 3 and path[0] == "byName" and path[2].isdigit():
            f = _fields(values[0])
            parts[(path[1], int(path[2]))] = {
                "replicas": _ints(f["replicas"]), "isr": _ints(f["isr"]),
                "elr": _ints(f["elr"]), "lastKnownElr": _ints(f["lastKnownElr"]),
                "leader": int(f["leader"]), "leaderEpoch": int(f["leaderEpoch"]),
                "partitionEpoch": int(f["partitionEpoch"])}
    brokers = {}
    for path, values in cluster.items():
        if len(path) == 2 and path[0] == "brokers":
            f = _fields(values[0])
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
    for path, values in _tree(sections[4]).items():
        if len(path) == 2:                      # ("TOPIC:name", key) -> [value]
            kind, _, name = path[0].partition(":")
            configs.setdefault((kind, name), {})[path[1]] = values[0] if values else ""
    return {"topics": names, "partitions": parts, "brokers": brokers, "levels": levels,
            "metadata.version": mv[len("Optional["):-1], "last_offset": int(prov.group(1)),
            "configs": configs, "next_producer_id": int(sections[5].strip())}


def _our_view(img: Image) -> dict[str, Any]:
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
    pids = img.entities.get(("producer-ids", None))
    return {"topics": names, "partitions": parts, "brokers": brokers, "levels": features,
            # the shell names the level (4.3-IV0); the release it belongs to is compared
            "metadata.version": f"{first_release(mv)}-", "last_offset": img.offset - 1,
            "configs": configs, "next_producer_id": pids["nextProducerId"] if pids else -1}


def test_image_at_log_end_equals_the_metadata_shell(cluster: dict[str, Any],
                                                    tmp_path: Path) -> None:
    dirs: dict[int, Path] = cluster["dirs"]
    cp = shell_classpath(cluster["rt"])
    quiet = tmp_path / "log4j2-off.properties"
    quiet.write_text("status = error\nrootLogger.level = OFF\n")   # stdout is the answer
    # CI compares the node with the longest log (one shell JVM); by hand (voters_matrix.py
    # sets the release) every node
    ends = {i: load_node(str(dirs[i])).log_end for i in NODES}
    chosen = NODES if "SEGTOOLS_QUORUM_RELEASE" in os.environ else (max(ends, key=ends.__getitem__),)
    for i in chosen:
        node = load_node(str(dirs[i]))
        logs = sorted({b.path for b in node.batches})
        assert len(logs) == 1 and node.log_start == 0, logs   # the shell reads one file
        copy = tmp_path / f"c{i}.log"
        shutil.copy(logs[0], copy)             # Kafka's tools run on copies only
        res = subprocess.run(
            [cluster["rt"].java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             f"-Dlog4j2.configurationFile={quiet}", "-cp", cp,
             "org.apache.kafka.shell.MetadataShell", "-s", str(copy)],
            input="\n".join(SHELL_COMMANDS) + "\nexit\n",
            capture_output=True, text=True, timeout=120, check=False)
        assert res.returncode == 0, res.stderr[-3000:]
        shell = _shell_view(res.stdout)
        # the image at the log end, from the newest snapshot plus the log after it
        ours = _our_view(image_at(node))
        assert shell["partitions"] and shell["brokers"] and shell["levels"], res.stdout
        assert shell["metadata.version"].startswith(ours.pop("metadata.version")), shell
        shell.pop("metadata.version")
        assert ours == shell, (ours, shell)
        print(f"node {i}: image at offset {ours['last_offset'] + 1} = metadata shell: "
              f"{len(shell['topics'])} topics, {len(shell['partitions'])} partitions, "
              f"{len(shell['brokers'])} brokers, {len(shell['levels'])} feature levels")
