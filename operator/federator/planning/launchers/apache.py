"""Apache Spark Kubernetes Operator: `spark.apache.org/v1` SparkApplication. Resources go in `sparkConf`,
pod details in pod templates."""

from __future__ import annotations

from typing import Any

from federator.planning.launchers.pods import DRIVER_CONTAINER, EXECUTOR_CONTAINER, metrics_port, pod_spec
from federator.planning.launchers.rpc import rpc_spark_conf
from federator.planning.task import SparkAppPlan, child_meta

API_VERSION = "spark.apache.org/v1"
KIND = "SparkApplication"
PLURAL = "sparkapplications"


def _template(plan: SparkAppPlan, spec: dict[str, Any], annotations: dict[str, str]) -> dict[str, Any]:
    metadata = {"labels": plan.pod_labels, "annotations": annotations}
    return {"podTemplateSpec": {"metadata": metadata, "spec": spec}}


def render(plan: SparkAppPlan) -> dict[str, Any]:
    conf = {
        **plan.spark_conf,
        "spark.kubernetes.container.image": plan.image,
        "spark.kubernetes.authenticate.driver.serviceAccountName": plan.service_account,
        "spark.kubernetes.authenticate.executor.serviceAccountName": plan.service_account,
        "spark.kubernetes.driver.podTemplateContainerName": DRIVER_CONTAINER,
        "spark.kubernetes.executor.podTemplateContainerName": EXECUTOR_CONTAINER,
        "spark.driver.cores": str(plan.driver.cores),
        "spark.driver.memory": plan.driver.memory,
        "spark.executor.instances": str(plan.executor_instances),
        "spark.executor.cores": str(plan.executor.cores),
        "spark.executor.memory": plan.executor.memory,
        **rpc_spark_conf(),
    }
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": child_meta(plan),
        "spec": {
            "pyFiles": plan.main_file,
            "driverArgs": list(plan.arguments),
            "sparkConf": conf,
            "runtimeVersions": {"sparkVersion": plan.spark_version},
            # A stream never completes: restart it always; the counter resets after an hour of health.
            "applicationTolerations": {
                "restartConfig": {
                    "restartPolicy": "Always",
                    "maxRestartAttempts": 1000000,
                    "restartBackoffMillis": 30000,
                    "restartCounterResetMillis": 3600000,
                },
                "resourceRetainPolicy": "OnFailure",
            },
            "driverSpec": _template(
                plan, pod_spec(plan, DRIVER_CONTAINER, [metrics_port(plan)]), dict(plan.annotations)
            ),
            "executorSpec": _template(plan, pod_spec(plan, EXECUTOR_CONTAINER), {}),
        },
    }
