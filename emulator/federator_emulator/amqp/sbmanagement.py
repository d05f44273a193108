"""The ``<entity>/$management`` node of Service Bus: the request/response operations the SDK uses."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from proton import UNDESCRIBED, Array, Data, Delivery, Link, Message, timestamp

from federator_emulator.amqp import codec, ruleops
from federator_emulator.amqp.endpoints import (
    LOCK_LOST,
    NOT_FOUND,
    UNAUTHORIZED,
    ConnectionContext,
    Endpoint,
    OperationError,
    accept,
    decode_request,
    reply,
)
from federator_emulator.amqp.messages import AmqpInbound, delivery_payload, with_application_properties
from federator_emulator.amqp.servicebus import resolve_receivable, resolve_sendable
from federator_emulator.auth import management_node, missing_claim
from federator_emulator.state.eventhubs import UnknownEntity
from federator_emulator.state.servicebus import LockLost, Queue, ReceivableEntity
from federator_emulator.state.sessions import SessionUnavailable

logger = logging.getLogger(__name__)

SESSION_LOCK_LOST = "com.microsoft:session-lock-lost"
SESSION_NOT_FOUND = "com.microsoft:session-not-found"
# ``last-updated-time`` of DateTime.MaxValue (as .NET encodes it) asks for every session with active
# messages or a stored state; an earlier time, for the sessions whose state was set after it.
_ALL_SESSIONS_MS = 253402300800000
# Operations a sender uses need Send, those that change a subscription's rules Manage; every other one
# (a receiver's) needs Listen.
_OPERATION_RIGHTS = {
    "com.microsoft:schedule-message": "Send",
    "com.microsoft:cancel-scheduled-message": "Send",
    "com.microsoft:add-rule": "Manage",
    "com.microsoft:remove-rule": "Manage",
}
_PEEK_LOCK = 1  # receiver-settle-mode value of ServiceBusReceiveMode.PEEK_LOCK
_OK = (200, "OK")
_NO_CONTENT = (204, "No Content")


def _array(type_code: int, values: list[Any]) -> Array:
    return Array(UNDESCRIBED, type_code, *values)  # type: ignore[arg-type]


def _tokens(body: dict[str, Any]) -> list[uuid.UUID]:
    raw = body.get("lock-tokens")
    values = raw.elements if isinstance(raw, Array) else list(raw or [])
    return [v if isinstance(v, uuid.UUID) else uuid.UUID(str(v)) for v in values]


def _numbers(value: Any) -> list[int]:
    return [int(v) for v in (value.elements if isinstance(value, Array) else list(value or []))]


class Management(Endpoint):
    def __init__(self, ctx: ConnectionContext, link: Link, parts: list[str]) -> None:
        super().__init__(ctx, link)
        self.parts = parts
        self._operations: dict[str, Callable[[dict[str, Any]], tuple[tuple[int, str], Any]]] = {
            "com.microsoft:renew-lock": self._renew_lock,
            "com.microsoft:peek-message": self._peek,
            "com.microsoft:receive-by-sequence-number": self._receive_by_sequence_number,
            "com.microsoft:update-disposition": self._update_disposition,
            "com.microsoft:schedule-message": self._schedule,
            "com.microsoft:cancel-scheduled-message": self._cancel_scheduled,
            "com.microsoft:renew-session-lock": self._renew_session_lock,
            "com.microsoft:get-session-state": self._get_session_state,
            "com.microsoft:set-session-state": self._set_session_state,
            "com.microsoft:get-message-sessions": self._get_message_sessions,
            "com.microsoft:add-rule": self._add_rule,
            "com.microsoft:remove-rule": self._remove_rule,
            "com.microsoft:enumerate-rules": self._enumerate_rules,
        }

    def on_message(self, delivery: Delivery, payload: bytes) -> None:
        accept(delivery)
        request: Message = decode_request(payload)
        properties: dict[Any, Any] = request.properties or {}
        operation = str(properties.get("operation", ""))
        body = {str(k): v for k, v in (codec.own(request.body) or {}).items()}
        handler = self._operations.get(operation)
        right = _OPERATION_RIGHTS.get(operation, "Listen")
        node = management_node("/".join(self.parts))
        if handler is not None and not self.ctx.grants.allows(node, right):
            resource = f"sb://{self.link.connection.hostname or 'localhost'}/{'/'.join(self.parts)}"
            reply(self.ctx, self.link, request, 401, missing_claim(right, resource), error=UNAUTHORIZED)
            return
        if handler is None:
            reply(
                self.ctx,
                self.link,
                request,
                501,
                f"operation {operation!r} is not supported by the emulator",
                error="com.microsoft:not-implemented",
            )
            return
        try:
            (status, description), result = handler(body)
        except UnknownEntity as exc:
            reply(self.ctx, self.link, request, 404, str(exc), error=NOT_FOUND)
            return
        except LockLost as exc:
            reply(self.ctx, self.link, request, 410, str(exc), error=LOCK_LOST)
            return
        except SessionUnavailable as exc:
            reply(self.ctx, self.link, request, 410, str(exc), error=SESSION_LOCK_LOST)
            return
        except OperationError as exc:
            reply(self.ctx, self.link, request, exc.status, str(exc), error=exc.condition)
            return
        except ValueError as exc:  # a malformed request, bad SQL (a rule's) included
            reply(self.ctx, self.link, request, 400, str(exc), error="amqp:invalid-field")
            return
        self.namespace.journal.commit()
        reply(self.ctx, self.link, request, status, description, body=result)

    def _add_rule(self, body: dict[str, Any]) -> tuple[tuple[int, str], Any]:
        ruleops.add_rule(self.namespace, self.parts, body)
        return _OK, None

    def _remove_rule(self, body: dict[str, Any]) -> tuple[tuple[int, str], Any]:
        ruleops.remove_rule(self.namespace, self.parts, body)
        return _OK, None

    def _enumerate_rules(self, body: dict[str, Any]) -> tuple[tuple[int, str], Any]:
        rules = ruleops.enumerate_rules(self.namespace, self.parts, body)
        return (_OK, {"rules": rules}) if rules else (_NO_CONTENT, None)

    def _receivable(self) -> ReceivableEntity:
        return resolve_receivable(self.ctx, self.parts)

    def _renew_lock(self, body: dict[str, Any]) -> tuple[tuple[int, str], Any]:
        entity = self._receivable()
        expirations = [timestamp(int(entity.renew(token) * 1000)) for token in _tokens(body)]
        return _OK, {"expirations": _array(Data.TIMESTAMP, expirations)}

    def _peek(self, body: dict[str, Any]) -> tuple[tuple[int, str], Any]:
        found = self._receivable().peek(
            int(body.get("from-sequence-number", 1)), int(body.get("message-count", 1))
        )
        if not found:
            return _NO_CONTENT, None
        return _OK, {"messages": [{"message": delivery_payload(m)} for m in found]}

    def _receive_by_sequence_number(self, body: dict[str, Any]) -> tuple[tuple[int, str], Any]:
        peek_lock = int(body.get("receiver-settle-mode", _PEEK_LOCK)) == _PEEK_LOCK
        found = self._receivable().receive_deferred(_numbers(body.get("sequence-numbers")), peek_lock)
        if not found:
            return _NO_CONTENT, None
        messages = []
        for message in found:
            entry: dict[str, Any] = {"message": delivery_payload(message)}
            if message.lock_token is not None:
                entry["lock-token"] = message.lock_token
            messages.append(entry)
        return _OK, {"messages": messages}

    def _update_disposition(self, body: dict[str, Any]) -> tuple[tuple[int, str], Any]:
        entity = self._receivable()
        status = str(body.get("disposition-status"))
        changes = {str(k): v for k, v in (body.get("properties-to-modify") or {}).items()}
        for token in _tokens(body):
            if changes and status != "completed":
                payload = with_application_properties(entity.locked(token).payload, changes)
                entity.rewrite_locked(token, payload)
            if status == "completed":
                entity.complete(token)
            elif status == "abandoned":
                entity.abandon(token)
            elif status == "defered":  # sic: the SDK's spelling
                entity.defer(token)
            elif status == "suspended":
                entity.dead_letter_locked(
                    token, body.get("deadletter-reason"), body.get("deadletter-description")
                )
        return _OK, None

    def _schedule(self, body: dict[str, Any]) -> tuple[tuple[int, str], Any]:
        target = resolve_sendable(self.ctx, self.parts)
        numbers: list[int] = []
        for entry in body.get("messages") or []:
            inbound = AmqpInbound(bytes(entry["message"]))
            if isinstance(target, Queue):
                message = target.send(inbound)
                numbers.append(message.sequence_number if message else -1)
            else:
                numbers.append(target.send(inbound) or -1)
        return _OK, {"sequence-numbers": _array(Data.LONG, numbers)}

    def _renew_session_lock(self, body: dict[str, Any]) -> tuple[tuple[int, str], Any]:
        entity = self._receivable()
        expiry = entity.sessions.renew(str(body.get("session-id")), entity.lock_duration)
        return _OK, {"expiration": timestamp(int(expiry * 1000))}

    def _get_session_state(self, body: dict[str, Any]) -> tuple[tuple[int, str], Any]:
        state = self._receivable().sessions.get_state(str(body.get("session-id")))
        return _OK, {"session-state": state}

    def _set_session_state(self, body: dict[str, Any]) -> tuple[tuple[int, str], Any]:
        state = body.get("session-state")
        self._receivable().sessions.set_state(
            str(body.get("session-id")), None if state is None else bytes(state)
        )
        return _OK, None

    def _get_message_sessions(self, body: dict[str, Any]) -> tuple[tuple[int, str], Any]:
        sessions = self._receivable().sessions
        last_updated = body.get("last-updated-time")
        last_updated_ms = _ALL_SESSIONS_MS if last_updated is None else int(last_updated)
        if last_updated_ms >= _ALL_SESSIONS_MS:
            found = self._receivable().active_sessions() | sessions.with_state()
        else:
            found = sessions.state_updated_after(last_updated_ms / 1000)
        skip = int(body.get("skip", 0))
        page = sorted(found)[skip : skip + int(body.get("top", len(found)))]
        if not page:
            raise OperationError(204, SESSION_NOT_FOUND, "There are no sessions matching the query.")
        return _OK, {"skip": skip, "sessions-ids": _array(Data.STRING, page)}

    def _cancel_scheduled(self, body: dict[str, Any]) -> tuple[tuple[int, str], Any]:
        target = resolve_sendable(self.ctx, self.parts)
        target.cancel_scheduled(_numbers(body.get("sequence-numbers")))
        return _OK, None
