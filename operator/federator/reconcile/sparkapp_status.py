"""A Spark application's state and what a pass did to it, as conditions and Events: the same words for a
task's own application, a ReplicationApplication's, and a member task reporting its application's; and
deleting one, only if it is the owner's (a task and an application of one name would share it)."""

from __future__ import annotations

from federator import reasons
from federator.apply.children import Outcome
from federator.kube.client import KubeClient
from federator.kube.resources import ResourceRef
from federator.observe.sparkapps import SparkObservation, camel
from federator.planning.launchers import LAUNCHERS
from federator.settings import Launcher
from federator.status import conditions as cond
from federator.status.events import Note
from federator.status.results import Findings

SPARK_RUNNING = "SparkApplicationRunning"


def spark_findings(observation: SparkObservation, name: str, where: str = "") -> Findings:
    """Ready, Reconciling, Stalled and SparkApplicationRunning from the state of Spark application
    ``name``; ``where`` (e.g. `of ReplicationApplication shared`) says whose application it is."""
    state = observation.state or "New"
    detail = f"Spark application {name}{f' {where}' if where else ''} is {state}" + (
        f": {observation.message}" if observation.message else ""
    )
    running = cond.ConditionUpdate(
        SPARK_RUNNING, "True" if observation.phase == "Running" else "False", camel(state), detail
    )
    match observation.phase:
        case "Running":
            updates = cond.ready(reasons.RUNNING, detail)
        case "Failed" if observation.refusal:  # the driver's own words name why it cannot run
            updates = cond.stalled(observation.refusal, detail)
        case "Failed":
            updates = cond.stalled(reasons.SPARK_APPLICATION_FAILED, detail)
        case "Restarting":
            updates = cond.reconciling(reasons.SPARK_APPLICATION_RESTARTING, detail)
        case "Stopped":
            updates = cond.reconciling(reasons.SPARK_APPLICATION_STOPPED, detail)
        case "Unknown":
            updates = cond.reconciling(reasons.SPARK_APPLICATION_STATE_UNKNOWN, detail)
        case _:
            updates = cond.reconciling(reasons.SPARK_APPLICATION_PENDING, detail)
    return Findings([*updates, running])


def applied_notes(
    kind: str, name: str, outcome: Outcome, existed: bool, announced: bool = False
) -> list[Note]:
    """The Event for a Spark application a pass created or put back. `existed`: status named it before
    (so a creation is a deleted one recreated); `announced`: the change was already announced otherwise
    (a followed group's switch), so a restore is not called drift."""
    if outcome is Outcome.CREATED and existed:
        return [Note("Warning", reasons.DRIFT_CORRECTED, f"{kind} {name} was deleted; recreated")]
    if outcome is Outcome.CREATED:
        return [Note("Normal", reasons.SPARK_APPLICATION_CREATED, f"{kind} {name} created")]
    if outcome is Outcome.RESTORED and not announced:
        return [Note("Warning", reasons.DRIFT_CORRECTED, f"{kind} {name} was changed or lost; restored")]
    return []


async def delete_spark_applications(
    client: KubeClient, namespace: str, name: str, label: str, value: str
) -> list[str]:
    """Delete the Spark applications (either launcher's) named ``name`` and labelled ``label: value``;
    returns what was deleted, in words."""
    deleted = []
    for module in LAUNCHERS.values():
        path = ResourceRef(module.API_VERSION, module.PLURAL).path(namespace, name)
        stored = await client.get(path)
        labels = ((stored or {}).get("metadata") or {}).get("labels") or {}
        if labels.get(label) == value and await client.delete(path):
            deleted.append(f"{module.KIND} {name} ({module.API_VERSION})")
    return deleted


def launcher_not_installed(launcher: Launcher, field: str) -> list[cond.ConditionUpdate]:
    """Stalled: the cluster does not serve the launcher's resource (``field`` chooses the launcher)."""
    module = LAUNCHERS[launcher]
    message = (
        f"the cluster does not serve {module.API_VERSION} {module.PLURAL}: install the {launcher} Spark "
        f"operator, or choose the other launcher ({field})"
    )
    return cond.stalled(reasons.LAUNCHER_NOT_INSTALLED, message)
