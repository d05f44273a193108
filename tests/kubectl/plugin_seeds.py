"""Objects as the operator leaves them: a FailoverGroup failed over to its secondary with a task following
it, a ServiceBusMirror with its generated task, and a task stalled on a missing Secret."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from plugin_helpers import create

from support.kube import KubeServer

NOW = "2026-11-26T12:00:00Z"


def recent(seconds_ago: float = 0) -> str:
    """A time as fresh as the operator writes it (a figure of days ago is stale, and shown so)."""
    return (datetime.now(UTC) - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


# Longer than any terminal: the plugin must print it whole.
LONG_MESSAGE = (
    "Secret orders-archive-conn not found in namespace default; "
    + " ".join(f"word{i}" for i in range(60))
    + " END-OF-MESSAGE"
)


def cond(type_: str, status: str, reason: str, message: str = "") -> dict[str, Any]:
    return {"type": type_, "status": status, "reason": reason, "message": message, "lastTransitionTime": NOW}


def ready(reason: str, message: str = "") -> list[dict[str, Any]]:
    return [
        cond("Ready", "True", reason, message),
        cond("Reconciling", "False", reason),
        cond("Stalled", "False", reason),
    ]


def stalled(reason: str, message: str) -> list[dict[str, Any]]:
    return [
        cond("Ready", "False", reason, message),
        cond("Reconciling", "False", reason),
        cond("Stalled", "True", reason, message),
    ]


def group_spec(**spec: Any) -> dict[str, Any]:
    return {
        "primaryMember": "weu",
        "members": [
            {
                "name": m,
                "endpoint": f"orders-{m}.servicebus.windows.net",
                "connection": {"secretRef": {"name": f"{m}-conn"}},
            }
            for m in ("weu", "neu")
        ],
        "probe": {"periodSeconds": 1, "timeoutSeconds": 3, "failureThreshold": 2},
        "failback": {"drainEntities": [{"queueName": "orders"}], "drainTimeoutSeconds": 300},
        **spec,
    }


def group(name: str = "orders", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "FailoverGroup",
        "metadata": {"name": name},
        "spec": group_spec(**spec),
    }


def following_task(name: str = "archive", group_name: str = "orders") -> dict[str, Any]:
    return {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ReplicationTask",
        "metadata": {"name": name},
        "spec": {
            "source": {
                "serviceBus": {
                    "connection": {"failoverGroupRef": {"name": group_name}},
                    "queueName": "orders",
                }
            },
            "targets": [
                {
                    "name": "archive",
                    "eventHub": {
                        "connection": {"secretRef": {"name": "archive-conn"}},
                        "eventHubName": "archive",
                    },
                }
            ],
        },
    }


def plain_task(name: str, source_secret: str = "weu-conn", target_secret: str = "neu-conn") -> dict[str, Any]:
    return {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ReplicationTask",
        "metadata": {"name": name},
        "spec": {
            "source": {
                "eventHub": {"connection": {"secretRef": {"name": source_secret}}, "eventHubName": "orders"}
            },
            "targets": [
                {
                    "name": "copy",
                    "eventHub": {
                        "connection": {"secretRef": {"name": target_secret}},
                        "eventHubName": "orders",
                    },
                }
            ],
        },
    }


def task_status(
    lag: float | None, replicated: int | None, conditions: list[dict[str, Any]], **extra: Any
) -> dict[str, Any]:
    status: dict[str, Any] = {"observedGeneration": 1, "conditions": conditions, **extra}
    if lag is not None:
        status.update(replicationLagSeconds=lag, eventsReplicated=replicated, lastBatchTime=recent())
    return status


def seed_topology(kube: KubeServer) -> None:
    create(
        kube,
        group(mode="automatic"),
        {
            "observedGeneration": 1,
            "conditions": [
                *ready("Active", "producers and consumers use member neu (failed over); endpoints published"),
                cond(
                    "FailedOver",
                    "True",
                    "OnSecondary",
                    "producers and consumers use neu, not the primary weu; to fail back, set "
                    "spec.activeMember to weu",
                ),
            ],
            "phase": "FailedOver",
            "producerMember": "neu",
            "consumerMember": "neu",
            "requestedMember": "",
            "probes": [
                {
                    "member": "weu",
                    "healthy": False,
                    "consecutiveFailures": 7,
                    "lastProbeTime": recent(),
                    "message": "connection refused (weu probe)",
                },
                {
                    "member": "neu",
                    "healthy": True,
                    "consecutiveFailures": 0,
                    "lastProbeTime": recent(),
                    "message": "",
                },
            ],
        },
    )
    create(
        kube,
        following_task(),
        task_status(
            12.5,
            4200,
            [
                *ready("Running", "the Spark application runs"),
                cond("SparkApplicationRunning", "True", "Running"),
            ],
            activeSourceMember="neu",
            sparkApplication={
                "apiVersion": "sparkoperator.k8s.io/v1beta2",
                "name": "archive",
                "state": "RUNNING",
            },
        ),
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "archive-driver",
            "labels": {"federator.io/replication-task": "archive", "spark-role": "driver"},
        },
        "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "federator"}]},
    }
    create(
        kube,
        pod,
        {
            "phase": "Running",
            "containerStatuses": [
                {"name": "spark-kubernetes-driver", "restartCount": 2, "state": {"running": {}}}
            ],
        },
    )
    mirror = {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ServiceBusMirror",
        "metadata": {"name": "billing"},
        "spec": {
            "pattern": "activePassive",
            "topicName": "invoices",
            "activePassive": {"primaryMember": "west", "timeToLiveSeconds": 120},
            "members": [
                {
                    "name": m,
                    "connection": {"secretRef": {"name": f"{m}-conn"}},
                    "management": {"dataPlane": {}},
                }
                for m in ("west", "east")
            ],
        },
    }
    create(
        kube,
        mirror,
        {
            "observedGeneration": 1,
            "conditions": [
                *ready("Mirroring"),
                cond("RulesProvisioned", "True", "Provisioned"),
                cond("TasksReady", "True", "PairsReady"),
            ],
            "members": [
                {
                    "name": "west",
                    "state": "Provisioned",
                    "entities": ["topics/invoices/subscriptions/repl-east"],
                },
                {"name": "east", "state": "Provisioned", "entities": []},
            ],
            "pairs": [
                {
                    "source": "west",
                    "target": "east",
                    "taskName": "billing-west-east",
                    "ready": "True",
                    "reason": "Running",
                }
            ],
        },
    )
    generated = plain_task("billing-west-east", "west-conn", "east-conn")
    generated["metadata"]["labels"] = {"federator.io/servicebusmirror": "billing"}
    create(kube, generated, task_status(0.8, 900, ready("Running")))
    create(kube, plain_task("broken"), task_status(None, None, stalled("SecretNotFound", LONG_MESSAGE)))
    create(kube, plain_task("slow", "neu-conn", "weu-conn"), task_status(95.0, 12, ready("Running")))
