"""Spark RPC authentication and encryption for the pods of a cluster launch.

Without `spark.authenticate`, anything that reaches a driver's RPC port (any pod of any tenant, with no
NetworkPolicy) can register as an executor and run code with the driver's ServiceAccount and Azure
credentials. Spark on Kubernetes would generate a secret itself, but hands it to each executor as the
environment variable `SPARK_AUTHENTICATE_SECRET` in the pod spec, readable by whoever may read pods in
the namespace. Here the secret comes from a Kubernetes Secret the installer provides in each namespace
(the chart creates it beside the Spark ServiceAccount), mounted as a file into driver and executors:
with `spark.authenticate.secret.executor.file` set, Spark puts no secret in any pod spec. The operator
never reads the Secret; the SparkApplication names it only.

The settings are written after the task's `runtime.sparkConf`, so no task can turn them off or point
Spark at another file, whatever the installer's pod policy allows."""

from __future__ import annotations

from typing import Any

SECRET_NAME = "federator-spark-rpc"
"""The Secret in each task namespace that holds the shared RPC secret (the chart's `spark.rpcSecret`)."""
SECRET_KEY = "secret"
VOLUME = "federator-spark-rpc"
MOUNT_DIR = "/etc/federator/spark-rpc"
SECRET_FILE = f"{MOUNT_DIR}/{SECRET_KEY}"
# Owner and group may read, no one else: the kubelet gives the file the pod's fsGroup.
FILE_MODE = 0o440


def rpc_spark_conf() -> dict[str, str]:
    """The Spark settings that turn authentication and AES encryption on for every RPC connection."""
    return {
        "spark.authenticate": "true",
        # Driver and executors read the same file; naming both keeps a task's own setting of either
        # from splitting them, and the executor's one keeps the secret out of the executor pod spec.
        "spark.authenticate.secret.file": SECRET_FILE,
        "spark.authenticate.secret.driver.file": SECRET_FILE,
        "spark.authenticate.secret.executor.file": SECRET_FILE,
        "spark.network.crypto.enabled": "true",
        # Spark's defaults keep old peers working: version 1 of the key exchange (no key derivation) and
        # AES/CTR (no integrity). All of an application's JVMs are one Spark version, so take what Spark's
        # security guide recommends: version 2, and authenticated encryption.
        "spark.network.crypto.authEngineVersion": "2",
        "spark.network.crypto.cipher": "AES/GCM/NoPadding",
        # No falling back to SASL DIGEST-MD5, which only old external shuffle services need.
        "spark.network.crypto.saslFallback": "false",
    }


def rpc_volume() -> dict[str, Any]:
    return {
        "name": VOLUME,
        "secret": {
            "secretName": SECRET_NAME,
            "items": [{"key": SECRET_KEY, "path": SECRET_KEY}],
            "defaultMode": FILE_MODE,
        },
    }


def rpc_volume_mount() -> dict[str, Any]:
    return {"name": VOLUME, "mountPath": MOUNT_DIR, "readOnly": True}
