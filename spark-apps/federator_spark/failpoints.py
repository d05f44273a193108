"""Crash points for the crash tests: with ``FEDERATOR_FAILPOINT=<point>:<batchId>`` in the app's
environment, the process that reaches ``<point>`` in batch ``<batchId>`` kills the app's whole process
group (driver, JVM, Python workers) with SIGKILL, as a power cut would. Without the variable (always, in
production) :func:`reached` does nothing.

The points are the steps of the write protocol (``docs/replication.md``, "Delivery"):

* ``intent-written``: a write task made its intent durable, before it sent anything;
* ``partition-published``: a write task's targets accepted one source partition's events (a task with
  several partitions has more to send);
* ``recorded``: the driver wrote the batch's commit record, before Spark's commit log.
"""

from __future__ import annotations

import os
import signal

VARIABLE = "FEDERATOR_FAILPOINT"
POINTS = ("intent-written", "partition-published", "recorded")


def reached(point: str, batch_id: int) -> None:
    wanted = os.environ.get(VARIABLE)
    if not wanted or wanted != f"{point}:{batch_id}":
        return
    os.killpg(os.getpgrp(), signal.SIGKILL)
