"""A next-available-session receiver waits, as on Azure, until a session can be locked.

Service Bus answers a ``NEXT_AVAILABLE_SESSION`` attach only once it has locked a session for
the receiver, or refuses it with ``com.microsoft:timeout`` when the time the client asked for
(its ``com.microsoft:timeout`` link property) is up. Until then the attach stays unanswered.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from proton import Link

from federator_emulator.amqp.endpoints import ConnectionContext, Endpoint, refuse
from federator_emulator.amqp.servicebus import TIMEOUT, NoSessionYet
from federator_emulator.state.servicebus import ReceivableEntity

logger = logging.getLogger(__name__)

# Sessions also free up without a message arriving (a lock released or expired): look again this often.
_RECHECK_SECONDS = 0.1


class SessionWait(Endpoint):
    """The pending attach; ``retry`` attaches again (and may wait again, until the same deadline)."""

    def __init__(
        self,
        ctx: ConnectionContext,
        link: Link,
        wait: NoSessionYet,
        container: Any,
        retry: Callable[[], None],
    ) -> None:
        super().__init__(ctx, link)
        self.entity: ReceivableEntity = wait.entity
        deadline: float | None = getattr(link, "fed_session_deadline", None)
        if deadline is None:
            deadline = time.monotonic() + wait.wait_seconds
            link.fed_session_deadline = deadline  # proton wrappers take attributes
        self.deadline = deadline
        self.wait_seconds = wait.wait_seconds
        self.retry = retry
        link.fed_endpoint = self  # a client detach ends the wait
        self.entity.listeners.append(self._on_entity)
        self._timer = container.schedule(min(_RECHECK_SECONDS, max(0.0, deadline - time.monotonic())), self)

    def _on_entity(self, _entity: ReceivableEntity) -> None:
        self._attach_again()

    def on_timer_task(self, event: Any) -> None:
        self._timer = None
        try:
            if time.monotonic() >= self.deadline:
                self.on_close()
                refuse(
                    self.link,
                    TIMEOUT,
                    f"The operation did not complete within the allotted timeout of {self.wait_seconds:g} "
                    f"seconds: no session of {self.entity.path} is available.",
                )
            else:
                self._attach_again()
        except Exception:  # a timer's exception would stop the whole container
            logger.exception("session wait on %s failed", self.entity.path)

    def _attach_again(self) -> None:
        self.on_close()
        self.retry()

    def on_close(self) -> None:
        if self._on_entity in self.entity.listeners:
            self.entity.listeners.remove(self._on_entity)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.ctx.endpoints.discard(self)
        if getattr(self.link, "fed_endpoint", None) is self:
            self.link.fed_endpoint = None
