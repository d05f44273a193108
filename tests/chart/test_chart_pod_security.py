"""The operator pod the chart renders (the real `helm template`) passes Pod Security "restricted", control by
control, for every set of values; and the Spark pods the operator then plans run as the uid/gid the chart
states for the Spark image."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from chart_support import MATRIX, Render, one

from federator.planning.launchers import LAUNCHERS, render_spark_application
from federator.planning.task import plan_replication_task
from federator.settings import OperatorSettings
from federator_contract.api.replicationtask import ReplicationTaskSpec
from support.pod_security import RULES, Rule, violations
from support.resources import ROOT
from support.spark_pods import pod_templates


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.name)
def test_the_operator_pod_passes_each_restricted_control(render: Render, rule: Rule) -> None:
    broken = {
        name: problems
        for name, values in MATRIX.items()
        if (problems := rule.check(one(render(values), "Deployment")["spec"]["template"]))
    }
    assert broken == {}, f"Pod Security {rule.name} is broken by the operator pod with values: {broken}"


def _operator_settings(render: Render, values: dict[str, Any]) -> OperatorSettings:
    [container] = one(render(values), "Deployment")["spec"]["template"]["spec"]["containers"]
    return OperatorSettings.from_env({e["name"]: e["value"] for e in container["env"] if "value" in e})


def test_spark_pods_run_as_the_ids_the_chart_states_for_the_spark_image(render: Render) -> None:
    values = {"spark": {"image": {"runAsUser": 1001, "runAsGroup": 2002}}}
    settings = _operator_settings(render, values)
    doc = yaml.safe_load((ROOT / "examples" / "eh-replication-cluster.yaml").read_text(encoding="utf-8"))
    plan = plan_replication_task(
        name="orders",
        namespace="team-a",
        spec=ReplicationTaskSpec.model_validate(doc["spec"]),
        settings=settings,
    )
    for launcher in LAUNCHERS:
        app = render_spark_application(launcher, plan.spark_app)
        for template in pod_templates(launcher, app).values():
            context = template["spec"]["securityContext"]
            assert (context["runAsUser"], context["runAsGroup"]) == (1001, 2002)
            assert violations(template) == []


def test_the_chart_refuses_root_for_the_spark_image(render: Render) -> None:
    with pytest.raises(AssertionError, match="runAsUser"):
        render({"spark": {"image": {"runAsUser": 0}}})
