"""SQL rule actions: SET and REMOVE statements applied to the message copy a subscription gets."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from federator_contract.sql import ast
from federator_contract.sql.evaluate import user_key, value
from federator_contract.sql.model import Dialect, SqlMessage
from federator_contract.sql.parser import parse_statements
from federator_contract.sql.system_properties import SYSTEM_PROPERTIES, ConversionError

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Action:
    text: str
    dialect: Dialect
    statements: tuple[ast.Statement, ...]

    def apply(self, message: SqlMessage) -> None:
        """Run the statements in order (later ones see earlier ones' effects), mutating ``message``."""
        for statement in self.statements:
            if isinstance(statement, ast.Set):
                self._set(statement, message)
            else:
                _remove(statement.target, message)

    def _set(self, statement: ast.Set, message: SqlMessage) -> None:
        target = statement.target
        new = value(statement.value, message)
        if target.scope is ast.Scope.USER:
            key = user_key(message.user, target) or target.name
            message.user[key] = _implicitly_converted(message.user.get(key), new)
            return
        if new is None:
            # Setting a system property to NULL (or to an unknown value) unsets it.
            message.system.pop(target.name, None)
            return
        convert = SYSTEM_PROPERTIES[target.name].convert
        assert convert is not None  # the parser refuses read-only targets
        try:
            message.system[target.name] = convert(new)
        except ConversionError as error:
            # Only values read from the message get here (constants are converted at parse time).
            # Evaluation never fails a message, so the property is left as it was.
            logger.warning("rule action %r left sys.%s unchanged: %s", self.text, target.name, error)


def _remove(target: ast.Property, message: SqlMessage) -> None:
    if target.scope is ast.Scope.SYSTEM:
        message.system.pop(target.name, None)
        return
    key = user_key(message.user, target)
    if key is not None:
        del message.user[key]


def _implicitly_converted(existing: Any, new: Any) -> Any:
    """SET keeps an existing property's type where C# converts implicitly: long to double or decimal."""
    if isinstance(new, int) and not isinstance(new, bool) and isinstance(existing, float | Decimal):
        return type(existing)(new)
    return new


def parse_action(
    text: str, dialect: Dialect = Dialect.SERVICE_BUS, *, parameters: Mapping[str, Any] | None = None
) -> Action:
    """Parse a SQL rule action; raises :class:`SqlSyntaxError` for one Service Bus would refuse.

    ``parameters`` binds ``@name`` placeholders, as SqlRuleAction parameters do.
    """
    return Action(text, dialect, parse_statements(text, dialect, parameters))
