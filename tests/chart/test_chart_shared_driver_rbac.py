"""A shared application's driver reads its members' task configs through the API server, with its pod's
ServiceAccount token: in every namespace the chart prepares for Spark, the operator's rendering of such an
application runs its driver under the ServiceAccount the chart binds to the Spark driver's Role, and that
Role grants exactly the requests the driver makes for its configs (a list and a watch of the ConfigMaps
its selector names, in its own namespace). Executors get no token to make them with."""

from __future__ import annotations

from typing import Any

import pytest
from chart_support import MATRIX, Render, of_kind

from federator.planning.application import plan_application
from federator.planning.launchers import LAUNCHERS, render_spark_application
from federator.settings import OperatorSettings
from federator_contract.api.replicationapplication import ReplicationApplicationSpec
from support.rbac import Triple, granted, needed
from support.spark_pods import pod_templates


def _shared_app(namespace: str, launcher: str) -> dict[str, Any]:
    spec = ReplicationApplicationSpec.model_validate({"launcher": launcher})
    plan = plan_application(
        name="fleet", namespace=namespace, spec=spec, members=[], settings=OperatorSettings()
    )
    return render_spark_application(plan.launcher, plan.spark_app)


def _config_requests(app: dict[str, Any], launcher: str) -> set[Triple]:
    """What the driver asks the API server for its task configs, from the arguments it is given."""
    args = app["spec"]["arguments"] if launcher == "kubeflow" else app["spec"]["driverArgs"]
    selector = args[args.index("--task-configmaps") + 1]
    path = f"/api/v1/namespaces/{app['metadata']['namespace']}/configmaps"
    assert selector == "federator.io/application=fleet"
    return {need for watch in (False, True) if (need := needed("GET", path, watch)) is not None}


@pytest.mark.parametrize("name", ["defaults", "several-namespaces", "all-namespaces"])
@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
def test_the_shared_driver_may_read_its_members_configs_and_its_executors_may_not(
    render: Render, name: str, launcher: str
) -> None:
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
        app = _shared_app(namespace, launcher)
        templates = pod_templates(launcher, app)
        account = templates["driver"]["spec"]["serviceAccountName"]
        subjects = bindings[namespace]["subjects"]
        assert {"kind": "ServiceAccount", "name": account, "namespace": namespace} in subjects
        requests = _config_requests(app, launcher)
        assert requests == {("", "configmaps", "list"), ("", "configmaps", "watch")}
        assert requests <= granted(role["rules"]), f"the Spark driver's Role in {namespace}"
        assert templates["driver"]["spec"]["automountServiceAccountToken"] is True
        assert templates["executor"]["spec"]["automountServiceAccountToken"] is False
