"""Shared Access Signature tokens: verification of CBS put-token requests and grants.

A token signs ``sr + "\\n" + se`` with HMAC-SHA256 keyed by the SAS key's UTF-8 bytes (the key
is not base64-decoded, matching the Azure SDKs). As on Azure, the signature covers ``sr`` exactly
as it appears in the token: the SDKs send it URL-encoded and sign the encoded form, while the
SDK samples (and many applications) send the plain URI and sign that.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, quote_plus, unquote, unquote_plus, urlparse

SAS_PREFIX = "SharedAccessSignature "


class AuthError(Exception):
    """The token is refused; the message says why (it goes back to the client), starting with Azure's code
    (``InvalidSignature: The token has an invalid signature.``, what a token signed with another
    namespace's key gets)."""


INVALID_SIGNATURE = "InvalidSignature: The token has an invalid signature."


def entity_path(uri_or_path: str) -> str:
    """Lower-cased entity path of a resource URI or link address, without host and slashes.

    Link addresses carry scheme, host and port (``amqps://localhost:5673/hub1``) while
    tokens and nodes may not; authorization compares only this path.
    """
    parsed = urlparse(uri_or_path)
    path = parsed.path if parsed.scheme else uri_or_path
    return unquote(path).strip("/").lower()


def management_node(entity: str) -> str:
    """The path of an entity's management node: a token for the entity covers it, and so does one for the
    node itself, which is what the SDKs put before management operations."""
    return f"{entity}/$management"


def covers(granted: str, requested: str) -> bool:
    """Whether a grant for path ``granted`` includes ``requested`` (segment-wise prefix)."""
    return granted == "" or requested == granted or requested.startswith(granted + "/")


def sign(signed_resource: str, expiry: int | str, key: str) -> str:
    """The signature of ``signed_resource`` (``sr`` as it is written in the token)."""
    string_to_sign = f"{signed_resource}\n{expiry}".encode()
    digest = hmac.new(key.encode(), string_to_sign, hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


def generate_sas_token(resource: str, key_name: str, key: str, expiry: int) -> str:
    """Build a token the way the SDKs do: ``sr`` URL-encoded, and signed in that form."""
    encoded = quote_plus(resource)
    signature = quote(sign(encoded, expiry, key), safe="")
    return f"{SAS_PREFIX}sr={encoded}&sig={signature}&se={expiry}&skn={key_name}"


def _token_fields(token: str) -> dict[str, str]:
    """The token's fields as written (not URL-decoded): ``sr`` is signed in that form."""
    fields: dict[str, str] = {}
    for part in token[len(SAS_PREFIX) :].split("&"):
        name, _, value = part.partition("=")
        fields.setdefault(name, value)
    return fields


ALL_RIGHTS = frozenset(("Manage", "Send", "Listen"))


@dataclass(frozen=True)
class Grant:
    path: str  # entity path the token covers ("" = whole namespace)
    expires_at: float  # epoch seconds
    rights: frozenset[str] = ALL_RIGHTS  # the claims: Send, Listen, Manage (which implies both)


def verify_sas_token(
    token: str,
    audience: str,
    keys: Mapping[str, str],
    now: float | None = None,
    rights: Mapping[str, frozenset[str]] | None = None,
) -> Grant:
    """Check signature, expiry and audience; return what the token grants.

    ``keys`` maps key names to key values of the namespace, ``rights`` key names to their claims
    (all of them when a key is not listed).
    """
    if not token.startswith(SAS_PREFIX):
        raise AuthError("only SharedAccessSignature tokens are accepted by the emulator")
    fields = _token_fields(token)
    missing = {"sr", "sig", "se", "skn"} - fields.keys()
    if missing:
        raise AuthError(f"MalformedToken: the SAS token has no {sorted(missing)}")
    key = keys.get(fields["skn"])
    if key is None:
        raise AuthError(f"{INVALID_SIGNATURE} The namespace has no SAS key named {fields['skn']!r}.")
    try:
        expiry = int(fields["se"])
    except ValueError:
        raise AuthError("MalformedToken: the SAS token's se is not an integer") from None
    expected = sign(fields["sr"], fields["se"], key)
    if not hmac.compare_digest(expected.encode(), unquote(fields["sig"]).encode()):
        raise AuthError(INVALID_SIGNATURE)
    if expiry <= (time.time() if now is None else now):
        raise AuthError(f"ExpiredToken: The token is expired. Expiration time: '{expiry}'.")
    resource = unquote_plus(fields["sr"])
    if not covers(entity_path(resource), entity_path(audience)):
        raise AuthError(f"InvalidAudience: the token for {resource!r} does not cover {audience!r}.")
    claims = (rights or {}).get(fields["skn"], ALL_RIGHTS)
    return Grant(path=entity_path(audience), expires_at=float(expiry), rights=claims)


@dataclass
class ConnectionGrants:
    """The grants a client has put on one connection through CBS."""

    grants: dict[str, Grant] = field(default_factory=dict)

    def add(self, grant: Grant) -> None:
        self.grants[grant.path] = grant

    def allows(self, path: str, right: str | None = None, now: float | None = None) -> bool:
        """Whether a valid token covers ``path`` (with ``right``, or any claim when None)."""
        now = time.time() if now is None else now
        requested = entity_path(path)
        return any(
            g.expires_at > now and covers(g.path, requested) and (right is None or has_right(g.rights, right))
            for g in self.grants.values()
        )

    def any_valid(self, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        return any(g.expires_at > now for g in self.grants.values())


def has_right(rights: frozenset[str], right: str) -> bool:
    """Manage includes Send and Listen, as on an Azure shared access policy."""
    return right in rights or "Manage" in rights


def missing_claim(right: str, resource: str) -> str:
    """Azure's refusal of an operation whose token lacks a claim."""
    return (
        f"Unauthorized access. '{right}' claim(s) are required to perform this operation. "
        f"Resource: '{resource}'."
    )


def expired_token(resource: str) -> str:
    """Why a link is detached when the token that authorized it expires."""
    return (
        f"Unauthorized access. The token for '{resource}' has expired; put a new one over $cbs "
        "before it expires to keep the links it authorized."
    )


def connection_string(host: str, port: int, key_name: str, key: str, entity: str | None = None) -> str:
    """A connection string the SDKs accept for the emulator.

    ``UseDevelopmentEmulator=true`` must be lowercase: with ``True`` the SDKs switch to TLS
    on port 5671.
    """
    parts = [
        f"Endpoint=sb://{host}:{port}",
        f"SharedAccessKeyName={key_name}",
        f"SharedAccessKey={key}",
        "UseDevelopmentEmulator=true",
    ]
    if entity:
        parts.insert(3, f"EntityPath={entity}")
    return ";".join(parts)
