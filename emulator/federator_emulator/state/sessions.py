"""Service Bus sessions: exclusive session locks and session state of one entity."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from federator_emulator.state.journal import Journal


class SessionUnavailable(LookupError):
    """The session is locked by another receiver, or no session has messages."""


@dataclass
class SessionLock:
    session_id: str
    owner: Any  # the receiver holding it (a protocol object; only compared by identity)
    locked_until: float


class SessionRegistry:
    def __init__(self, path: str, journal: Journal, clock: Callable[[], float]) -> None:
        self.path = path
        self.journal = journal
        self.clock = clock
        self._locks: dict[str, SessionLock] = {}
        self._states: dict[str, bytes] = {}
        self._state_updated: dict[str, float] = {}  # when each session's state was last set

    def holder(self, session_id: str) -> Any:
        """Who holds the session's lock now (None when free or expired)."""
        lock = self._locks.get(session_id)
        return lock.owner if lock is not None and lock.locked_until > self.clock() else None

    def lock(self, session_id: str, owner: Any, duration: float) -> SessionLock:
        current = self.holder(session_id)
        if current is not None and current is not owner:
            raise SessionUnavailable(f"session {session_id!r} of {self.path} is locked by another receiver")
        lock = SessionLock(session_id, owner, self.clock() + duration)
        self._locks[session_id] = lock
        return lock

    def renew(self, session_id: str, duration: float) -> float:
        lock = self._locks.get(session_id)
        if lock is None or lock.locked_until <= self.clock():
            raise SessionUnavailable(f"the lock of session {session_id!r} on {self.path} is lost")
        lock.locked_until = self.clock() + duration
        return lock.locked_until

    def release(self, session_id: str, owner: Any) -> None:
        lock = self._locks.get(session_id)
        if lock is not None and lock.owner is owner:
            del self._locks[session_id]

    def get_state(self, session_id: str) -> bytes | None:
        return self._states.get(session_id)

    def set_state(self, session_id: str, state: bytes | None) -> None:
        now = self.clock()
        self.journal.write(
            {"k": "sst", "e": self.path, "sid": session_id, "none": state is None, "t": now}, state or b""
        )
        self.replay_state(session_id, state, now)

    def replay_state(self, session_id: str, state: bytes | None, updated_at: float) -> None:
        self._state_updated[session_id] = updated_at
        if state is None:
            self._states.pop(session_id, None)
        else:
            self._states[session_id] = state

    def with_state(self) -> set[str]:
        """Sessions that hold a stored state."""
        return set(self._states)

    def state_updated_after(self, since: float) -> set[str]:
        """Sessions whose state was set (or cleared) after ``since`` (epoch seconds)."""
        return {sid for sid, updated in self._state_updated.items() if updated > since}
