"""What validation reports: a problem at a field path, and the layer that found it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from federator.validation.secrets import secret_shape

# `yaml`: kubectl refuses to decode the document; `schema` and `cel`: the API server refuses it at apply
# time; `semantic`: the operator reports it as Stalled and the Spark app would not start (the API server
# cannot know them: SQL grammar, JSON and Avro schemas, reserved names); `secret`: a credential, refused
# wherever it appears; `warning`: admitted and run, but most likely not what was meant.
Layer = Literal["yaml", "schema", "cel", "semantic", "secret", "policy", "warning"]


@dataclass(frozen=True, order=True)
class Problem:
    path: str
    message: str
    layer: Layer

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def withheld(problem: Problem) -> Problem:
    """`problem`, or its path with the message withheld when the message would repeat a credential (a
    checker's own wording can quote the value it refuses)."""
    if secret_shape(problem.message) is None:
        return problem
    return Problem(problem.path, "<message withheld: it would repeat a credential>", problem.layer)


def join_path(parts: tuple[str | int, ...] | list[str | int]) -> str:
    """`("spec", "targets", 0, "name")` → `spec.targets[0].name`. A key that looks like a credential is
    shown as `<redacted>`: paths are printed, and a key can be pasted in the wrong place too."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = "<redacted>" if secret_shape(part) else part
            out += f".{name}" if out else name
    return out
