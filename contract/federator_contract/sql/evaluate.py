"""Walks a syntax tree against a message.

Values are plain Python values with ``None`` for unknown/NULL; truth values are True, False or
``None`` for unknown, combined with the three-valued AND/OR tables of the Service Bus docs.
Nothing here raises on message content: a value of the wrong type makes its operation unknown.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from federator_contract.sql import ast
from federator_contract.sql.model import SqlMessage
from federator_contract.sql.patterns import cached_like
from federator_contract.sql.system_properties import find_system_property
from federator_contract.sql.values import arithmetic, compare, equals, identity, negate

MISSING: Any = object()
"""What a lookup returns for a property the message does not have (as opposed to one set to null)."""


def value(node: ast.Expression, message: SqlMessage) -> Any:
    """The value of an expression; ``None`` when unknown."""
    return _VALUE[type(node)](node, message)


def truth(node: ast.Node, message: SqlMessage) -> bool | None:
    """The truth of a predicate; ``None`` when unknown."""
    return _TRUTH[type(node)](node, message)


def user_key(user: dict[str, Any], prop: ast.Property) -> str | None:
    """The key under which ``user`` holds the property, whatever its case; ``None`` if absent."""
    if prop.name in user:
        return prop.name
    for key in user:
        if isinstance(key, str) and key.casefold() == prop.folded:
            return key
    return None


def lookup(node: ast.Reference, message: SqlMessage) -> Any:
    """The referenced value, or :data:`MISSING`."""
    if isinstance(node, ast.BodyPath):
        return _walk(message.body, node.path)
    if node.scope is ast.Scope.SYSTEM:
        return message.system.get(node.name, MISSING)
    key = user_key(message.user, node)
    return MISSING if key is None else message.user[key]


def _walk(document: Any, path: tuple[str, ...]) -> Any:
    current = document
    for segment in path:
        if isinstance(current, dict):
            current = current.get(segment, MISSING)
        elif isinstance(current, list) and segment.isdecimal() and int(segment) < len(current):
            current = current[int(segment)]
        else:
            return MISSING
        if current is MISSING:
            return MISSING
    return current


# --- Expressions ------------------------------------------------------------------------------


def _reference(node: ast.Reference, message: SqlMessage) -> Any:
    found = lookup(node, message)
    return None if found is MISSING else found


def _unary(node: ast.Unary, message: SqlMessage) -> Any:
    operand = value(node.operand, message)
    return negate(operand) if node.op == "-" else identity(operand)


def _binary(node: ast.Binary, message: SqlMessage) -> Any:
    return arithmetic(node.op, value(node.left, message), value(node.right, message))


def _property_function(node: ast.PropertyFunction, message: SqlMessage) -> Any:
    name = value(node.name, message)
    if not isinstance(name, str):
        return None
    reference = _named_reference(name)
    return None if reference is None else _reference(reference, message)


def _named_reference(name: str) -> ast.Property | None:
    """What property('sys.Label'), property('user.x') or property('x') refers to."""
    scope, dot, rest = name.partition(".")
    if dot and scope.casefold() == "sys":
        system = find_system_property(rest)
        return None if system is None else ast.Property.system(system.name)
    if dot and scope.casefold() == "user":
        return ast.Property.user(rest)
    return ast.Property.user(name)


_VALUE: dict[type, Callable[[Any, SqlMessage], Any]] = {
    ast.Literal: lambda node, _: node.value,
    ast.Property: _reference,
    ast.BodyPath: _reference,
    ast.Unary: _unary,
    ast.Binary: _binary,
    ast.NewId: lambda _node, _message: uuid.uuid4(),
    ast.PropertyFunction: _property_function,
}


# --- Predicates -------------------------------------------------------------------------------


def _literal_truth(node: ast.Literal, _message: SqlMessage) -> bool | None:
    return node.value if isinstance(node.value, bool) else None


def _comparison(node: ast.Comparison, message: SqlMessage) -> bool | None:
    return compare(node.op, value(node.left, message), value(node.right, message))


def _like(node: ast.Like, message: SqlMessage) -> bool | None:
    subject = value(node.operand, message)
    if not isinstance(subject, str):
        return None
    matcher = node.matcher
    if matcher is None:
        pattern = value(node.pattern, message)
        escape = None if node.escape is None else value(node.escape, message)
        if not isinstance(pattern, str) or (node.escape is not None and not _single_character(escape)):
            return None
        matcher = cached_like(pattern, escape)
        if matcher is None:
            return None
    return matcher.matches(subject) != node.negated


def _single_character(escape: Any) -> bool:
    return isinstance(escape, str) and len(escape) == 1


def _in(node: ast.In, message: SqlMessage) -> bool | None:
    operand = value(node.operand, message)
    if operand is None:
        return None
    found = any(equals(operand, value(item, message)) for item in node.items)
    return found != node.negated


def _is_null(node: ast.IsNull, message: SqlMessage) -> bool:
    found = lookup(node.operand, message)
    return (found is MISSING or found is None) != node.negated


def _exists(node: ast.Exists, message: SqlMessage) -> bool:
    return lookup(node.operand, message) is not MISSING


def _not(node: ast.Not, message: SqlMessage) -> bool | None:
    operand = truth(node.operand, message)
    return None if operand is None else not operand


def _and(node: ast.And, message: SqlMessage) -> bool | None:
    result: bool | None = True
    for operand in node.operands:
        outcome = truth(operand, message)
        if outcome is False:
            return False  # false AND anything, even unknown, is false
        if outcome is None:
            result = None
    return result


def _or(node: ast.Or, message: SqlMessage) -> bool | None:
    result: bool | None = False
    for operand in node.operands:
        outcome = truth(operand, message)
        if outcome is True:
            return True  # true OR anything, even unknown, is true
        if outcome is None:
            result = None
    return result


_TRUTH: dict[type, Callable[[Any, SqlMessage], bool | None]] = {
    ast.Literal: _literal_truth,
    ast.Comparison: _comparison,
    ast.Like: _like,
    ast.In: _in,
    ast.IsNull: _is_null,
    ast.Exists: _exists,
    ast.Not: _not,
    ast.And: _and,
    ast.Or: _or,
}
