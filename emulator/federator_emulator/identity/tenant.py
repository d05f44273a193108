"""The emulated tenant as the rest of the emulator uses it: the token endpoint, the data plane
(CBS put-token with a JWT) and the management plane (bearer tokens) share one ``Tenant``."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from pathlib import Path

from federator_contract.emulatorconfig import IdentityConfig
from federator_emulator.auth import Grant, entity_path
from federator_emulator.identity.directory import Directory, Principal, Service
from federator_emulator.identity.keys import SigningKey
from federator_emulator.identity.tokens import (
    DATA_AUDIENCES,
    MANAGEMENT_AUDIENCES,
    STORAGE,
    TokenRejected,
    Tokens,
    audience,
)
from federator_emulator.state.namespace import NamespaceState


class Tenant:
    def __init__(self, config: IdentityConfig, key_dir: Path, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.directory = Directory(config)
        self.tokens = Tokens(SigningKey.load_or_create(key_dir), config, clock)
        # The emulator's own management endpoints (``https://localhost:PORT``) are audiences too: clients
        # of a cloud other than Azure's public one ask for ``<ARM endpoint>/.default``, as Federator does.
        self.endpoints: list[str] = []

    @property
    def management_audiences(self) -> tuple[str, ...]:
        return (*MANAGEMENT_AUDIENCES, *(audience(e) for e in self.endpoints))

    @property
    def resources(self) -> tuple[str, ...]:
        """The resources tokens are issued for."""
        return (*DATA_AUDIENCES, *self.management_audiences, STORAGE)

    def principal(self, token: str, audiences: Collection[str]) -> tuple[Principal, float]:
        """Who an access token for one of ``audiences`` names, and when it expires (raises TokenRejected)."""
        claims = self.tokens.verify_access(token, audiences)
        principal = self.directory.principal(str(claims["appid"]))
        if principal is None:
            raise TokenRejected("InvalidToken", f"The application '{claims['appid']}' is not in the tenant.")
        return principal, float(claims["exp"])

    def data_grant(self, token: str, audience_uri: str, namespace: NamespaceState) -> Grant:
        """What a JWT put over CBS for ``audience_uri`` grants: its principal's claims there."""
        principal, expires_at = self.principal(token, DATA_AUDIENCES)
        path = entity_path(audience_uri)
        service: Service = "eventhubs" if path.split("/", 1)[0] in namespace.event_hubs else "servicebus"
        rights = self.directory.data_rights(principal, namespace.config.role_assignments, path, service)
        return Grant(path=path, expires_at=expires_at, rights=rights)
