"""A JVM that PySpark starts for the app (benchmarks, tests, local mode's app processes) runs with the
contract's Java options: Spark adds ``spark.driver.defaultJavaOptions`` to the command it starts."""

from __future__ import annotations

from typing import Any

from federator_contract.sparkconf import JAVA_OPTIONS, JIT_OPTIONS


def vm_option(spark: Any, name: str) -> str:
    """The value a HotSpot option has in the session's JVM (not merely what was asked for)."""
    jvm = spark.sparkContext._jvm
    bean_class = jvm.java.lang.Class.forName("com.sun.management.HotSpotDiagnosticMXBean")
    bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(bean_class)
    return str(bean.getVMOption(name).getValue())


def test_the_sessions_jvm_compiles_with_the_quick_compiler_only(spark: Any) -> None:
    assert JIT_OPTIONS == "-XX:TieredStopAtLevel=1"
    assert vm_option(spark, "TieredStopAtLevel") == "1"


def test_the_sessions_jvm_keeps_a_compact_heap_with_the_serial_collector(spark: Any) -> None:
    assert JAVA_OPTIONS.endswith("-XX:+UseSerialGC -Xms32m")
    assert vm_option(spark, "UseSerialGC") == "true"
    assert vm_option(spark, "InitialHeapSize") == str(32 * 1024 * 1024)
