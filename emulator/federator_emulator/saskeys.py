"""The values of SAS keys declared without one: each namespace's own, so that a token signed with one
namespace's key is refused by every other, as on Azure.

A value is derived from a secret of the emulator's (HMAC-SHA256 of the namespace and key names, base64
like Azure's keys). The secret is made at the first start and kept in the data dir, as the token signing
key is: connection strings that local mode handed out stay valid across restarts of the same state, while
an emulator without a data dir (the tests) gets new keys every time it starts.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
from collections.abc import Callable
from pathlib import Path

from federator_contract.emulatorconfig import DEFAULT_KEY_VALUE, EmulatorConfig, NamespaceConfig

SECRET_FILE_NAME = "sas-key-secret"
_SECRET_BYTES = 32


def load_or_create_secret(directory: Path) -> bytes:
    """The secret in ``directory``, made (readable by its owner only) when there is none."""
    path = directory / SECRET_FILE_NAME
    if path.exists():
        secret = path.read_bytes()
        if len(secret) != _SECRET_BYTES:
            raise ValueError(f"{path} does not hold a {_SECRET_BYTES}-byte secret; delete it to make another")
        return secret
    secret = secrets.token_bytes(_SECRET_BYTES)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(secret)
    tmp.replace(path)
    return secret


def derive_key(secret: bytes, namespace: str, key_name: str) -> str:
    """A key's value: 32 bytes, base64 (44 characters), as Azure's shared access keys are."""
    digest = hmac.new(secret, f"{namespace}\n{key_name}".encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def with_key_values(config: EmulatorConfig, directory: Path) -> EmulatorConfig:
    """``config`` with a value for every key: the namespace's own (secret kept in ``directory``), or with
    ``sharedDefaultKey`` the well-known one."""
    if all(k.key is not None for n in config.namespaces for k in n.keys):
        return config
    secret = None if config.shared_default_key else load_or_create_secret(directory)

    def value(namespace: str, key_name: str) -> str:
        return DEFAULT_KEY_VALUE if secret is None else derive_key(secret, namespace, key_name)

    return config.model_copy(update={"namespaces": [_filled(n, value) for n in config.namespaces]})


def _filled(namespace: NamespaceConfig, value: Callable[[str, str], str]) -> NamespaceConfig:
    keys = [
        k if k.key is not None else k.model_copy(update={"key": value(namespace.name, k.name)})
        for k in namespace.keys
    ]
    return namespace.model_copy(update={"keys": keys})
