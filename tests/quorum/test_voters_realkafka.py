"""Must-show (ii) of issue 28 and the metadata shell parity, on one real 3-node dynamic quorum
(broker+controller nodes on 127.0.0.1, a snapshot every second): node 3 is removed with
``kafka-metadata-quorum remove-controller`` and added back with ``add-controller``.

Oracles, all Kafka's own: the voter set ``kafka-storage format --initial-controllers`` was
given, then the voter sets ``kafka-metadata-quorum describe --status`` and ``--replication``
print live after each change; every snapshot the controllers wrote (replay
must reproduce each); and ``kafka-metadata-shell`` of the same release on a copy of each dir
(the image at the log end: topics, partitions, brokers, features, configs, ACLs, client
quotas). A fourth, broker-only node's metadata replica is compared with the controllers (the
oracle: the raw bytes of its log against the controller's).

The release is 4.3.1; ``SEGTOOLS_QUORUM_RELEASE=4.4.0`` runs the same module by hand on 4.4.0
(tests/quorum/voters_matrix.py). Every JVM is stopped, also on failure."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from segtools.quorum import QuorumAudit, audit_dirs, load_node
from segtools.quorum.image import image_at
from tests.quorum.metadata_shell import our_view, run_shell, shell_view
from tests.quorum.real_controllers import (
    broker_properties,
    combined_properties,
    format_controller,
    kafka_uuid,
    shell_classpath,
)

pytestmark = pytest.mark.realkafka

RELEASE = os.environ.get("SEGTOOLS_QUORUM_RELEASE", "4.3.1")
TOPIC = "quorum-t"
NODES = (1, 2, 3)
BROKER = 4                      # a broker-only node: its metadata dir is an observer's replica
#: ACLs need an authorizer. Until it has loaded the metadata it throws
#: AuthorizerNotReadyException for everyone but super users, the voters' Vote requests
#: included: a dynamic quorum then never elects (measured on 4.3.1). The nodes speak
#: PLAINTEXT as User:ANONYMOUS, so that is the super user; the ACLs are recorded, not enforced.
AUTHORIZER = ("authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n"
              "super.users=User:ANONYMOUS\n")
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
            "broker.heartbeat.interval.ms=500\nbroker.session.timeout.ms=6000\n" + AUTHORIZER)
        format_controller(rt, cid, props[i], "--initial-controllers", initial)
        dirs[i] = d
    bport4 = config.free_port()
    dirs[BROKER] = root / f"b{BROKER}"
    dirs[BROKER].mkdir()
    props[BROKER] = broker_properties(
        root / f"b{BROKER}.properties", BROKER, bport4, dirs[BROKER], boot,
        "broker.heartbeat.interval.ms=500\nmetadata.log.max.snapshot.interval.ms=1000\n"
        # on a loaded machine the quorum may take longer than the default 60 s to answer
        "initial.broker.registration.timeout.ms=300000\n" + AUTHORIZER)
    format_controller(rt, cid, props[BROKER])
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
        for i in (*NODES, BROKER):
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

        _wait(lambda: registered() == 4, 300, "four brokers registered")
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
        # ACLs and a client quota for the image (compared with the metadata shell)
        from confluent_kafka.admin import (
            AclBinding,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )
        for fut_acl in admin.create_acls([
                AclBinding(ResourceType.TOPIC, "acl-t", ResourcePatternType.LITERAL,
                           "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW),
                AclBinding(ResourceType.GROUP, "g-", ResourcePatternType.PREFIXED, "User:bob",
                           "127.0.0.1", AclOperation.ALL, AclPermissionType.DENY)]).values():
            fut_acl.result(30)
        # kafka-configs (Scala in 4.3, Java from 4.4): no client here alters client quotas
        config_cmd = ("org.apache.kafka.tools.ConfigCommand"
                      if tuple(int(x) for x in RELEASE.split(".")[:2]) >= (4, 4)
                      else "kafka.admin.ConfigCommand")
        res = run_tool(rt.command(config_cmd, "--bootstrap-server", f"127.0.0.1:{bports[1]}",
                                  "--alter", "--add-config",
                                  "producer_byte_rate=1024,consumer_byte_rate=2048",
                                  "--entity-type", "users", "--entity-name", "alice",
                                  "--entity-type", "clients", "--entity-name", "app1",
                                  heap="128m"), timeout=60)
        assert res.returncode == 0, res.stdout + res.stderr
        # the broker-only node stops first, while the quorum is whole
        procs[BROKER].terminate(20.0)
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
    # a node that joined late fetched the leader's snapshot and its log starts there: that
    # first snapshot has no earlier image in its dir and cannot be replayed (nothing else may
    # be left unchecked)
    starts = {str(dirs[i]): load_node(str(dirs[i])).log_start for i in NODES}
    fetched = {(n, e) for n, e in written if e == starts[n] and e > 0}
    assert written and checked == written - fetched, (written - checked, checked - written)
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


def test_image_at_log_end_equals_the_metadata_shell(cluster: dict[str, Any],
                                                    tmp_path: Path) -> None:
    dirs: dict[int, Path] = cluster["dirs"]
    cp = shell_classpath(cluster["rt"])
    # CI compares the node with the longest log (one shell JVM); by hand (voters_matrix.py
    # sets the release) every node
    # (the shell reads one log file from offset 0: a node that joined late starts later)
    ends = {i: n.log_end for i in NODES if (n := load_node(str(dirs[i]))).log_start == 0}
    chosen = tuple(ends) if "SEGTOOLS_QUORUM_RELEASE" in os.environ else (
        max(ends, key=ends.__getitem__),)
    for i in chosen:
        node = load_node(str(dirs[i]))
        logs = sorted({b.path for b in node.batches})
        assert len(logs) == 1 and node.log_start == 0, logs   # the shell reads one file
        copy = tmp_path / f"c{i}.log"
        shutil.copy(logs[0], copy)
        shell = shell_view(run_shell(cluster["rt"], cp, copy, tmp_path))
        # the image at the log end, from the newest snapshot plus the log after it
        ours = our_view(image_at(node))
        assert shell["partitions"] and shell["brokers"] and shell["levels"], shell
        # the two ACLs and the client quota created above (tree /image/acls,
        # tree /image/clientQuotas)
        assert len(shell["acls"]) == 2 and len(shell["quotas"]) == 2, shell
        assert shell.pop("metadata.version").startswith(ours.pop("metadata.version")), shell
        assert ours == shell, (ours, shell)
        print(f"node {i}: image at offset {ours['last_offset'] + 1} = metadata shell: "
              f"{len(shell['topics'])} topics, {len(shell['partitions'])} partitions, "
              f"{len(shell['brokers'])} brokers, {len(shell['levels'])} feature levels, "
              f"{len(shell['configs'])} config sets, {len(shell['acls'])} ACLs, "
              f"{len(shell['quotas'])} quota values")


def test_broker_replica_agrees_with_the_controllers(cluster: dict[str, Any]) -> None:
    """The broker-only node's __cluster_metadata-0 (an observer fetching from the leader, stopped
    while the quorum was whole) against the controllers'. Oracle: the raw bytes of the files,
    not the audit's batch walk: the broker's log must be a byte prefix of the controller log
    the audit picks, from the same start offset."""
    dirs: dict[int, Path] = cluster["dirs"]
    r = audit_dirs([str(dirs[i]) for i in NODES], [str(dirs[BROKER])])
    (rep,) = r.replicas
    broker = load_node(str(dirs[BROKER]))
    ref = load_node(rep.reference)
    assert rep.first_divergence is None and not rep.stale_suffix, rep
    assert rep.identical_below == broker.log_end, (rep, broker.log_end)
    assert not [f for f in r.findings if str(dirs[BROKER]) in f.nodes], \
        [f.message for f in r.findings]
    assert not [o for o in r.observations if o.kind == "replica-diverges"]
    # the raw-byte oracle (each log one segment: checked, not assumed). The broker joined
    # after the controllers' first snapshot: its log starts there, so it is compared with the
    # controller's file from the batch at that offset
    (blog,) = sorted({b.path for b in broker.batches})
    (clog,) = sorted({b.path for b in ref.batches})
    at = next(b.position for b in ref.batches if b.base_offset == broker.log_start)
    braw, craw = Path(blog).read_bytes(), Path(clog).read_bytes()
    assert braw and craw[at:at + len(braw)] == braw
    # its snapshots go through the replay oracle too (the first one, fetched from the leader,
    # has no earlier image in the broker's dir: not checked)
    mine = [c for n, c in r.snapshot_checks if n == str(dirs[BROKER])]
    assert any(c.checked for c in mine), mine
    assert all(c.first_difference is None for c in mine), mine
    print(f"{RELEASE}: broker replica offsets {broker.log_start}-{broker.log_end} (bytes of "
          f"{Path(rep.reference).name}, log end {ref.log_end}); proven committed below "
          f"{r.committed_end}, {rep.missing_committed} of it not on the broker; "
          f"{sum(c.checked for c in mine)} broker snapshots reproduced")
