"""Secret references of a task → environment variables of the Spark pods. Only names travel; values are
read by the kubelet from the Secret, never by the operator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from federator.planning.memo import per_object
from federator_contract.api.base import SecretKeySelector
from federator_contract.taskconfig import secret_env_var


@dataclass(frozen=True, order=True)
class SecretBinding:
    secret_name: str
    key: str

    @property
    def env_var(self) -> str:
        """One variable per Secret key, never shared (the contract's `secret_env_var`, which the app's
        task config is checked against); deterministic, so that re-planning yields the same pod spec."""
        return secret_env_var(self.secret_name, self.key)

    @property
    def ref(self) -> str:
        """How the task config names the secret: `<secret>/<key>`."""
        return f"{self.secret_name}/{self.key}"


@per_object
def secret_bindings(spec: BaseModel) -> list[SecretBinding]:
    """Every Secret key the spec references, once each, in a stable order."""
    found: set[SecretBinding] = set()
    _collect(spec, found)
    return sorted(found)


def _collect(value: Any, found: set[SecretBinding]) -> None:
    if isinstance(value, SecretKeySelector):
        found.add(SecretBinding(value.name, value.key))
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            _collect(getattr(value, name), found)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _collect(item, found)
