"""An event a target can never accept, told apart from a failed send.

A send that fails is retried and then fails the batch, which Spark replays: right for a broker that is
away, wrong for an event over the target's message size limit, which would fail every replay and stop
the stream for good. A publisher raises :class:`Undeliverable` from ``add`` for such an event instead,
and the write task dead-letters it (``sinks/replication.py``).
"""

from __future__ import annotations


class Undeliverable(ValueError):
    """``add`` refused the event for good; the message says why (sizes, the target's limit)."""
