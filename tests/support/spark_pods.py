"""The driver and executor pod templates inside a rendered SparkApplication, in one shape for both
launchers: `{"metadata": {labels, annotations}, "spec": PodSpec}` per role."""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
ROLES = ("driver", "executor")


def pod_templates(launcher: str, app: Obj) -> dict[str, Obj]:
    """Role → the pod template Spark starts that role's pods from."""
    spec = app["spec"]
    if launcher == "apache":
        return {role: spec[f"{role}Spec"]["podTemplateSpec"] for role in ROLES}
    # kubeflow: labels and annotations reach the pods through Spark settings, the rest through `template`.
    return {
        role: {
            "metadata": {
                "labels": spec[role].get("labels", {}),
                "annotations": spec[role].get("annotations", {}),
            },
            "spec": spec[role]["template"]["spec"],
        }
        for role in ROLES
    }


def main_container(template: Obj) -> Obj:
    """The Spark container (a template has exactly one)."""
    containers: list[Obj] = template["spec"]["containers"]
    assert len(containers) == 1, [c["name"] for c in containers]
    return containers[0]
