"""Checks the API server cannot make and the operator makes: the models' own validators (SQL grammar,
credential-looking Spark settings) and inline secrets anywhere in a spec."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from federator.validation.problems import Problem, join_path
from federator.validation.secrets import secret_shape
from federator_contract.api.kinds import Kind


def semantic_problems(kind: Kind, spec: Any) -> list[Problem]:
    """Problems the operator would report as Stalled, each at its field path under `spec`."""
    problems = list(_inline_secrets(spec, ["spec"]))
    try:
        kind.spec.model_validate(spec)
    except ValidationError as err:
        for detail in err.errors():
            # Shape errors are the schema layer's to report; here only the models' own checks.
            if detail["type"] == "value_error":
                message = str(detail["msg"]).removeprefix("Value error, ")
                problems.append(Problem(join_path(["spec", *detail["loc"]]), message, "semantic"))
    return sorted(set(problems))


def _inline_secrets(value: Any, path: list[str | int]) -> list[Problem]:
    found: list[Problem] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _inline_secrets(item, [*path, str(key)])
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _inline_secrets(item, [*path, i])
    elif (shape := secret_shape(value)) is not None:
        message = (
            f"contains {shape}: inline secrets are not accepted; reference a Secret instead (e.g. secretRef)"
        )
        found.append(Problem(join_path(path), message, "semantic"))
    return found
