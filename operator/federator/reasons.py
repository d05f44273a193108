"""Condition reasons: single CamelCase words that programs match on. Every reason a controller sets is
listed here under the condition it explains, and documented (docs/status.md, docs/troubleshooting.md;
a test keeps the docs complete)."""

from __future__ import annotations

# Ready=True
RUNNING = "Running"

# Reconciling=True: progress without anyone's help.
SPARK_APPLICATION_PENDING = "SparkApplicationPending"
SPARK_APPLICATION_RESTARTING = "SparkApplicationRestarting"
SPARK_APPLICATION_STOPPED = "SparkApplicationStopped"
SPARK_APPLICATION_STATE_UNKNOWN = "SparkApplicationStateUnknown"

# Stalled=True: nothing changes until a human acts.
INVALID_SPEC = "InvalidSpec"
EMULATOR_ONLY_IN_LOCAL_MODE = "EmulatorOnlyInLocalMode"
FAILOVER_GROUP_FOLLOWING_NOT_AVAILABLE = "FailoverGroupFollowingNotAvailable"
SECRET_NOT_FOUND = "SecretNotFound"
SECRET_KEY_NOT_FOUND = "SecretKeyNotFound"
LAUNCHER_NOT_INSTALLED = "LauncherNotInstalled"
SPARK_APPLICATION_FAILED = "SparkApplicationFailed"

BY_CONDITION: dict[str, tuple[str, ...]] = {
    "Ready": (RUNNING,),
    "Reconciling": (
        SPARK_APPLICATION_PENDING,
        SPARK_APPLICATION_RESTARTING,
        SPARK_APPLICATION_STOPPED,
        SPARK_APPLICATION_STATE_UNKNOWN,
    ),
    "Stalled": (
        INVALID_SPEC,
        EMULATOR_ONLY_IN_LOCAL_MODE,
        FAILOVER_GROUP_FOLLOWING_NOT_AVAILABLE,
        SECRET_NOT_FOUND,
        SECRET_KEY_NOT_FOUND,
        LAUNCHER_NOT_INSTALLED,
        SPARK_APPLICATION_FAILED,
    ),
}
