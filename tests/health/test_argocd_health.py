"""The Argo CD health check (charts/federator/health/health.lua), run by a real Lua 5.4 against sample
status objects of the four kinds: kstatus semantics mapped to Healthy / Progressing / Degraded."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest
import yaml

from support.resources import ROOT

HEALTH_LUA = ROOT / "charts" / "federator" / "health" / "health.lua"
ARGOCD_PATCH = ROOT / "docs" / "health-checks" / "argocd-cm-patch.yaml"
READY_REASON = {
    "ReplicationTask": "Running",
    "ServiceBusMirror": "Provisioned",
    "FailoverGroup": "Active",
    "ReplicationApplication": "Running",
}
KINDS = list(READY_REASON)


def lua_literal(value: Any) -> str:
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string literal is a valid Lua string literal for our samples
    if isinstance(value, list):
        return "{" + ", ".join(lua_literal(v) for v in value) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"[{json.dumps(k)}] = {lua_literal(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


@pytest.fixture(scope="module")
def lua() -> str:
    found = shutil.which("lua5.4")
    if found is None:
        pytest.fail("lua5.4 is not installed: run tools/install-system-packages")
    return found


def health(lua: str, *objects: dict[str, Any]) -> list[tuple[str, str]]:
    """Run the script once per object, as Argo CD does (the object in the global `obj`)."""
    script = f"""
local source = assert(io.open({json.dumps(str(HEALTH_LUA))})):read("a")
for _, sample in ipairs({lua_literal(list(objects))}) do
  local env = setmetatable({{obj = sample}}, {{__index = _G}})
  local hs = assert(load(source, "health.lua", "t", env))()
  io.write(hs.status, "\\t", hs.message or "", "\\n")
end
"""
    done = subprocess.run([lua, "-"], input=script, capture_output=True, text=True, timeout=30, check=True)
    return [tuple(line.split("\t", 1)) for line in done.stdout.splitlines()]  # type: ignore[misc]


def condition(type_: str, status: str, reason: str, generation: int = 3, message: str = "") -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": "2026-11-21T08:00:00Z",
    }


def resource(
    kind: str,
    *conditions: dict[str, Any],
    generation: int = 3,
    observed: int | None = 3,
    phase: str | None = None,
    status: bool = True,
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "federator.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": "sample", "namespace": "team-a", "generation": generation},
    }
    if status:
        obj["status"] = {"conditions": list(conditions)}
        if observed is not None:
            obj["status"]["observedGeneration"] = observed
        if phase is not None:
            obj["status"]["phase"] = phase
    return obj


def ready(kind: str, generation: int = 3) -> list[dict[str, Any]]:
    return [
        condition("Ready", "True", READY_REASON[kind], generation, "replicating"),
        condition("Reconciling", "False", READY_REASON[kind], generation),
        condition("Stalled", "False", READY_REASON[kind], generation),
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_ready_and_current_is_healthy(lua: str, kind: str) -> None:
    [(status, message)] = health(lua, resource(kind, *ready(kind)))
    assert status == "Healthy"
    assert message == f"{READY_REASON[kind]}: replicating"


@pytest.mark.parametrize("kind", KINDS)
def test_stale_observed_generation_is_progressing_even_if_ready(lua: str, kind: str) -> None:
    [(status, message)] = health(lua, resource(kind, *ready(kind), generation=4, observed=3))
    assert (status, message) == ("Progressing", "Waiting for the operator to observe generation 4")


@pytest.mark.parametrize("kind", KINDS)
def test_ready_condition_of_an_older_generation_is_progressing(lua: str, kind: str) -> None:
    [(status, _)] = health(lua, resource(kind, *ready(kind, generation=3), generation=4, observed=4))
    assert status == "Progressing"


@pytest.mark.parametrize("kind", KINDS)
def test_no_status_yet_is_progressing(lua: str, kind: str) -> None:
    results = health(
        lua,
        resource(kind, status=False),
        resource(kind, observed=3),
        resource(kind, generation=1, observed=None),
    )
    assert [s for s, _ in results] == ["Progressing"] * 3


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("ReplicationTask", "SparkApplicationPending"),
        ("ReplicationTask", "WaitingForSecret"),
        ("ServiceBusMirror", "Progressing"),
        ("FailoverGroup", "Progressing"),
    ],
)
def test_reconciling_is_progressing_with_its_reason(lua: str, kind: str, reason: str) -> None:
    obj = resource(
        kind,
        condition("Ready", "False", reason),
        condition("Reconciling", "True", reason, message="waiting"),
        condition("Stalled", "False", reason),
    )
    assert health(lua, obj) == [("Progressing", f"{reason}: waiting")]


@pytest.mark.parametrize("kind", KINDS)
def test_not_ready_without_reconciling_is_still_progressing(lua: str, kind: str) -> None:
    results = health(
        lua,
        resource(kind, condition("Ready", "False", "Progressing", message="starting")),
        resource(kind, condition("Ready", "Unknown", "Progressing")),
    )
    assert [s for s, _ in results] == ["Progressing", "Progressing"]
    assert results[0][1] == "Progressing: starting"


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        ("ReplicationTask", "InvalidSpec"),
        ("ReplicationTask", "EmulatorOnlyInLocalMode"),
        ("ReplicationTask", "SecretNotFound"),
        ("ReplicationTask", "LauncherNotInstalled"),
        ("ReplicationTask", "SparkApplicationFailed"),
        ("ServiceBusMirror", "AuthenticationFailed"),
        ("ServiceBusMirror", "EntityNotFound"),
        ("FailoverGroup", "InvalidSpec"),
    ],
)
def test_stalled_is_degraded_with_its_reason(lua: str, kind: str, reason: str) -> None:
    obj = resource(
        kind,
        condition("Ready", "False", reason),
        condition("Reconciling", "False", reason),
        condition("Stalled", "True", reason, message="needs a human"),
    )
    assert health(lua, obj) == [("Degraded", f"{reason}: needs a human")]


def test_stalled_wins_over_a_contradicting_ready(lua: str) -> None:
    obj = resource(
        "ReplicationTask",
        condition("Ready", "True", "Running"),
        condition("Stalled", "True", "SecretNotFound"),
    )
    assert health(lua, obj)[0][0] == "Degraded"


def test_failover_group_failing_back_is_progressing(lua: str) -> None:
    [(status, message)] = health(lua, resource("FailoverGroup", *ready("FailoverGroup"), phase="FailingBack"))
    assert status == "Progressing"
    assert message.startswith("Failing back")


def test_failover_group_failed_over_is_healthy_and_says_so(lua: str) -> None:
    results = health(
        lua,
        resource("FailoverGroup", *ready("FailoverGroup"), phase="FailedOver"),
        resource("FailoverGroup", *ready("FailoverGroup"), phase="Normal"),
    )
    assert results == [("Healthy", "Failed over: Active: replicating"), ("Healthy", "Active: replicating")]


def test_argocd_config_patch_carries_the_script_for_each_kind() -> None:
    data = yaml.safe_load(ARGOCD_PATCH.read_text(encoding="utf-8"))["data"]
    script = HEALTH_LUA.read_text(encoding="utf-8")
    assert data == {f"resource.customizations.health.federator.io_{kind}": script for kind in KINDS}
