"""The ``$cbs`` node: claims-based security put-token requests."""

from __future__ import annotations

import logging

from proton import Delivery

from federator_emulator import auth
from federator_emulator.amqp import codec
from federator_emulator.amqp.endpoints import Endpoint, accept, decode_request, reply
from federator_emulator.identity.tokens import TokenRejected

logger = logging.getLogger(__name__)


class CbsNode(Endpoint):
    def on_message(self, delivery: Delivery, payload: bytes) -> None:
        accept(delivery)
        request = decode_request(payload)
        properties = codec.own(request.properties or {})
        if properties.get("operation") != "put-token":
            reply(
                self.ctx,
                self.link,
                request,
                400,
                f"unsupported CBS operation {properties.get('operation')!r}",
            )
            return
        audience = str(properties.get("name", ""))
        token = codec.own(request.body)
        if isinstance(token, bytes):
            token = token.decode()
        try:
            grant = self._grant(str(token), audience)
        except auth.AuthError as exc:
            logger.info("CBS refused a token for %s: %s", audience, exc)
            reply(self.ctx, self.link, request, 401, str(exc))
            return
        except TokenRejected as exc:
            logger.info("CBS refused a JWT for %s: %s", audience, exc)
            reply(self.ctx, self.link, request, 401, f"{exc.reason}: {exc}")
            return
        entity = grant.path.split("/", 1)[0]
        if entity and not entity.startswith("$") and not self.namespace.has_entity(entity):
            # As Service Bus and Event Hubs do: the SDKs report "could not be found" at once instead
            # of retrying a link that the broker would refuse.
            reply(self.ctx, self.link, request, 404, f"The messaging entity '{audience}' could not be found.")
            return
        self.ctx.grants.add(grant)
        reply(self.ctx, self.link, request, 202, "Accepted")

    def _grant(self, token: str, audience: str) -> auth.Grant:
        """A SAS token (whatever the type says: the Service Bus SDK calls its SAS tokens ``jwt``), or a
        Microsoft Entra access token."""
        if token.startswith(auth.SAS_PREFIX):
            return auth.verify_sas_token(
                token, audience, self.namespace.keys, rights=self.namespace.sas_rights
            )
        return self.ctx.tenant.data_grant(token, audience, self.namespace)
