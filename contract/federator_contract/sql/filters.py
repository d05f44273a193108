"""SQL filters: parsed once, then matched against each message."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from federator_contract.sql import ast
from federator_contract.sql.evaluate import truth
from federator_contract.sql.model import Dialect, SqlMessage
from federator_contract.sql.parser import parse_predicate


@dataclass(frozen=True)
class Filter:
    text: str
    dialect: Dialect
    root: ast.Node

    def matches(self, message: SqlMessage) -> bool:
        """True only when the predicate is true: false and unknown both leave the message out."""
        return truth(self.root, message) is True


def parse_filter(
    text: str, dialect: Dialect = Dialect.SERVICE_BUS, *, parameters: Mapping[str, Any] | None = None
) -> Filter:
    """Parse a SQL filter expression; raises :class:`SqlSyntaxError` for one Service Bus would refuse.

    ``parameters`` binds ``@name`` placeholders, as SqlRuleFilter parameters do.
    """
    return Filter(text, dialect, parse_predicate(text, dialect, parameters))
