"""Spark application states of both launchers → one vocabulary the task's conditions are built from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

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


@dataclass(frozen=True)
class SparkObservation:
    phase: Phase
    state: str
    """The launcher's own state word, as reported."""
    message: str = ""


def observe(api_version: str, app: dict[str, Any] | None) -> SparkObservation:
    """The phase of a Spark application resource of either launcher (None: not created yet)."""
    if app is None:
        return SparkObservation("Pending", "", "the Spark application does not exist yet")
    status = app.get("status") or {}
    if api_version.startswith("sparkoperator.k8s.io/"):
        state_info = status.get("applicationState") or {}
        state = str(state_info.get("state", ""))
        return SparkObservation(
            KUBEFLOW_PHASES.get(state, "Unknown"), state, str(state_info.get("errorMessage", ""))
        )
    current = status.get("currentState") or {}
    state = str(current.get("currentStateSummary", ""))
    phase: Phase = APACHE_PHASES.get(state, "Unknown") if state else "Pending"
    return SparkObservation(phase, state, str(current.get("message", "")))


def camel(state: str) -> str:
    """A launcher state as a condition reason word: `PENDING_RERUN` → `PendingRerun`."""
    if "_" in state or state.isupper():
        return "".join(part.capitalize() for part in state.lower().split("_")) or "New"
    return state or "New"
