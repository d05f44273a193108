"""Kubeflow spark-operator: `sparkoperator.k8s.io/v1beta2` SparkApplication."""

from __future__ import annotations

from typing import Any

from federator.planning.launchers.pods import secret_env, volume_mounts, volumes
from federator.planning.task import SparkAppPlan, child_meta

API_VERSION = "sparkoperator.k8s.io/v1beta2"
KIND = "SparkApplication"
PLURAL = "sparkapplications"


def render(plan: SparkAppPlan) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "labels": dict(plan.labels),
        "env": secret_env(plan),
        "volumeMounts": volume_mounts(plan),
    }
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
            "sparkConf": dict(plan.spark_conf),
            # A stream never completes: restart it whenever it stops, with a pause between attempts.
            "restartPolicy": {
                "type": "Always",
                "onFailureRetryInterval": 10,
                "onSubmissionFailureRetryInterval": 20,
            },
            "volumes": volumes(plan),
            "driver": {
                **pod,
                "cores": plan.driver.cores,
                "memory": plan.driver.memory,
                "serviceAccount": plan.service_account,
                "annotations": dict(plan.annotations),
                "ports": [{"name": "metrics", "containerPort": plan.metrics_port, "protocol": "TCP"}],
            },
            "executor": {
                **pod,
                "instances": plan.executor_instances,
                "cores": plan.executor.cores,
                "memory": plan.executor.memory,
            },
        },
    }
