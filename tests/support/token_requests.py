"""TokenRequest for the test API server: `POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token`, with
which a client obtains a ServiceAccount's token for the audiences it names (Kubernetes' "Manually create
an API token for a ServiceAccount"; the `authentication.k8s.io/v1` TokenRequest). A cluster signs it as
its OIDC issuer, which Microsoft Entra trusts through a federated credential; here the issuer is given —
the Azure emulator's workload issuer, say, which its Entra tenant trusts.

The API server's rules that matter to a client are kept: the ServiceAccount must exist (404 NotFound),
`expirationSeconds` is at least 600 (422 Invalid), and the answer is the TokenRequest with
`status.token` and `status.expirationTimestamp`.

    with token_issuing_kube(lambda subject, audience, seconds: emu.workload_identity_token(
            subject, audience, seconds)) as kube: ...
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp.web
import attrs
import kmock
from kmock._internal import rendering
from typing_extensions import override

from .kube import KubeServer, serving
from .kubeapi import FaithfulKubernetesEmulator, _error

Issuer = Callable[[str, str, int], str]
"""(subject, audience, lifetime in seconds) → a signed token; the subject is
`system:serviceaccount:<namespace>:<name>`, as Kubernetes writes it."""

MIN_EXPIRATION_SECONDS = 600
DEFAULT_EXPIRATION_SECONDS = 3600


@attrs.define(kw_only=True)
class TokenIssuingKubernetesEmulator(FaithfulKubernetesEmulator):
    issuer: Issuer
    issued: list[tuple[str, tuple[str, ...], int]] = attrs.field(factory=list, init=False)
    """(subject, audiences, expirationSeconds) of every token handed out, for tests to check."""

    @override
    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        # kmock guesses no action for a POST to a named object's subresource: told by method and path.
        resource = request.resource
        token = request.subresource == "token" and request.method == "POST"
        if token and resource is not None and resource.plural == "serviceaccounts":
            return self._token(request)
        return await super()._handle(request)

    def _token(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        try:
            self._stored(request)
        except kmock.KubernetesObjectNotFoundError:
            raise _error(404, "NotFound", f'serviceaccounts "{request.name}" not found') from None
        body: dict[str, Any] = request.data if isinstance(request.data, dict) else {}
        spec = body.get("spec") or {}
        seconds = int(spec.get("expirationSeconds") or DEFAULT_EXPIRATION_SECONDS)
        if seconds < MIN_EXPIRATION_SECONDS:
            field = f"spec.expirationSeconds: Invalid value: {seconds}"
            raise _error(422, "Invalid", f"{field}: may not specify a duration less than 10 minutes")
        audiences = tuple(spec.get("audiences") or ("https://kubernetes.default.svc",))
        subject = f"system:serviceaccount:{request.namespace}:{request.name}"
        self.issued.append((subject, audiences, seconds))
        expires = datetime.datetime.now(tz=datetime.UTC) + datetime.timedelta(seconds=seconds)
        answer = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "metadata": {"name": request.name, "namespace": request.namespace},
            "spec": {**spec, "audiences": list(audiences), "expirationSeconds": seconds},
            "status": {
                "token": self.issuer(subject, audiences[0], seconds),
                "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
            },
        }
        return aiohttp.web.json_response(answer, status=201)


@contextmanager
def token_issuing_kube(issuer: Issuer) -> Iterator[KubeServer]:
    """A running test API server (as the `kube` fixture's) that answers TokenRequests with `issuer`."""
    with serving(TokenIssuingKubernetesEmulator(issuer=issuer)) as server:
        yield server
