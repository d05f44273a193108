"""Who may call the management plane: bearer tokens from the emulated tenant on ARM and DNS (audience
``https://management.azure.com/``), SAS or bearer tokens (``https://servicebus.azure.net/``) on ATOM,
each checked for its signature, audience and expiry, then against the caller's roles. Refusals carry
the codes and texts ARM and Service Bus use."""

from __future__ import annotations

import re
from dataclasses import dataclass

from aiohttp import web

from federator_contract.emulatorconfig import Role, RoleAssignmentConfig
from federator_emulator import auth
from federator_emulator.identity.directory import NAMESPACE_WRITERS, ZONE_WRITERS, Principal
from federator_emulator.identity.tenant import Tenant
from federator_emulator.identity.tokens import DATA_AUDIENCES, TokenRejected
from federator_emulator.mgmt.common import Backend, MgmtError
from federator_emulator.state.namespace import NamespaceState

_RESOURCE = re.compile(
    r"^(?P<scope>/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/"
    r"(?P<provider>[^/]+)/(?P<type>[^/]+)/(?P<name>[^/]+))(?P<rest>(/[^/]+)*)/?$",
    re.IGNORECASE,
)
_ARM_CODES = {
    "InvalidAudience": "InvalidAuthenticationTokenAudience",
    "ExpiredToken": "ExpiredAuthenticationToken",
}
_ARM_VERBS = {
    "GET": "read",
    "HEAD": "read",
    "PUT": "write",
    "PATCH": "write",
    "POST": "action",
    "DELETE": "delete",
}


@dataclass(frozen=True)
class Authorizer:
    """What the management handlers check requests with (kept in each aiohttp app under ``KEY``)."""

    tenant: Tenant
    backend: Backend

    # -- ARM and DNS ---------------------------------------------------------------------------
    def resource_manager(self, request: web.Request) -> None:
        """Authenticate a bearer token for ARM, then check the caller's role on the resource."""
        principal = self._bearer_principal(request)
        match = _RESOURCE.match(request.path)
        if match is None or principal.is_admin:
            return
        assignments, path, writers = self._scope(match)
        write = request.method not in ("GET", "HEAD")
        if assignments is not None and self.tenant.directory.may(
            principal, assignments, path, writers, write
        ):
            return
        kinds = "/".join([match["type"], *match["rest"].strip("/").split("/")[::2]]).strip("/")
        action = f"{match['provider']}/{kinds}/{_ARM_VERBS.get(request.method, 'action')}"
        raise MgmtError(
            403,
            "AuthorizationFailed",
            f"The client '{principal.client_id}' with object id '{principal.object_id}' does not have "
            f"authorization to perform action '{action}' over scope '{match['scope']}{match['rest']}' or the "
            "scope is invalid. If access was recently granted, please refresh your credentials.",
        )

    def _bearer_principal(self, request: web.Request) -> Principal:
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise MgmtError(
                401,
                "AuthenticationFailed",
                "Authentication failed. The 'Authorization' header is missing a bearer token.",
            )
        try:
            principal, _ = self.tenant.principal(token.strip(), self.tenant.management_audiences)
        except TokenRejected as exc:
            if exc.reason == "InvalidAudience":
                allowed = ", ".join(f"'{a}'" for a in self.tenant.management_audiences)
                message = (
                    "The access token has been obtained for wrong audience or resource. It should exactly "
                    f"match with one of the allowed audiences {allowed}."
                )
            else:
                message = str(exc)
            raise MgmtError(401, _ARM_CODES.get(exc.reason, "InvalidAuthenticationToken"), message) from None
        return principal

    def _scope(self, match: re.Match[str]) -> tuple[list[RoleAssignmentConfig] | None, str, frozenset[Role]]:
        """The role assignments that apply to the resource, its entity path, and who may write it."""
        provider, kind = match["provider"].lower(), match["type"].lower()
        if provider == "microsoft.servicebus" and kind == "namespaces":
            try:
                state = self.backend.arm_namespace(match["sub"], match["rg"], match["name"])
            except MgmtError:  # no such namespace: only the administrator may learn that
                return None, "", frozenset()
            return state.config.role_assignments, _arm_entity(match["rest"]), NAMESPACE_WRITERS
        wanted = (match["sub"].lower(), match["rg"].lower(), match["name"].lower())
        if provider == "microsoft.network" and kind == "dnszones":
            for zone in self.backend.dns_zones:
                if (zone.subscription_id.lower(), zone.resource_group.lower(), zone.name.lower()) == wanted:
                    return zone.role_assignments, "", ZONE_WRITERS
        return None, "", frozenset()

    # -- ATOM ----------------------------------------------------------------------------------
    def administration(self, request: web.Request, state: NamespaceState) -> None:
        """ATOM (``ServiceBusAdministrationClient``): a SAS token or a bearer token with the Manage claim."""
        header = request.headers.get("Authorization", "")
        entity = request.path.strip("/")
        if header.startswith(auth.SAS_PREFIX):
            try:
                grant = auth.verify_sas_token(
                    header, f"https://{request.host}{request.path}", state.keys, rights=state.sas_rights
                )
            except auth.AuthError as exc:
                raise MgmtError(401, "Unauthorized", str(exc)) from None
            rights = grant.rights
        else:
            scheme, _, token = header.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise MgmtError(401, "Unauthorized", "MissingToken: The request has no authorization header.")
            try:
                principal, _ = self.tenant.principal(token.strip(), DATA_AUDIENCES)
            except TokenRejected as exc:
                raise MgmtError(401, "Unauthorized", f"{exc.reason}: {exc}") from None
            rights = self.tenant.directory.data_rights(
                principal, state.config.role_assignments, entity, "servicebus"
            )
        if not auth.has_right(rights, "Manage"):
            verb = {"GET": "Read", "PUT": "Write", "DELETE": "Delete"}.get(request.method, "Write")
            raise MgmtError(401, "Unauthorized", f"Manage,Entity{verb} claims required for this operation.")


KEY = web.AppKey("federator_authorizer", Authorizer)


def _arm_entity(rest: str) -> str:
    """``/queues/q`` -> ``q``; ``/topics/t/subscriptions/s/rules/r`` -> ``t/subscriptions/s``."""
    parts = rest.strip("/").split("/")
    names = parts[1::2]
    kinds = [k.lower() for k in parts[::2]]
    if kinds[:1] == ["topics"] and kinds[1:2] == ["subscriptions"] and len(names) >= 2:
        return f"{names[0]}/subscriptions/{names[1]}"
    return names[0] if names else ""
