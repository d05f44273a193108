"""The syntax tree: immutable nodes built once by the parser and walked for every message.

Nodes are plain data (frozen, slotted, picklable so that a parsed filter can travel to Spark
executors); what they mean at run time lives in :mod:`federator_contract.sql.evaluate` and
:mod:`federator_contract.sql.actions`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from federator_contract.sql.patterns import LikePattern


class Scope(enum.Enum):
    USER = "user"
    SYSTEM = "sys"


# --- Expressions: nodes with a value --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Literal:
    value: Any  # constants, bound parameters and folded constant arithmetic


@dataclass(frozen=True, slots=True)
class Property:
    scope: Scope
    name: str  # as written for user properties; the canonical name for system properties
    folded: str  # name.casefold(): property names are case-insensitive

    @classmethod
    def user(cls, name: str) -> Property:
        return cls(Scope.USER, name, name.casefold())

    @classmethod
    def system(cls, canonical_name: str) -> Property:
        return cls(Scope.SYSTEM, canonical_name, canonical_name.casefold())


@dataclass(frozen=True, slots=True)
class BodyPath:
    path: tuple[str, ...]  # keys of JSON objects, or decimal indexes into arrays


@dataclass(frozen=True, slots=True)
class Unary:
    op: str  # '+' or '-'
    operand: Expression


@dataclass(frozen=True, slots=True)
class Binary:
    op: str  # '+', '-', '*', '/' or '%'
    left: Expression
    right: Expression


@dataclass(frozen=True, slots=True)
class NewId:
    """newid(): a fresh UUID on every evaluation."""


@dataclass(frozen=True, slots=True)
class PropertyFunction:
    """property(name) / p(name): the property whose name an expression computes."""

    name: Expression


# --- Predicates: nodes with a truth value (True, False or unknown) ----------------------------


@dataclass(frozen=True, slots=True)
class Comparison:
    op: str  # '=', '<>', '<', '<=', '>', '>=' ('!=' is normalized to '<>')
    left: Expression
    right: Expression


@dataclass(frozen=True, slots=True)
class Like:
    operand: Expression
    pattern: Expression
    escape: Expression | None
    matcher: LikePattern | None  # compiled once when pattern and escape are constants
    negated: bool


@dataclass(frozen=True, slots=True)
class In:
    operand: Expression
    items: tuple[Expression, ...]
    negated: bool


@dataclass(frozen=True, slots=True)
class IsNull:
    operand: Reference
    negated: bool


@dataclass(frozen=True, slots=True)
class Exists:
    operand: Reference


@dataclass(frozen=True, slots=True)
class Not:
    operand: Node


# AND and OR chains are flat, so evaluating a long chain loops instead of recursing.
@dataclass(frozen=True, slots=True)
class And:
    operands: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    operands: tuple[Node, ...]


# --- Action statements ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Set:
    target: Property
    value: Expression


@dataclass(frozen=True, slots=True)
class Remove:
    target: Property


Reference = Property | BodyPath
Expression = Literal | Property | BodyPath | Unary | Binary | NewId | PropertyFunction
Predicate = Comparison | Like | In | IsNull | Exists | Not | And | Or
# A boolean Literal may stand where a predicate is expected ("TRUE", "NOT FALSE").
Node = Expression | Predicate
Statement = Set | Remove

PREDICATE_TYPES = (Comparison, Like, In, IsNull, Exists, Not, And, Or)
