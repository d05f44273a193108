"""The operator's context: one per operator whatever kopf copies, per-object state kept by uid until the
object is forgotten."""

from __future__ import annotations

import copy

import kopf
import pytest

from federator.handlers.context import OperatorContext
from federator.provision.scope import ArmScope
from federator.settings import OperatorSettings


def body(uid: str, name: str = "orders") -> kopf.Body:
    return kopf.Body({"metadata": {"uid": uid, "name": name, "namespace": "default"}})


def test_every_object_shares_the_one_context() -> None:
    context = OperatorContext(OperatorSettings(), serve_metrics=False)
    assert copy.copy(context) is context  # kopf copies the memo for each object it handles
    assert context.failover.dns is context.failover.dns


def test_per_object_state_is_kept_by_uid_until_forgotten() -> None:
    objects = OperatorContext(OperatorSettings(), serve_metrics=False).objects
    first = objects.of(body("u-1"))
    first.wakeup.set()
    assert objects.of(body("u-1")) is first and objects.of(body("u-2")) is not first
    assert len(objects) == 2

    objects.forget(body("u-1"))
    assert len(objects) == 1
    assert not objects.of(body("u-1")).wakeup.is_set(), "a new object with the uid starts afresh"


def test_the_api_client_exists_only_once_started() -> None:
    context = OperatorContext(OperatorSettings(), serve_metrics=False)
    assert not context.stopping
    with pytest.raises(RuntimeError, match="has not started"):
        _ = context.client


def test_the_management_environment_follows_the_settings() -> None:
    settings = OperatorSettings(
        arm_endpoint="https://arm.example", ca_bundle="/ca.pem", drift_interval_seconds=60
    )
    management = OperatorContext(settings, serve_metrics=False).management
    assert (management.arm_endpoint, management.connection_verify, management.drift_interval_seconds) == (
        "https://arm.example",
        "/ca.pem",
        60,
    )


def test_arm_work_signs_in_as_the_operator_only_where_the_installer_allows() -> None:
    settings = OperatorSettings(operator_identity_namespaces="platform")
    scope = OperatorContext(settings, serve_metrics=False).management.scope
    assert scope == ArmScope.from_settings(settings)
    assert scope.refusal("platform", "00000000-0000-0000-0000-000000000001") is None
    assert scope.refusal("team-a", "00000000-0000-0000-0000-000000000001") is not None
