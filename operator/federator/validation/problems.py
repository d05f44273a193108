"""What validation reports: a problem at a field path, and the layer that found it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# `schema` and `cel` problems are refused by the API server at apply time; `semantic` ones are what the
# operator reports as Stalled (the API server cannot know them: SQL grammar, inline secrets).
Layer = Literal["yaml", "schema", "cel", "semantic"]


@dataclass(frozen=True, order=True)
class Problem:
    path: str
    message: str
    layer: Layer

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def join_path(parts: tuple[str | int, ...] | list[str | int]) -> str:
    """`("spec", "targets", 0, "name")` → `spec.targets[0].name`."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out
