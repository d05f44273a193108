"""Checks the API server cannot make and the operator makes: the models' own validators (SQL grammar,
credential-looking Spark settings) and inline secrets anywhere in a spec."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from federator.api.kinds import Kind
from federator.validation.problems import Problem, join_path

# Shapes of credentials that must never sit in a spec. Messages name the shape, never the value.
_SECRET_SHAPES = (
    (re.compile(r"SharedAccessKey\s*=", re.IGNORECASE), "a connection string with SharedAccessKey"),
    (re.compile(r"SharedAccessSignature\s+sr=", re.IGNORECASE), "a SAS token"),
    (re.compile(r"AccountKey\s*=", re.IGNORECASE), "a storage connection string with AccountKey"),
    (re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@", re.IGNORECASE), "a URI with a password"),
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), "a private key"),
)


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
    elif isinstance(value, str):
        for pattern, shape in _SECRET_SHAPES:
            if pattern.search(value):
                found.append(
                    Problem(join_path(path), f"contains {shape}: inline secrets are not accepted; reference a "
                            "Secret instead (e.g. connection.secretRef)", "semantic")
                )
                break
    return found
