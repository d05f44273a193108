"""Checks the API server cannot make and the operator makes: the models' own validators (SQL grammar,
credential-looking Spark settings), the Spark app's start-up checks (`federator_contract.checks`: JSON
and Avro schemas, reserved names, checkpoint schemes) and inline secrets anywhere in a spec."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError

from federator.validation.credential_scope import CredentialScope
from federator.validation.pod_policy import PodPolicy, PolicyFinding
from federator.validation.problems import Problem, join_path, withheld
from federator.validation.secrets import inline_secret_message, secret_findings
from federator_contract.api.connections import SPEC_TYPES
from federator_contract.api.kinds import Kind
from federator_contract.api.replicationapplication import ReplicationApplicationSpec
from federator_contract.api.replicationtask import ReplicationTaskSpec
from federator_contract.api.servicebusmirror import ServiceBusMirrorSpec
from federator_contract.checks import Finding, startup_findings
from federator_contract.checks.checkpoint import runtime_checkpoint_findings


def semantic_problems(
    kind: Kind, spec: Any, policy: PodPolicy | None = None, scope: CredentialScope | None = None
) -> list[Problem]:
    """Problems the operator would report as Stalled, each at its field path under `spec`. Shape errors
    are included (the model is what the operator reads): a caller that checked the schema first drops
    those at paths it already refused. With ``policy``, also what the installer's pod policy refuses;
    with ``scope``, the endpoint hosts its credential scope refuses."""
    problems = [
        Problem(join_path(path), inline_secret_message(shape), "semantic")
        for path, shape in secret_findings(spec, ("spec",))
    ]
    try:
        model = kind.spec.model_validate(spec)
    except ValidationError as err:
        for detail in err.errors(include_input=False, include_url=False):
            message = str(detail["msg"]).removeprefix("Value error, ")
            problems.append(Problem(join_path(["spec", *detail["loc"]]), message, "semantic"))
    else:
        problems += [Problem(join_path(["spec", *f.path]), f.message, "semantic") for f in _startup(model)]
        refused = _pods(model, policy) if policy is not None else ()
        problems += [Problem(join_path(["spec", *f.path]), f.message, "policy") for f in refused]
        if scope is not None and isinstance(model, SPEC_TYPES):
            problems += [Problem(f.field_path, f.message, "policy") for f in scope.host_findings(model)]
    return list(dict.fromkeys(withheld(p) for p in problems))


def _pods(model: BaseModel, policy: PodPolicy) -> Iterable[PolicyFinding]:
    """What the pods of a task, of a mirror's tasks or of an application would be that the installer does
    not allow."""
    if isinstance(model, ReplicationTaskSpec):
        return policy.findings(model.runtime)
    if isinstance(model, ReplicationApplicationSpec):
        return policy.findings(model, ())
    if isinstance(model, ServiceBusMirrorSpec):
        return policy.findings(model.task_template.runtime, ("taskTemplate", "runtime"))
    return ()


def _startup(model: BaseModel) -> Iterable[Finding]:
    """What the Spark app would refuse at start-up: a task's own spec, a mirror's task template."""
    if isinstance(model, ReplicationTaskSpec):
        return startup_findings(model)
    if isinstance(model, ServiceBusMirrorSpec):
        return runtime_checkpoint_findings(model.task_template.runtime, ("taskTemplate", "runtime"))
    return ()
