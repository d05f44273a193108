"""Tokens the emulator issues and verifies: access tokens (as Microsoft Entra's v1 tokens for
Azure resources) and workload tokens (what the AKS webhook projects into a pod).

An access token is a JWT signed RS256 with the emulator's key, carrying ``aud`` (the resource),
``iss`` (``https://sts.windows.net/<tenant>/``), ``appid``, ``oid``, ``tid``, ``iat``, ``nbf``
and ``exp``. Event Hubs and Service Bus accept the audiences ``https://eventhubs.azure.net/`` and
``https://servicebus.azure.net/``; ARM and DNS ``https://management.azure.com/`` (or the older
``https://management.core.windows.net/``); a trailing slash is not significant. Tokens for Azure
Storage (``https://storage.azure.com/``) are issued for Azurite, which accepts them with ``--oauth basic``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

import jwt

from federator_contract.emulatorconfig import (
    TOKEN_EXCHANGE_AUDIENCE,
    ApplicationConfig,
    FederatedCredentialConfig,
    IdentityConfig,
)
from federator_emulator.identity.directory import object_id
from federator_emulator.identity.keys import SigningKey

EVENT_HUBS = "https://eventhubs.azure.net/"
SERVICE_BUS = "https://servicebus.azure.net/"
DATA_AUDIENCES = (EVENT_HUBS, SERVICE_BUS)
MANAGEMENT_AUDIENCES = ("https://management.azure.com/", "https://management.core.windows.net/")
STORAGE = "https://storage.azure.com/"  # issued for Azurite; no part of the emulator accepts it
# The issuer of the emulator's own workload tokens (the stand-in for a cluster's service account issuer).
WORKLOAD_ISSUER = "https://workload-identity.federator-emulator.invalid"
WORKLOAD_TOKEN_SECONDS = 3600


def audience(resource: str) -> str:
    """A resource as a token's ``aud`` names it: ``https://servicebus.azure.net/`` for
    ``https://servicebus.azure.net`` (scope ``…/.default``) and ``https://servicebus.azure.net/``
    (the SDKs' scope ``…//.default``) alike."""
    return resource.rstrip("/") + "/"


class TokenRejected(Exception):
    """A token is refused; ``reason`` is the word Azure puts first (InvalidAudience, ExpiredToken…)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class AssertionRejected(Exception):
    """A client assertion is refused with Microsoft Entra's error (``AADSTS`` code and text)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Issued:
    token: str
    expires_in: int


class Tokens:
    def __init__(
        self, key: SigningKey, config: IdentityConfig, clock: Callable[[], float] = time.time
    ) -> None:
        self.key = key
        self.config = config
        self.clock = clock
        self.issuer = f"https://sts.windows.net/{config.tenant_id}/"
        self._trusted = {
            t.issuer: jwt.PyJWKSet.from_json(t.jwks_path.read_text()) for t in config.trusted_issuers
        }

    # -- issuing ------------------------------------------------------------------------------
    def access_token(
        self, application: ApplicationConfig, resource: str, lifetime: int | None = None
    ) -> Issued:
        """An access token for ``resource`` (a negative ``lifetime`` gives one that has expired)."""
        now = int(self.clock())
        seconds = self.config.token_lifetime_seconds if lifetime is None else lifetime
        oid = object_id(application)
        claims = {
            "aud": audience(resource),
            "iss": self.issuer,
            "iat": now,
            "nbf": min(now, now + seconds),
            "exp": now + seconds,
            "appid": application.client_id,
            "azp": application.client_id,
            "oid": oid,
            "sub": oid,
            "tid": self.config.tenant_id,
            "idtyp": "app",
            "ver": "1.0",
            "uti": uuid.uuid4().hex,
        }
        return Issued(self._sign(claims), seconds)

    def workload_token(
        self, subject: str, audience: str = TOKEN_EXCHANGE_AUDIENCE, lifetime: int = WORKLOAD_TOKEN_SECONDS
    ) -> str:
        """A token from the emulator's workload issuer, as a projected service account token."""
        now = int(self.clock())
        claims = {"iss": WORKLOAD_ISSUER, "sub": subject, "aud": [audience], "iat": now, "nbf": now}
        return self._sign({**claims, "exp": now + lifetime})

    def _sign(self, claims: dict[str, Any]) -> str:
        return jwt.encode(claims, self.key.private, algorithm="RS256", headers={"kid": self.key.kid})

    def jwks(self) -> dict[str, Any]:
        return {"keys": [self.key.jwk()]}

    # -- verifying ----------------------------------------------------------------------------
    def verify_access(self, token: str, audiences: Collection[str]) -> dict[str, Any]:
        """The claims of an access token the emulator issued for one of ``audiences``."""
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self.key.public,
                algorithms=["RS256"],
                issuer=self.issuer,
                options={"verify_aud": False, "require": ["exp", "aud", "iss", "appid"]},
            )
        except jwt.ExpiredSignatureError:
            expiry = _unverified(token).get("exp", 0)
            raise TokenRejected(
                "ExpiredToken", f"The token is expired. Expiration time: '{_utc(expiry)}'"
            ) from None
        except jwt.InvalidSignatureError:
            raise TokenRejected("InvalidSignature", "The token has an invalid signature.") from None
        except jwt.InvalidTokenError as exc:
            raise TokenRejected("InvalidToken", f"The token is not valid: {exc}") from None
        if audience(str(claims["aud"])) not in {audience(a) for a in audiences}:
            raise TokenRejected("InvalidAudience", "Invalid authorization token audience.")
        return claims

    def verify_assertion(self, assertion: str, application: ApplicationConfig) -> None:
        """Check a federated token against the application's federated credentials (as Entra does)."""
        unverified = _unverified(assertion)
        issuer, subject = str(unverified.get("iss", "")), str(unverified.get("sub", ""))
        audiences = unverified.get("aud", [])
        audiences = [audiences] if isinstance(audiences, str) else list(audiences)
        matching = [c for c in application.federated_credentials if self._issuer_of(c) == issuer]
        if not matching:
            raise AssertionRejected(
                700211,
                f"No matching federated identity record found for presented assertion issuer '{issuer}'.",
            )
        credential = next((c for c in matching if c.subject == subject and c.audience in audiences), None)
        if credential is None:
            raise AssertionRejected(
                70021,
                "No matching federated identity record found for presented assertion. "
                f"Assertion Issuer: '{issuer}'. Assertion Subject: '{subject}'. Assertion Audience: "
                f"'{','.join(audiences)}'.",
            )
        try:
            jwt.decode(
                assertion,
                self._key_for(issuer, assertion),
                algorithms=["RS256"],
                audience=credential.audience,
                issuer=issuer,
                options={"require": ["exp", "iss", "sub", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            expiry = unverified.get("exp", 0)
            raise AssertionRejected(
                700024,
                f"Client assertion is not within its valid time range. Current time: {_utc(self.clock())}, "
                f"expiry time of assertion {_utc(expiry)}.",
            ) from None
        except jwt.InvalidTokenError as exc:
            raise AssertionRejected(
                50013, f"Assertion failed signature validation. [Reason - {exc}]"
            ) from None

    @staticmethod
    def _issuer_of(credential: FederatedCredentialConfig) -> str:
        return credential.issuer or WORKLOAD_ISSUER

    def _key_for(self, issuer: str, assertion: str) -> Any:
        if issuer == WORKLOAD_ISSUER:
            return self.key.public
        keys = self._trusted.get(issuer)
        if keys is None:
            raise AssertionRejected(
                50013, f"Assertion failed signature validation: no keys for issuer '{issuer}'."
            )
        kid = jwt.get_unverified_header(assertion).get("kid")
        for jwk in keys.keys:
            if kid is None or jwk.key_id == kid:
                return jwk.key
        raise AssertionRejected(
            50013, f"Assertion failed signature validation: no key '{kid}' at '{issuer}'."
        )


def _unverified(token: str) -> dict[str, Any]:
    try:
        claims: dict[str, Any] = jwt.decode(token, options={"verify_signature": False})
    except jwt.InvalidTokenError:
        return {}
    return claims


def _utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(epoch))
