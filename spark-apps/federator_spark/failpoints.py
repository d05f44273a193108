"""Crash points for the crash tests: with ``FEDERATOR_FAILPOINT=<point>:<batchId>`` in the app's
environment (the app started as the leader of a session of its own), the process that reaches
``<point>`` in batch ``<batchId>`` kills the whole app (driver, JVM, Python workers) with SIGKILL, as a
power cut would. Without the variable (always, in production) :func:`reached` does nothing.

The points are the steps of the write protocol (``docs/replication.md``, "Delivery"):

* ``intent-written``: a write task made its intent durable, before it sent anything;
* ``partition-published``: a write task's targets accepted one source partition's events (a task with
  several partitions has more to send);
* ``recorded``: the driver wrote the batch's commit record (with its counts), before the status file;
* ``counted``: the driver folded the batch into the status file, before Spark's commit log.
"""

from __future__ import annotations

import os
import signal

VARIABLE = "FEDERATOR_FAILPOINT"
POINTS = ("intent-written", "partition-published", "recorded", "counted")


def reached(point: str, batch_id: int) -> None:
    wanted = os.environ.get(VARIABLE)
    if not wanted or wanted != f"{point}:{batch_id}":
        return
    # The leader's process group (driver, JVM), then this one: PySpark's daemon puts itself and the workers
    # it forks in a group of their own, within the leader's session.
    os.killpg(os.getsid(0), signal.SIGKILL)
    os.killpg(os.getpgrp(), signal.SIGKILL)
