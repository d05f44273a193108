"""Where the Service Bus source leans on the SDK's internals (azure-servicebus 7.15, its ``_pyamqp``).

Each is a workaround with a measured reason, and each falls back to the SDK's own behaviour when the
internals it needs are missing (a newer SDK): the source then works as before, only slower.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

logger = logging.getLogger(__name__)

_KEEP_ALIVE_TICK_SECONDS = 1.0  # the SDK's own keep-alive tick


def complete_together(receiver: Any, messages: list[Any]) -> bool:
    """Complete ``messages`` with one ``update-disposition`` request on the entity's management link (the
    SDK's own fallback for settling, by lock tokens); False if it did not (the caller completes them one
    by one). The receiver link forgets their deliveries: it would keep each tag until settled on it."""
    from azure.servicebus._common.constants import MESSAGE_COMPLETE, MESSAGE_MGMT_SETTLEMENT_TERM_MAP

    try:
        receiver._settle_message_via_mgmt_link(
            MESSAGE_MGMT_SETTLEMENT_TERM_MAP[MESSAGE_COMPLETE], [m.lock_token for m in messages]
        )
    except Exception as error:  # any refusal: completing one by one shows which
        logger.info("servicebus: completing %d messages together failed (%r)", len(messages), error)
        return False
    tags = getattr(getattr(receiver._handler, "_link", None), "_received_delivery_tags", None)
    for message in messages:
        message._settled = True
        if tags is not None:
            tags.discard(message._delivery_tag)
    return True


@contextlib.contextmanager
def keeping_arrivals(receiver: Any) -> Iterator[None]:
    """For requests between two receive calls. Messages may still arrive then, on the credit the last
    call left, and the SDK releases one that arrives while no receive call runs: a request reads them
    while it waits for its reply. Marked as receiving (the SDK's flag, not an API) while the request
    runs, the SDK keeps them for the next receive call instead (released, each cost the broker a second
    delivery)."""
    receiving = getattr(receiver, "_receive_context", None)
    if receiving is None or receiving.is_set():
        yield
        return
    receiving.set()
    try:
        yield
    finally:
        receiving.clear()


def kept(receiver: Any) -> int:
    """How many messages the SDK keeps for ``receiver``'s next receive call (those that arrived during
    requests between calls, :func:`keeping_arrivals`). A call that starts with some waits its whole
    ``max_wait_time`` unless another message arrives: the SDK starts its short gathering only when a
    message arrives during the call. Measured: at the end of a burst its last messages waited out the
    source's 1 s poll."""
    queue = getattr(getattr(receiver, "_handler", None), "_received_messages", None)
    return queue.qsize() if queue is not None else 0


def keep_alive_in_turn(receiver: Any, lock: threading.RLock) -> None:
    """Make ``receiver``'s keep-alive thread read the connection only while ``lock`` is free.

    With prefetch 0 the SDK starts a thread per receiver that reads the connection every 5 s, while the
    caller's thread may be reading it too (a receive call, a management request). Frames are read
    under a lock there, but a transfer is handled without one: its link keeps the delivery's first
    frame in a field, so two threads handling transfers at once give a message the delivery tag, and
    so the lock token, of the other's. Two held messages then carry one token: completing them together
    is refused (the token is settled twice), and the other message's own lock is never settled, so it
    comes back a lock duration later. Measured: with 2,000-message batches, every 6-10 s a 2-4 s
    one-by-one completion; logged at the broker, message 7,954 received with message 7,986's token.

    Every call the source makes holds ``lock``; the keep-alive here is the SDK's loop with that one
    difference, on the SDK's thread (started when the receiver opens, ended when it closes). It skips
    a turn while a call runs (that call reads the connection, which is what keeps it alive) and never
    waits for the lock: closing the receiver, under the lock, waits for this thread to end."""
    create_handler = getattr(receiver, "_create_handler", None)
    if create_handler is None:
        return

    def create_handler_in_turn(*args: Any, **kwargs: Any) -> None:
        create_handler(*args, **kwargs)
        handler = receiver._handler
        if getattr(handler, "_keep_alive_interval", 0) and hasattr(handler, "_keep_alive"):
            handler._keep_alive = lambda: _keep_alive(handler, lock)

    receiver._create_handler = create_handler_in_turn


def _keep_alive(handler: Any, lock: threading.RLock) -> None:
    listened = time.monotonic()
    while handler._connection and not handler._shutdown:
        time.sleep(_KEEP_ALIVE_TICK_SECONDS)
        if time.monotonic() - listened < handler._keep_alive_interval or not lock.acquire(blocking=False):
            continue
        try:
            if not handler._shutdown:
                credit = handler._link.current_link_credit
                handler._connection.listen(wait=handler._socket_timeout, batch=credit)
        except Exception as error:  # as the SDK's loop: a broken connection is the next call's to report
            logger.debug("servicebus: the connection's keep-alive stopped (%r)", error)
            return
        finally:
            lock.release()
        listened = time.monotonic()
