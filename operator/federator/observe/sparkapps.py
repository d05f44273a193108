"""Spark application states of both launchers → one vocabulary the task's conditions are built from.

A failed application whose driver stopped on a refusal of the replication app (its checkpoint holds
another source's positions: `CheckpointSourceMismatch`) is told apart from any other failure by the
driver's own words, which reach the launchers' status as the driver container's termination message
(its `/dev/termination-log`, or with `terminationMessagePolicy: FallbackToLogsOnError` the end of its
log): the Apache operator keeps the driver pod's last status in the SparkApplication
(`status.currentState.lastObservedDriverStatus`); the Kubeflow operator records only the exit code and
the kubelet's reason (`status.applicationState.errorMessage`), so its driver pod is read instead."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol
from urllib.parse import quote

from federator.kube.resources import PODS
from federator.validation.secrets import secret_shape
from federator_contract.appstatus import CHECKPOINT_SOURCE_MISMATCH
from federator_contract.taskconfig import RESET_POSITIONS_ANNOTATION

Phase = Literal["Pending", "Running", "Restarting", "Failed", "Stopped", "Unknown"]

# Kubeflow spark-operator `status.applicationState.state` (v1beta2).
KUBEFLOW_PHASES: dict[str, Phase] = {
    "": "Pending",
    "NEW": "Pending",
    "SUBMITTED": "Pending",
    "RUNNING": "Running",
    "COMPLETED": "Stopped",
    "FAILED": "Failed",
    "SUBMISSION_FAILED": "Failed",
    "PENDING_RERUN": "Restarting",
    "INVALIDATING": "Restarting",
    "SUCCEEDING": "Stopped",
    "FAILING": "Failed",
    "SUSPENDING": "Stopped",
    "SUSPENDED": "Stopped",
    "RESUMING": "Pending",
    "UNKNOWN": "Unknown",
}

# Apache Spark Kubernetes Operator `status.currentState.currentStateSummary` (v1).
APACHE_PHASES: dict[str, Phase] = {
    "Submitted": "Pending",
    "DriverRequested": "Pending",
    "DriverStarted": "Pending",
    "DriverReady": "Pending",
    "InitializedBelowThresholdExecutors": "Pending",
    "RunningHealthy": "Running",
    "RunningWithPartialCapacity": "Running",
    "RunningWithBelowThresholdExecutors": "Running",
    "ScheduledToRestart": "Restarting",
    "Failed": "Failed",
    "SchedulingFailure": "Failed",
    "DriverStartTimedOut": "Failed",
    "DriverReadyTimedOut": "Failed",
    "ExecutorsStartTimedOut": "Failed",
    "DriverEvicted": "Failed",
    "Succeeded": "Stopped",
    "ResourceReleased": "Stopped",
    "TerminatedWithoutReleaseResources": "Stopped",
}


# The app's refusals a human resolves on the task itself, and how (the app names the reason first, as
# `<Reason>: <its words>`, in the exception it stops with).
REMEDIES: dict[str, str] = {
    CHECKPOINT_SOURCE_MISMATCH: (
        "nothing is read until positions are reset: set the ReplicationTask's annotation "
        f"{RESET_POSITIONS_ANNOTATION} to a new value (the old checkpoint is kept)"
    ),
}


@dataclass(frozen=True)
class SparkObservation:
    phase: Phase
    state: str
    """The launcher's own state word, as reported."""
    message: str = ""
    refusal: str = ""
    """A failed application whose driver stopped on one of the app's refusals (`REMEDIES`): that reason,
    for the task's conditions instead of SparkApplicationFailed; `message` is then the driver's words and
    the remedy. Empty: any other failure, or none."""


def observe(
    api_version: str, app: dict[str, Any] | None, driver_pod: Mapping[str, Any] | None = None
) -> SparkObservation:
    """The phase of a Spark application resource of either launcher (None: not created yet). For a failed
    Kubeflow application, `driver_pod` (its `status.driverInfo.podName`) carries the driver's words."""
    if app is None:
        return SparkObservation("Pending", "", "the Spark application does not exist yet")
    status = app.get("status") or {}
    if api_version.startswith("sparkoperator.k8s.io/"):
        state_info = status.get("applicationState") or {}
        state = str(state_info.get("state", ""))
        seen = SparkObservation(
            KUBEFLOW_PHASES.get(state, "Unknown"), state, str(state_info.get("errorMessage", ""))
        )
        drivers = [(driver_pod or {}).get("status") or {}] if seen.phase == "Failed" else []
    else:
        current = status.get("currentState") or {}
        state = str(current.get("currentStateSummary", ""))
        phase: Phase = APACHE_PHASES.get(state, "Unknown") if state else "Pending"
        seen = SparkObservation(phase, state, str(current.get("message", "")))
        drivers = list(_apache_run_ended(status)) if phase in ("Failed", "Stopped") else []
    return _with_refusal(seen, (text for driver in drivers for text in _terminations(driver)))


class PodReads(Protocol):
    async def get(self, path: str) -> dict[str, Any] | None: ...


async def failed_driver_pod(
    pods: PodReads, namespace: str, api_version: str, app: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The driver pod of a failed Kubeflow application (`status.driverInfo.podName`), whose termination
    message `observe` reads; None for any other state, launcher or a pod already gone. Listed by name:
    the operator may list pods, not get them."""
    status = (app or {}).get("status") or {}
    state = str((status.get("applicationState") or {}).get("state", ""))
    name = (status.get("driverInfo") or {}).get("podName")
    kubeflow = api_version.startswith("sparkoperator.k8s.io/")
    if not (kubeflow and KUBEFLOW_PHASES.get(state) == "Failed" and name):
        return None
    found = await pods.get(f"{PODS.path(namespace)}?fieldSelector={quote(f'metadata.name={name}')}")
    items: list[dict[str, Any]] = (found or {}).get("items") or []
    return items[0] if items else None


def _apache_run_ended(status: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """The driver statuses the Apache operator recorded since the run last ran, newest first: a failed run
    moves on to `ResourceReleased` (or `TerminatedWithoutReleaseResources`), whose state carries no
    driver status; the `Failed` state before it, in the history, does."""
    yield (status.get("currentState") or {}).get("lastObservedDriverStatus") or {}
    history: Mapping[str, Any] = status.get("stateTransitionHistory") or {}
    for key in sorted(history, key=lambda k: int(k) if k.isdigit() else -1, reverse=True):
        entry = history[key] or {}
        if APACHE_PHASES.get(str(entry.get("currentStateSummary")), "Unknown") in _RUN_BEGAN:
            return
        yield entry.get("lastObservedDriverStatus") or {}


_RUN_BEGAN: tuple[Phase, ...] = ("Pending", "Running", "Restarting")


def _terminations(pod_status: Mapping[str, Any]) -> Iterator[str]:
    """The termination messages of a pod status's containers, the current run's before the previous."""
    for container in pod_status.get("containerStatuses") or ():
        for state in ("state", "lastState"):
            terminated = (container.get(state) or {}).get("terminated") or {}
            if terminated.get("message"):
                yield str(terminated["message"])


def _with_refusal(seen: SparkObservation, terminations: Iterable[str]) -> SparkObservation:
    for text in terminations:
        for reason, remedy in REMEDIES.items():
            at = text.rfind(f"{reason}: ")  # the exception's line comes last in a log's tail
            if at < 0:
                continue
            words = text[at + len(reason) + 2 :].splitlines()[0].strip()
            if (shape := secret_shape(words)) is not None:  # never expected: the app names no secret
                words = f"(its words contained {shape} and are not shown)"
            if RESET_POSITIONS_ANNOTATION not in words:  # a log's tail may have cut the app's remedy
                words = f"{words}; {remedy}"
            # A run that ended on a refusal failed, even where the launcher has moved on to releasing it.
            return replace(seen, phase="Failed", message=f"the driver stopped: {words}", refusal=reason)
    return seen


def camel(state: str) -> str:
    """A launcher state as a condition reason word: `PENDING_RERUN` → `PendingRerun`."""
    if "_" in state or state.isupper():
        return "".join(part.capitalize() for part in state.lower().split("_")) or "New"
    return state or "New"
