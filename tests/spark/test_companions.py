"""How a shared driver stops a member's companions (its lag monitor, its translator): each member's in a
thread of its own, so that a translator's last cycle holds up no other member; a member starts again only
once its companions have stopped; and a stop that finished is forgotten, so that a driver whose members
come and go for a long time holds nothing of the ones that went. No JVM."""

from __future__ import annotations

import threading

import pytest

from federator_spark.companions import Companions, Retiring
from support.polling import eventually


class Held(Companions):
    """Companions whose stop lasts until the test releases it (as a translator's last cycle lasts),
    recording how they were asked to stop."""

    def __init__(self, error: Exception | None = None) -> None:
        super().__init__()
        self.release = threading.Event()
        self.finals: list[bool] = []
        self.error = error

    def stop(self, final: bool) -> None:
        self.finals.append(final)
        self.release.wait(30)
        if self.error is not None:
            raise self.error


def retire_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name.startswith("federator-retire-"))


def test_each_members_companions_stop_on_their_own_and_a_member_waits_only_for_its_own() -> None:
    retiring = Retiring()
    slow, quick = Held(), Held()
    retiring.retire("shop/slow", slow, final=True)
    retiring.retire("shop/quick", quick, final=False)
    quick.release.set()

    eventually(lambda: not retiring.busy("shop/quick"), message="the quick member's companions stop")
    assert retiring.busy("shop/slow")  # still stopping: only that member waits for it
    assert retiring.pending() == {"shop/slow"}
    slow.release.set()
    retiring.join()
    assert (slow.finals, quick.finals) == ([True], [False])
    assert retiring.pending() == set()


def test_members_that_came_and_went_leave_nothing_behind_once_their_companions_stopped() -> None:
    retiring = Retiring()
    before = retire_threads()
    for round_ in range(20):  # a long-running driver: members added and removed again and again
        for key in ("shop/a", "shop/b", f"shop/once-{round_}"):
            released = Held()
            released.release.set()
            retiring.retire(key, released, final=True)

    eventually(lambda: not retiring.pending(), message="every stop finishes")
    assert len(retiring) == 0  # forgotten, not just finished
    assert retire_threads() == before


def test_a_stop_that_fails_is_logged_and_forgotten(caplog: pytest.LogCaptureFixture) -> None:
    retiring = Retiring()
    failing = Held(RuntimeError("storage unreachable"))
    failing.release.set()
    retiring.retire("shop/a", failing, final=True)
    retiring.join()

    assert retiring.pending() == set()
    assert "task shop/a: stopping its lag monitor and translator: RuntimeError('storage unreachable')" in (
        caplog.text
    )
