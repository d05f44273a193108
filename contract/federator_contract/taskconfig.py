"""The task config: what the operator's planning writes into a task's ConfigMap (`task.json`) and the
replication app reads at start-up. One typed model for both ends, so a key cannot be written under one
name and read under another: planning builds it, only the ConfigMap builder serializes it, local mode
copies it with changes (`model_copy`), and the app validates it once (`TaskConfig.from_json`)."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from federator_contract.api.base import API_VERSION, DNS_LABEL, ConfigMapKeySelector, SecretKeySelector
from federator_contract.api.replicationtask import ReplicationTaskSpec


class TaskConfigError(ValueError):
    """The task config cannot be run by the replication app."""


SECRET_ENV_PREFIX = "FEDERATOR_SECRET_"
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_ESCAPES = {"-": "_H_", ".": "_D_", "_": "_U_"}


def secret_env_var(secret: str, key: str) -> str:
    """The environment variable that carries key ``key`` of Secret ``secret`` in the Spark pods (and in
    local mode): `FEDERATOR_SECRET_<secret>__<key>`, each as written but for its other characters.

    In the Secret's name a '-' before a letter or digit is `_` (`orders-weu` → `orders_weu`), any other
    '-' is `_H_` and a '.' is `_D_`; in the key, '-', '.' and '_' are `_H_`, `_D_` and `_U_` (`tls.crt` →
    `tls_D_crt`). Two different (Secret, key) pairs never share a variable: read from the left, a name's
    `_` is followed by a lower-case letter or a digit (a '-'), by `H_` or `D_` (an escape) or by `_` (the
    end of the name), and a key's `_` always begins an escape, so a variable spells one pair only. Case
    is kept (`Conn` and `conn` are two keys), and the result is a shell's variable name.
    Raises ValueError for a name or key with characters Kubernetes does not allow in them."""
    if not secret or not set(secret) <= _NAME_CHARS | {"-", "."}:
        raise ValueError(f"{secret!r} is not a Secret name")
    if not key or not all(char.isascii() and (char.isalnum() or char in _ESCAPES) for char in key):
        raise ValueError(f"{key!r} is not a Secret key")
    name = "".join(
        "_" if char == "-" and secret[i + 1 : i + 2] in _NAME_CHARS else _ESCAPES.get(char, char)
        for i, char in enumerate(secret)
    )
    return f"{SECRET_ENV_PREFIX}{name}__{''.join(_ESCAPES.get(char, char) for char in key)}"


class _ContractModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


class TaskMetadata(_ContractModel):
    name: str
    namespace: str
    generation: int | None = None


RESET_POSITIONS_ANNOTATION = "federator.io/reset-positions"
"""On a ReplicationTask: a new value resets the task's positions (`TaskConfig.reset_positions`)."""
RESET_TOKEN_MAX_LENGTH = 128
# Recorded beside the checkpoint and compared as it is: printable, no surrounding space, bounded.
ResetToken = Annotated[
    str, Field(min_length=1, max_length=RESET_TOKEN_MAX_LENGTH, pattern=r"^[!-~]([ -~]*[!-~])?$")
]

# The member names a checkpoint directory: nothing but a DNS label may get there.
DnsLabel = Annotated[str, Field(pattern=DNS_LABEL)]


class FollowingSource(_ContractModel):
    """The source reads the member a FailoverGroup publishes for consumers (docs/patterns/failover.md)."""

    group: DnsLabel
    member: DnsLabel
    skew_seconds: Annotated[int, Field(ge=0)]
    """Resume this far before the last replicated event's source enqueue time after a switch (the
    `failoverGroupRef.resumeSkewSeconds` of the spec; its default lives there)."""
    switched_at: str | None = None
    """When the group last switched its consumers' member (the group's `status.consumerSince`)."""


class TaskConfig(_ContractModel):
    api_version: str = API_VERSION
    kind: Literal["ReplicationTask"] = "ReplicationTask"
    metadata: TaskMetadata
    spec: ReplicationTaskSpec
    """The task's spec with concrete connections (a followed group's member already substituted)."""
    checkpoint_location: str
    secret_env: dict[str, str] = {}
    """`<Secret>/<key>` → the environment variable that holds the value in the Spark pods: always
    `secret_env_var(<Secret>, <key>)`, so that the operator's pods and the app name it alike."""
    config_map_files: dict[str, str] = {}
    """`<ConfigMap>/<key>` an editor reads → the file it is mounted as."""
    metrics_port: int | None = None
    """The app's Prometheus port; None: no endpoint."""
    followed_members: dict[str, str] = {}
    """Spec path of each connection that follows a FailoverGroup → the `group/member` it uses now."""
    following: FollowingSource | None = None
    emulator_connection_files: dict[str, str] = {}
    """Local mode only: emulator namespace → the file that holds its connection string (readable by its
    owner only). Like a mounted Secret: the key never enters the task config, Spark's plan or a log."""
    emulator_blob_connection_file: str | None = None
    """Local mode only: the file that holds the connection string of the Azurite it started (checkpoint
    stores `emulator`), likewise."""
    status_file: str | None = None
    """Local mode only: where the app writes its status (default: under the checkpoint location)."""
    reset_positions: ResetToken | None = None
    """The task's `federator.io/reset-positions` annotation: a value the app has not recorded for the
    checkpoint sets that checkpoint aside and starts afresh from the spec's start position, whatever
    source the old positions belong to (docs/replication.md, "Positions")."""

    @field_validator("secret_env")
    @classmethod
    def _one_variable_per_secret_key(cls, secret_env: dict[str, str]) -> dict[str, str]:
        for ref, env in secret_env.items():
            secret, _, key = ref.partition("/")
            expected = secret_env_var(secret, key)
            if env != expected:
                raise ValueError(f"{ref!r} is carried by {expected}, not {env}")
        return secret_env

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    def secret_env_for(self, selector: SecretKeySelector) -> str:
        """The environment variable that holds a Secret key's value in the Spark pods."""
        ref = f"{selector.name}/{selector.key}"
        env = self.secret_env.get(ref)
        if env is None:
            raise TaskConfigError(f"secretEnv has no environment variable for secret {ref!r}")
        return env

    def config_map_path(self, selector: ConfigMapKeySelector) -> str:
        """The file a ConfigMap key is mounted as (in the pods, and in local mode)."""
        ref = f"{selector.name}/{selector.key}"
        path = self.config_map_files.get(ref)
        if path is None:
            raise TaskConfigError(f"configMapFiles has no file for ConfigMap key {ref!r}")
        return path

    def to_json(self) -> str:
        """The serialized form (stable key order, so an unchanged config is an unchanged ConfigMap)."""
        raw = self.model_dump(by_alias=True, mode="json", exclude_none=True)
        return json.dumps(raw, indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> TaskConfig:
        """Validated once; every problem named by its key path (TaskConfigError)."""
        try:
            raw = json.loads(text)
        except ValueError as error:
            raise TaskConfigError(f"the task config is not JSON: {error}") from None
        return cls.from_raw(raw)

    @classmethod
    def from_raw(cls, raw: Any) -> TaskConfig:
        try:
            return cls.model_validate(raw)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in error.errors()
            )
            raise TaskConfigError(f"invalid task config: {problems}") from None
