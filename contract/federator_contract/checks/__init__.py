"""What the Spark app checks before it runs a task, as functions of the spec, so that `federator
validate`, the operator's reconcile pass and the app's start-up call the same ones and agree.

`STARTUP_CHECKS` lists them; each yields `Finding`s (a path under `spec` and a message). The app runs
them all at start-up (and the single-value functions again on what it reads from ConfigMaps, which only
it sees). Only pydantic is needed: a check that needs `jsonschema` or `fastavro` imports it when it runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.checks.checkpoint import checkpoint_findings
from federator_contract.checks.editors import avro_schema_findings, json_schema_findings, reference_findings
from federator_contract.checks.endpoints import reserved_property_findings, reserved_target_findings
from federator_contract.checks.findings import Finding

__all__ = ["STARTUP_CHECKS", "Finding", "StartupCheck", "startup_findings"]

StartupCheck = Callable[[ReplicationTaskSpec], Iterator[Finding]]

STARTUP_CHECKS: tuple[StartupCheck, ...] = (
    json_schema_findings,
    avro_schema_findings,
    reference_findings,
    reserved_property_findings,
    reserved_target_findings,
    checkpoint_findings,
)


def startup_findings(spec: ReplicationTaskSpec) -> list[Finding]:
    """Everything the app would refuse in `spec` before running it, in the order of the spec."""
    return sorted((f for check in STARTUP_CHECKS for f in check(spec)), key=lambda f: f.order)
