"""Who may sign in, and what their Azure roles let them do.

Applications come from the config, plus the emulator's built-in administrator (a well-known
client id and secret, like the default SAS key): Owner of every namespace and DNS zone, so tests
and local mode have a principal that may do anything. Role assignments are read per namespace
(or zone) and scope, and turn into the claims Service Bus and Event Hubs check: Send, Listen and
Manage on the data plane, read and write actions on the management plane.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from federator_contract.emulatorconfig import ApplicationConfig, IdentityConfig, Role, RoleAssignmentConfig
from federator_emulator.auth import covers, entity_path

# Well-known placeholders, like the default SAS key: not secrets.
ADMIN_CLIENT_ID = "00000000-0000-0000-0000-00000000ad00"
ADMIN_CLIENT_SECRET = "EMULATOR_ADMIN_SECRET"
ADMIN = ApplicationConfig(
    name="federator-emulator-admin", client_id=ADMIN_CLIENT_ID, client_secret=ADMIN_CLIENT_SECRET
)
_OBJECT_IDS = uuid.UUID("5b1c2a0e-4f6e-4c7a-9d1e-2f1a6b0c9e11")

Right = Literal["Manage", "Send", "Listen"]
ALL_RIGHTS: frozenset[Right] = frozenset(("Manage", "Send", "Listen"))
Service = Literal["eventhubs", "servicebus"]

_DATA_RIGHTS: dict[Role, tuple[Service, frozenset[Right]]] = {
    "Azure Event Hubs Data Owner": ("eventhubs", ALL_RIGHTS),
    "Azure Event Hubs Data Sender": ("eventhubs", frozenset(("Send",))),
    "Azure Event Hubs Data Receiver": ("eventhubs", frozenset(("Listen",))),
    "Azure Service Bus Data Owner": ("servicebus", ALL_RIGHTS),
    "Azure Service Bus Data Sender": ("servicebus", frozenset(("Send",))),
    "Azure Service Bus Data Receiver": ("servicebus", frozenset(("Listen",))),
}
# Roles whose actions include writing Service Bus resources through ARM (the data owner's actions are
# Microsoft.ServiceBus/*), and those that may write DNS record sets; Reader may read either.
NAMESPACE_WRITERS: frozenset[Role] = frozenset(("Owner", "Contributor", "Azure Service Bus Data Owner"))
ZONE_WRITERS: frozenset[Role] = frozenset(("Owner", "Contributor", "DNS Zone Contributor"))
READERS: frozenset[Role] = frozenset(("Reader",))


@dataclass(frozen=True)
class Principal:
    """A signed-in application, as its token names it."""

    client_id: str
    object_id: str
    name: str

    @property
    def is_admin(self) -> bool:
        return self.client_id == ADMIN_CLIENT_ID

    def named_by(self, assignment: RoleAssignmentConfig) -> bool:
        return assignment.principal in (self.client_id, self.object_id, self.name)


def object_id(application: ApplicationConfig) -> str:
    return application.object_id or str(uuid.uuid5(_OBJECT_IDS, application.client_id))


class Directory:
    def __init__(self, config: IdentityConfig) -> None:
        self.tenant_id = config.tenant_id
        self._applications = {a.client_id: a for a in (ADMIN, *config.applications)}

    def application(self, client_id: str) -> ApplicationConfig | None:
        return self._applications.get(client_id)

    def principal(self, client_id: str) -> Principal | None:
        application = self._applications.get(client_id)
        if application is None:
            return None
        return Principal(application.client_id, object_id(application), application.name)

    @staticmethod
    def roles(principal: Principal, assignments: Iterable[RoleAssignmentConfig], path: str) -> set[Role]:
        """The principal's roles that apply to ``path`` (an entity path; "" for the namespace or zone)."""
        requested = entity_path(path)
        return {
            a.role
            for a in assignments
            if principal.named_by(a) and (a.scope is None or covers(entity_path(a.scope), requested))
        }

    def data_rights(
        self, principal: Principal, assignments: Iterable[RoleAssignmentConfig], path: str, service: Service
    ) -> frozenset[Right]:
        """The claims the principal holds on ``path`` of a ``service`` entity."""
        if principal.is_admin:
            return ALL_RIGHTS
        rights: set[Right] = set()
        for role in self.roles(principal, assignments, path):
            granted = _DATA_RIGHTS.get(role)
            if granted is not None and granted[0] == service:
                rights |= granted[1]
        return frozenset(rights)

    def may(
        self,
        principal: Principal,
        assignments: Iterable[RoleAssignmentConfig],
        path: str,
        writers: frozenset[Role],
        write: bool,
    ) -> bool:
        """Whether a management-plane action (a read, or a write by one of ``writers``) is allowed."""
        if principal.is_admin:
            return True
        roles = self.roles(principal, assignments, path)
        allowed = writers if write else writers | READERS
        return bool(roles & allowed)
