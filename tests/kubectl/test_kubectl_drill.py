"""`kubectl federator drill GROUP`: a group not healthy enough is refused with the reasons and nothing
changes; a healthy one gets a planned switch to its next member and back, each waited for until the
operator's record of it is complete, and a report of each phase's time and what it left behind. The
operator's status writes are simulated as the FailoverGroup controller makes them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from typing import Any

import pytest
import test_failover
from plugin_helpers import API, MERGE, create, namespaces, one_line_error, plugin_process
from plugin_seeds import cond, following_task, group, ready, recent, task_status

from federator.kubectl.drill_checks import readiness
from support.kube import K8sTools, KubeServer
from support.polling import eventually
from support.resources import ROOT

GROUPS = f"{API}/namespaces/default/failovergroups"
DOC = ROOT / "docs" / "kubectl-plugin.md"
DRILL = "$ kubectl federator drill orders --yes                 # 100 columns"


def healthy_status(**extra: Any) -> dict[str, Any]:
    """FailoverGroup orders on its primary weu, both members probed healthy, the replication into neu
    caught up, the last switch measured to its end."""
    return {
        "observedGeneration": 1,
        "conditions": ready("Active", "producers and consumers use member weu; endpoints published"),
        "phase": "Normal",
        "producerMember": "weu",
        "consumerMember": "weu",
        "requestedMember": "",
        "switchRequest": "",
        "probes": [
            {"member": m, "healthy": True, "consecutiveFailures": 0, "lastProbeTime": recent()}
            for m in ("weu", "neu")
        ],
        "replication": [{"member": "neu", "tasks": ["copy-to-neu"], "eventsBehind": 0, "rpoSeconds": 0}],
        **extra,
    }


def follower(member: str = "weu", **extra: Any) -> dict[str, Any]:
    task = following_task()
    conditions = [*ready("Running"), cond("SparkApplicationRunning", "True", "Running")]
    task["status"] = {**task_status(1.5, 4200, conditions, activeSourceMember=member), **extra}
    return task


def placed(**status: Any) -> dict[str, Any]:
    found = group()
    found["metadata"]["generation"] = 1
    found["status"] = healthy_status(**status)
    return found


def test_a_healthy_group_is_drilled_to_its_next_member_and_back() -> None:
    found = readiness(placed(), [follower()])
    assert (found.home, found.away, found.refusals) == ("weu", "neu", [])
    assert "back to the primary weu is a failback: consumers follow once neu is drained" in found.notes[0]


@pytest.mark.parametrize(
    ("status", "task", "refusal"),
    [
        ({"conditions": ready("Active")[1:]}, follower(), "the group is not Ready (Unknown NotReconciled)"),
        (
            {
                "probes": [
                    {"member": "weu", "healthy": True},
                    {"member": "neu", "healthy": False, "consecutiveFailures": 3, "message": "refused"},
                ]
            },
            follower(),
            "member neu fails its probes (3 in a row): refused",
        ),
        ({"probes": [{"member": "weu", "healthy": True}]}, follower(), "member neu has not been probed yet"),
        (
            {"phase": "FailingBack", "producerMember": "weu", "consumerMember": "neu"},
            follower(),
            "a switch is under way: producers on weu, consumers on neu (phase FailingBack)",
        ),
        (
            {"pendingSwitch": {"member": "neu", "since": "2026-11-29T14:00:00Z"}},
            follower(),
            "a planned switch to neu is waiting for the replication",
        ),
        ({"switchRequest": "t1"}, follower(), "a switch request has not been acted on yet"),
        (
            {
                "switches": [
                    {
                        "source": "neu",
                        "target": "weu",
                        "roles": "both",
                        "cause": "requested",
                        "detected": "2026-11-29T14:00:00Z",
                        "decided": "2026-11-29T14:00:01Z",
                        "decidedSeconds": 1.0,
                        "complete": False,
                    }
                ]
            },
            follower(),
            "the last switch (neu → weu) is still being measured",
        ),
        ({}, follower("neu"), "follower archive reads from neu, not from weu"),
        ({}, follower(lastBatchTime="2026-11-20T10:00:00Z"), "follower archive is not flowing"),
        (
            {"replication": [{"member": "neu", "tasks": ["copy-to-neu"]}]},
            follower(),
            "the replication into neu has not measured its lag yet (copy-to-neu)",
        ),
    ],
)
def test_a_group_not_healthy_enough_is_refused_with_the_reason(
    status: dict[str, Any], task: dict[str, Any], refusal: str
) -> None:
    found = readiness(placed(**status), [task])
    assert any(refusal in r for r in found.refusals), found.refusals


def test_an_automatic_failover_in_force_is_refused() -> None:
    held = placed(phase="FailedOver", producerMember="neu", consumerMember="neu")
    held["spec"]["mode"] = "automatic"
    refusals = readiness(held, [follower("neu")]).refusals
    assert refusals == [
        "an automatic failover holds the group on neu while its spec asks for weu: fail back first "
        "(`kubectl federator failback`), or request neu explicitly"
    ]
    held["spec"]["mode"] = "manual"  # manual mode: the spec is where the operator keeps it
    assert readiness(held, [follower("neu")]).refusals == []


def test_a_refused_drill_exits_2_and_changes_nothing(
    kube: KubeServer, k8s_tools: K8sTools, plugin_environment: dict[str, str]
) -> None:
    failing = {"member": "neu", "healthy": False, "consecutiveFailures": 4, "message": "connection refused"}
    create(kube, group(), healthy_status(probes=[{"member": "weu", "healthy": True}, failing]))
    done = _drill(k8s_tools, plugin_environment)
    assert done.returncode == 2, done.stderr
    assert "refused: the group is not healthy enough to drill" in done.stdout
    assert "  - member neu fails its probes (4 in a row): connection refused" in done.stdout
    as_json = _drill(k8s_tools, plugin_environment, "-o", "json")
    assert as_json.returncode == 2
    report = json.loads(as_json.stdout)
    assert (report["outcome"], report["switches"]) == ("refused", [])
    assert report["reasons"] == ["member neu fails its probes (4 in a row): connection refused"]
    assert kube.emulator.times("PATCH", f"{GROUPS}/orders") == 0


def test_a_drill_switches_away_and_back_and_reports_each_phase(
    kube: KubeServer, k8s_tools: K8sTools, plugin_environment: dict[str, str]
) -> None:
    create(kube, group(), healthy_status())
    counting = follower(eventsSkippedAfterSwitch=0, eventsFoundWritten=0)
    create(kube, counting, counting["status"])
    env = {**plugin_environment, "COLUMNS": "100", "NO_COLOR": "1"}
    proc = plugin_process(k8s_tools.kubectl, env, "drill", "orders", "--yes")
    out, err = act_as_operator(kube, proc, [OPERATOR_RECORDS[0], OPERATOR_RECORDS[1]])
    assert proc.returncode == 0, out + err
    assert transcript(out) == documented(), "docs/kubectl-plugin.md's drill transcript is not this output"
    spec = kube.request("GET", f"{GROUPS}/orders")[1]["spec"]
    assert spec["activeMember"] == "weu" and spec["switching"]["planned"] is False, "forced again after it"


def test_a_switch_that_leaves_events_behind_fails_the_drill(
    kube: KubeServer, k8s_tools: K8sTools, plugin_environment: dict[str, str]
) -> None:
    create(kube, group(), healthy_status())
    create(kube, follower(), follower()["status"])
    # The replication did not catch up in plannedTimeoutSeconds (300): the operator switched anyway.
    late = {"cause": "plannedTimeout", "decidedSeconds": 300.0, "eventsLeftBehind": 17, "rpoSeconds": 2.5}
    timed_out = [{**OPERATOR_RECORDS[0][0], **late}]
    proc = plugin_process(k8s_tools.kubectl, plugin_environment, "drill", "orders", "--yes", "-o", "json")
    out, err = act_as_operator(kube, proc, [timed_out, OPERATOR_RECORDS[1]])
    assert proc.returncode == 3, err
    report = json.loads(out)
    assert report["outcome"] == "failed"
    assert report["reasons"] == [
        "switch 1 (weu → neu, both): the planned switch timed out waiting for the replication and switched "
        "anyway",
        "switch 1 (weu → neu, both): RPO not 0: 17 events left behind (2.5s), an estimate",
    ]
    first = report["switches"][0]["records"][0]
    assert first["decidedSeconds"] == 300.0
    assert [(f["task"], f["flowingSeconds"]) for f in first["followers"]] == [("archive", 2.4)]
    assert first["detectedToLastFollowerSeconds"] == 302.4
    assert report["duplicates"] == [{"task": "archive", "skippedAfterSwitch": None, "foundWritten": None}]


def test_a_switch_that_does_not_hold_fails_the_drill_and_the_switches_are_forced_again(
    kube: KubeServer, k8s_tools: K8sTools, plugin_environment: dict[str, str]
) -> None:
    create(kube, group(), healthy_status())
    create(kube, follower(), follower()["status"])
    proc = plugin_process(k8s_tools.kubectl, plugin_environment, "drill", "orders", "--yes")
    out, err = act_as_operator(kube, proc, [[]], held_on="weu")
    assert proc.returncode == 3, out + err
    assert "switch 1: the switch to neu did not hold: the group is on weu (Normal)" in out
    assert "switch 2" not in out, "the drill stops at the first switch that fails"
    assert out.rstrip().endswith(
        "failed\n  - switch 1: the switch to neu did not hold: the group is on weu (Normal)"
    )
    spec = kube.request("GET", f"{GROUPS}/orders")[1]["spec"]
    assert spec["switching"]["planned"] is False


def test_a_group_that_does_not_exist_is_an_error_not_a_refusal(
    k8s_tools: K8sTools, plugin_environment: dict[str, str], kube: KubeServer
) -> None:
    namespaces(kube, "default")
    done = _drill(k8s_tools, plugin_environment)
    one_line_error(done, "FailoverGroup orders not found in namespace default")


def _record(
    source: str, target: str, roles: str, cause: str, decided: float, **figures: Any
) -> dict[str, Any]:
    return {
        "source": source,
        "target": target,
        "roles": roles,
        "cause": cause,
        "detected": "2026-11-29T14:00:00Z",
        "decided": f"2026-11-29T14:0{int(decided)}:00Z",
        "complete": True,
        **figures,
    }


# What the FailoverGroup controller records for the drill's switches: a planned one to neu, then the
# failback to weu (producers once neu's replication caught up, consumers once neu is drained).
OPERATOR_RECORDS = [
    [
        _record(
            "weu",
            "neu",
            "both",
            "planned",
            1,
            decidedSeconds=0.8,
            publishedSeconds=0.1,
            followers=[{"task": "archive", "flowingSeconds": 2.4}],
        ),
    ],
    [
        _record("neu", "weu", "producers", "planned", 2, decidedSeconds=0.6, publishedSeconds=0.1),
        _record(
            "neu",
            "weu",
            "consumers",
            "drained",
            3,
            decidedSeconds=1.9,
            publishedSeconds=0.1,
            followers=[{"task": "archive", "flowingSeconds": 3.1}],
        ),
    ],
]


def act_as_operator(
    kube: KubeServer,
    proc: subprocess.Popen[str],
    records: list[list[dict[str, Any]]],
    held_on: str | None = None,
) -> tuple[str, str]:
    """Act on each new request as the controller does: the group rests on the member asked for (or on
    `held_on`, as when a switch is undone), the request is recorded as acted on, and the switch's records
    are written complete."""
    written: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            found = kube.request("GET", f"{GROUPS}/orders")[1]
            spec, status = found["spec"], found["status"]
            asked = (spec.get("activeMember") or "", spec.get("switchRequest") or "")
            if asked != (status.get("requestedMember") or "", status.get("switchRequest") or ""):
                written += records.pop(0)
                acted = switched(asked, found["metadata"]["generation"], written, held_on or asked[0])
                write_status(kube, acted)
            time.sleep(0.2)
        return proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def switched(
    asked: tuple[str, str], generation: int, records: list[dict[str, Any]], member: str
) -> dict[str, Any]:
    requested, token = asked
    other = "neu" if member == "weu" else "weu"
    return {
        "observedGeneration": generation,
        "phase": "Normal" if member == "weu" else "FailedOver",
        "producerMember": member,
        "consumerMember": member,
        "requestedMember": requested,
        "switchRequest": token,
        "switches": records,
        "replication": [{"member": other, "tasks": [f"copy-to-{other}"], "eventsBehind": 0, "rpoSeconds": 0}],
    }


def write_status(kube: KubeServer, status: dict[str, Any]) -> None:
    code, body = kube.request("PATCH", f"{GROUPS}/orders/status", {"status": status}, MERGE)
    assert code == 200, body


def _drill(k8s_tools: K8sTools, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(k8s_tools.kubectl), "federator", "drill", "orders", "--yes", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def transcript(out: str) -> str:
    """The docs' block: the command line, then what it printed."""
    text = f"{DRILL}\n{out}"
    if os.environ.get("FEDERATOR_WRITE_TRANSCRIPTS"):  # regenerate the docs' block from this run
        current = DOC.read_text()
        DOC.write_text(current.replace(documented(current), text))
    return text


def documented(current: str | None = None) -> str:
    found = re.search(rf"```\n({re.escape(DRILL)}\n.*?)```", current or DOC.read_text(), re.DOTALL)
    assert found is not None, f"docs/kubectl-plugin.md has no block starting with {DRILL!r}"
    return found.group(1)


# The FailoverGroup controller itself, against two emulator namespaces (test_failover.py's fixtures).
members = test_failover.members
operator = test_failover.operator


@pytest.mark.slow
def test_a_drill_while_the_controller_runs(
    operator: KubeServer, k8s_tools: K8sTools, plugin_environment: dict[str, str]
) -> None:
    kube = operator
    namespaces(kube, "default")
    create(kube, group())

    def probed() -> bool:
        status = kube.request("GET", f"{GROUPS}/orders")[1].get("status") or {}
        return len([p for p in status.get("probes") or [] if p.get("healthy")]) == 2

    eventually(probed, timeout=30)
    done = _drill(k8s_tools, plugin_environment, "--timeout", "60")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "  weu → neu (planned, both)" in done.stdout
    assert "  neu → weu (planned, producers)" in done.stdout
    assert "  neu → weu (drained, consumers)" in done.stdout
    # No ReplicationTask copies between the members here: the report does not claim an RPO of 0.
    assert "    RPO                            not measured (no ReplicationTask copies into the member)" in (
        done.stdout
    )
    assert done.stdout.rstrip().endswith("passed: 2 planned switches measured, RPO not measured")
    found = kube.request("GET", f"{GROUPS}/orders")[1]
    assert found["status"]["producerMember"] == found["status"]["consumerMember"] == "weu"
    assert found["spec"]["switching"]["planned"] is False
