"""The OAuth2 token endpoint and OpenID discovery, as ``azure-identity`` calls them when
``AZURE_AUTHORITY_HOST`` (or ``authority=``) names a namespace's TLS port:

- ``GET /{tenant}/v2.0/.well-known/openid-configuration`` (MSAL, behind ``ClientSecretCredential``);
- ``GET /{tenant}/discovery/v2.0/keys``: the keys that verify the emulator's tokens;
- ``POST /{tenant}/oauth2/v2.0/token``: the client credentials grant, with a ``client_secret`` or a
  ``client_assertion`` (``WorkloadIdentityCredential``, ``ClientAssertionCredential``).

Errors carry Microsoft Entra's ``AADSTS`` codes and texts in its JSON error body.
"""

from __future__ import annotations

import datetime
import hmac
import uuid
from typing import Any

from aiohttp import web

from federator_emulator.identity.tenant import Tenant
from federator_emulator.identity.tokens import AssertionRejected, audience

_JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
_DEFAULT_SCOPE = "/.default"


class OAuthError(Exception):
    def __init__(self, status: int, error: str, code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.code = code


def _error_response(error: OAuthError) -> web.Response:
    trace, correlation = str(uuid.uuid4()), str(uuid.uuid4())
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    description = (
        f"AADSTS{error.code}: {error} Trace ID: {trace} Correlation ID: {correlation} Timestamp: {now}"
    )
    body = {
        "error": error.error,
        "error_description": description,
        "error_codes": [error.code],
        "timestamp": now,
        "trace_id": trace,
        "correlation_id": correlation,
    }
    return web.json_response(body, status=error.status)


class TokenEndpoint:
    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant
        self.directory = tenant.directory
        self.tokens = tenant.tokens

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/common/discovery/instance", self.instance_discovery),
            web.get("/{tenant}/v2.0/.well-known/openid-configuration", self.openid_configuration),
            web.get("/{tenant}/discovery/v2.0/keys", self.keys),
            web.post("/{tenant}/oauth2/v2.0/token", self.token),
        ]

    def _tenant(self, request: web.Request) -> str:
        tenant = request.match_info["tenant"]
        if tenant not in (self.directory.tenant_id, "organizations"):
            raise OAuthError(
                400,
                "invalid_request",
                90002,
                f"Tenant '{tenant}' not found. Check to make sure you have the correct tenant ID and are "
                "signing into the correct cloud.",
            )
        return self.directory.tenant_id

    async def openid_configuration(self, request: web.Request) -> web.Response:
        try:
            tenant = self._tenant(request)
        except OAuthError as exc:
            return _error_response(exc)
        base = f"https://{request.host}/{tenant}"
        return web.json_response(
            {
                "issuer": f"{base}/v2.0",
                "token_endpoint": f"{base}/oauth2/v2.0/token",
                "authorization_endpoint": f"{base}/oauth2/v2.0/authorize",
                "device_authorization_endpoint": f"{base}/oauth2/v2.0/devicecode",
                "jwks_uri": f"{base}/discovery/v2.0/keys",
                "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt"],
                "response_types_supported": ["code", "id_token", "token"],
                "grant_types_supported": ["client_credentials"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "tenant_region_scope": None,
            }
        )

    async def instance_discovery(self, request: web.Request) -> web.Response:
        """MSAL's question whether an authority is known (asked of login.microsoftonline.com unless the
        credential has ``disable_instance_discovery``): answered for any authority on this host."""
        authorize = request.query.get("authorization_endpoint", "")
        suffix = "/oauth2/v2.0/authorize"
        if not authorize.endswith(suffix):
            raise web.HTTPBadRequest(text="authorization_endpoint must be an authority's authorize endpoint")
        host, authority = request.host, authorize[: -len(suffix)]
        return web.json_response(
            {
                "tenant_discovery_endpoint": f"{authority}/v2.0/.well-known/openid-configuration",
                "api-version": "1.1",
                "metadata": [{"preferred_network": host, "preferred_cache": host, "aliases": [host]}],
            }
        )

    async def keys(self, request: web.Request) -> web.Response:
        return web.json_response(self.tokens.jwks())

    async def token(self, request: web.Request) -> web.Response:
        try:
            self._tenant(request)
            form = await request.post()
            return web.json_response(self._grant({k: str(v) for k, v in form.items()}))
        except OAuthError as exc:
            return _error_response(exc)

    def _grant(self, form: dict[str, str]) -> dict[str, Any]:
        if form.get("grant_type") != "client_credentials":
            raise OAuthError(
                400,
                "unsupported_grant_type",
                70003,
                f"The app requested an unsupported grant type '{form.get('grant_type')}'.",
            )
        client_id = form.get("client_id", "")
        application = self.directory.application(client_id)
        if application is None:
            raise OAuthError(
                400,
                "unauthorized_client",
                700016,
                f"Application with identifier '{client_id}' was not found in the directory "
                f"'{self.directory.tenant_id}'.",
            )
        if "client_assertion" in form:
            if form.get("client_assertion_type") != _JWT_BEARER:
                raise OAuthError(400, "invalid_request", 50027, "Invalid client_assertion_type.")
            try:
                self.tokens.verify_assertion(form["client_assertion"], application)
            except AssertionRejected as exc:
                raise OAuthError(401, "invalid_client", exc.code, str(exc)) from None
        elif application.client_secret is None or not hmac.compare_digest(
            form.get("client_secret", "").encode(), application.client_secret.encode()
        ):
            raise OAuthError(
                401,
                "invalid_client",
                7000215,
                "Invalid client secret provided. Ensure the secret being sent in the request is the client "
                f"secret value, not the client secret ID, for a secret added to app '{client_id}'.",
            )
        resource = self._resource(form.get("scope", ""))
        issued = self.tokens.access_token(application, resource)
        return {
            "token_type": "Bearer",
            "expires_in": issued.expires_in,
            "ext_expires_in": issued.expires_in,
            "access_token": issued.token,
        }

    def _resource(self, scope: str) -> str:
        scopes = scope.split()
        if len(scopes) != 1 or not scopes[0].endswith(_DEFAULT_SCOPE):
            raise OAuthError(
                400,
                "invalid_scope",
                1002012,
                f"The provided value for scope {scope} is not valid. Client credential flows must have a "
                "scope value with /.default suffixed to the resource identifier (application ID URI).",
            )
        resource = scopes[0][: -len(_DEFAULT_SCOPE)]
        if audience(resource) not in self.tenant.resources:
            raise OAuthError(
                400,
                "invalid_resource",
                500011,
                f"The resource principal named {resource} was not found in the tenant named "
                f"{self.directory.tenant_id}. This can happen if the application has not been installed by "
                "the administrator of the tenant or consented to by any user in the tenant.",
            )
        return resource
