"""Turns expression text into tokens, reporting lexical errors with their position."""

from __future__ import annotations

import enum
import re
from typing import Any, NamedTuple

from federator_contract.sql.errors import SqlSyntaxError

KEYWORDS = frozenset(
    {"AND", "OR", "NOT", "IS", "NULL", "IN", "LIKE", "ESCAPE", "EXISTS", "TRUE", "FALSE", "SET", "REMOVE"}
)

COMPARISON_OPERATORS = frozenset({"=", "<>", ">", ">=", "<", "<="})
ARITHMETIC_OPERATORS = frozenset({"+", "-", "*", "/", "%"})

_NUMBER = re.compile(r"(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?")
# Right after a dot, digits are a path segment (an array index in "body.items.0.id"), never a decimal.
_SEGMENT_NUMBER = re.compile(r"\d+")
_COMPARISON_RUN = re.compile(r"[=<>!]+")
# Characters that look like operators from other languages (&&, ||, ^, ~): named in the error.
_FOREIGN_OPERATOR_RUN = re.compile(r"[&|^~]+")
_INT64_MAX = 2**63 - 1


class TokenKind(enum.Enum):
    IDENTIFIER = "identifier"  # a regular identifier; value is its text
    DELIMITED = "delimited identifier"  # [..] or ".."; value is the unescaped name
    KEYWORD = "keyword"  # value is the upper-case keyword
    STRING = "string"
    INTEGER = "integer"
    DECIMAL = "decimal"
    PARAMETER = "parameter"  # @name; value includes the '@'
    OPERATOR = "operator"  # value is the normalized operator ('!=' becomes '<>')
    LPAREN = "'('"
    RPAREN = "')'"
    COMMA = "','"
    SEMICOLON = "';'"
    DOT = "'.'"
    END = "end of expression"


# Tokens after which a dot continues a name ("sys.Label", "body.m.0.1") rather than starts ".5".
_NAME_KINDS = (TokenKind.IDENTIFIER, TokenKind.DELIMITED, TokenKind.KEYWORD, TokenKind.INTEGER)


class Token(NamedTuple):
    kind: TokenKind
    text: str  # the source slice, for error messages
    value: Any
    position: int


# Opening character -> (token kind, closing character, error when it never closes).
_QUOTES = {
    "'": (TokenKind.STRING, "'", "unterminated string literal"),
    "[": (TokenKind.DELIMITED, "]", "unterminated delimited identifier"),
    '"': (TokenKind.DELIMITED, '"', "unterminated quoted identifier"),
}

_PUNCTUATION = {
    "(": TokenKind.LPAREN,
    ")": TokenKind.RPAREN,
    ",": TokenKind.COMMA,
    ";": TokenKind.SEMICOLON,
}


def describe(token: Token) -> str:
    """How an error message names a token: its source text, or 'end of expression'."""
    return TokenKind.END.value if token.kind is TokenKind.END else repr(token.text)


def tokenize(text: str) -> list[Token]:
    """All tokens of ``text``, ending with one END token."""
    return _Scanner(text).run()


def _is_identifier_start(char: str) -> bool:
    return char.isalpha()


def _is_identifier_part(char: str) -> bool:
    return char.isalpha() or char.isdecimal() or char == "_"


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.tokens: list[Token] = []

    def run(self) -> list[Token]:
        text = self.text
        while True:
            while self.pos < len(text) and text[self.pos].isspace():
                self.pos += 1
            if self.pos >= len(text):
                self.tokens.append(Token(TokenKind.END, "", None, len(text)))
                return self.tokens
            self.tokens.append(self._next(text[self.pos]))

    def _error(self, reason: str, position: int) -> SqlSyntaxError:
        return SqlSyntaxError(reason, self.text, position)

    def _emit(self, kind: TokenKind, start: int, value: Any) -> Token:
        return Token(kind, self.text[start : self.pos], value, start)

    def _next(self, char: str) -> Token:
        start = self.pos
        if char in _QUOTES:
            kind, close, unterminated = _QUOTES[char]
            text = self._quoted(close, unterminated)
            if kind is TokenKind.DELIMITED and not text:
                raise self._error("empty identifier", start)
            return self._emit(kind, start, text)
        if char.isdecimal() or (char == "." and self._dot_starts_number()):
            return self._number()
        if _is_identifier_start(char):
            return self._word()
        if char == "@":
            return self._parameter()
        if char == ".":
            self.pos += 1
            return self._emit(TokenKind.DOT, start, ".")
        if char in _PUNCTUATION:
            self.pos += 1
            return self._emit(_PUNCTUATION[char], start, char)
        if char in ARITHMETIC_OPERATORS:
            self.pos += 1
            return self._emit(TokenKind.OPERATOR, start, char)
        return self._operator_run(start)

    def _quoted(self, close: str, unterminated: str) -> str:
        """Text between an opening character and ``close``, where a doubled ``close`` escapes itself."""
        start = self.pos
        self.pos += 1
        parts: list[str] = []
        while True:
            end = self.text.find(close, self.pos)
            if end < 0:
                raise self._error(unterminated, start)
            parts.append(self.text[self.pos : end])
            if self.text.startswith(close * 2, end):
                parts.append(close)
                self.pos = end + 2
                continue
            self.pos = end + 1
            return "".join(parts)

    def _dot_starts_number(self) -> bool:
        # After an identifier a dot separates a scope or path segment ("sys.Label", "body.a.0").
        nxt = self.text[self.pos + 1 : self.pos + 2]
        previous = self.tokens[-1].kind if self.tokens else None
        return nxt.isdecimal() and previous not in _NAME_KINDS

    def _number(self) -> Token:
        start = self.pos
        after_dot = bool(self.tokens) and self.tokens[-1].kind is TokenKind.DOT
        match = (_SEGMENT_NUMBER if after_dot else _NUMBER).match(self.text, start)
        assert match is not None  # the caller saw a digit
        self.pos = match.end()
        literal = match.group()
        if "." in literal or "e" in literal or "E" in literal:
            value = float(literal)
            if value == float("inf"):
                raise self._error("numeric constant out of range", start)
            return self._emit(TokenKind.DECIMAL, start, value)
        integer = int(literal)
        # Integer constants are System.Int64 in Service Bus.
        if integer > _INT64_MAX:
            raise self._error("integer constant out of range", start)
        return self._emit(TokenKind.INTEGER, start, integer)

    def _word(self) -> Token:
        start = self.pos
        self.pos += 1
        while self.pos < len(self.text) and _is_identifier_part(self.text[self.pos]):
            self.pos += 1
        word = self.text[start : self.pos]
        upper = word.upper()
        if upper in KEYWORDS:
            return self._emit(TokenKind.KEYWORD, start, upper)
        return self._emit(TokenKind.IDENTIFIER, start, word)

    def _parameter(self) -> Token:
        start = self.pos
        self.pos += 1
        while self.pos < len(self.text) and _is_identifier_part(self.text[self.pos]):
            self.pos += 1
        if self.pos == start + 1:
            raise self._error("expected a parameter name after '@'", start)
        return self._emit(TokenKind.PARAMETER, start, self.text[start : self.pos])

    def _operator_run(self, start: int) -> Token:
        for pattern in (_COMPARISON_RUN, _FOREIGN_OPERATOR_RUN):
            match = pattern.match(self.text, start)
            if match is None:
                continue
            operator = match.group()
            if operator == "!=":
                operator = "<>"
            if operator not in COMPARISON_OPERATORS:
                raise self._error(f"unknown operator {match.group()!r}", start)
            self.pos = match.end()
            return self._emit(TokenKind.OPERATOR, start, operator)
        raise self._error(f"unexpected character {self.text[start]!r}", start)
