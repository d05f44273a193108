"""Recognising credentials in a manifest, so they are refused and never repeated back in a message."""

from __future__ import annotations

import re
from typing import Any

_SHAPES = (
    (re.compile(r"SharedAccessKey\s*=", re.IGNORECASE), "a connection string with SharedAccessKey"),
    (re.compile(r"SharedAccessSignature\s+sr=", re.IGNORECASE), "a SAS token"),
    # A SAS as a URL query string (`?sv=…&se=…&sig=…`) or bare (`sv=…&sig=…`): the signature is the secret.
    (re.compile(r"(?:^|[?&;\s])sig=[A-Za-z0-9%+/=_-]{16,}", re.IGNORECASE), "a SAS token (sig=)"),
    (re.compile(r"AccountKey\s*=", re.IGNORECASE), "a storage connection string with AccountKey"),
    # A storage account key on its own: 64 random bytes, base64 (88 characters ending in `==`).
    (re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{86}==(?![A-Za-z0-9+/=])"), "a storage account key"),
    # Patterns start only where a match can (lookbehinds, bounded scheme): a long value stays linear.
    (
        re.compile(r"(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,31}://[^/\s:@]+:[^/\s@]+@", re.IGNORECASE),
        "a URI with a password",
    ),
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


def secret_findings(value: Any, path: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], str]]:
    """(path, what it looks like) of every string in `value` that looks like a credential, keys
    included, in document order."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if (shape := secret_shape(key)) is not None:
                found.append(((*path, key), shape))
            found += secret_findings(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += secret_findings(item, (*path, i))
    elif (shape := secret_shape(value)) is not None:
        found.append((path, shape))
    return found


def inline_secret_message(shape: str) -> str:
    return f"contains {shape}: inline secrets are not accepted; reference a Secret instead (e.g. secretRef)"
