"""`kubectl federator status`: trees of groups and mirrors down to Spark and lag, conditions worst first
with their full messages, `-o json|yaml`, one object by KIND/NAME, `--watch`."""

from __future__ import annotations

import json
import os
import pty
import re
from typing import Any

import yaml
from plugin_helpers import API, MERGE, Plugin, create, plugin_process, read_until
from plugin_seeds import (
    LONG_MESSAGE,
    cond,
    group,
    plain_task,
    ready,
    recent,
    seed_topology,
    task_status,
)

from support.kube import K8sTools, KubeServer


def test_status_draws_groups_mirrors_and_tasks_worst_first(kube: KubeServer, federator: Plugin) -> None:
    seed_topology(kube)
    text = federator("status").stdout
    assert "FailoverGroup default/orders" in text and "automatic · FailedOver" in text
    assert "OnSecondary: producers and consumers use neu, not the primary weu" in text
    assert "weu (primary)  orders-weu.servicebus.windows.net" in text
    assert "probe failed 7 times in a row" in text and "connection refused (weu probe)" in text
    assert "neu  orders-neu.servicebus.windows.net  ← producers + consumers" in text
    # The task following the group sits under it, with Spark, its driver pod and its lag.
    group_part = text[text.index("FailoverGroup default/orders") : text.index("ServiceBusMirror")]
    assert "ReplicationTask default/archive" in group_part and "source member neu" in group_part
    assert "sparkoperator.k8s.io/v1beta2 archive: RUNNING" in group_part
    assert "driver archive-driver Running, 2 restarts" in group_part
    assert "12.5s behind · 4,200 replicated" in group_part
    # The mirror: members, the provisioned subscription with its rule, the pair and its task.
    mirror_part = text[text.index("ServiceBusMirror default/billing") :]
    assert "topics/invoices/subscriptions/repl-east" in mirror_part
    assert (
        "rule replication: replication IS NULL  →  SET replication = 1; SET sys.TimeToLive = '00:02:00'"
        in mirror_part
    )
    assert "west → east: task billing-west-east" in mirror_part
    # Other tasks: the stalled one first, its message whole, however long.
    rest = text[text.index("ReplicationTasks\n") :]
    assert rest.index("default/broken") < rest.index("default/slow")
    assert "Stalled=True SecretNotFound" in rest
    unwrapped = " ".join(rest.translate(str.maketrans("", "", "│├└─")).split())
    assert LONG_MESSAGE in unwrapped, "the condition message must be wrapped, never cut"
    assert "\x1b[" not in text, "no colour codes on a pipe"


def test_status_of_one_group_as_json_and_yaml(kube: KubeServer, federator: Plugin) -> None:
    seed_topology(kube)
    data = json.loads(federator("status", "fg/orders", "-o", "json").stdout)
    assert [g["name"] for g in data["failoverGroups"]] == ["orders"]
    assert data["serviceBusMirrors"] == [] and data["replicationTasks"] == []
    found = data["failoverGroups"][0]
    assert (found["phase"], found["producerMember"], found["consumerMember"]) == ("FailedOver", "neu", "neu")
    assert next(c["type"] for c in found["conditions"]) == "FailedOver", (
        "worst first: FailedOver=True before Ready"
    )
    [task] = found["tasks"]
    assert task["name"] == "archive" and task["follows"] == "source"
    [lag] = task["lag"]
    assert lag == {
        "partition": None,
        "secondsBehind": 12.5,
        "eventsBehind": None,
        "eventsReplicated": 4200,
        "lastBatchTime": lag["lastBatchTime"],
    }
    assert lag["lastBatchTime"].endswith("Z")
    assert (
        yaml.safe_load(federator("status", "rt/broken", "-o", "yaml").stdout)["replicationTasks"][0]["state"]
        == "Stalled"
    )


def test_status_names_what_it_cannot_find(kube: KubeServer, federator: Plugin) -> None:
    done = federator("status", "fg/nope", check=False)
    assert done.returncode == 1 and "failovergroup nope not found in namespace default" in done.stderr
    done = federator("status", "pod/x", check=False)
    assert done.returncode == 1 and "unknown kind 'pod'" in done.stderr
    empty = (
        "No FailoverGroups, ServiceBusMirrors, ReplicationApplications or ReplicationTasks found in "
        "namespace default."
    )
    assert empty in federator("status").stdout


def test_status_watch_prints_a_new_snapshot_when_something_changes(
    kube: KubeServer, k8s_tools: K8sTools, plugin_environment: dict[str, str]
) -> None:
    seed_topology(kube)
    proc = plugin_process(
        k8s_tools.kubectl, plugin_environment, "status", "rt/slow", "--watch", "--interval", "0.3"
    )
    try:
        assert proc.stdout is not None
        first = read_until(proc.stdout, "95.0s behind")
        assert "UTC" in first
        kube.request(
            "PATCH",
            f"{API}/namespaces/default/replicationtasks/slow/status",
            {"status": {"replicationLagSeconds": 3.0}},
            MERGE,
        )
        assert "3.0s behind" in read_until(proc.stdout, "3.0s behind")
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_colours_only_on_a_terminal_and_never_with_no_color(
    kube: KubeServer, k8s_tools: K8sTools, plugin_environment: dict[str, str]
) -> None:
    seed_topology(kube)

    def on_terminal(**env: str) -> str:
        pid, fd = pty.fork()
        if pid == 0:  # the child: kubectl on a pseudo-terminal
            os.execve(
                str(k8s_tools.kubectl),
                ["kubectl", "federator", "status", "rt/broken"],
                {**plugin_environment, "TERM": "xterm-256color", **env},
            )
        chunks = []
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.waitpid(pid, 0)
        return b"".join(chunks).decode()

    coloured = on_terminal()
    assert "\x1b[31" in coloured or "\x1b[1;31" in coloured, "Stalled is red on a terminal"
    plain = on_terminal(NO_COLOR="1")
    assert "SecretNotFound" in plain
    assert not any(f"\x1b[{c}" in plain for c in ("31", "32", "33", "1;31", "1;32", "1;33", "38;")), (
        "NO_COLOR"
    )


NARROW = {"COLUMNS": "80", "NO_COLOR": "1"}


def group_status(probes: list[dict[str, Any]], *conditions: dict[str, Any]) -> dict[str, Any]:
    return {
        "observedGeneration": 1,
        "conditions": [*ready("Active", "producers and consumers use member weu"), *conditions],
        "phase": "Normal",
        "producerMember": "weu",
        "consumerMember": "weu",
        "probes": probes,
    }


def probe(member: str, seconds_ago: float, healthy: bool = True, message: str = "") -> dict[str, Any]:
    failures = 0 if healthy else 4
    return {
        "member": member,
        "healthy": healthy,
        "consecutiveFailures": failures,
        "lastProbeTime": recent(seconds_ago),
        "message": message,
    }


def unwrapped(text: str) -> str:
    return " ".join(text.translate(str.maketrans("", "", "│├└─")).split())


def test_stale_figures_are_marked_and_sorted_by_their_age(kube: KubeServer, federator: Plugin) -> None:
    # Probes every 2s: a healthy result is rewritten once a minute, so 39s is current; 10 minutes is not.
    probes = [probe("weu", 39), probe("neu", 600)]
    create(kube, group(probe={"periodSeconds": 2}), group_status(probes))
    text = unwrapped(federator("status", "fg/orders", env=NARROW).stdout)
    assert "✓ weu (primary) orders-weu.servicebus.windows.net ← producers + consumers probe healthy" in text
    assert re.search(r"probe healthy \(every 2s, recorded (39|4\d)s ago\) … neu", text), text
    assert "probe healthy (every 2s, recorded 10m ago) STALE: no probe recorded since" in text
    # A task whose last batch is two days old: its 0.8s is not its lag now.
    old = task_status(0.8, 900, ready("Running"))
    old["lastBatchTime"] = recent(2 * 86400)
    create(kube, plain_task("idle"), old)
    create(kube, plain_task("busy"), task_status(95.0, 12, ready("Running")))
    assert (
        "Lag 0.8s behind · 900 replicated · last batch 2d ago STALE: figures of that batch, none since"
        in (unwrapped(federator("status", "rt/idle", env=NARROW).stdout))
    )
    table = federator("lag", env=NARROW).stdout.splitlines()
    assert [line.split()[0] for line in table[1:]] == ["idle", "busy"]
    assert "2d ago, STALE" in table[1] and "STALE" not in table[2]


def test_a_failing_member_shows_without_colour(kube: KubeServer, federator: Plugin) -> None:
    refused = "Cannot connect to host orders-weu.servicebus.windows.net:5671 " + "word " * 60 + "END"
    probes = [probe("weu", 5, healthy=False, message=refused), probe("neu", 5)]
    no_replication = cond(
        "LosslessFailover", "Unknown", "NoReplication", "no ReplicationTask copies an event hub from weu"
    )
    create(kube, group(mode="automatic"), group_status(probes, no_replication))
    text = federator("status", "orders", env=NARROW).stdout
    header = text.splitlines()[0]
    assert header.startswith("! FailoverGroup default/orders  Ready Active  automatic · Normal ·")
    assert "failing probes: weu" in unwrapped(text.split("├──", 1)[0])
    assert "✗ weu (primary)" in text and "probe failed 4 times in a row" in text and "✓ neu" in text
    assert refused in unwrapped(text), "the probe's message whole"
    # LosslessFailover Unknown (nothing to measure) is a fact, not progress: a healthy group is ✓.
    create(kube, group("quiet"), group_status([probe("weu", 5), probe("neu", 5)], no_replication))
    quiet = federator("status", "fg/quiet", env=NARROW).stdout
    assert quiet.startswith("✓ FailoverGroup default/quiet  Ready Active")
    assert "LosslessFailover=Unknown" in unwrapped(quiet)


def test_a_failback_drain_names_what_holds_it(kube: KubeServer, federator: Plugin) -> None:
    # drainPending holds entities (still holding messages) and tasks (still behind on the member).
    archive = {"namespace": "default", "name": "archive", "member": "neu", "eventsBehind": 37}
    failing_back = {
        **group_status([probe("weu", 5), probe("neu", 5)]),
        "phase": "FailingBack",
        "consumerMember": "neu",
        "drainPending": [{"entity": "orders"}, {"task": archive}],
    }
    create(kube, group(), failing_back)
    text = unwrapped(federator("status", "fg/orders", env=NARROW).stdout)
    assert "Draining neu: orders still hold messages; task default/archive still 37 behind on neu" in text
    assert "archive still 37 behind on neu still hold messages" not in text
