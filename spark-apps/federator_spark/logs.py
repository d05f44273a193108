"""The app's log lines from every process Spark starts for it, not only the driver's.

Spark runs the sources, the write tasks and the sink's commit in Python processes of their own, whose
logging nobody configures: without a handler Python prints only warnings, bare. :func:`configure`, called
where those processes enter the app's code, gives the ``federator_spark`` loggers the driver's format and
level on the process's standard error, which Spark passes on (in local mode and ``local-cluster``, to the
application's own output; in a cluster, to the executor pod's log). It does nothing in a process whose
logging is configured already (the driver's main process, a test run).
"""

from __future__ import annotations

import logging
import os
import sys

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_WORKER_FORMAT = "%(asctime)s %(levelname)s %(name)s [pid %(process)d]: %(message)s"
_configured = False


def configure() -> None:
    global _configured
    if _configured:
        return
    _configured = True
    if logging.getLogger().handlers:
        return  # the process configured its logging itself
    handler = logging.StreamHandler(sys.__stderr__)
    handler.setFormatter(logging.Formatter(_WORKER_FORMAT))
    logger = logging.getLogger("federator_spark")
    logger.addHandler(handler)
    logger.setLevel(os.environ.get("FEDERATOR_LOG_LEVEL", "INFO"))
