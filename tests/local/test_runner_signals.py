"""`federator run` stops on the first SIGINT/SIGTERM and hurries on the second; each signal also wakes the
supervisor, which otherwise waits for a group's switch or its next refresh."""

from __future__ import annotations

import signal
import threading

from federator.local.runner import stop_signals


def test_a_signal_stops_the_run_and_wakes_the_supervisor_and_a_second_one_hurries_it() -> None:
    wakeup, before = threading.Event(), signal.getsignal(signal.SIGINT)
    with stop_signals(wakeup) as (stop, hurry):
        signal.raise_signal(signal.SIGTERM)
        assert stop.is_set() and wakeup.is_set() and not hurry.is_set()
        wakeup.clear()
        signal.raise_signal(signal.SIGINT)
        assert hurry.is_set() and wakeup.is_set()
    assert signal.getsignal(signal.SIGINT) is before, "the previous handler is back"
