"""The `attest` editor: signs each event with an HMAC-SHA256 in a property (default `repl-signature`).

What is signed, exactly (``verify`` recomputes the same bytes):

    canonical = JSON([[name, value], ...]) + "\\n" + body

where the list holds the event's user properties sorted by name (code point order) *except* the
signature property itself and every property whose name starts with ``repl-`` (provenance, loop
markers, ``repl-source-id``, ``repl-chain``, ``repl-dead-letter-reason``: what this and later hops
append). The JSON is compact (``,``/``:`` separators), UTF-8, non-ASCII unescaped; JSON text has no
raw newline, so the first ``\\n`` ends the property list. The signature is the lowercase hex HMAC
digest of ``canonical`` with the Secret's value (UTF-8) as the key.

Properties added after signing (``setProperties`` of a target, a later ``enrich``) are not covered:
a downstream ``verify`` fails unless their names start with ``repl-``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from typing import ClassVar

from federator_contract.api.editors import AttestEditor
from federator_contract.taskconfig import TaskConfig
from federator_spark.editors.base import EditorStep, TaskScope
from federator_spark.event_messages import EventMessage
from federator_spark.events import Event

UNSIGNED_PREFIX = "repl-"


def signature(key: bytes, event: Event, signature_property: str) -> str:
    pairs = sorted(
        (name, value)
        for name, value in event.properties.items()
        if name != signature_property and not name.startswith(UNSIGNED_PREFIX)
    )
    canonical = json.dumps(pairs, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" + event.body
    return hmac.new(key, canonical, hashlib.sha256).hexdigest()


def key_from_env(variable: str) -> bytes:
    """The HMAC key, read on the executor: the Secret reaches the pods as an environment variable."""
    value = os.environ.get(variable)
    if not value:
        raise RuntimeError(f"environment variable {variable} (the HMAC key Secret) is not set")
    return value.encode()


@dataclass(frozen=True)
class AttestStep:
    kind: ClassVar[str] = "attest"
    key_env: str  # the environment variable, never the key: the plan travels to executors
    property: str

    @classmethod
    def build(cls, spec: AttestEditor, config: TaskConfig) -> AttestStep:
        return cls(config.secret_env_for(spec.key_secret_ref), spec.property)

    def open(self, scope: TaskScope) -> EditorStep:
        return _Signer(key_from_env(self.key_env), self.property)


@dataclass(frozen=True)
class _Signer:
    key: bytes
    property: str

    def apply(self, event: Event, message: EventMessage) -> Event | None:
        signed = {**event.properties, self.property: signature(self.key, event, self.property)}
        return event.edited(properties=signed)
