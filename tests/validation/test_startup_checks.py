"""One source of truth for what the Spark app refuses at start-up: each check is one function that
`federator validate`, the operator's reconcile pass and the app's start-up all call, so a spec that
passes `validate` is one the app starts.

The app's refusals are enumerated from its source (every `raise TaskConfigError`): each is either one of
the shared checks, a rule the API server enforces, or about what the operator (not the user) writes into
the task config. A new refusal in the app fails this test until it is classified."""

from __future__ import annotations

import ast
import asyncio
import copy
from pathlib import Path
from typing import Any, cast

import pytest
from validation_helpers import task

from federator.kube.client import KubeClient
from federator.reconcile.replicationtask import reconcile
from federator.settings import OperatorSettings
from federator.validation import check_object
from federator.validation.semantic import semantic_problems
from federator_contract.api.kinds import REPLICATION_TASK
from federator_contract.checks import STARTUP_CHECKS
from federator_contract.taskconfig import TaskConfig, TaskConfigError
from federator_spark.planning import plan_from_task
from support.connections import write_connection_files

APP = Path(__file__).resolve().parents[2] / "spark-apps" / "federator_spark"
HUB = {"connection": {"emulator": {"namespace": "b"}}, "eventHubName": "other"}

# One spec per check that only it refuses: (changes to a valid spec, path, message).
SAMPLES: dict[str, tuple[dict[str, Any], str, str]] = {
    "json_schema_findings": (
        {"editors": [{"validate": {"jsonSchema": {"type": "objekt"}, "onInvalid": "drop"}}]},
        "spec.editors[0].validate.jsonSchema",
        "invalid JSON Schema at $.type",
    ),
    "avro_schema_findings": (
        {
            "editors": [
                {
                    "transcode": {
                        "input": "avro",
                        "output": "json",
                        "avroSchema": {"inline": '{"type": "nope"}'},
                    }
                }
            ]
        },
        "spec.editors[0].transcode.avroSchema.inline",
        "invalid Avro schema",
    ),
    "reference_findings": (
        {"editors": [{"dedupe": {"key": "sys.MessageIdentifier"}}]},
        "spec.editors[0].dedupe.key",
        "unknown system property 'MessageIdentifier'",
    ),
    "reserved_property_findings": (
        {
            "loopPrevention": {"markerProperty": "hop"},
            "unrouted": {"eventHub": HUB, "setProperties": {"hop": "x"}},
        },
        "spec.unrouted.setProperties.hop",
        "'hop' is written by Federator itself",
    ),
    "reserved_target_findings": (
        {
            "targets": [{"name": "unrouted", "condition": "a = 1", "eventHub": HUB}],
            "unrouted": {"eventHub": {**HUB, "eventHubName": "rest"}},
        },
        "spec.targets[0].name",
        "'unrouted' is the name of spec.unrouted",
    ),
    "checkpoint_findings": (
        {"runtime": {"checkpoint": {"uri": "gs://bucket/orders"}}},
        "spec.runtime.checkpoint.uri",
        "only file:// checkpoints are supported",
    ),
}


def test_every_startup_check_has_a_sample() -> None:
    assert set(SAMPLES) == {check.__name__ for check in STARTUP_CHECKS}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_validate_the_operator_and_the_app_refuse_each_startup_check_alike(name: str, tmp_path: Path) -> None:
    changes, path, message = SAMPLES[name]
    manifest = task(**copy.deepcopy(changes))

    # federator validate
    refused = [p for p in check_object(manifest).problems if p.path == path]
    assert refused and message in refused[0].message, check_object(manifest).problems

    # the operator's reconcile pass: Stalled before it touches the cluster (no client is given)
    body = {**manifest, "metadata": {"name": "t", "namespace": "ns", "generation": 1}}
    result = asyncio.run(reconcile(cast(KubeClient, None), OperatorSettings(), body))
    stalled = next(c for c in result.conditions if c["type"] == "Stalled")
    assert (stalled["status"], stalled["reason"]) == ("True", "InvalidSpec")
    assert f"{path}: " in stalled["message"] and message in stalled["message"]
    assert [p for p in semantic_problems(REPLICATION_TASK, manifest["spec"]) if p.path == path]

    # the Spark app's start-up
    config = TaskConfig.from_raw({**body, "checkpointLocation": f"file://{tmp_path}"})
    with pytest.raises(TaskConfigError) as raised:
        plan_from_task(config)
    assert f"{path}: " in str(raised.value) and message in str(raised.value)


def test_a_spec_the_checks_pass_is_one_the_app_plans(tmp_path: Path) -> None:
    body = {
        **task(),
        "metadata": {"name": "t", "namespace": "ns"},
        "checkpointLocation": f"file://{tmp_path}",
    }
    key = "Endpoint=sb://localhost/;SharedAccessKeyName=k;SharedAccessKey=a2V5"
    files = write_connection_files(tmp_path / "connections", {"primary": key, "b": key})
    body["emulatorConnectionFiles"] = files
    assert plan_from_task(TaskConfig.from_raw(body)).targets.keys() == {"copy"}


# How each of the app's refusals relates to the shared checks: "shared" ones call a function of
# `federator_contract.checks` or `federator_contract.checkpoints` (listed), "crd" ones repeat a rule the
# API server enforces (a CEL rule), "plumbing" ones are about the task config the operator writes or
# ConfigMap content only the app reads.
SHARED = {
    "startup_findings",
    "checkpoint_location_problem",
    "local_checkpoint_path",
    "json_schema_problem",
    "parse_avro_schema",
    "parse_reference",
}
APP_REFUSALS: dict[tuple[str, str], str] = {
    ("planning.py", "plan_from_task"): "shared",
    ("config.py", "local_path"): "shared",
    ("editors/validate.py", "build"): "shared",  # and: exactly one of jsonSchema, schemaConfigMapRef (crd)
    ("editors/transcode.py", "_avro_schema"): "shared",  # and: exactly one of inline, configMapRef (crd)
    ("editors/dedupe.py", "build"): "shared",
    ("editors/enrich.py", "build"): "shared",  # and: a lookup table that is not a JSON object (plumbing)
    ("editors/building.py", "_build"): "crd",  # exactly one editor kind
    ("editors/building.py", "build_chain"): "plumbing",  # names the editor of a refusal above
    ("config.py", "config_map_text"): "plumbing",
    ("config.py", "config_map_json"): "plumbing",
    ("config_watch.py", "parse"): "plumbing",  # a shared driver's member ConfigMap, as the operator writes it
    ("planning.py", "connection_for"): "plumbing",  # emulator connections, unresolved group members
    ("translation/planning.py", "blob_location"): "plumbing",  # Azurite's connection (local mode)
}


def _refusals() -> dict[tuple[str, str], ast.FunctionDef]:
    found = {}
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.FunctionDef):
                continue
            for sub in ast.walk(node):
                exc = sub.exc if isinstance(sub, ast.Raise) else None
                if isinstance(exc, ast.Call) and getattr(exc.func, "id", None) == "TaskConfigError":
                    found[(str(path.relative_to(APP)), node.name)] = node
    return found


def test_every_refusal_of_the_app_is_classified() -> None:
    assert sorted(_refusals()) == sorted(APP_REFUSALS)


@pytest.mark.parametrize("where", sorted(k for k, v in APP_REFUSALS.items() if v == "shared"))
def test_the_apps_shared_refusals_call_the_shared_checks(where: tuple[str, str]) -> None:
    calls = {
        getattr(node.func, "id", getattr(node.func, "attr", None))
        for node in ast.walk(_refusals()[where])
        if isinstance(node, ast.Call)
    }
    assert calls & SHARED, f"{where} refuses without a shared check"
