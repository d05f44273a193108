"""Failover under keyed traffic, in local mode (#42): how long each phase of a switch takes, and what the
switches did to the events.

    .venv/bin/python -m bench.failover [--switches 10] [--rate 500] [--keys 16] [--kill]

`federator run` runs a FailoverGroup of two emulator members (`primary`, `secondary`) and a
ReplicationTask that follows it: its source is the hub `orders` on the member the group publishes for
consumers, its target the hub `orders-archive` on a third namespace. A producer paces ``--rate`` events/s
into `orders` on the member the group publishes for producers (it re-reads the published endpoints as a
client following them would), each event carrying its key, its number within the key and the member it
was sent to; key *k* goes to partition *k mod partitions*, so a key's events keep their order on every
hub. A consumer reads the archive from its start. The task delivers effectively once (the configuration
a disaster-recovery topology runs), unless ``--at-least-once``.

Planned switches alternate the members: the group's manifest is edited (`activeMember`, a new
`switchRequest`) and saved, as a `kubectl apply` would, and local mode picks the edit up at the group's
next round (every second here). A switch back to the primary is a failback: producers first, consumers
at the next round (`drainTimeoutSeconds: 0`: a hub has nothing to drain). Per switch: request →
decided (the round that decides publishes the endpoints), decided → replication flowing on the new
member (the first event sent to it read from the archive), decided → the producers' first successful
send on it. At the end, after the traffic stops and the archive has settled: events lost (sent, never
archived), duplicated (archived twice), out of order per key (a key's events archived after a later one
of the same key; here, what a switch left behind on a member, replicated when the task came back to it),
events left behind at each switch (sent to the member it left, not archived when replication flowed
on the new member), and the Spark JVMs the run used (a hot switch keeps one). The
baseline, measured in the same run before the first switch: the steady replication latency (send →
archived), against which the time to flow again is given as a ratio.

With ``--kill`` the group runs in automatic mode, and after the planned switches (back on the primary)
the primary's namespace is killed under traffic (docs/emulator.md#outages). Per kill: killed → decided
by the probes, against the goal of the probe period times the failure threshold, plus 1 s; decided →
flowing on the secondary; decided → the producers' first send there; what it left behind on the
primary, as the group's status reported it (`status.switches[].eventsLeftBehind`) and as read back
(sent there before the kill, not archived when replication flowed on the secondary). Then the primary
comes back and the group fails back to it (a planned request, measured as the other switches).
The last line printed is a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from bench.processes import descendants, load
from federator.local.drill import (
    Archived,
    GroupFiles,
    Sent,
    damage,
    detection_goal,
    left_behind,
    percentiles,
    wait_until,
)
from federator.local.drillrun import RunProcess
from federator.local.outage import set_outage
from federator.local.state import StateDir
from federator_contract.api.failovergroup import Probe

logger = logging.getLogger("bench")

GROUP, TASK, MEMBERS = "orders", "orders-archive", ("primary", "secondary")
START_SECONDS = 300.0  # a Spark JVM on a busy 2-core machine
SWITCH_SECONDS = 120.0
SPARK_SUBMIT = "org.apache.spark.deploy.SparkSubmit"
PROBE_PERIOD, FAILURE_THRESHOLD = 1, 3  # the manifest's probe: a kill is seen within 4 s


def manifest(active: str, request: str, effectively_once: bool, mode: str = "manual") -> str:
    """The group (manual mode: only a request switches it; automatic: a member failing its probes too) and
    the task that follows it."""
    return f"""
apiVersion: federator.io/v1alpha1
kind: FailoverGroup
metadata: {{name: {GROUP}}}
spec:
  mode: {mode}
  primaryMember: primary
  activeMember: {active}
  switchRequest: {request}
  members:
    - {{name: primary, connection: {{emulator: {{namespace: primary}}}}, endpoint: localhost}}
    - {{name: secondary, connection: {{emulator: {{namespace: secondary}}}}, endpoint: localhost}}
  probe:
    periodSeconds: {PROBE_PERIOD}
    timeoutSeconds: 1
    failureThreshold: {FAILURE_THRESHOLD}
    entity: {{eventHubName: orders}}
  failback: {{drainTimeoutSeconds: 0}}  # consumers return with the producers: nothing to drain on a hub
---
apiVersion: federator.io/v1alpha1
kind: ReplicationTask
metadata: {{name: {TASK}}}
spec:
  source:
    eventHub:
      connection: {{failoverGroupRef: {{name: {GROUP}, resumeSkewSeconds: 5}}}}
      eventHubName: orders
      consumerGroup: replication
  targets:
    - name: archive
      eventHub: {{connection: {{emulator: {{namespace: archive}}}}, eventHubName: orders-archive}}
  delivery: {{effectivelyOnce: {str(effectively_once).lower()}}}
"""


# ------------------------------------------------------------------------------------------ the run


@dataclass
class LocalRun:
    """`federator run` of the manifest, in its own session; its state dir and output."""

    workdir: Path
    effectively_once: bool
    mode: str = "manual"
    run: RunProcess | None = None

    @property
    def group(self) -> GroupFiles:
        return GroupFiles(StateDir(self.state), "default", GROUP)

    def write_manifest(self, active: str, request: str) -> None:
        self.manifest.write_text(manifest(active, request, self.effectively_once, self.mode))

    @property
    def state(self) -> Path:
        return self.workdir / "state"

    @property
    def manifest(self) -> Path:
        return self.workdir / "failover.yaml"

    @property
    def log(self) -> Path:
        return self.workdir / "run.log"

    def start(self) -> None:
        self.write_manifest("primary", "bench-0")
        self.run = RunProcess([self.manifest], self.state, self.log)
        self.run.start()
        self.wait_for_output(f"default/{TASK}: Ready (Running)", START_SECONDS)

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        return self.run.process if self.run is not None else None

    def wait_for_output(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log.read_text(errors="replace"):
            assert self.process is not None and self.process.poll() is None, self.tail()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{text!r} not in the output within {timeout:.0f} s:\n{self.tail()}")
            time.sleep(0.2)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def connection(self, member: str) -> str:
        ready = json.loads((self.state / "emulator" / "ready.json").read_text())
        return str(ready["namespaces"][member]["connectionString"])

    def endpoints(self) -> dict[str, Any] | None:
        """What the group publishes (None until it has, or while the file is replaced)."""
        return self.group.endpoints()

    def jvms(self) -> set[int]:
        """The Spark JVMs running under the run now."""
        assert self.process is not None
        found = set()
        for pid in descendants(self.process.pid):
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if SPARK_SUBMIT.encode() in command:
                found.add(pid)
        return found

    def stop(self) -> None:
        if self.run is not None:
            self.run.stop()


# ------------------------------------------------------------------------------------------ traffic


@dataclass
class Producer:
    """Paces ``rate`` keyed events/s into the member the group publishes for producers."""

    run: LocalRun
    rate: float
    keys: int
    stopping: threading.Event = field(default_factory=threading.Event)
    sent: list[Sent] = field(default_factory=list)
    first_send: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    """Member → when each stretch of sends to it began (the first successful send after a move)."""
    failures: int = 0

    def loop(self) -> None:
        clients: dict[str, EventHubProducerClient] = {}
        partitions: dict[str, list[str]] = {}
        numbers = [0] * self.keys
        key, member, tick = 0, "", 0.05
        per_tick = max(1, round(self.rate * tick))
        next_tick = time.monotonic()
        try:
            while not self.stopping.is_set():
                published = (self.run.endpoints() or {}).get("producerMember") or member
                if published not in clients:
                    # No retries: a send to a member that went down fails at once, and the next tick
                    # reads the endpoints again, as a client following them would.
                    clients[published] = EventHubProducerClient.from_connection_string(
                        self.run.connection(published), eventhub_name="orders", retry_total=0
                    )
                    partitions[published] = clients[published].get_partition_ids()
                client, ids = clients[published], partitions[published]
                batches: dict[str, list[Sent]] = defaultdict(list)
                for _ in range(per_tick):
                    batches[ids[key % len(ids)]].append(Sent(key, numbers[key], published, 0.0))
                    numbers[key] += 1
                    key = (key + 1) % self.keys
                if self._send(client, batches) and published != member:
                    self.first_send[published].append(time.time())
                    member = published
                next_tick += tick
                self.stopping.wait(max(0.0, next_tick - time.monotonic()))
        finally:
            for client in clients.values():
                client.close()

    def _send(self, client: EventHubProducerClient, batches: dict[str, list[Sent]]) -> bool:
        """Send one tick's events, a batch per partition; False when a send failed (those events are
        counted as never sent: a producer would retry them)."""
        ok = True
        for partition, events in batches.items():
            now = time.time()
            batch = client.create_batch(partition_id=partition)
            for event in events:
                body = {"k": event.key, "n": event.number, "m": event.member, "t": now}
                batch.add(EventData(json.dumps(body)))
            try:
                client.send_batch(batch)
            except Exception as err:  # the bench goes on: a failed send is counted
                logger.warning("send to %s failed: %s", events[0].member, err)
                self.failures += 1
                ok = False
                continue
            self.sent += [Sent(e.key, e.number, e.member, now) for e in events]
        return ok


@dataclass
class Archive:
    """Reads the archive hub from its start, all partitions."""

    run: LocalRun
    events: list[Archived] = field(default_factory=list)
    client: EventHubConsumerClient | None = None

    def loop(self) -> None:
        self.client = EventHubConsumerClient.from_connection_string(
            self.run.connection("archive"), consumer_group="$Default", eventhub_name="orders-archive"
        )

        def on_batch(_context: Any, events: list[Any]) -> None:
            now = time.time()
            for event in events:
                body = json.loads(event.body_as_str())
                self.events.append(Archived(body["k"], body["n"], body["m"], body["t"], now))

        with self.client:
            self.client.receive_batch(on_batch, starting_position="-1", max_batch_size=500, max_wait_time=0.2)

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()

    def first_from(self, member: str, after: float) -> float | None:
        """When the first event sent to ``member`` after ``after`` was read from the archive."""
        times = [e.at for e in list(self.events) if e.member == member and e.sent_at >= after]
        return min(times) if times else None


# ------------------------------------------------------------------------------------------ analysis


def ratio(value: float | None, baseline: float | None) -> float | None:
    return round(value / baseline, 1) if value is not None and baseline else None


# ------------------------------------------------------------------------------------------ switching


@dataclass(frozen=True)
class Switch:
    to: str
    requested: float
    decided: float
    flowing: float
    producers: float


def switch(run: LocalRun, producer: Producer, archive: Archive, number: int, to: str) -> Switch:
    """Request ``to`` in the manifest; wait until the group publishes it, the archive reads an event
    sent to it, and the producers have sent to it."""
    starts_before = len(producer.first_send[to])
    requested = time.time()
    run.write_manifest(to, f"bench-{number}")

    def published(role: str) -> bool:
        return (run.endpoints() or {}).get(f"{role}Member") == to

    wait(lambda: published("producer"), f"the group did not switch its producers to {to}")
    decided = run.group.endpoints_file.stat().st_mtime  # the round that decides publishes at once
    wait(lambda: published("consumer"), f"the group did not switch its consumers to {to}")
    flowing = wait(lambda: archive.first_from(to, decided), f"no event sent to {to} was archived")
    wait(lambda: len(producer.first_send[to]) > starts_before, f"the producers did not send to {to}")
    return Switch(to, requested, decided, flowing, producer.first_send[to][-1])


def wait(check: Any, what: str, timeout: float = SWITCH_SECONDS) -> Any:
    return wait_until(check, what, timeout)


def bench(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    run = LocalRun(workdir, not args.at_least_once, "automatic" if args.kill else "manual")
    forced: list[Forced] = []
    run.start()
    producer, archive = Producer(run, args.rate, args.keys), Archive(run)
    threads = [threading.Thread(target=t.loop, daemon=True) for t in (producer, archive)]
    try:
        for thread in threads:
            thread.start()
        warm = time.time() + args.warmup * 2 / 3  # the task catches up its start first
        time.sleep(args.warmup)
        jvms, switches = run.jvms(), []
        for number in range(1, args.switches + 1):
            switches.append(switch(run, producer, archive, number, MEMBERS[number % 2]))
            logger.info("switch %d to %s: flowing %.1f s after it was decided", number, *_said(switches[-1]))
            jvms |= run.jvms()
            time.sleep(args.settle)
        if args.kill:
            if switches and switches[-1].to != "primary":
                switches.append(switch(run, producer, archive, len(switches) + 1, "primary"))
            forced.append(kill(run, producer, archive))
            logger.info(
                "primary killed: decided %.1f s later",
                forced[-1].switch.decided - forced[-1].switch.requested,
            )
            time.sleep(args.settle)
            switches.append(revive(run, producer, archive, len(switches) + 1))
            jvms |= run.jvms()
        producer.stopping.set()
        threads[0].join()
        _settle(archive)
    finally:
        producer.stopping.set()
        archive.stop()
        run.stop()
    first = min(s.requested for s in [*switches, *(f.switch for f in forced)])
    baseline = [e.at - e.sent_at for e in archive.events if warm <= e.sent_at < first]
    result = summary(args, producer, archive, switches, baseline, jvms)
    return {**result, "forced": forced_summary(forced, producer.sent, archive.events)}


@dataclass(frozen=True)
class Forced:
    """The primary killed under traffic: the switch the probes forced, and what it left on the primary."""

    switch: Switch
    reported_left: int | None
    """`status.switches[].eventsLeftBehind` (unset: no task copies between the members to measure it)."""
    read_back_left: int
    """Sent to the primary before the kill, not archived when replication flowed on the secondary."""


def kill(run: LocalRun, producer: Producer, archive: Archive) -> Forced:
    """Take the primary's namespace down under traffic; wait until the probes fail the group over to the
    secondary, replication flows there and the producers send there."""
    starts_before = len(producer.first_send["secondary"])
    killed = time.time()
    set_outage(StateDir(run.state), "primary", True)
    record = wait(lambda: run.group.switch_to("secondary", killed), "the probes did not fail the group over")
    wait(lambda: (run.endpoints() or {}).get("consumerMember") == "secondary", "consumers did not move")
    decided = run.group.endpoints_file.stat().st_mtime  # the round that decides publishes at once
    flowing = wait(
        lambda: archive.first_from("secondary", decided), "no event sent to the secondary archived"
    )
    wait(lambda: len(producer.first_send["secondary"]) > starts_before, "the producers did not move")
    moved = Switch("secondary", killed, decided, flowing, producer.first_send["secondary"][-1])
    reported = run.group.switch_to("secondary", killed) or record
    return Forced(
        moved, reported.events_left_behind, left_behind(producer.sent, archive.events, [moved])[0]
    )


def revive(run: LocalRun, producer: Producer, archive: Archive, number: int) -> Switch:
    """The primary back, then the failback to it: a deliberate (planned) request, as in a cluster."""
    set_outage(StateDir(run.state), "primary", False)
    time.sleep(3 * PROBE_PERIOD)  # its probes pass again before the request
    return switch(run, producer, archive, number, "primary")


def _said(s: Switch) -> tuple[str, float]:
    return s.to, s.flowing - s.decided


def _settle(archive: Archive, quiet: float = 10.0) -> None:
    """Until the archive has read nothing new for ``quiet`` seconds."""
    count, since = -1, time.monotonic()
    while time.monotonic() - since < quiet:
        if len(archive.events) != count:
            count, since = len(archive.events), time.monotonic()
        time.sleep(0.5)


def summary(
    args: argparse.Namespace,
    producer: Producer,
    archive: Archive,
    switches: list[Switch],
    baseline: list[float],
    jvms: set[int],
) -> dict[str, Any]:
    flowing = percentiles([s.flowing - s.decided for s in switches])
    steady = percentiles(baseline)
    found = damage(producer.sent, archive.events)
    behind = left_behind(producer.sent, archive.events, switches)
    return {
        "bench": "failover",
        "mode": "local",
        "rate": args.rate,
        "keys": args.keys,
        "effectively_once": not args.at_least_once,
        "planned_switches": len(switches),
        "request_to_decided_s": percentiles([s.decided - s.requested for s in switches]),
        "decided_to_flowing_s": flowing,
        "decided_to_producers_s": percentiles([s.producers - s.decided for s in switches]),
        "steady_latency_s": steady,
        "flowing_p50_vs_steady_p50": ratio(flowing["p50"], steady["p50"]),
        "sent": len(producer.sent),
        "send_failures": producer.failures,
        "archived": len(archive.events),
        "left_behind_at_switch": {"total": sum(behind), "max": max(behind, default=0)},
        "lost": found.lost,
        "duplicated": found.duplicated,
        "out_of_order": found.out_of_order,
        "spark_jvms": len(jvms),
        "load": load(),
    }


def forced_summary(
    forced: list[Forced], sent: Sequence[Sent], archived: Sequence[Archived]
) -> dict[str, Any]:
    """Per kill: killed → decided against its goal, → flowing, → producers, and what it left behind on
    the primary as the status reported it and as read back (archived later: when the task returned)."""
    goal = detection_goal(Probe(period_seconds=PROBE_PERIOD, failure_threshold=FAILURE_THRESHOLD))
    runs = []
    for kill_ in forced:
        s = kill_.switch
        runs.append(
            {
                "detected_s": round(s.decided - s.requested, 3),
                "detection_goal_s": goal,
                "decided_to_flowing_s": round(s.flowing - s.decided, 3),
                "decided_to_producers_s": round(s.producers - s.decided, 3),
                "left_behind_reported": kill_.reported_left,
                "left_behind_read_back": kill_.read_back_left,
            }
        )
    return {"kills": len(forced), "runs": runs, "damage_after_failback": damage(sent, archived).__dict__}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--switches", type=int, default=10, help="planned switches, alternating members")
    parser.add_argument("--rate", type=float, default=500, help="events/s the producer sends")
    parser.add_argument("--keys", type=int, default=16, help="keys the events are spread over")
    parser.add_argument("--warmup", type=float, default=45, help="seconds of traffic before the first switch")
    parser.add_argument(
        "--at-least-once", action="store_true", help="the task without effectively-once delivery"
    )
    parser.add_argument("--settle", type=float, default=5, help="seconds of traffic after each switch")
    parser.add_argument(
        "--kill",
        action="store_true",
        help="then kill the primary under traffic (automatic mode), and fail back",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logger.setLevel(logging.INFO)
    with tempfile.TemporaryDirectory(prefix="federator-failover-") as tmp:
        result = bench(args, Path(tmp))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
