"""Secret and ConfigMap references in local mode: where they find their values without a cluster.

A `secretRef`: the environment variable `FEDERATOR_SECRET_<name>__<key>` (the name the operator gives the
Spark pods, `federator_contract.taskconfig.secret_env_var`: `orders-weu/connectionString` is
`FEDERATOR_SECRET_orders_weu__connectionString`) wins when it is set; otherwise a `v1/Secret` document
among the manifest files provides the key (`stringData` as is, `data` base64-decoded). Values only ever
travel in the app's environment: never in the task config file, the live view or logs.

A ConfigMap key an editor reads (a JSON Schema, a lookup table): a `v1/ConfigMap` document among the files
(`data`, or `binaryData` base64-decoded), written to the state dir and given to the app as a file, the way
a pod mounts it.

Mirror provisioning and failover probes read Secrets through `LocalSecrets`, the local `SecretSource`:
the same lookup, resolved before they start.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from federator import reasons
from federator.kube.resources import SECRETS
from federator.planning.secrets import SecretBinding, secret_bindings
from federator.planning.task import ConfigMapFile
from federator.provision.credentials import SERVICE_PRINCIPAL_KEYS
from federator.provision.secrets import SecretsAtHand
from federator_contract.api.servicebusmirror import ArmCredential


@dataclass(frozen=True)
class Unresolved:
    """Why a task cannot get a value it references (a Stalled reason and what to do)."""

    reason: str
    message: str


@dataclass(frozen=True)
class SupportingDocuments:
    """The `Secret` and `ConfigMap` documents of the manifest files, by kind, namespace and name."""

    by_name: Mapping[tuple[str, str, str], Mapping[str, Any]]

    @classmethod
    def collect(cls, bodies: Iterable[Any]) -> SupportingDocuments:
        found: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        for body in bodies:
            if isinstance(body, dict) and body.get("apiVersion") == "v1" and body.get("kind") in KINDS:
                meta = body.get("metadata") or {}
                found[(body["kind"], meta.get("namespace") or "default", str(meta.get("name")))] = body
        return cls(found)

    def secrets(
        self, namespace: str, bindings: Iterable[SecretBinding], environ: Mapping[str, str]
    ) -> dict[str, str] | Unresolved:
        """The environment variables that carry the task's secrets, or the first one that cannot be had.
        Variables already set in ``environ`` are left out: the app inherits them."""
        provided: dict[str, str] = {}
        for binding in bindings:
            if binding.env_var in environ:
                continue
            secret = self.by_name.get(("Secret", namespace, binding.secret_name))
            where = f"Secret {namespace}/{binding.secret_name}"
            if secret is None:
                return Unresolved(
                    reasons.SECRET_NOT_FOUND,
                    f"{where} is not among the manifest files and {binding.env_var} is not set: add a "
                    f"Secret document with key {binding.key!r}, or set the variable",
                )
            value = _value(secret, "stringData", "data", binding.key)
            if value is None:
                return Unresolved(
                    reasons.SECRET_KEY_NOT_FOUND,
                    f"{where} has no key {binding.key!r} and {binding.env_var} is not set",
                )
            if isinstance(value, Unresolved):
                return Unresolved(reasons.SECRET_KEY_NOT_FOUND, f"{where}: {value.message}")
            provided[binding.env_var] = value.decode("utf-8", errors="replace")
        return provided

    def config_map_files(
        self, namespace: str, files: Iterable[ConfigMapFile]
    ) -> dict[str, bytes] | Unresolved:
        """Each referenced key's content by its ref (`<ConfigMap>/<key>`), or the first that is missing."""
        contents: dict[str, bytes] = {}
        for file in files:
            where = f"ConfigMap {namespace}/{file.config_map}"
            config_map = self.by_name.get(("ConfigMap", namespace, file.config_map))
            if config_map is None:
                return Unresolved(
                    reasons.CONFIG_MAP_NOT_FOUND,
                    f"{where} is not among the manifest files: add a ConfigMap document with key "
                    f"{file.key!r}",
                )
            value = _value(config_map, "data", "binaryData", file.key)
            if value is None:
                return Unresolved(reasons.CONFIG_MAP_NOT_FOUND, f"{where} has no key {file.key!r}")
            if isinstance(value, Unresolved):
                return Unresolved(reasons.CONFIG_MAP_NOT_FOUND, f"{where}: {value.message}")
            contents[file.ref] = value
        return contents


KINDS = ("Secret", "ConfigMap")


@dataclass(frozen=True)
class LocalSecrets(SecretsAtHand):
    """The `SecretSource` of local mode (provision/secrets.py): Secret objects holding the keys a mirror
    or a failover group reads, each value from the environment or a Secret document."""

    @classmethod
    def resolve(
        cls, supporting: SupportingDocuments, namespace: str, spec: BaseModel, environ: Mapping[str, str]
    ) -> LocalSecrets | Unresolved:
        """Every Secret key ``spec`` references (connection strings, service principals), or the first
        that cannot be had, with what to do."""
        bindings = secret_keys(spec)
        provided = supporting.secrets(namespace, bindings, environ)
        if isinstance(provided, Unresolved):
            return provided
        values = {**provided, **{b.env_var: environ[b.env_var] for b in bindings if b.env_var in environ}}
        secrets: dict[str, dict[str, Any]] = {}
        for binding in bindings:
            secret = secrets.setdefault(SECRETS.path(namespace, binding.secret_name), {"stringData": {}})
            secret["stringData"][binding.key] = values[binding.env_var]
        return cls(secrets)


def secret_keys(spec: BaseModel) -> list[SecretBinding]:
    """Every Secret key of a spec: `secretRef` selectors, and the keys of service principal Secrets."""
    found = set(secret_bindings(spec))
    stack: list[Any] = [spec]
    while stack:
        value = stack.pop()
        if isinstance(value, ArmCredential) and value.service_principal_secret_ref is not None:
            name = value.service_principal_secret_ref.name
            found.update(SecretBinding(name, key) for key in SERVICE_PRINCIPAL_KEYS)
        elif isinstance(value, BaseModel):
            stack += [getattr(value, field) for field in type(value).model_fields]
        elif isinstance(value, list | tuple):
            stack += list(value)
    return sorted(found)


def _value(document: Mapping[str, Any], plain: str, encoded: str, key: str) -> bytes | Unresolved | None:
    """A key's value from the plain-text field or the base64 one; None when neither has it."""
    text = document.get(plain) or {}
    if key in text:
        return str(text[key]).encode("utf-8")
    data = document.get(encoded) or {}
    if key not in data:
        return None
    try:
        return base64.b64decode(str(data[key]), validate=True)
    except binascii.Error:
        return Unresolved("", f"{encoded}[{key!r}] is not valid base64 (put plain text in {plain} instead)")
