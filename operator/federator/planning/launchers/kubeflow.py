"""Kubeflow spark-operator: `sparkoperator.k8s.io/v1beta2` SparkApplication."""

from __future__ import annotations

from typing import Any

from federator.planning.launchers.pods import DRIVER_CONTAINER, EXECUTOR_CONTAINER, metrics_port, pod_spec
from federator.planning.launchers.rpc import rpc_spark_conf
from federator.planning.task import SparkAppPlan, child_meta

API_VERSION = "sparkoperator.k8s.io/v1beta2"
KIND = "SparkApplication"
PLURAL = "sparkapplications"


def render(plan: SparkAppPlan) -> dict[str, Any]:
    # Pod details go in pod templates, which Spark itself applies: the spark-operator's own pod fields
    # (env, volumes, securityContext) need its mutating webhook, which skips pods with a template, and a
    # pod the webhook missed would be refused in a namespace that enforces Pod Security "restricted".
    pod: dict[str, Any] = {"labels": plan.pod_labels, "serviceAccount": plan.service_account}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": child_meta(plan),
        "spec": {
            "type": "Python",
            "pythonVersion": "3",
            "mode": "cluster",
            "image": plan.image,
            "imagePullPolicy": "IfNotPresent",
            "mainApplicationFile": plan.main_file,
            "arguments": list(plan.arguments),
            "sparkVersion": plan.spark_version,
            "sparkConf": {**plan.spark_conf, **rpc_spark_conf()},
            # A stream never completes: restart it whenever it stops, with a pause between attempts.
            "restartPolicy": {
                "type": "Always",
                "onFailureRetryInterval": 10,
                "onSubmissionFailureRetryInterval": 20,
            },
            "driver": {
                **pod,
                "cores": plan.driver.cores,
                "memory": plan.driver.memory,
                "annotations": dict(plan.annotations),
                "template": {"spec": pod_spec(plan, DRIVER_CONTAINER, [metrics_port(plan)])},
            },
            "executor": {
                **pod,
                "instances": plan.executor_instances,
                "cores": plan.executor.cores,
                "memory": plan.executor.memory,
                "template": {"spec": pod_spec(plan, EXECUTOR_CONTAINER)},
            },
        },
    }
