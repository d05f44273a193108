"""Every Spark application state of both launchers maps to a phase, and phases to kstatus conditions."""

from __future__ import annotations

import pytest

from federator.observe.sparkapps import APACHE_PHASES, KUBEFLOW_PHASES, camel, observe
from support.spark_crds import served_schema


def test_every_apache_state_in_the_real_crd_is_mapped() -> None:
    status = served_schema("apache")["properties"]["status"]["properties"]
    summary = status["currentState"]["properties"]["currentStateSummary"]
    assert set(summary["enum"]) <= set(APACHE_PHASES)


def test_every_documented_kubeflow_state_is_mapped() -> None:
    documented = {
        "",
        "SUBMITTED",
        "RUNNING",
        "COMPLETED",
        "FAILED",
        "SUBMISSION_FAILED",
        "PENDING_RERUN",
        "INVALIDATING",
        "SUCCEEDING",
        "FAILING",
        "SUSPENDING",
        "SUSPENDED",
        "RESUMING",
        "UNKNOWN",
    }
    assert documented <= set(KUBEFLOW_PHASES)


@pytest.mark.parametrize(
    ("api_version", "status", "phase", "state"),
    [
        ("sparkoperator.k8s.io/v1beta2", {"applicationState": {"state": "RUNNING"}}, "Running", "RUNNING"),
        (
            "sparkoperator.k8s.io/v1beta2",
            {"applicationState": {"state": "PENDING_RERUN"}},
            "Restarting",
            "PENDING_RERUN",
        ),
        ("sparkoperator.k8s.io/v1beta2", {}, "Pending", ""),
        (
            "sparkoperator.k8s.io/v1beta2",
            {"applicationState": {"state": "NEW_STATE"}},
            "Unknown",
            "NEW_STATE",
        ),
        (
            "spark.apache.org/v1",
            {"currentState": {"currentStateSummary": "RunningHealthy"}},
            "Running",
            "RunningHealthy",
        ),
        (
            "spark.apache.org/v1",
            {"currentState": {"currentStateSummary": "SchedulingFailure"}},
            "Failed",
            "SchedulingFailure",
        ),
        ("spark.apache.org/v1", {}, "Pending", ""),
    ],
)
def test_observation(api_version: str, status: dict, phase: str, state: str) -> None:
    seen = observe(api_version, {"status": status})
    assert (seen.phase, seen.state) == (phase, state)


def test_a_missing_application_is_pending() -> None:
    assert observe("spark.apache.org/v1", None).phase == "Pending"


def test_failure_message_is_kept() -> None:
    seen = observe(
        "sparkoperator.k8s.io/v1beta2",
        {"status": {"applicationState": {"state": "FAILED", "errorMessage": "OOM"}}},
    )
    assert seen.message == "OOM"


@pytest.mark.parametrize(
    ("state", "reason"),
    [
        ("PENDING_RERUN", "PendingRerun"),
        ("RUNNING", "Running"),
        ("RunningHealthy", "RunningHealthy"),
        ("", "New"),
    ],
)
def test_states_become_condition_reason_words(state: str, reason: str) -> None:
    assert camel(state) == reason
