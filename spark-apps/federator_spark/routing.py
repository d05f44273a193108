"""Routing: an event goes to every target whose condition holds, else to the `unrouted` target."""

from __future__ import annotations

from dataclasses import dataclass

from federator_contract.names import UNROUTED
from federator_contract.sql import Dialect, Filter, SqlMessage, parse_filter


@dataclass(frozen=True)
class Route:
    target: str
    condition: Filter | None

    def accepts(self, message: SqlMessage) -> bool:
        return self.condition is None or self.condition.matches(message)


@dataclass(frozen=True)
class Router:
    routes: tuple[Route, ...]
    has_unrouted: bool

    @classmethod
    def build(cls, conditions: dict[str, str | None], has_unrouted: bool) -> Router:
        """``conditions``: target name → condition text (None: every event), in spec order."""
        routes = tuple(
            Route(name, parse_filter(text, Dialect.FEDERATOR) if text else None)
            for name, text in conditions.items()
        )
        return cls(routes, has_unrouted)

    def targets(self, message: SqlMessage) -> list[str]:
        """The target names ``message`` goes to; empty when it matches nothing and nothing is unrouted."""
        chosen = [route.target for route in self.routes if route.accepts(message)]
        if not chosen and self.has_unrouted:
            return [UNROUTED]
        return chosen
