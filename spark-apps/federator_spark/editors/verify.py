"""The `verify` editor: checks the signature an upstream `attest` added (see
:mod:`federator_spark.editors.attest` for exactly what is signed). An unsigned event, or one whose
body or signed properties changed, is dropped or dead-lettered (``onFailure``)."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from typing import ClassVar

from federator_contract.api.editors import VerifyEditor
from federator_contract.taskconfig import TaskConfig
from federator_spark.editors.attest import key_from_env, signature
from federator_spark.editors.base import EditorStep, Rejected, TaskScope
from federator_spark.event_messages import EventMessage
from federator_spark.events import Event


@dataclass(frozen=True)
class VerifyStep:
    kind: ClassVar[str] = "verify"
    key_env: str
    property: str
    drop_failed: bool

    @classmethod
    def build(cls, spec: VerifyEditor, config: TaskConfig) -> VerifyStep:
        return cls(config.secret_env_for(spec.key_secret_ref), spec.property, spec.on_failure == "drop")

    def open(self, scope: TaskScope) -> EditorStep:
        return _Verifier(key_from_env(self.key_env), self.property, self.drop_failed)


@dataclass(frozen=True)
class _Verifier:
    key: bytes
    property: str
    drop_failed: bool

    def apply(self, event: Event, message: EventMessage) -> Event | None:
        found = event.properties.get(self.property)
        if found is None:
            return self._failed(f"unsigned: no property {self.property}")
        if not hmac.compare_digest(found.encode(), signature(self.key, event, self.property).encode()):
            return self._failed(
                "signature mismatch: the body or a signed property changed since signing, or another key"
            )
        return event

    def _failed(self, reason: str) -> Event | None:
        if self.drop_failed:
            return None
        raise Rejected(reason)
