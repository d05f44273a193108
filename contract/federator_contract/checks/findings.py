"""A start-up check's verdict: where in the spec, and what is wrong there."""

from __future__ import annotations

from dataclasses import dataclass

# Top-level fields of a ReplicationTask spec in the order a manifest writes them, to sort findings.
_SPEC_ORDER = ("source", "editors", "targets", "unrouted", "deadLetter", "runtime")


@dataclass(frozen=True)
class Finding:
    path: tuple[str | int, ...]
    """Under `spec`, e.g. `("editors", 0, "validate", "jsonSchema")`."""
    message: str

    def __str__(self) -> str:
        return f"{self.field_path}: {self.message}"

    @property
    def field_path(self) -> str:
        """`spec.editors[0].validate.jsonSchema`."""
        out = "spec"
        for part in self.path:
            out += f"[{part}]" if isinstance(part, int) else f".{part}"
        return out

    @property
    def order(self) -> tuple[int, tuple[str, ...]]:
        head = self.path[0] if self.path else ""
        rank = _SPEC_ORDER.index(head) if head in _SPEC_ORDER else len(_SPEC_ORDER)
        return rank, tuple(f"{p:08d}" if isinstance(p, int) else p for p in self.path[1:])
