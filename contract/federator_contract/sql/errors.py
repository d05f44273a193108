"""The one error the language raises: a syntax (or static type) error with its position."""

from __future__ import annotations


class SqlSyntaxError(ValueError):
    """A filter or action expression that Service Bus would refuse at rule creation.

    ``position`` is the 0-based character offset of the offending token (``len(expression)``
    when the text ended too early), so callers can point at it in their own reports.
    """

    def __init__(self, reason: str, expression: str, position: int) -> None:
        super().__init__(reason, expression, position)
        self.reason = reason
        self.expression = expression
        self.position = position

    def __str__(self) -> str:
        head = f"{self.reason} at position {self.position}: "
        text = f"{head}{self.expression}"
        # A caret only lines up under single-line expressions.
        if "\n" in self.expression:
            return text
        return f"{text}\n{' ' * (len(head) + self.position)}^"
