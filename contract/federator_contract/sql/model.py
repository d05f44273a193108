"""The public data types expressions read: the dialect and the message."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Dialect(enum.Enum):
    SERVICE_BUS = "servicebus"
    """Exactly the documented Service Bus SQL filter and rule action language."""

    FEDERATOR = "federator"
    """The Service Bus language plus read-only ``body.<a>.<b>`` references into a decoded JSON body."""


@dataclass
class SqlMessage:
    """What expressions read and actions write.

    ``system`` is keyed by the canonical system property names of
    :data:`federator_contract.sql.SYSTEM_PROPERTIES` (``Label``, not ``Subject``); a property that is not
    set is simply absent. ``user`` holds the application properties. ``body`` is only read by
    ``body.`` references of :attr:`Dialect.FEDERATOR`.
    """

    system: dict[str, Any] = field(default_factory=dict)
    user: dict[str, Any] = field(default_factory=dict)
    body: Any = None
