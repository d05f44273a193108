"""ReplicationApplication in local mode: the application is registered when the manifests are planned, and
the tasks naming it in `spec.runtime.applicationRef` (of their own namespace) run as queries of one host
(`python -m federator_spark.host`, local/apps.py) with the application's Spark settings, as its driver
runs them in a cluster. Its launcher, image, ServiceAccount and resources do not apply on a laptop: every
local application runs with `--master local[2]`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from federator import reasons
from federator.local.model import Note, PlanContext, TaskManifest
from federator.planning.application import scheduling_conf
from federator.planning.errors import PlanningError
from federator.planning.task import app_spark_conf
from federator.validation.documents import Document
from federator_contract.api.replicationapplication import ReplicationApplicationSpec
from federator_contract.api.replicationtask import ReplicationTaskSpec

KIND = "ReplicationApplication"


def expand_application(doc: Document, context: PlanContext) -> list[TaskManifest]:
    """An application runs no task itself: it is registered for the tasks that name it."""
    meta = doc.body["metadata"]
    key = f"{meta.get('namespace') or 'default'}/{meta['name']}"
    if key in context.plan.applications:
        message = f"{KIND} {key} is defined twice; the first definition runs"
        context.plan.notes.append(Note(doc.label, message, failed=True))
        return []
    context.plan.applications[key] = ReplicationApplicationSpec.model_validate(doc.body["spec"])
    return []


def is_application(doc: Document) -> bool:
    return isinstance(doc.body, dict) and doc.body.get("kind") == KIND


@dataclass(frozen=True)
class Membership:
    """The application a task runs in (`namespace/name`) and the Spark settings it runs with."""

    application: str
    spark_conf: dict[str, str]


def membership(
    spec: ReplicationTaskSpec, namespace: str, applications: Mapping[str, ReplicationApplicationSpec]
) -> Membership | None:
    """The application a task of ``namespace`` names in `spec.runtime.applicationRef`; None for a task of
    its own. Raises PlanningError when that application is not among the manifest files."""
    ref = spec.runtime.application_ref
    if ref is None:
        return None
    key = f"{namespace}/{ref.name}"
    application = applications.get(key)
    if application is None:
        raise PlanningError(
            reasons.APPLICATION_NOT_FOUND,
            f"spec.runtime.applicationRef.name: {KIND} {key} is not among the manifest files: run its "
            "manifest with the task, or remove applicationRef to run the task in a Spark application of "
            "its own",
        )
    return Membership(key, app_spark_conf(application.spark_conf, scheduling_conf(application)))
