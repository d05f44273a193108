"""Names of generated objects: readable, deterministic, and within Kubernetes and Service Bus limits."""

from __future__ import annotations

import hashlib


def bounded(name: str, limit: int) -> str:
    """`name` itself when it fits; otherwise a prefix and a short hash of the whole, so two long names
    that share a prefix still differ."""
    if len(name) <= limit:
        return name
    digest = hashlib.sha1(name.encode(), usedforsecurity=False).hexdigest()[:8]
    return f"{name[: limit - 9].rstrip('-')}-{digest}"
