"""Failover under keyed traffic, in local mode (#42): how long each phase of a switch takes, and what the
switches did to the events.

    .venv/bin/python -m bench.failover [--switches 10] [--kills 10] [--rate 500] [--keys 16]

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
once the secondary is drained (the following task replicated what producers sent there: its lag there,
measured after they left, is nothing; `drainTimeoutSeconds` bounds the wait), the wait given as
`failback_drain_s`. Per switch: request → decided (the round that decides publishes the endpoints),
decided → replication flowing on the new member (the first event sent to it read from the archive; from
the consumers' switch on a failback), decided → the producers' first successful send on it. At the end,
once the traffic stops and the archive no longer grows (`failover_traffic.settle`): events lost (sent,
not in the archive read to its end, the follower having copied all it reads) and not settled (not read
from the archive yet, the follower still behind or not measured since: a run ending so proves nothing
about loss), duplicated (archived twice), out of order per key (a key's events archived after a later
one of the same key; here, what a switch left behind on a member, replicated when the task came back to
it), events left behind at each switch (sent to the member it left, not archived when replication flowed
on the new member), and the Spark JVMs the run used (a hot switch keeps one). The baseline, measured in
the same run before the first switch: the steady replication latency (send → archived), against which
the time to flow again is given as a ratio.

With ``--kills N`` the group runs in automatic mode with a second task, `orders-geo`, copying `orders`
from the primary to a hub of that name on the secondary; after the planned switches (back on the
primary) the primary's namespace is killed under traffic N times (docs/emulator.md#outages), each time
once the geo task copies again and has measured its lag since. Per kill: killed → decided by the
probes, against the goal of the probe period times the failure threshold, plus 1 s; decided → flowing
on the secondary; decided → the producers' first send there; the phases the group recorded; what it
left behind on the primary. The group's status has the estimate at the switch
(`status.switches[].eventsLeftBehind`: the geo task's lag as last measured, counted from what it had
read; `estimate_age_s`) and, once the primary is back, the count (`eventsLeftBehindConfirmed`,
`eventsLost`, `confirmedRpoSeconds`): `left_behind_reported` and `lost_reported` are the count. The read-back
is made the same way: what the geo copy holds is noted while the primary is still down, the primary is
brought back and read (the events it held, sent before it came back: those whose send failed but were
stored count too) and, per key (a key keeps its partition on every hub, and the task copies a partition in
order), those past where the copy stood are left behind; at the end, those the geo copy holds by then were
copied late (`late_read_back`), the others lost (`lost_read_back`). The span: the worst partition's, from
its newest event copied to its newest left behind. Then the group fails back to the primary (a planned
request, counted with the planned switches). A group found off the primary before a kill (its probes
timed out on a loaded machine) is failed back to first, and counted (`failovers_unasked`).

The last line printed is a JSON summary, with #42's goals (`goals`: each one's value and pass).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.failover_run import FAILURE_THRESHOLD, GEO_TASK, MEMBERS, PROBE_PERIOD, TASK, LocalRun
from bench.failover_traffic import (
    Archive,
    Producer,
    Reader,
    Settled,
    geo_rpo,
    left_on_primary,
    reached,
    read_back,
    read_from,
    settle,
)
from bench.processes import load
from federator.local.drill import damage, detection_goal, left_behind, percentiles, wait_until
from federator.local.outage import set_outage
from federator.local.state import StateDir
from federator_contract.api.failovergroup import Probe, SwitchRecord

logger = logging.getLogger("bench")

SWITCH_SECONDS = 120.0
FLOWING_GOAL = 5.0  # #42: switch decided → replication flowing on the new member, p99
LAG_POLL_SECONDS = 5.0  # how often a driver measures its lag (federator_spark/lag.py)
CONFIRM_SECONDS = 60.0  # the geo task's driver measures a source that is back within a second


@dataclass(frozen=True)
class Switch:
    to: str
    requested: float
    decided: float
    flowing: float
    producers: float
    consumers_decided: float | None = None
    """A failback's consumers' switch, once the member they left was drained (None: with the producers)."""

    @property
    def flowing_after(self) -> float:
        """Decided → replication flowing: from the consumers' switch (the follower moves with them)."""
        return self.flowing - (self.consumers_decided or self.decided)


@dataclass(frozen=True)
class Traffic:
    producer: Producer
    archive: Reader
    geo: Reader | None
    """The geo copy on the secondary (forced switches only)."""


def switch(run: LocalRun, traffic: Traffic, number: int, to: str) -> Switch:
    """Request ``to`` in the manifest; wait until the group publishes it, the archive reads an event
    sent to it, and the producers have sent to it."""
    producer = traffic.producer
    starts_before = len(producer.first_send[to])
    requested = time.time()
    run.write_manifest(to, f"bench-{number}")

    def published(role: str) -> bool:
        return (run.endpoints() or {}).get(f"{role}Member") == to

    wait(lambda: published("producer"), f"the group did not switch its producers to {to}")
    decided = run.group.endpoints_file.stat().st_mtime  # the round that decides publishes at once
    wait(lambda: published("consumer"), f"the group did not switch its consumers to {to}")
    consumers = run.group.endpoints_file.stat().st_mtime  # written on a change only
    flowing = wait(lambda: traffic.archive.first_from(to, decided), f"no event sent to {to} was archived")
    wait(lambda: len(producer.first_send[to]) > starts_before, f"the producers did not send to {to}")
    return Switch(
        to,
        requested,
        decided,
        flowing,
        producer.first_send[to][-1],
        consumers if consumers > decided else None,
    )


def wait(check: Any, what: str, timeout: float = SWITCH_SECONDS) -> Any:
    return wait_until(check, what, timeout)


@dataclass(frozen=True)
class Forced:
    """The primary killed under traffic: the switch the probes forced, the group's record of it (its loss
    confirmed once the primary came back), and what it left on the primary as read back."""

    switch: Switch
    record: SwitchRecord
    """As it was before the primary came back: the estimate."""
    confirmed: SwitchRecord | None
    """Once the primary answered again (None: not confirmed within the wait)."""
    read_back: frozenset[tuple[int, int]]
    """(key, number) of the events the primary held that the geo copy lacked when it came back."""
    read_back_rpo: float | None
    """From the newest event sent to the primary that was copied to the newest left behind (send times)."""
    follower_left: int
    """Sent to the primary, not archived when replication flowed on the secondary."""


def kill(run: LocalRun, traffic: Traffic, settle: float) -> Forced:
    """Take the primary's namespace down under traffic (once `copied`); wait until the probes fail the
    group over to the secondary, replication flows there and the producers send there; note what the
    geo copy holds while the primary is still down, bring the primary back, and read back what it held
    that the copy lacked, beside the group's confirmed count of the same."""
    producer, archive, geo = traffic.producer, traffic.archive, traffic.geo
    assert geo is not None
    starts_before = len(producer.first_send["secondary"])
    killed = time.time()
    set_outage(StateDir(run.state), "primary", True)
    wait(lambda: run.group.switch_to("secondary", killed), "the probes did not fail the group over")
    wait(lambda: (run.endpoints() or {}).get("consumerMember") == "secondary", "consumers did not move")
    decided = run.group.endpoints_file.stat().st_mtime  # the round that decides publishes at once
    flowing = wait(
        lambda: archive.first_from("secondary", decided), "no event sent to the secondary archived"
    )
    wait(lambda: len(producer.first_send["secondary"]) > starts_before, "the producers did not move")
    moved = Switch("secondary", killed, decided, flowing, producer.first_send["secondary"][-1])
    time.sleep(settle)
    geo.settle(quiet=2.0)
    record = wait(lambda: run.group.switch_to("secondary", killed), "the failover's record is gone")
    copied = reached(list(geo.events))  # where the copy stood before the primary came back
    revived = time.time()
    set_outage(StateDir(run.state), "primary", False)
    confirmed = _confirmed(run, killed)
    held, partitions = read_back(run, MEMBERS[0], read_from(producer.sent, copied, killed), SWITCH_SECONDS)
    left = left_on_primary(held, copied, revived)
    rpo = geo_rpo(producer.sent, left, killed, partitions)
    archived_left = left_behind(producer.sent, archive.events, [moved])[0]
    _copied_late(geo, left)
    return Forced(moved, record, confirmed, left, rpo, archived_left)


def _confirmed(run: LocalRun, killed: float) -> SwitchRecord | None:
    """The failover's record once its loss is confirmed (the geo task measured the primary again)."""

    def check() -> SwitchRecord | None:
        found = run.group.switch_to("secondary", killed)
        return found if found is not None and found.events_left_behind_confirmed is not None else None

    try:
        found: SwitchRecord = wait(check, "the failover's loss was not confirmed", CONFIRM_SECONDS)
        return found
    except TimeoutError:
        logger.warning("the loss of the failover after %.0f was not confirmed", killed)
        return run.group.switch_to("secondary", killed)


def _copied_late(geo: Reader, left: frozenset[tuple[int, int]]) -> None:
    """Until the geo copy holds what was left behind (the task copies it once the primary is back); what
    it never gets counts as lost at the end."""
    try:
        wait(lambda: left <= {(c.key, c.number) for c in list(geo.events)}, "", CONFIRM_SECONDS)
    except TimeoutError:
        logger.warning(
            "the geo copy lacks events left behind %.0f s after the primary came back", CONFIRM_SECONDS
        )


def failback(run: LocalRun, traffic: Traffic, number: int) -> Switch:
    """The failback to the primary once it is back: a deliberate (planned) request, as in a cluster."""
    time.sleep(3 * PROBE_PERIOD)  # its probes pass again before the request
    return switch(run, traffic, number, "primary")


def bench(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    run = LocalRun(workdir, not args.at_least_once, "automatic" if args.kills else "manual")
    forced: list[Forced] = []
    unasked = 0
    run.start()
    geo = Reader(run, "secondary", GEO_TASK) if args.kills else None
    traffic = Traffic(Producer(run, args.rate, args.keys), Reader(run, "archive", "orders-archive"), geo)
    readers = [r for r in (traffic.archive, geo) if r is not None]
    loops = [traffic.producer.loop, *(r.loop for r in readers)]
    threads = [threading.Thread(target=loop, daemon=True) for loop in loops]
    try:
        for thread in threads:
            thread.start()
        warm = time.time() + args.warmup * 2 / 3  # the task catches up its start first
        time.sleep(args.warmup)
        jvms, switches = run.jvms(), []
        for number in range(1, args.switches + 1):
            switches.append(switch(run, traffic, number, MEMBERS[number % 2]))
            logger.info("switch %d to %s: flowing %.1f s after it was decided", number, *_said(switches[-1]))
            jvms |= run.jvms()
            time.sleep(args.settle)
        forced, unasked = forced_switches(run, traffic, args, switches, jvms) if args.kills else ([], 0)
        traffic.producer.stopping.set()
        threads[0].join()
        stopped = time.time()
        wanted = {(s.key, s.number) for s in traffic.producer.sent}
        archive = traffic.archive
        watched = Archive(
            archive.held, lambda: archive.read_through(archive.tails()), lambda: run.behind(TASK, stopped)
        )
        settled = settle(watched, wanted)
    finally:
        traffic.producer.stopping.set()
        for reader in readers:
            reader.stop()
        run.stop()
    first = min(s.requested for s in [*switches, *(f.switch for f in forced)])
    baseline = [e.at - e.sent_at for e in traffic.archive.events if warm <= e.sent_at < first]
    result = summary(args, traffic, switches, baseline, jvms, settled)
    copies = geo.held() if geo is not None else set()
    result["forced"] = {**forced_summary(forced, copies), "failovers_unasked": unasked}
    result["goals"] = goals(result)
    return result


def forced_switches(
    run: LocalRun, traffic: Traffic, args: argparse.Namespace, switches: list[Switch], jvms: set[int]
) -> tuple[list[Forced], int]:
    """``args.kills`` times: the primary killed, then revived and failed back to (added to ``switches``);
    and how often the group had left the primary unasked before a kill (its probes timed out on a
    loaded machine), failed back to first."""
    forced, unasked = [], 0
    if switches and switches[-1].to != MEMBERS[0]:
        switches.append(switch(run, traffic, len(switches) + 1, MEMBERS[0]))
    for _ in range(args.kills):
        copied(traffic)
        if (run.endpoints() or {}).get("consumerMember") != MEMBERS[0]:
            logger.warning("the group left the primary unasked: failing back before the kill")
            unasked += 1
            switches.append(switch(run, traffic, len(switches) + 1, MEMBERS[0]))
            copied(traffic)
        forced.append(kill(run, traffic, args.settle))
        copies = traffic.geo.held() if traffic.geo else set()
        logger.info("kill %d: %s", len(forced), json.dumps(forced_run(forced[-1], copies)))
        switches.append(failback(run, traffic, len(switches) + 1))
        jvms |= run.jvms()
        time.sleep(args.settle)
    return forced, unasked


def copied(traffic: Traffic) -> None:
    """Until the geo task copies the primary (back from the last outage) and has measured its lag since:
    a primary worth killing."""
    since, geo = time.time(), traffic.geo
    assert geo is not None
    wait(lambda: geo.first_from(MEMBERS[0], since), "the geo task does not copy the primary")
    time.sleep(LAG_POLL_SECONDS)


def _said(s: Switch) -> tuple[str, float]:
    return s.to, s.flowing_after


def ratio(value: float | None, baseline: float | None) -> float | None:
    return round(value / baseline, 1) if value is not None and baseline else None


def summary(
    args: argparse.Namespace,
    traffic: Traffic,
    switches: list[Switch],
    baseline: list[float],
    jvms: set[int],
    settled: Settled,
) -> dict[str, Any]:
    producer, archive = traffic.producer, traffic.archive
    flowing = percentiles([s.flowing_after for s in switches])
    drains = [s.consumers_decided - s.decided for s in switches if s.consumers_decided is not None]
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
        "failback_drain_s": percentiles(drains),
        "steady_latency_s": steady,
        "flowing_p50_vs_steady_p50": ratio(flowing["p50"], steady["p50"]),
        "sent": len(producer.sent),
        "send_failures": producer.failures,
        "archived": len(archive.events),
        "left_behind_at_switch": {"total": sum(behind), "max": max(behind, default=0)},
        "lost": settled.lost,
        "not_settled": settled.not_settled,
        "settle_s": {"waited": settled.waited_s, "longest_pause": settled.longest_pause_s},
        "duplicated": found.duplicated,
        "out_of_order": found.out_of_order,
        "spark_jvms": len(jvms),
        "load": load(),
    }


def forced_run(kill_: Forced, copies: set[tuple[int, int]]) -> dict[str, Any]:
    """One kill: killed → decided against its goal, → flowing, → producers; the group's record of the
    phases; what it left behind on the primary as the status reported it (the estimate at the switch,
    and the count once the primary was back) and as read back, and of that what the geo copy holds now
    (``copies``: copied late) and what it never got."""
    s, record, confirmed = kill_.switch, kill_.record, kill_.confirmed
    late = len(kill_.read_back & copies)
    return {
        "detected_s": round(s.decided - s.requested, 3),
        "detection_goal_s": detection_goal(
            Probe(period_seconds=PROBE_PERIOD, failure_threshold=FAILURE_THRESHOLD)
        ),
        "decided_to_flowing_s": round(s.flowing - s.decided, 3),
        "decided_to_producers_s": round(s.producers - s.decided, 3),
        "recorded": {
            "detected_to_decided_s": record.decided_seconds,
            "published_s": record.published_seconds,
            "followers_flowing_s": [f.flowing_seconds for f in record.followers],
        },
        "left_behind_estimated": record.events_left_behind,
        "estimate_age_s": _age(record),
        "left_behind_reported": confirmed.events_left_behind_confirmed if confirmed is not None else None,
        "left_behind_read_back": len(kill_.read_back),
        "lost_reported": confirmed.events_lost if confirmed is not None else None,
        "late_read_back": late,
        "lost_read_back": len(kill_.read_back) - late,
        "rpo_estimated_s": record.rpo_seconds,
        "rpo_reported_s": confirmed.confirmed_rpo_seconds if confirmed is not None else None,
        "rpo_read_back_s": kill_.read_back_rpo,
        "follower_left_behind": kill_.follower_left,
    }


def _age(record: SwitchRecord) -> float | None:
    measured = record.left_behind_measured_at
    return round((record.decided - measured).total_seconds(), 3) if measured is not None else None


def forced_summary(forced: list[Forced], copies: set[tuple[int, int]]) -> dict[str, Any]:
    runs = [forced_run(f, copies) for f in forced]
    return {
        "kills": len(forced),
        "detected_s": percentiles([r["detected_s"] for r in runs]),
        "decided_to_flowing_s": percentiles([r["decided_to_flowing_s"] for r in runs]),
        "decided_to_producers_s": percentiles([r["decided_to_producers_s"] for r in runs]),
        "left_behind_estimated_minus_read_back": [
            r["left_behind_estimated"] - r["left_behind_read_back"]
            for r in runs
            if r["left_behind_estimated"] is not None
        ],
        "runs": runs,
    }


def goals(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """#42's "Done when", each with the value measured and whether it passed. A forced switch's loss is
    the count the status reports once the member left is back, against the read-back (lost and late)."""
    runs = result["forced"]["runs"]
    planned_p99 = result["decided_to_flowing_s"]["p99"]
    forced_p99 = result["forced"]["decided_to_flowing_s"]["p99"]
    late = [r["detected_s"] for r in runs if r["detected_s"] > r["detection_goal_s"]]
    unequal = [
        (r["left_behind_reported"], r["left_behind_read_back"], r["lost_reported"], r["lost_read_back"])
        for r in runs
        if (r["left_behind_reported"], r["lost_reported"])
        != (r["left_behind_read_back"], r["lost_read_back"])
    ]
    found = {
        "planned_decided_to_flowing_p99_s": (
            planned_p99,
            planned_p99 is not None and planned_p99 <= FLOWING_GOAL,
        ),
        "forced_decided_to_flowing_p99_s": (forced_p99, forced_p99 is None or forced_p99 <= FLOWING_GOAL),
        "detection_within_goal_every_kill": (late, not late),
        "rpo_0_lost_after_all_switches": (
            {"lost": result["lost"], "not_settled": result["not_settled"]},
            result["lost"] == result["not_settled"] == 0,
        ),
        "forced_reported_loss_equals_read_back": (unequal, not unequal),
    }
    return {name: {"value": value, "pass": ok} for name, (value, ok) in found.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--switches", type=int, default=10, help="planned switches, alternating members")
    parser.add_argument("--kills", type=int, default=0, help="then kill the primary under traffic this often")
    parser.add_argument("--kill", dest="kills", action="store_const", const=1, help="one kill: --kills 1")
    parser.add_argument("--rate", type=float, default=500, help="events/s the producer sends")
    parser.add_argument("--keys", type=int, default=16, help="keys the events are spread over")
    parser.add_argument("--warmup", type=float, default=45, help="seconds of traffic before the first switch")
    parser.add_argument(
        "--at-least-once", action="store_true", help="the tasks without effectively-once delivery"
    )
    parser.add_argument("--settle", type=float, default=5, help="seconds of traffic after each switch")
    parser.add_argument(
        "--keep", action="store_true", help="keep the run's files (kept anyway when a loss was miscounted)"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    logger.setLevel(logging.INFO)
    workdir = Path(tempfile.mkdtemp(prefix="federator-failover-"))
    try:
        result = bench(args, workdir)
    except BaseException:
        logger.warning("the run failed; its files are kept in %s", workdir)
        raise
    kept = args.keep or not all(
        result["goals"][goal]["pass"]
        for goal in ("forced_reported_loss_equals_read_back", "rpo_0_lost_after_all_switches")
    )
    if kept:  # the run's log, state dir (status, Events, checkpoints) and apps' logs explain a loss
        result["workdir"] = str(workdir)
        logger.warning("the run's files are kept in %s", workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
