"""The shared driver's JVM, when the host starts it itself (local mode, benchmarks), runs with the app's
Java options: the quick compiler only and the serial collector (``federator_contract.sparkconf``). The
host reads the submitted scheduler mode before it builds its session, so the JVM is up by then; options
given only to the session builder would come too late. Settings local mode starts it with still count."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.jvm]

READ = """
from pyspark import SparkContext
from federator_spark.pools import submitted_scheduler_mode
submitted_scheduler_mode()
jvm = SparkContext._jvm
bean_class = jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(bean_class)
print(" ".join(str(bean.getVMOption(name).getValue()) for name in ("TieredStopAtLevel", "UseSerialGC")))
print(SparkContext._jvm.java.lang.System.getProperty("java.io.tmpdir"))
"""


def host_jvm(submit_args: str) -> list[str]:
    """What the host's JVM says, started with ``submit_args`` as local mode's PYSPARK_SUBMIT_ARGS."""
    environment = {**os.environ, "PYSPARK_SUBMIT_ARGS": submit_args}
    done = subprocess.run(
        [sys.executable, "-c", READ], env=environment, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-2:]


def test_the_hosts_own_jvm_compiles_with_the_quick_compiler_and_collects_with_the_serial_collector(
    tmp_path: object,
) -> None:
    options, temporary = host_jvm(
        f"--conf spark.driver.extraJavaOptions=-Djava.io.tmpdir={tmp_path} pyspark-shell"
    )

    assert options == "1 true"
    assert temporary == str(tmp_path)  # local mode's own Java options are added to the app's
