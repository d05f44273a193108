"""Recursive-descent parser for filter predicates and action statements.

Precedence, lowest first: OR, AND, NOT, then one (non-chaining) comparison, IS [NOT] NULL,
[NOT] LIKE or [NOT] IN, then + and -, then * / %, then unary + and -. Besides syntax the parser
checks what Service Bus refuses when a rule is created: unknown functions, system properties and
scopes, writes to read-only properties, and operations that can never succeed between constants
(a number LIKE pattern, 'a' * 2, 1 = 'x'). Constant arithmetic is folded once here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeVar

from federator_contract.sql import ast
from federator_contract.sql.errors import SqlSyntaxError
from federator_contract.sql.lexer import COMPARISON_OPERATORS, Token, TokenKind, describe, tokenize
from federator_contract.sql.model import Dialect
from federator_contract.sql.patterns import LikePattern, PatternError, compile_like
from federator_contract.sql.system_properties import SYSTEM_PROPERTIES, ConversionError, find_system_property
from federator_contract.sql.values import (
    ValueClass,
    arithmetic,
    arithmetic_class,
    arithmetic_possible,
    classify,
    comparison_possible,
    identity,
    negate,
    sign_possible,
)

_T = TypeVar("_T")
# "Max allowed length of sql expression is 1024 chars" (SqlRuleFilter, SqlRuleAction).
MAX_SERVICE_BUS_LENGTH = 1024
_FUNCTION_ARITY = {"newid": 0, "property": 1, "p": 1}
_NAME_TOKENS = (TokenKind.IDENTIFIER, TokenKind.DELIMITED, TokenKind.KEYWORD)


def parse_predicate(text: str, dialect: Dialect, parameters: Mapping[str, Any] | None = None) -> ast.Node:
    parser = _Parser(text, dialect, parameters)
    return parser.whole(parser.predicate)


def parse_statements(
    text: str, dialect: Dialect, parameters: Mapping[str, Any] | None = None
) -> tuple[ast.Statement, ...]:
    parser = _Parser(text, dialect, parameters)
    return parser.whole(parser.statements)


def static_class(node: ast.Node) -> ValueClass | None:
    """The class every value of ``node`` has, when the parser can know it."""
    if isinstance(node, ast.Literal):
        return classify(node.value)
    if isinstance(node, ast.Binary):
        return arithmetic_class(node.op, static_class(node.left), static_class(node.right))
    if isinstance(node, ast.Unary):
        return static_class(node.operand)
    if isinstance(node, ast.NewId):
        return ValueClass.UUID
    return None


def _is_boolean_constant(node: ast.Node) -> bool:
    return isinstance(node, ast.Literal) and isinstance(node.value, bool)


class _Parser:
    def __init__(self, text: str, dialect: Dialect, parameters: Mapping[str, Any] | None) -> None:
        self.text = text
        self.dialect = dialect
        # Parameters are bound now, so they type-check like the constants they are.
        self.parameters = {_parameter_key(name): value for name, value in (parameters or {}).items()}
        self.tokens = tokenize(text)
        self.index = 0

    # --- Tokens -------------------------------------------------------------------------------

    def peek(self, offset: int = 0) -> Token:
        return self.tokens[min(self.index + offset, len(self.tokens) - 1)]

    def advance(self) -> Token:
        token = self.tokens[self.index]
        self.index = min(self.index + 1, len(self.tokens) - 1)
        return token

    def at(self, kind: TokenKind, value: Any = None) -> bool:
        token = self.peek()
        return token.kind is kind and (value is None or token.value == value)

    def accept(self, kind: TokenKind, value: Any = None) -> bool:
        if self.at(kind, value):
            self.advance()
            return True
        return False

    def expect(self, kind: TokenKind, what: str, value: Any = None) -> Token:
        if not self.at(kind, value):
            self.fail(f"expected {what}", self.peek().position)
        return self.advance()

    def fail(self, reason: str, position: int) -> NoReturn:
        raise SqlSyntaxError(reason, self.text, position)

    def whole(self, parse: Callable[[], _T]) -> _T:
        """``parse()`` must consume the whole, non-empty text."""
        if self.at(TokenKind.END):
            self.fail("empty expression", 0)
        if self.dialect is Dialect.SERVICE_BUS and len(self.text) > MAX_SERVICE_BUS_LENGTH:
            self.fail(f"expression longer than {MAX_SERVICE_BUS_LENGTH} characters", MAX_SERVICE_BUS_LENGTH)
        try:
            result = parse()
        except RecursionError:
            self.fail("expression nested too deeply", 0)
        if not self.at(TokenKind.END):
            self.fail(f"unexpected {describe(self.peek())}", self.peek().position)
        return result

    # --- Checks -------------------------------------------------------------------------------

    def require_predicate(self, node: ast.Node, position: int) -> ast.Node:
        if isinstance(node, ast.PREDICATE_TYPES) or _is_boolean_constant(node):
            return node
        self.fail("expected a predicate", position)

    def require_value(self, node: ast.Node, position: int) -> ast.Expression:
        if isinstance(node, ast.PREDICATE_TYPES):
            self.fail("a predicate cannot be used as a value", position)
        return node

    def cannot_apply(self, op: str, position: int, *classes: ValueClass | None) -> NoReturn:
        names = " and ".join(cls.value for cls in classes if cls is not None)
        self.fail(f"operator {op!r} cannot be applied to {names}", position)

    # --- Predicates ---------------------------------------------------------------------------

    def predicate(self) -> ast.Node:
        start = self.peek().position
        return self.require_predicate(self.disjunction(), start)

    def disjunction(self) -> ast.Node:
        return self.logical("OR", ast.Or, self.conjunction)

    def conjunction(self) -> ast.Node:
        return self.logical("AND", ast.And, self.negation)

    def logical(
        self, keyword: str, node_type: type[ast.And] | type[ast.Or], operand: Callable[[], ast.Node]
    ) -> ast.Node:
        start = self.peek().position
        first = operand()
        if not self.at(TokenKind.KEYWORD, keyword):
            return first
        operands = [self.require_predicate(first, start)]
        while self.accept(TokenKind.KEYWORD, keyword):
            start = self.peek().position
            operands.append(self.require_predicate(operand(), start))
        return node_type(tuple(operands))

    def negation(self) -> ast.Node:
        if self.accept(TokenKind.KEYWORD, "NOT"):
            start = self.peek().position
            return ast.Not(self.require_predicate(self.negation(), start))
        return self.condition()

    def condition(self) -> ast.Node:
        if self.at(TokenKind.KEYWORD, "EXISTS"):
            return self.exists()
        start = self.peek().position
        left = self.additive()
        token = self.peek()
        if token.kind is TokenKind.OPERATOR and token.value in COMPARISON_OPERATORS:
            return self.comparison(self.require_value(left, start))
        if token.kind is TokenKind.KEYWORD and token.value == "IS":
            return self.is_null(left, start)
        negated = self.accept(TokenKind.KEYWORD, "NOT")
        if self.at(TokenKind.KEYWORD, "LIKE"):
            return self.like(self.require_value(left, start), start, negated)
        if self.at(TokenKind.KEYWORD, "IN"):
            return self.in_list(self.require_value(left, start), negated)
        if negated:
            self.fail("expected LIKE or IN", self.peek().position)
        return left

    def comparison(self, left: ast.Expression) -> ast.Comparison:
        op_token = self.advance()
        op = op_token.value
        right = self.value()
        left_class, right_class = static_class(left), static_class(right)
        if not comparison_possible(op, left_class, right_class):
            if left_class is not None and right_class is not None and left_class is not right_class:
                self.fail(f"cannot compare {left_class.value} with {right_class.value}", op_token.position)
            self.cannot_apply(op, op_token.position, left_class, right_class)
        return ast.Comparison(op, left, right)

    def is_null(self, operand: ast.Node, start: int) -> ast.IsNull:
        if not isinstance(operand, ast.Property | ast.BodyPath):
            self.fail("IS NULL applies to a property", start)
        self.advance()
        negated = self.accept(TokenKind.KEYWORD, "NOT")
        self.expect(TokenKind.KEYWORD, "NULL", "NULL")
        return ast.IsNull(operand, negated)

    def exists(self) -> ast.Exists:
        self.advance()
        self.expect(TokenKind.LPAREN, "'(' after EXISTS")
        if not self.at(TokenKind.IDENTIFIER) and not self.at(TokenKind.DELIMITED):
            self.fail("expected a property", self.peek().position)
        operand = self.reference()
        self.expect(TokenKind.RPAREN, "')'")
        return ast.Exists(operand)

    def like(self, operand: ast.Expression, start: int, negated: bool) -> ast.Like:
        self.advance()
        if static_class(operand) not in (None, ValueClass.NULL, ValueClass.STRING):
            self.fail("LIKE applies to a string", start)
        pattern_start = self.peek().position
        pattern = self.value()
        if static_class(pattern) not in (None, ValueClass.NULL, ValueClass.STRING):
            self.fail("LIKE pattern must be a string", pattern_start)
        escape = None
        if self.accept(TokenKind.KEYWORD, "ESCAPE"):
            escape_start = self.peek().position
            escape = self.value()
            escape_class = static_class(escape)
            if escape_class is not None and not (
                isinstance(escape, ast.Literal) and isinstance(escape.value, str) and len(escape.value) == 1
            ):
                self.fail("ESCAPE must be a single character", escape_start)
        return ast.Like(operand, pattern, escape, self.constant_like(pattern, escape, pattern_start), negated)

    def constant_like(
        self, pattern: ast.Expression, escape: ast.Expression | None, position: int
    ) -> LikePattern | None:
        """The compiled pattern when it is known now, so matching never compiles it again."""
        if not (isinstance(pattern, ast.Literal) and isinstance(pattern.value, str)):
            return None
        if escape is not None and not isinstance(escape, ast.Literal):
            return None
        try:
            return compile_like(pattern.value, None if escape is None else escape.value)
        except PatternError as error:
            self.fail(str(error), position)

    def in_list(self, operand: ast.Expression, negated: bool) -> ast.In:
        self.advance()
        self.expect(TokenKind.LPAREN, "'(' after IN")
        items = [self.value()]
        while self.accept(TokenKind.COMMA):
            items.append(self.value())
        self.expect(TokenKind.RPAREN, "',' or ')'")
        return ast.In(operand, tuple(items), negated)

    # --- Expressions --------------------------------------------------------------------------

    def value(self) -> ast.Expression:
        start = self.peek().position
        return self.require_value(self.additive(), start)

    def additive(self) -> ast.Node:
        return self.arithmetic(("+", "-"), self.multiplicative)

    def multiplicative(self) -> ast.Node:
        return self.arithmetic(("*", "/", "%"), self.unary)

    def arithmetic(self, operators: tuple[str, ...], operand: Callable[[], ast.Node]) -> ast.Node:
        start = self.peek().position
        left: ast.Node = operand()
        while self.peek().kind is TokenKind.OPERATOR and self.peek().value in operators:
            op_token = self.advance()
            left_value = self.require_value(left, start)
            right_start = self.peek().position
            right = self.require_value(operand(), right_start)
            left = self.binary(op_token, left_value, right)
        return left

    def binary(self, op_token: Token, left: ast.Expression, right: ast.Expression) -> ast.Expression:
        op = op_token.value
        left_class, right_class = static_class(left), static_class(right)
        if not arithmetic_possible(op, left_class, right_class):
            self.cannot_apply(op, op_token.position, left_class, right_class)
        if not (isinstance(left, ast.Literal) and isinstance(right, ast.Literal)):
            return ast.Binary(op, left, right)
        if op in ("/", "%") and right_class is ValueClass.NUMBER and right.value == 0:
            self.fail("division by zero", op_token.position)
        return ast.Literal(arithmetic(op, left.value, right.value))

    def unary(self) -> ast.Node:
        token = self.peek()
        if not (token.kind is TokenKind.OPERATOR and token.value in ("+", "-")):
            return self.primary()
        self.advance()
        start = self.peek().position
        operand = self.require_value(self.unary(), start)
        operand_class = static_class(operand)
        if not sign_possible(operand_class):
            self.cannot_apply(token.value, token.position, operand_class)
        if isinstance(operand, ast.Literal):
            return ast.Literal(negate(operand.value) if token.value == "-" else identity(operand.value))
        return ast.Unary(token.value, operand)

    def primary(self) -> ast.Node:
        token = self.peek()
        if token.kind is TokenKind.LPAREN:
            self.advance()
            inner = self.disjunction()
            self.expect(TokenKind.RPAREN, "')'")
            return inner
        if token.kind in (TokenKind.STRING, TokenKind.INTEGER, TokenKind.DECIMAL):
            self.advance()
            return ast.Literal(token.value)
        if token.kind is TokenKind.KEYWORD and token.value in ("TRUE", "FALSE", "NULL"):
            self.advance()
            return ast.Literal({"TRUE": True, "FALSE": False, "NULL": None}[token.value])
        if token.kind is TokenKind.PARAMETER:
            return self.parameter()
        if token.kind is TokenKind.IDENTIFIER and self.peek(1).kind is TokenKind.LPAREN:
            return self.function()
        if token.kind in (TokenKind.IDENTIFIER, TokenKind.DELIMITED):
            return self.reference()
        self.fail("expected an expression", token.position)

    def parameter(self) -> ast.Literal:
        token = self.advance()
        key = _parameter_key(token.value)
        if key not in self.parameters:
            self.fail(f"unknown parameter {token.text!r}", token.position)
        return ast.Literal(self.parameters[key])

    def function(self) -> ast.Expression:
        name_token = self.advance()
        name = name_token.value.casefold()
        arity = _FUNCTION_ARITY.get(name)
        if arity is None:
            self.fail(f"unknown function {name_token.value!r}", name_token.position)
        self.advance()
        arguments: list[tuple[int, ast.Expression]] = []
        if not self.at(TokenKind.RPAREN):
            arguments.append((self.peek().position, self.value()))
            while self.accept(TokenKind.COMMA):
                arguments.append((self.peek().position, self.value()))
        self.expect(TokenKind.RPAREN, "')'")
        if len(arguments) != arity:
            plural = "argument" if arity == 1 else "arguments"
            self.fail(f"function {name_token.value!r} takes {arity} {plural}", name_token.position)
        if name == "newid":
            return ast.NewId()
        position, argument = arguments[0]
        if static_class(argument) not in (None, ValueClass.NULL, ValueClass.STRING):
            self.fail("a property name must be a string", position)
        return ast.PropertyFunction(argument)

    def reference(self) -> ast.Reference:
        """``name``, ``[name]``, ``user.name``, ``sys.Name``, and ``body.a.b`` in the federator dialect."""
        reference = self.scoped_reference()
        if self.at(TokenKind.DOT):
            # Only body paths have more than one dot; other dotted names need [brackets].
            self.fail("unexpected '.'", self.peek().position)
        return reference

    def scoped_reference(self) -> ast.Reference:
        first = self.advance()
        if first.kind is not TokenKind.IDENTIFIER or not self.at(TokenKind.DOT):
            return ast.Property.user(first.value)
        scope = first.value.casefold()
        if scope == "body":
            if self.dialect is not Dialect.FEDERATOR:
                self.fail("body references need the federator dialect", first.position)
            segments = []
            while self.accept(TokenKind.DOT):
                segments.append(self.name_segment(allow_index=True))
            return ast.BodyPath(tuple(segments))
        if scope not in ("sys", "user"):
            self.fail(f"unknown scope {first.value!r}", first.position)
        self.advance()
        name_position = self.peek().position
        name = self.name_segment(allow_index=False)
        if scope == "user":
            return ast.Property.user(name)
        system = find_system_property(name)
        if system is None:
            self.fail(f"unknown system property {name!r}", name_position)
        return ast.Property.system(system.name)

    def name_segment(self, *, allow_index: bool) -> str:
        """A name after a dot, where keywords are names too (``user.not``)."""
        token = self.peek()
        if token.kind is TokenKind.DELIMITED:
            self.advance()
            return str(token.value)
        if token.kind in _NAME_TOKENS or (allow_index and token.kind is TokenKind.INTEGER):
            self.advance()
            return token.text
        self.fail("expected a property name", token.position)

    # --- Action statements --------------------------------------------------------------------

    def statements(self) -> tuple[ast.Statement, ...]:
        # "<statement> ::= <action> [;]": statements follow each other, each with an optional ';'.
        statements = [self.statement()]
        self.accept(TokenKind.SEMICOLON)
        while not self.at(TokenKind.END):
            statements.append(self.statement())
            self.accept(TokenKind.SEMICOLON)
        return tuple(statements)

    def statement(self) -> ast.Statement:
        if self.accept(TokenKind.KEYWORD, "REMOVE"):
            return ast.Remove(self.target())
        if not self.accept(TokenKind.KEYWORD, "SET"):
            self.fail("expected SET or REMOVE", self.peek().position)
        target = self.target()
        self.expect(TokenKind.OPERATOR, "'='", "=")
        value_start = self.peek().position
        value = self.value()
        if target.scope is ast.Scope.SYSTEM and isinstance(value, ast.Literal) and value.value is not None:
            value = self.converted_constant(target, value, value_start)
        return ast.Set(target, value)

    def target(self) -> ast.Property:
        token = self.peek()
        if token.kind not in (TokenKind.IDENTIFIER, TokenKind.DELIMITED):
            self.fail("expected a property", token.position)
        target = self.reference()
        if isinstance(target, ast.BodyPath):
            self.fail("body references are read-only", token.position)
        if target.scope is ast.Scope.SYSTEM and not SYSTEM_PROPERTIES[target.name].writable:
            self.fail(f"sys.{target.name} is read-only", token.position)
        return target

    def converted_constant(self, target: ast.Property, value: ast.Literal, position: int) -> ast.Literal:
        """A constant assigned to a system property, converted (and so checked) once, now."""
        convert = SYSTEM_PROPERTIES[target.name].convert
        assert convert is not None  # target() only lets writable properties through
        try:
            return ast.Literal(convert(value.value))
        except ConversionError as error:
            self.fail(f"cannot assign to sys.{target.name}: {error}", position)


def _parameter_key(name: str) -> str:
    return (name if name.startswith("@") else f"@{name}").casefold()
