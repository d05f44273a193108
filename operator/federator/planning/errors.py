"""Why a spec cannot be planned: a condition reason and a message a human can act on."""

from __future__ import annotations


class PlanningError(ValueError):
    """A spec that is valid on its own but cannot run here; the operator reports it as Stalled."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
