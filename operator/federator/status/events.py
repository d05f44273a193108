"""Events a reconciliation pass wants posted on its resource (the handler posts them through kopf)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Note:
    """An Event to post on the resource."""

    type: Literal["Normal", "Warning"]
    reason: str
    message: str
