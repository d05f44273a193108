"""In a cluster a mirror's generated tasks share one Spark application: a ReplicationApplication the mirror
owns, named after it, with the template's JVM settings, unless the template names one."""

from __future__ import annotations

from typing import Any

from federator.planning.mirror import plan_mirror
from federator.validation import validate_object
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec


def _spec(runtime: dict[str, Any] | None = None) -> ServiceBusMirrorSpec:
    members = [
        {"name": m, "connection": {"secretRef": {"name": f"{m}-conn"}}, "management": {"dataPlane": {}}}
        for m in ("a", "b")
    ]
    template = {"taskTemplate": {"runtime": runtime}} if runtime else {}
    return ServiceBusMirrorSpec.model_validate(
        {"pattern": "allActive", "topicName": "orders", "members": members, **template}
    )


def test_the_mirror_owns_an_application_with_the_templates_jvm_settings_and_its_tasks_name_it() -> None:
    runtime = {"launcher": "apache", "executor": {"instances": 3}, "triggerIntervalSeconds": 5}
    plan = plan_mirror(
        name="orders", namespace="shop", spec=_spec(runtime), uid="m-1", shared_application=True
    )
    application = plan.application
    assert application is not None
    assert application["kind"] == "ReplicationApplication"
    assert (application["metadata"]["name"], application["metadata"]["namespace"]) == ("orders", "shop")
    assert application["metadata"]["ownerReferences"][0]["uid"] == "m-1"
    assert application["spec"] == {"launcher": "apache", "executor": {"instances": 3}}
    assert validate_object(application)[1] == []
    for task in plan.tasks:
        assert task["spec"]["runtime"] == {"applicationRef": {"name": "orders"}, "triggerIntervalSeconds": 5}
        assert validate_object(task)[1] == [], task["metadata"]["name"]
        ReplicationTaskSpec.model_validate(task["spec"])


def test_a_template_that_names_an_application_gets_no_application_of_the_mirrors() -> None:
    runtime = {"applicationRef": {"name": "fleet"}}
    plan = plan_mirror(name="orders", namespace="shop", spec=_spec(runtime), shared_application=True)
    assert plan.application is None
    assert {t["spec"]["runtime"]["applicationRef"]["name"] for t in plan.tasks} == {"fleet"}


def test_local_mode_s_plan_keeps_the_tasks_as_they_are() -> None:
    plan = plan_mirror(name="orders", namespace="shop", spec=_spec({"executor": {"instances": 2}}))
    assert plan.application is None
    assert all(t["spec"]["runtime"] == {"executor": {"instances": 2}} for t in plan.tasks)
