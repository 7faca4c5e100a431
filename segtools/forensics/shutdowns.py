"""Unclean shutdowns (docs/REPORT.md "Unclean shutdowns"): one event per broker restart that
did not follow a clean stop, from three kinds of evidence.

- The controller's answer (Kafka 3.7+, ELR on): a broker registers with the broker epoch its
  ``.kafka_cleanshutdown`` file held (``previousBrokerEpoch``); when that is not the epoch of
  its last registration the controller drops it from every ISR and ELR in the records it
  writes just before the new ``RegisterBrokerRecord`` (metadata/src/main/java/org/apache/kafka/
  controller/ClusterControlManager.java registerBroker; ReplicationControlManager.java
  handleBrokerUncleanShutdown).
- The broker events: a session that ended fenced without a controlled shutdown
  (``BrokerRegistrationChangeRecord`` InControlledShutdown=1) was a crash or a kill (any ELR
  setting).
- The log dir: ``.kafka_cleanshutdown`` is written at the end of a clean stop and deleted at
  startup (core/src/main/scala/kafka/log/LogManager.scala); its ``brokerEpoch`` names the session it
  closed.
"""

from __future__ import annotations

import os
from typing import Any

UNCLEAN_SHUTDOWN = "unclean shutdown"


def _same_batch(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if "position" in a and "position" in b:
        return bool(a.get("file") == b.get("file") and a["position"] == b["position"])
    return True       # no location known: adjacency in the log is all there is


def unclean_shutdowns_from_history(histories: Any) -> list[dict[str, Any]]:
    """Events ``{"event": "unclean shutdown", "broker", "broker_epoch" (the new session),
    "previous_broker_epoch", "detected_by": "controller"|"no controlled shutdown",
    "removed_from": [{"topic", "partition"}], offset/timestamp_ms/file/position of the
    registration}`` in log order, from ``Histories.timeline``."""
    names = {h.topic_id: h.topic for h in histories.values()}
    timeline: list[tuple[str, int, dict[str, Any]]] = histories.timeline
    last_epoch: dict[int, int | None] = {}
    controlled: dict[int, bool] = {}
    out: list[dict[str, Any]] = []
    for i, (kind, broker, info) in enumerate(timeline):
        if kind == "registration changed" and info.get("in_controlled_shutdown"):
            controlled[broker] = True
            continue
        if kind != "registered":
            continue
        epoch = info.get("broker_epoch")
        if broker in last_epoch:
            removed = []
            j = i - 1
            while j >= 0 and timeline[j][0] == "removed":
                k, b, rinfo = timeline[j]
                if b == broker and _same_batch(rinfo, info):
                    removed.append({"topic": names.get(rinfo["topic_id"], rinfo["topic_id"]),
                                    "partition": rinfo["partition"]})
                j -= 1
            if removed or not controlled.get(broker):
                ev: dict[str, Any] = {k: v for k, v in info.items()
                                      if k in ("offset", "timestamp_ms", "file", "position")}
                ev.update({"event": UNCLEAN_SHUTDOWN, "broker": broker, "broker_epoch": epoch,
                           "previous_broker_epoch": last_epoch[broker],
                           "detected_by": "controller" if removed else "no controlled shutdown"})
                if removed:
                    ev["removed_from"] = sorted(removed, key=lambda r: (str(r["topic"]), r["partition"]))
                out.append(ev)
        last_epoch[broker] = epoch
        controlled[broker] = False
    return out


def last_stop(log_dir: str, clean_shutdown: bool, broker: int | None,
              histories_or_events: Any = None) -> dict[str, Any]:
    """What the log dir says about the broker's last stop: ``{"clean_shutdown_file": bool,
    "clean_shutdown_broker_epoch": int|None, "last_stop": "clean"|"unclean or running"}``;
    with the metadata log's registrations, a file whose epoch is not the broker's last
    registration is flagged ``stale_clean_shutdown_file`` (a restored or copied dir)."""
    epoch = None
    if clean_shutdown and log_dir and os.path.isdir(log_dir):
        from segtools.checkpoints import read_clean_shutdown
        from segtools.errors import SegtoolsError

        try:
            epoch = read_clean_shutdown(os.path.join(log_dir, ".kafka_cleanshutdown")).broker_epoch
        except (SegtoolsError, OSError):
            epoch = None
    out: dict[str, Any] = {"clean_shutdown_file": bool(clean_shutdown),
                           "clean_shutdown_broker_epoch": epoch,
                           "last_stop": "clean" if clean_shutdown else "unclean or running"}
    events = histories_or_events if isinstance(histories_or_events, list) else None
    if epoch is not None and events is not None and broker is not None:
        regs = [e.get("broker_epoch") for e in events
                if e.get("event") == "registered" and e.get("broker") == broker]
        if regs and regs[-1] is not None and regs[-1] != epoch:
            out["stale_clean_shutdown_file"] = True
    return out
