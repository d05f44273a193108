"""Reading Secret values for management access. Values are returned to the caller only: they never go
into messages, status, Events, logs or metrics (messages name the Secret and key, nothing more)."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from federator import reasons
from federator.kube.reads import SecretSource
from federator.kube.resources import SECRETS
from federator.provision.errors import ManagementError

__all__ = ["SecretSource", "SecretsAtHand", "secret_values"]


@dataclass(frozen=True)
class SecretsAtHand:
    """A `SecretSource` over Secret objects already read, by API path; one not among them does not exist."""

    by_path: Mapping[str, dict[str, Any] | None]

    async def get(self, path: str) -> dict[str, Any] | None:
        return self.by_path.get(path)


async def secret_values(
    kube: SecretSource, namespace: str, name: str, keys: tuple[str, ...]
) -> dict[str, str]:
    """The values of `keys` in Secret `namespace/name`; SecretNotFound / SecretKeyNotFound otherwise."""
    secret = await kube.get(SECRETS.path(namespace, name))
    if secret is None:
        raise ManagementError(
            reasons.SECRET_NOT_FOUND,
            f"Secret {namespace}/{name} does not exist; create it with key(s) {', '.join(keys)}",
        )
    data, plain = secret.get("data") or {}, secret.get("stringData") or {}
    values: dict[str, str] = {}
    for key in keys:
        if key in plain:
            values[key] = str(plain[key])
        elif key in data:
            try:
                values[key] = base64.b64decode(data[key], validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                message = f"Secret {namespace}/{name} key {key!r} is not valid base64 text"
                raise ManagementError(reasons.SECRET_KEY_NOT_FOUND, message) from None
        else:
            raise ManagementError(
                reasons.SECRET_KEY_NOT_FOUND, f"Secret {namespace}/{name} has no key {key!r}"
            )
    return values
