"""A shared application's driver reads its members' task configs through the API server, with its pod's
ServiceAccount token: in every namespace the chart prepares for Spark, the operator's rendering of such an
application runs its driver under the ServiceAccount the chart binds to the Spark driver's Role, and that
Role grants exactly the requests the driver makes for its configs (a list and a watch of the ConfigMaps
its selector names, in its own namespace). Executors get no token to make them with. The same holds for a
task of its own that follows a FailoverGroup, whose host watches its one ConfigMap (planning/follower.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from chart_support import MATRIX, Render, of_kind

from federator.planning.application import plan_application
from federator.planning.follower import plan_task
from federator.planning.following import resolve_following
from federator.planning.launchers import LAUNCHERS, render_spark_application
from federator.settings import OperatorSettings
from federator_contract.api.replicationapplication import ReplicationApplicationSpec
from federator_contract.api.replicationtask import ReplicationTaskSpec
from support.rbac import Triple, granted, needed
from support.spark_pods import pod_templates


def _shared_app(namespace: str, launcher: str) -> dict[str, Any]:
    spec = ReplicationApplicationSpec.model_validate({"launcher": launcher})
    plan = plan_application(
        name="fleet", namespace=namespace, spec=spec, members=[], settings=OperatorSettings()
    )
    return render_spark_application(plan.launcher, plan.spark_app)


FOLLOWER_SPEC = {
    "source": {"eventHub": {"connection": {"failoverGroupRef": {"name": "g"}}, "eventHubName": "in"}},
    "targets": [
        {"name": "t", "eventHub": {"connection": {"secretRef": {"name": "out"}}, "eventHubName": "o"}}
    ],
}
GROUP = {
    "spec": {"members": [{"name": "a", "endpoint": "a.example", "connection": {"secretRef": {"name": "a"}}}]},
    "status": {"producerMember": "a", "consumerMember": "a"},
}


def _follower_host(namespace: str, launcher: str) -> dict[str, Any]:
    spec = ReplicationTaskSpec.model_validate({**FOLLOWER_SPEC, "runtime": {"launcher": launcher}})
    following = resolve_following(spec, {"g": GROUP})
    plan = plan_task(
        name="fleet",
        namespace=namespace,
        spec=following.spec,
        settings=OperatorSettings(),
        following=following,
    )
    return render_spark_application(plan.launcher, plan.spark_app)


# A shared application, and a following task's own host: each driver's selector.
DRIVERS: dict[str, tuple[Callable[[str, str], dict[str, Any]], str]] = {
    "shared": (_shared_app, "federator.io/application=fleet"),
    "follower": (_follower_host, "federator.io/task-host=fleet"),
}


def _config_requests(app: dict[str, Any], launcher: str, selector: str) -> set[Triple]:
    """What the driver asks the API server for its task configs, from the arguments it is given."""
    args = app["spec"]["arguments"] if launcher == "kubeflow" else app["spec"]["driverArgs"]
    path = f"/api/v1/namespaces/{app['metadata']['namespace']}/configmaps"
    assert args[args.index("--task-configmaps") + 1] == selector
    return {need for watch in (False, True) if (need := needed("GET", path, watch)) is not None}


@pytest.mark.parametrize("driver", sorted(DRIVERS))
@pytest.mark.parametrize("name", ["defaults", "several-namespaces", "all-namespaces"])
@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_the_shared_driver_may_read_its_members_configs_and_its_executors_may_not(
    render: Render, name: str, launcher: str, driver: str
) -> None:
    rendered, selector = DRIVERS[driver]
    manifests = render(MATRIX[name])
    spark_roles = [r for r in of_kind(manifests, "Role") if r["metadata"]["name"] == "federator-spark"]
    assert spark_roles, "the chart prepares a namespace for Spark"
    bindings = {
        b["metadata"]["namespace"]: b
        for b in of_kind(manifests, "RoleBinding")
        if b["metadata"]["name"] == "federator-spark"
    }
    for role in spark_roles:
        namespace = role["metadata"]["namespace"]
        app = rendered(namespace, launcher)
        templates = pod_templates(launcher, app)
        account = templates["driver"]["spec"]["serviceAccountName"]
        subjects = bindings[namespace]["subjects"]
        assert {"kind": "ServiceAccount", "name": account, "namespace": namespace} in subjects
        requests = _config_requests(app, launcher, selector)
        assert requests == {("", "configmaps", "list"), ("", "configmaps", "watch")}
        assert requests <= granted(role["rules"]), f"the Spark driver's Role in {namespace}"
        assert templates["driver"]["spec"]["automountServiceAccountToken"] is True
        assert templates["executor"]["spec"]["automountServiceAccountToken"] is False
