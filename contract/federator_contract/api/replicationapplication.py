"""ReplicationApplication: one Spark application whose driver runs the queries of many ReplicationTasks.

As Strimzi's KafkaConnect is to its connectors: the application holds what the JVMs need (launcher, image,
identity, resources, Spark settings), each member task what its query needs (source, targets, trigger,
checkpoint). The classes of the JVM's half live here; a task's `spec.runtime` extends them.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator

from federator_contract.api.base import (
    Condition,
    FedModel,
    ObjectStatus,
    ResourceName,
    StatusModel,
    list_map,
)

# Members listed in a ReplicationApplication's status; `memberCount` counts them all.
MAX_LISTED_MEMBERS = 256


class ApplicationRef(FedModel):
    """A ReplicationApplication in the task's own namespace: a tenant's tasks join only an application of
    their namespace, so they run with its service account and no other."""

    name: ResourceName
    """Name of the ReplicationApplication."""


class SparkResources(FedModel):
    """Resources of a Spark driver or executor."""

    cores: Annotated[int, Field(ge=1, le=64)] = 1
    """CPU cores. Default: 1."""
    memory: Annotated[str, StringConstraints(pattern=r"^[1-9][0-9]*[kmgt]$")] = "1g"
    """Memory in Spark notation (`512m`, `2g`). Default: 1g."""


class ExecutorResources(SparkResources):
    """Resources and count of Spark executors."""

    instances: Annotated[int, Field(ge=1, le=256)] = 1
    """Number of executors. Default: 1."""


# Spark settings that carry credentials (storage account keys, SAS tokens, passwords).
_CREDENTIAL_CONF = re.compile(r"(password|secret|token|credential|sas|account\.key|\.key$)", re.IGNORECASE)

MEMBER_SETTING_PREFIX = "spark.federator.member."
MEMBER_EVENTS_SETTING = "spark.federator.member.maxEventsPerTrigger"
MEMBER_TRIGGER_SETTING = "spark.federator.member.triggerIntervalMs"
# How a shared driver treats its members (federator_spark.scheduling): the unit of each, what 0 means.
MEMBER_SETTINGS = {
    MEMBER_EVENTS_SETTING: ("events", "no bound"),
    MEMBER_TRIGGER_SETTING: ("milliseconds", "none"),
}
MEMBER_AS_A_TASK_ALONE = {MEMBER_EVENTS_SETTING: "0", MEMBER_TRIGGER_SETTING: "0"}
"""What a host of one task sets (a follower's own host, local mode's task alone): its batches neither bounded
nor paced for others, so a backlog left on a member is caught up in one batch after a switch, not in
batches of 2,000 that each pay a batch's fixed cost; the task's own `maxEventsPerTrigger` and trigger
interval stand."""


def member_setting(name: str, value: str) -> int:
    """The whole number the member setting ``name`` gives (0 or more); ValueError naming it otherwise."""
    unit, zero = MEMBER_SETTINGS[name]
    try:
        number = int(value.strip())
    except ValueError:
        raise ValueError(f"{name}: a whole number of {unit} (0: {zero}), got {value!r}") from None
    if number < 0:
        raise ValueError(f"{name}: 0 ({zero}) or more {unit}, got {number}")
    return number


class SparkApplicationSettings(FedModel):
    """What a Spark application's JVMs need: launcher, image, identity, resources and Spark settings."""

    launcher: Literal["kubeflow", "apache"] | None = None
    """`kubeflow` (spark-operator `sparkoperator.k8s.io/v1beta2`) or `apache` (Apache Spark Kubernetes
    Operator `spark.apache.org/v1`). Default: the operator's setting."""
    image: Annotated[str, StringConstraints(max_length=512)] | None = None
    """Spark application image. Default: the operator's setting."""
    service_account_name: ResourceName | None = None
    """Service account of the driver and executor pods. Default: the operator's (Helm value
    `spark.serviceAccount.name`, `federator-spark`). With `workloadIdentity` connections it is the identity
    the pods sign in as: annotate it with `azure.workload.identity/client-id` (the operator checks it) and
    bind it to the Spark driver's Role, which lets the driver start its executors."""
    driver: SparkResources = SparkResources()
    """Driver resources."""
    executor: ExecutorResources = ExecutorResources()
    """Executor resources."""
    spark_conf: (
        Annotated[dict[str, Annotated[str, StringConstraints(max_length=4096)]], Field(max_length=128)] | None
    ) = None
    """Extra Spark configuration (no credentials: they would be visible in the Spark application). It
    overrides the app's own defaults: `spark.sql.session.timeZone` UTC, and
    `spark.driver.defaultJavaOptions` / `spark.executor.defaultJavaOptions`
    `-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xms32m` (the JVM's quick compiler only, a compact heap;
    `extraJavaOptions` add to them). A shared application's members, unless they set their own
    `runtime.maxEventsPerTrigger` or `runtime.triggerIntervalSeconds`, read at most
    `spark.federator.member.maxEventsPerTrigger` events a batch (default `"1000"`) and start a batch at
    most every `spark.federator.member.triggerIntervalMs` milliseconds (default `"500"`); `"0"` lifts
    either."""

    @field_validator("spark_conf")
    @classmethod
    def _no_credentials_in_conf(cls, conf: dict[str, str] | None) -> dict[str, str] | None:
        for key, value in (conf or {}).items():
            if _CREDENTIAL_CONF.search(key):
                raise ValueError(
                    f"{key!r} looks like a credential; Spark settings are visible in the Spark "
                    "application: mount a Secret instead"
                )
            if key.startswith(MEMBER_SETTING_PREFIX):
                if key not in MEMBER_SETTINGS:
                    known = ", ".join(sorted(MEMBER_SETTINGS))
                    raise ValueError(f"{key!r} is not a setting of a shared application's members ({known})")
                member_setting(key, value)
        return conf


# The fields a member task leaves to its application, Python name → wire name.
APPLICATION_FIELDS: dict[str, str] = {
    name: info.alias or name for name, info in SparkApplicationSettings.model_fields.items()
}


class Scheduling(FedModel):
    """How the member tasks' queries share the driver's executors."""

    mode: Literal["FAIR", "FIFO"] = "FAIR"
    """`FAIR`: the batches of member tasks keeping up run ahead of those of members catching up a backlog
    (two Spark scheduler pools, each in the order batches were submitted), so a busy task's batches do not
    hold the others' back. `FIFO`: batches run in the order they were submitted. Default: FAIR."""


class ReplicationApplicationSpec(SparkApplicationSettings):
    """Desired state of a ReplicationApplication: the Spark application its member tasks share. A task joins
    it with `spec.runtime.applicationRef`; a ServiceBusMirror's generated tasks join the one named in
    `spec.taskTemplate.runtime.applicationRef`, or else an application of the mirror's own."""

    scheduling: Scheduling = Scheduling()
    """How the member tasks share the executors."""


class SparkApplicationStatus(StatusModel):
    """The Spark application that runs the task (or, for a ReplicationApplication, its member tasks)."""

    api_version: str
    """API version of the Spark application resource."""
    name: str
    """Name of the Spark application resource."""
    state: str = ""
    """State reported by the Spark operator (e.g. `RUNNING`, `RunningHealthy`)."""


class ApplicationMember(StatusModel):
    """A ReplicationTask that runs in the application."""

    name: str
    """Name of the ReplicationTask."""
    ready: bool = False
    """Whether the task's query is running (the task's Ready condition is True)."""


class ReplicationApplicationStatus(ObjectStatus):
    """Observed state of a ReplicationApplication. Written by the operator only."""

    conditions: Annotated[list[Condition], Field(max_length=16, json_schema_extra=list_map("type"))] = []
    """`Ready`, `Reconciling`, `Stalled`."""
    members: Annotated[list[ApplicationMember], Field(max_length=MAX_LISTED_MEMBERS)] = []
    """The member tasks, sorted by name (the first 256)."""
    member_count: Annotated[int, Field(ge=0)] = 0
    """How many ReplicationTasks name this application."""
    spark_application: SparkApplicationStatus | None = None
    """The Spark application running the member tasks."""
