"""Runs a tenant's attempt in a child process, so that an attempt that would stall a runtime (a matcher
that backtracks without end) fails its test with the reason instead of hanging the suite."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any

# Far beyond what a linear matcher needs for a megabyte (milliseconds), far below what a backtracking
# one needs (years): the guard only tells "answers" from "never answers"; nothing here times a runtime.
GUARD_SECONDS = 60


def answer_of(attempt: Callable[..., Any], *args: Any) -> Any:
    """What ``attempt(*args)`` returns, computed in a child process; fails when it never answers."""
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_run, args=(sender, attempt, args), daemon=True)
    child.start()
    sender.close()
    try:
        if not receiver.poll(GUARD_SECONDS):
            raise AssertionError(
                f"ReDoS: {attempt.__name__} gave no answer in {GUARD_SECONDS} s; the runtime would stall"
            )
        failed, answer = receiver.recv()
    finally:
        child.kill()
        child.join()
        receiver.close()
    if failed:
        raise AssertionError(f"{attempt.__name__} raised {answer}")
    return answer


def _run(sender: Any, attempt: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        sender.send((False, attempt(*args)))
    except Exception as error:  # the parent's assertion names it
        sender.send((True, f"{type(error).__name__}: {error}"))
