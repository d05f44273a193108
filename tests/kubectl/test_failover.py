"""`kubectl federator failover|failback`: what will change is shown before anything changes, consent is
asked, the manual switch is written as the operator expects a request, and the switch is followed until it
completed: here with the FailoverGroup controller running against two emulator namespaces."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from plugin_helpers import (
    API,
    MERGE,
    Plugin,
    create,
    group_warning,
    one_line_error,
    plugin_process,
    read_until,
)
from plugin_seeds import following_task, group, ready, recent

from federator.handlers.context import OperatorContext
from federator.kubectl.cluster import PluginError
from federator.kubectl.failover import NothingToDo, plan_switch, show
from federator.settings import OperatorSettings
from federator_emulator.server import RunningEmulator
from federator_emulator.testing import EmulatorFactory
from support.kopf_runner import running_operator
from support.kube import K8sTools, KubeServer
from support.polling import eventually

GROUPS = f"{API}/namespaces/default/failovergroups"
RT = f"{API}/namespaces/default/replicationtasks"
SWITCHED_BACK = "producers and consumers switched from member weu to neu"
AT = datetime(2026, 11, 29, 14, 0, 0, 250_000, tzinfo=UTC)
NOW = "2026-11-29T14:00:00Z"


def placed(phase: str, producer: str, consumer: str, requested: str = "", **spec: Any) -> dict[str, Any]:
    found = group(**spec)
    found["metadata"]["resourceVersion"] = "7"
    found["status"] = {
        "phase": phase,
        "producerMember": producer,
        "consumerMember": consumer,
        "requestedMember": requested,
    }
    return found


def request(member: str, **spec: Any) -> dict[str, Any]:
    """The one merge patch a switch is: the desired member and a new request name (the time)."""
    return {
        "metadata": {"resourceVersion": "7"},
        "spec": {"activeMember": member, "switchRequest": NOW, **spec},
    }


def test_a_switch_is_one_patch_of_the_desired_state_whatever_the_history() -> None:
    plan = plan_switch(placed("Normal", "weu", "weu"), "neu", [following_task()], now=AT)
    assert plan.patch.body == request("neu")
    assert (plan.failback, plan.tasks[0].name, plan.tasks[0].before, plan.tasks[0].after) == (
        False,
        "archive",
        "weu",
        "neu",
    )
    # Failback after an automatic failover while the spec names the primary already: the same one patch
    # (the new switchRequest makes it a request; no removal first, no knowledge of the state machine).
    failed_over = placed("FailedOver", "neu", "neu", "weu", mode="automatic", activeMember="weu")
    assert plan_switch(failed_over, None, [], now=AT).patch.body == request("weu")
    # Back to a secondary the spec already names (an automatic failover went to the primary): one patch.
    on_primary = placed("Normal", "weu", "weu", "neu", mode="automatic", activeMember="neu")
    assert plan_switch(on_primary, "neu", [], now=AT).patch.body == request("neu")
    with pytest.raises(NothingToDo):
        plan_switch(placed("FailedOver", "neu", "neu"), "neu", [])
    with pytest.raises(PluginError, match="'xyz' is not a member of FailoverGroup orders: weu, neu"):
        plan_switch(placed("Normal", "weu", "weu"), "xyz", [])


def test_planned_and_forced_set_the_switch_mode_with_the_request() -> None:
    waiting = {"member": "neu", "since": "2026-11-26T10:00:00Z"}
    plan = plan_switch(placed("Normal", "weu", "weu"), "neu", [], planned=True, now=AT)
    assert plan.patch.body == request("neu", switching={"planned": True})
    assert plan.planned and plan.planned_timeout_seconds == 300
    # Asking for the mode the group already has changes only the request.
    same = placed("Normal", "weu", "weu", switching={"planned": True})
    assert plan_switch(same, "neu", [], True, now=AT).patch.body == request("neu")
    # A planned switch that waits for the replication is forced by the same patch with the mode.
    stuck = placed("Normal", "weu", "weu", "neu", activeMember="neu", switching={"planned": True})
    stuck["status"]["pendingSwitch"] = waiting
    forced = plan_switch(stuck, "neu", [], planned=False, now=AT)
    assert forced.patch.body == request("neu", switching={"planned": False})
    assert "spec.switching.planned → false" in forced.patch.describe


def test_the_plan_tells_what_a_switch_now_leaves_behind() -> None:
    measured = placed("Normal", "weu", "weu", switching={"planned": True, "plannedTimeoutSeconds": 120})
    measured["status"]["replication"] = [{"member": "neu", "eventsBehind": 1200, "rpoSeconds": 3.5}]
    text = "\n".join(line.plain for line in show(plan_switch(measured, "neu", [])))
    assert (
        "switch     planned: waits until the replication into neu has caught up (now behind: 1,200 events "
        "(3.5s)), at most 120s, then switches anyway" in text
    )
    forced = "\n".join(line.plain for line in show(plan_switch(measured, "neu", [], planned=False)))
    assert (
        "switch     forced: at once; what is not copied to neu yet stays behind (now: 1,200 events" in forced
    )
    unmeasured = "\n".join(
        line.plain for line in show(plan_switch(placed("Normal", "weu", "weu"), "neu", []))
    )
    assert "forced: at once; what is not copied to neu yet stays behind (now: not measured" in unmeasured


def test_planned_and_forced_exclude_each_other(federator: Plugin) -> None:
    done = federator("failover", "orders", "--to", "neu", "--planned", "--forced", "--yes", check=False)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "--planned and --forced exclude each other" in done.stderr


def test_a_planned_request_through_kubectl(kube: KubeServer, federator: Plugin) -> None:
    create(
        kube,
        group(),
        {"phase": "Normal", "producerMember": "weu", "consumerMember": "weu", "conditions": ready("Active")},
    )
    done = federator("failover", "orders", "--to", "neu", "--planned", "--yes", "--no-wait")
    spec = kube.request("GET", f"{GROUPS}/orders")[1]["spec"]
    assert spec["activeMember"] == "neu" and spec["switching"]["planned"] is True
    told = f"requested: spec.activeMember: (unset) → neu, spec.switchRequest → {spec['switchRequest']}, "
    assert told + "spec.switching.planned → true" in done.stdout


def test_the_failback_after_an_automatic_failover_is_one_patch(kube: KubeServer, federator: Plugin) -> None:
    """The case that took a removal, a wait for the operator and a second patch: now one request."""
    on_neu = {
        "phase": "FailedOver",
        "producerMember": "neu",
        "consumerMember": "neu",
        "requestedMember": "weu",
    }
    create(kube, group(mode="automatic", activeMember="weu"), {**on_neu, "conditions": ready("Active")})
    done = federator("failback", "orders", "--yes", "--no-wait")
    assert "requested: spec.activeMember: weu → weu, spec.switchRequest → " in done.stdout
    assert kube.emulator.times("PATCH", f"{GROUPS}/orders") == 1
    spec = kube.request("GET", f"{GROUPS}/orders")[1]["spec"]
    assert spec["activeMember"] == "weu" and spec["switchRequest"].endswith("Z")


def test_nothing_changes_without_consent(kube: KubeServer, federator: Plugin) -> None:
    create(
        kube,
        group(),
        {"phase": "Normal", "producerMember": "weu", "consumerMember": "weu", "conditions": ready("Active")},
    )
    done = federator("failover", "orders", "--to", "neu", input="n\n", check=False)
    assert done.returncode == 1 and "nothing changed" in done.stderr
    assert (
        "producers  weu (orders-weu.servicebus.windows.net)  →  neu (orders-neu.servicebus.windows.net)"
        in done.stdout
    )
    assert "activeMember" not in kube.request("GET", f"{GROUPS}/orders")[1]["spec"]


def test_the_follow_says_when_the_operator_does_not_act(kube: KubeServer, federator: Plugin) -> None:
    create(
        kube,
        group(),
        {
            "observedGeneration": 1,
            "phase": "Normal",
            "producerMember": "weu",
            "consumerMember": "weu",
            "conditions": ready("Active"),
        },
    )
    started = time.monotonic()
    done = federator("failover", "orders", "--to", "neu", "--yes", "--timeout", "40", check=False, timeout=60)
    one_line_error(
        done,
        "the operator has not acted on the request in ",
        "(the group's status is of generation 1, the request made 2): is it running?",
        "`kubectl federator status fg/orders -n default --watch`",
    )
    assert time.monotonic() - started < 30, "told after two probe periods and a margin, not at --timeout"


def test_the_follow_tells_a_switch_the_operator_undid(
    kube: KubeServer, k8s_tools: K8sTools, plugin_environment: dict[str, str]
) -> None:
    """Failing back to a dead primary: the FailoverGroup controller moves producers there (FailingBack),
    then fails over again at its next probe; the plugin says so instead of waiting for its timeout."""
    on_neu = {"phase": "FailedOver", "producerMember": "neu", "consumerMember": "neu", "requestedMember": ""}
    create(kube, group(mode="automatic"), {"observedGeneration": 1, **on_neu, "conditions": ready("Active")})
    proc = plugin_process(k8s_tools.kubectl, plugin_environment, "failback", "orders", "--yes")
    try:
        assert proc.stdout is not None
        read_until(proc.stdout, "requested: spec.activeMember: (unset) → weu")
        # As the controller writes it: the request seen, producers moved, then back after failed probes.
        failing_back = {"phase": "FailingBack", "producerMember": "weu", "requestedMember": "weu"}
        write_status(kube, {"observedGeneration": 2, **failing_back})
        time.sleep(1.5)
        message = f"{SWITCHED_BACK}: weu failed 2 probes in a row"
        create(kube, group_warning("orders.2", "FailedOver", message, lastTimestamp=recent()))
        write_status(kube, {**on_neu, "requestedMember": "weu"})
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "phase FailingBack: producers on weu, consumers on neu" in out
    assert proc.returncode == 1 and err.count("\n") == 1, err
    assert (
        "error: the switch to weu did not hold: the operator has producers and consumers on neu (phase "
        "FailedOver); last Event FailedOver: producers and consumers switched from member weu to neu: weu "
        "failed 2 probes in a row" in err
    )


def write_status(kube: KubeServer, status: dict[str, Any]) -> None:
    code, body = kube.request("PATCH", f"{GROUPS}/orders/status", {"status": status}, MERGE)
    assert code == 200, body


@pytest.fixture
def members(emulator_factory: EmulatorFactory) -> dict[str, RunningEmulator]:
    return {
        m: emulator_factory({"namespaces": [{"name": m, "queues": [{"name": "orders"}]}]})
        for m in ("weu", "neu")
    }


@pytest.fixture
def operator(
    members: dict[str, RunningEmulator], kube: KubeServer, kubeconfig: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[KubeServer]:
    import federator.handlers  # noqa: F401 — registers the handlers

    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    for name, emulator in members.items():
        secret = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{name}-conn"},
            "stringData": {"connectionString": emulator.connection_string()},
        }
        create(kube, secret)
    memo = OperatorContext(OperatorSettings(observe_interval_seconds=1, retry_seconds=1), serve_metrics=False)
    with running_operator(namespaces=["default"], memo=memo):
        yield kube


@pytest.mark.slow
def test_failover_and_failback_through_the_plugin_while_the_controller_runs(
    operator: KubeServer,
    members: dict[str, RunningEmulator],
    federator: Plugin,
    k8s_tools: K8sTools,
    plugin_environment: dict[str, str],
) -> None:
    kube = operator
    create(kube, group())
    task = following_task()
    task["spec"]["targets"][0]["eventHub"]["connection"] = {"secretRef": {"name": "weu-conn"}}
    create(kube, task)
    eventually(
        lambda: (
            (kube.request("GET", f"{RT}/archive")[1].get("status") or {}).get("activeSourceMember") == "weu"
        ),
        timeout=30,
    )

    switched = federator("failover", "orders", "--to", "neu", "--yes").stdout
    assert "Fail over FailoverGroup default/orders (manual mode) to neu" in switched
    assert "archive  source: weu → neu" in switched
    assert "requested: spec.activeMember: (unset) → neu" in switched
    assert (
        "Event Switched: producers and consumers switched from member weu to neu (spec.activeMember)"
        in switched
    )
    assert "task archive reads from neu" in switched
    # The operator's record of the switch: each phase's time (the follower as far as it has seen it).
    assert "measured: switch weu → neu (requested, both): detected → decided " in switched
    assert ", decided → endpoints published " in switched
    assert switched.rstrip().endswith("done: producers and consumers use neu")
    found = kube.request("GET", f"{GROUPS}/orders")[1]
    assert found["spec"]["activeMember"] == "neu" and found["status"]["phase"] == "FailedOver"

    # A message left on the secondary: consumers stay there until it is consumed.
    with ServiceBusClient.from_connection_string(members["neu"].connection_string()) as bus:
        with bus.get_queue_sender("orders") as sender:
            sender.send_messages(ServiceBusMessage("left on neu"))
        proc = plugin_process(k8s_tools.kubectl, plugin_environment, "failback", "orders", "--yes")
        try:
            assert proc.stdout is not None
            seen = read_until(proc.stdout, "draining neu: orders still hold messages", timeout=60)
            assert "consumers  neu (orders-neu.servicebus.windows.net)  →  weu, once neu is drained" in seen
            assert "phase FailingBack: producers on weu, consumers on neu" in seen
            with bus.get_queue_receiver("orders", max_wait_time=5) as receiver:
                for message in receiver.receive_messages(max_message_count=1, max_wait_time=5):
                    receiver.complete_message(message)
            out, err = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert proc.returncode == 0, err
    rest = seen + out
    assert "Event FailbackComplete" in rest and "drained" in rest
    assert "task archive reads from weu" in rest
    assert "measured: switch neu → weu (drained, consumers): detected → decided " in rest
    assert rest.rstrip().endswith("done: producers and consumers use weu")
    assert kube.request("GET", f"{GROUPS}/orders")[1]["status"]["phase"] == "Normal"
    assert kube.server_errors() == []
