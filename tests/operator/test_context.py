"""The operator's context: one per operator whatever kopf copies, per-object state kept by uid until the
object is forgotten."""

from __future__ import annotations

import copy
import types

import kopf
import pytest

from federator import recent
from federator.failover.connections import MemberConnection
from federator.failover.probes import EntityRef
from federator.failover.state import ProbeOutcome
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


@pytest.mark.asyncio
async def test_a_source_probe_answer_holds_for_its_own_period_and_a_new_connection_is_probed_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Observed every second, probed once a minute: passes in between share the answer; a rotated Secret
    (another connection string) or the probe period running out probes again."""
    settings = OperatorSettings(observe_interval_seconds=1, source_probe_interval_seconds=60)
    context = OperatorContext(settings, serve_metrics=False)
    clock = [1000.0]
    monkeypatch.setattr(recent, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    probed: list[str] = []

    async def probe(connection: MemberConnection, entity: EntityRef, timeout: float) -> ProbeOutcome:
        probed.append(connection.connection_string or "")
        return ProbeOutcome(True)

    monkeypatch.setattr(context.failover.prober, "probe", probe)
    orders = EntityRef("eventHub", "orders", consumer_group="$Default")
    key = MemberConnection(connection_string="Endpoint=sb://weu/;SharedAccessKey=a")
    for seconds in (0, 1, 30, 59):  # passes within the period: one probe
        clock[0] = 1000.0 + seconds
        assert (await context.source_probes.probe(key, orders)).healthy
    assert probed == [key.connection_string]

    rotated = MemberConnection(connection_string="Endpoint=sb://weu/;SharedAccessKey=b")
    await context.source_probes.probe(rotated, orders)
    clock[0] = 1060.0
    await context.source_probes.probe(key, orders)
    assert probed == [key.connection_string, rotated.connection_string, key.connection_string]
