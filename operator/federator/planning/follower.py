"""A task of its own that follows a FailoverGroup, in a cluster: a Spark application that runs the host
(`federator_spark.host`) for that one task, so that a group's switch restarts only its query (the JVM,
its Python workers and the pods go on), where a Spark application reading a mounted config would restart
whole (15-30 s before it reads again).

It is a shared application with one member (planning/application.py): the driver watches the task's
ConfigMap through the API server (`--task-configmaps federator.io/task-host=<task>`, a label only that
ConfigMap carries) with its pod's ServiceAccount token, the pods carry the Secret keys of every member of
the followed groups (optional for the kubelet: the pass checks those of the members used now), and
nothing in the Spark application names the member used now. A switch then rewrites the ConfigMap only.
Its pods are labelled as the application they are (`federator.io/application: <task>`), so the operator
reads the task's status where it reads a shared member's (`/tasks/<namespace>/<task>/status`).

A task that follows no group keeps its Spark application as before (planning/task.py). A task that starts
or stops following moves between the two forms with one restart of its Spark application."""

from __future__ import annotations

import dataclasses
from typing import Unpack

from federator.planning.application import HOST_APPLICATION_FILE, host_arguments
from federator.planning.following import ANNOTATION
from federator.planning.task import (
    APPLICATION_LABEL,
    TaskArguments,
    TaskPlan,
    app_spark_conf,
    plan_replication_task,
)
from federator_contract.api.replicationapplication import MEMBER_AS_A_TASK_ALONE

TASK_HOST_LABEL = "federator.io/task-host"
"""On the task ConfigMap of a task its own host runs: the host selects it by this label."""


def task_host_selector(task: str) -> str:
    """The label selector of the one task ConfigMap a task's own host runs."""
    return f"{TASK_HOST_LABEL}={task}"


def hosts_itself(plan: TaskPlan) -> bool:
    """Whether the plan's Spark application is a host of its task (its driver reads the ConfigMap through
    the API server), rather than a driver of the mounted config."""
    return plan.spark_app.config_map is None


def plan_task(**arguments: Unpack[TaskArguments]) -> TaskPlan:
    """The children of a task with a Spark application of its own (`plan_replication_task`); in a cluster,
    a task that follows a FailoverGroup gets a host of its own. Raises PlanningError as
    `plan_replication_task` does."""
    plan = plan_replication_task(**arguments)
    following = arguments.get("following")
    if following is None or not following.members or arguments.get("local"):
        return plan
    name, settings = arguments["name"], arguments["settings"]
    config_map = plan.config_map
    metadata = config_map["metadata"]
    app = dataclasses.replace(
        plan.spark_app,
        # Not on the Spark application: a ReplicationApplication's pass deletes its own by this label.
        pod_only_labels={APPLICATION_LABEL: name},
        # The member used now is the task config's business: a switch must not change the application.
        annotations={k: v for k, v in plan.spark_app.annotations.items() if k != ANNOTATION},
        main_file=HOST_APPLICATION_FILE,
        arguments=host_arguments(task_host_selector(name), settings),
        spark_conf=app_spark_conf(arguments["spec"].runtime.spark_conf, MEMBER_AS_A_TASK_ALONE),
        config_map=None,
        secrets=sorted({*plan.spark_app.secrets, *following.member_secrets}),
        optional_references=True,
    )
    hosted = {**metadata, "labels": {**metadata["labels"], TASK_HOST_LABEL: name}}
    return dataclasses.replace(plan, config_map={**config_map, "metadata": hosted}, spark_app=app)
