"""What the ARM, ATOM and DNS handlers share: the call into the emulator thread and errors."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from pydantic import ValidationError

from federator_contract.emulatorconfig import DnsZoneConfig
from federator_contract.sql import SqlSyntaxError
from federator_emulator.state.eventhubs import UnknownEntity
from federator_emulator.state.namespace import EntityExists, NamespaceState

T = TypeVar("T")

# A management call waits this long for the emulator thread (which also serves AMQP).
CALL_TIMEOUT_SECONDS = 10.0


class Submitter(Protocol):
    def submit(self, function: Callable[[], T]) -> Future[T]: ...


class MgmtError(Exception):
    """An HTTP error with the code and message each API renders in its own error body."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def as_mgmt_error(exc: Exception) -> MgmtError | None:
    """The HTTP error for a state or validation exception; None if it is a bug."""
    if isinstance(exc, MgmtError):
        return exc
    if isinstance(exc, UnknownEntity):
        return MgmtError(404, "NotFound", str(exc))
    if isinstance(exc, EntityExists):
        return MgmtError(409, "Conflict", str(exc))
    if isinstance(exc, SqlSyntaxError):
        return MgmtError(400, "BadRequest", f"invalid SQL expression: {exc}")
    if isinstance(exc, ValidationError):
        details = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return MgmtError(400, "BadRequest", details)
    if isinstance(exc, ValueError):
        return MgmtError(400, "BadRequest", str(exc))
    return None


@dataclass
class Backend:
    """The emulator as the HTTP thread sees it."""

    submitter: Submitter
    namespaces: dict[str, NamespaceState]  # by emulator name; only ``config`` is read off-thread
    dns_zones: list[DnsZoneConfig]
    # Emulator namespace name -> its HTTPS endpoint (``https://localhost:PORT``).
    endpoints: dict[str, str] = field(default_factory=dict)

    async def run(self, function: Callable[[], T]) -> T:
        """Run ``function`` on the emulator thread, where namespace state may be touched."""
        return await asyncio.wait_for(
            asyncio.wrap_future(self.submitter.submit(function)), CALL_TIMEOUT_SECONDS
        )

    def arm_namespace(self, subscription_id: str, resource_group: str, name: str) -> NamespaceState:
        """The namespace with these ARM coordinates (compared case-insensitively, as ARM does)."""
        wanted = (subscription_id.lower(), resource_group.lower(), name.lower())
        for state in self.namespaces.values():
            arm = state.config.arm
            if (
                arm.subscription_id.lower(),
                arm.resource_group.lower(),
                state.config.arm_namespace_name.lower(),
            ) == wanted:
                return state
        raise MgmtError(
            404,
            "ResourceNotFound",
            f"The Resource 'Microsoft.ServiceBus/namespaces/{name}' under resource group "
            f"'{resource_group}' was not found.",
        )
