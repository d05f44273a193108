"""`kubectl federator drill GROUP` reports the duplicates each follower saw over the drill: the change in
its status's counts of events it read again and did not write again (skipped because it had handled them
on the other member; found at the targets already by a replayed batch). A follower whose status has no
such count is said to be not counted, never shown as zero."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from plugin_helpers import API, MERGE, create, plugin_process
from plugin_seeds import following_task, group
from test_kubectl_drill import OPERATOR_RECORDS, act_as_operator, follower, healthy_status

from federator.kubectl.drill_report import Counts, follower_counts
from support.kube import K8sTools, KubeServer

GROUPS = f"{API}/namespaces/default/failovergroups"
TASKS = f"{API}/namespaces/default/replicationtasks"


def counted(skipped: int, found: int) -> dict[str, int]:
    return {"eventsSkippedAfterSwitch": skipped, "eventsFoundWritten": found}


def test_the_counts_are_those_of_the_tasks_whose_source_follows_the_group() -> None:
    other = following_task("elsewhere", group_name="payments")
    other["status"] = counted(5, 5)
    tasks = [follower("weu", **counted(7, 1)), follower(), other]
    tasks[1]["metadata"] = {"name": "uncounted"}
    assert follower_counts("orders", tasks) == {"archive": Counts(7, 1), "uncounted": Counts(None, None)}


def test_the_change_is_unknown_where_a_count_is_unknown_on_either_side() -> None:
    assert Counts(9, 3).since(Counts(7, 3)) == Counts(2, 0)
    assert Counts(9, None).since(Counts(7, 3)) == Counts(2, None)
    assert Counts(9, 3).since(Counts(None, 3)) == Counts(None, 0)
    assert Counts(9, 3).since(None) == Counts(None, None)  # a follower that appeared during the drill


def count_when_switched(kube: KubeServer, status: dict[str, Any]) -> threading.Thread:
    """As a follower's driver does once it reads from neu: its counts move (observed into its status)."""

    def run() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if kube.request("GET", f"{GROUPS}/orders")[1]["spec"].get("activeMember") == "neu":
                code, body = kube.request("PATCH", f"{TASKS}/archive/status", {"status": status}, MERGE)
                assert code == 200, body
                return
            time.sleep(0.1)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_the_drill_reports_each_followers_duplicates_seen_over_it(
    kube: KubeServer, k8s_tools: K8sTools, plugin_environment: dict[str, str]
) -> None:
    create(kube, group(), healthy_status())
    before = follower("weu", **counted(40, 3))
    create(kube, before, before["status"])
    counting = count_when_switched(kube, counted(52, 5))
    proc = plugin_process(k8s_tools.kubectl, plugin_environment, "drill", "orders", "--yes", "-o", "json")
    out, err = act_as_operator(kube, proc, [OPERATOR_RECORDS[0], OPERATOR_RECORDS[1]])
    counting.join(timeout=10)
    assert proc.returncode == 0, out + err
    assert json.loads(out)["duplicates"] == [
        {"task": "archive", "skippedAfterSwitch": 12, "foundWritten": 2}
    ]


def test_a_follower_without_counts_is_not_counted_rather_than_zero(
    kube: KubeServer, k8s_tools: K8sTools, plugin_environment: dict[str, str]
) -> None:
    create(kube, group(), healthy_status())
    create(kube, follower(), follower()["status"])
    env = {**plugin_environment, "COLUMNS": "100", "NO_COLOR": "1"}
    proc = plugin_process(k8s_tools.kubectl, env, "drill", "orders", "--yes")
    out, err = act_as_operator(kube, proc, [OPERATOR_RECORDS[0], OPERATOR_RECORDS[1]])
    assert proc.returncode == 0, out + err
    assert "duplicates seen (read again, not written again)\n    archive" in out
    assert "archive                        not counted (its status has no count of events read twice)" in out
