"""A tenant names Secrets and keys so that two connections would share one environment variable.

The Spark pods get each Secret key a task references as an environment variable, and the app reads a
connection string by that variable's name. If `eh-a/conn` and `eh/a-conn` (or keys `Conn` and `conn`)
got one name, one endpoint would silently use the other's connection string (or the operator would
render a pod with the variable twice, the kubelet keeping the last). Each attempt below gets one variable
per Secret key, bound to that key, in the cluster's pods, in local mode and in the task config the app
reads; a task config that shares one variable between two keys (as an operator before this one wrote)
is refused by the app, naming `secretEnv`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tenant_manifests import NAMESPACE, replication_task, secret_connection

from federator.local.plan import plan_local_run
from federator.local.state import StateDir
from federator.planning.launchers import LAUNCHERS, render_spark_application
from federator.planning.task import plan_replication_task
from federator.settings import OperatorSettings
from federator.validation.documents import Document
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.taskconfig import TaskConfig, TaskConfigError

# Pairs of Secret keys that the old `FEDERATOR_SECRET_<SECRET>_<KEY>`, upper-cased, gave one name.
LOOKALIKES = [
    pytest.param(("eh-a", "conn"), ("eh", "a-conn"), id="hyphen-moved-between-name-and-key"),
    pytest.param(("eh", "Conn"), ("eh", "conn"), id="keys-differing-in-case"),
    pytest.param(("eh.a", "conn"), ("eh-a", "conn"), id="dot-and-hyphen"),
    pytest.param(("eh", "tls.crt"), ("eh", "tls_crt"), id="dot-and-underscore-in-keys"),
]


def two_secret_task(source: tuple[str, str], target: tuple[str, str]) -> dict[str, Any]:
    return replication_task(secret_connection(*source), secret_connection(*target))


def bound_variables(app: Any) -> dict[str, list[tuple[str, str]]]:
    """Every Secret-fed variable of a rendered application → the Secret keys it is bound to (once per
    container that declares it)."""
    found: dict[str, list[tuple[str, str]]] = {}
    if isinstance(app, dict):
        for entry in app.get("env") or []:
            ref = (entry.get("valueFrom") or {}).get("secretKeyRef")
            if ref is not None:
                found.setdefault(entry["name"], []).append((ref["name"], ref["key"]))
        children: list[Any] = list(app.values())
    else:
        children = list(app) if isinstance(app, list) else []
    for child in children:
        for name, refs in bound_variables(child).items():
            found.setdefault(name, []).extend(refs)
    return found


@pytest.mark.parametrize("launcher", sorted(LAUNCHERS))
@pytest.mark.parametrize(("source", "target"), LOOKALIKES)
def test_each_secret_key_gets_its_own_variable_in_the_pods(
    launcher: str, source: tuple[str, str], target: tuple[str, str]
) -> None:
    spec = ReplicationTaskSpec.model_validate(two_secret_task(source, target)["spec"])
    plan = plan_replication_task(name="orders", namespace=NAMESPACE, spec=spec, settings=OperatorSettings())
    variables = bound_variables(render_spark_application(launcher, plan.spark_app))  # type: ignore[arg-type]

    assert {name: set(refs) for name, refs in variables.items()} == {
        plan.task_config.secret_env[f"{s}/{k}"]: {(s, k)} for s, k in (source, target)
    }


@pytest.mark.parametrize(("source", "target"), LOOKALIKES)
def test_each_secret_key_gets_its_own_variable_in_local_mode(
    tmp_path: Any, source: tuple[str, str], target: tuple[str, str]
) -> None:
    values = {(s, k): f"Endpoint=sb://{s}/;EntityPath={k}" for s, k in (source, target)}
    documents = [two_secret_task(source, target), *_secret_documents(values)]
    plan = plan_local_run(
        [Document("tenant.yaml", i, body) for i, body in enumerate(documents)],
        state=StateDir(tmp_path / "state"),
        environ={},
    )

    (run,) = plan.tasks
    carried = {ref: run.secret_env[env] for ref, env in run.task_config.secret_env.items()}
    assert carried == {f"{s}/{k}": value for (s, k), value in values.items()}


def test_the_app_refuses_a_task_config_that_shares_a_variable() -> None:
    spec = ReplicationTaskSpec.model_validate(two_secret_task(("eh-a", "conn"), ("eh", "a-conn"))["spec"])
    plan = plan_replication_task(name="orders", namespace=NAMESPACE, spec=spec, settings=OperatorSettings())
    raw = json.loads(plan.task_config.to_json())
    shared = "FEDERATOR_SECRET_EH_A_CONN"  # what both keys were given before
    raw["secretEnv"] = {"eh-a/conn": shared, "eh/a-conn": shared}

    refusal = r"^invalid task config: secretEnv: .*'eh-a/conn' is carried by"
    with pytest.raises(TaskConfigError, match=refusal):
        TaskConfig.from_raw(raw)


def _secret_documents(values: dict[tuple[str, str], str]) -> list[dict[str, Any]]:
    """`v1/Secret` documents holding ``values`` by (Secret, key)."""
    data: dict[str, dict[str, str]] = {}
    for (name, key), value in values.items():
        data.setdefault(name, {})[key] = value
    secret = {"apiVersion": "v1", "kind": "Secret"}
    return [
        {**secret, "metadata": {"name": name, "namespace": NAMESPACE}, "stringData": keys}
        for name, keys in data.items()
    ]
