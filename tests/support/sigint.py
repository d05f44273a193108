"""SIGINT reaches the processes tests start. A run started in the background of a non-interactive shell
(``./dev test --full > log &``) begins with SIGINT ignored, and an ignored signal stays ignored in every
process started from it; the tests that stop a process as a user would, with Ctrl-C's SIGINT (the SDK
samples that receive until interrupted), then wait in vain for it to stop. The suite takes Python's own
handler back at its start, so that the processes it starts (xdist's workers, and theirs) begin with
SIGINT's default."""

from __future__ import annotations

import signal

import pytest


def restore_sigint() -> None:
    """Python's KeyboardInterrupt handler where SIGINT is ignored; any other handler is left as it is."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    restore_sigint()
