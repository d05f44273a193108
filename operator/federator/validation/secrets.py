"""Recognising credentials in a spec, so they are refused and never repeated back in a message."""

from __future__ import annotations

import re
from typing import Any

_SHAPES = (
    (re.compile(r"SharedAccessKey\s*=", re.IGNORECASE), "a connection string with SharedAccessKey"),
    (re.compile(r"SharedAccessSignature\s+sr=", re.IGNORECASE), "a SAS token"),
    (re.compile(r"AccountKey\s*=", re.IGNORECASE), "a storage connection string with AccountKey"),
    (re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@", re.IGNORECASE), "a URI with a password"),
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), "a private key"),
)


def secret_shape(value: Any) -> str | None:
    """What kind of credential `value` looks like, or None."""
    if isinstance(value, str):
        for pattern, shape in _SHAPES:
            if pattern.search(value):
                return shape
    return None


def shown(value: Any) -> str:
    """`value` as it may appear in a message: its repr, or a redaction naming what it looks like."""
    shape = secret_shape(value)
    return f"<redacted: {shape}>" if shape else repr(value)
