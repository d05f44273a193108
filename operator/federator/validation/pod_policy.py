"""The installer's pod policy: which images, ServiceAccounts and Spark settings a ReplicationTask (or the
ReplicationApplication its tasks share) may give the pods the operator creates for it.

A user who may create ReplicationTasks but not pods must not get pods of their own making through one:
an image of their choice, another workload's ServiceAccount (its RBAC, its Azure identity), or Spark
settings that mount host paths, preload libraries, add environment variables or re-authenticate the
driver (`spark.kubernetes.*`, `spark.executorEnv.*`, ...). The chart's `podPolicy` values set it
(``FEDERATOR_ALLOWED_*``); the operator refuses what it does not allow (Stalled, with the reason naming
the rule) and `federator validate` reports the same, at the field's path.

- Images: the operator's Spark image's repository (any tag or digest), plus the installer's patterns:
  ``registry/repo`` (any tag or digest of it), ``registry/repo:tag``, ``registry/repo@sha256:...``, or a
  glob such as ``registry.example/team-*/*``.
- ServiceAccounts: the operator's Spark ServiceAccount, plus the installer's names (globs); ``*`` by
  default, as a single-team install names its own for workload identity: a multi-tenant install lists
  the ones its tenants may use.
- Spark settings: the keys of :data:`ALLOWED_SPARK_CONF` (tuning that stays inside the pods), plus the
  installer's keys (globs). Anything else, whatever its prefix, is refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase

from federator.reasons import IMAGE_NOT_ALLOWED, SERVICE_ACCOUNT_NOT_ALLOWED, SPARK_CONF_NOT_ALLOWED
from federator.settings import OperatorSettings
from federator_contract.api.replicationapplication import SparkApplicationSettings

# Settings that tune Spark inside its own pods: memory, SQL and streaming, Python workers, scheduling,
# timeouts, the JVM's options. None of them names a volume, an environment variable, an image, a
# ServiceAccount or another Kubernetes object.
ALLOWED_SPARK_CONF: tuple[str, ...] = (
    "spark.sql.*",
    "spark.memory.*",
    "spark.python.worker.*",
    "spark.driver.memory",
    "spark.driver.cores",
    "spark.driver.memoryOverhead",
    "spark.executor.memory",
    "spark.executor.cores",
    "spark.executor.instances",
    "spark.executor.memoryOverhead",
    "spark.driver.defaultJavaOptions",
    "spark.executor.defaultJavaOptions",
    "spark.driver.extraJavaOptions",
    "spark.executor.extraJavaOptions",
    "spark.default.parallelism",
    "spark.network.timeout",
    "spark.scheduler.mode",
    "spark.task.maxFailures",
    "spark.locality.wait",
    "spark.speculation",
    "spark.federator.member.*",  # how a shared driver bounds and paces its members (validated by the model)
)


@dataclass(frozen=True)
class PolicyFinding:
    path: tuple[str | int, ...]  # under `spec`
    reason: str
    message: str


@dataclass(frozen=True)
class PodPolicy:
    images: tuple[str, ...]
    service_accounts: tuple[str, ...]
    spark_conf: tuple[str, ...]

    @classmethod
    def from_settings(cls, settings: OperatorSettings) -> PodPolicy:
        return cls(
            images=(_repository(settings.spark_image), *_listed(settings.allowed_images)),
            service_accounts=(settings.spark_service_account, *_listed(settings.allowed_service_accounts)),
            spark_conf=(*ALLOWED_SPARK_CONF, *_listed(settings.allowed_spark_conf)),
        )

    def findings(
        self, runtime: SparkApplicationSettings, at: tuple[str | int, ...] = ("runtime",)
    ) -> list[PolicyFinding]:
        """What ``runtime`` (a task's runtime, or an application's spec, at path ``at`` under `spec`) asks
        for that the policy does not allow."""
        return [dataclasses.replace(f, path=(*at, *f.path)) for f in self._findings(runtime)]

    def _findings(self, runtime: SparkApplicationSettings) -> Iterator[PolicyFinding]:
        if runtime.image is not None and not any(_image_matches(runtime.image, p) for p in self.images):
            yield PolicyFinding(
                ("image",),
                IMAGE_NOT_ALLOWED,
                f"image {runtime.image!r} is not allowed by the installer's pod policy (podPolicy.images: "
                f"{', '.join(self.images)})",
            )
        account = runtime.service_account_name
        if account is not None and not any(fnmatchcase(account, p) for p in self.service_accounts):
            yield PolicyFinding(
                ("serviceAccountName",),
                SERVICE_ACCOUNT_NOT_ALLOWED,
                f"ServiceAccount {account!r} is not allowed by the installer's pod policy "
                f"(podPolicy.serviceAccounts: {', '.join(self.service_accounts)})",
            )
        for key in runtime.spark_conf or {}:
            if not any(fnmatchcase(key, p) for p in self.spark_conf):
                yield PolicyFinding(
                    ("sparkConf", key),
                    SPARK_CONF_NOT_ALLOWED,
                    f"Spark setting {key!r} is not allowed by the installer's pod policy: a task may tune "
                    "Spark inside its pods (spark.sql.*, spark.memory.*, ...), not set volumes, environment "
                    "variables, images or Kubernetes settings (podPolicy.sparkConf adds keys)",
                )


def _listed(value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


def _repository(image: str) -> str:
    """``registry/repo`` of an image reference, without its tag or digest."""
    name = image.split("@", 1)[0]
    slash = name.rfind("/")
    colon = name.rfind(":")
    return name[:colon] if colon > slash else name


def _image_matches(image: str, pattern: str) -> bool:
    if fnmatchcase(image, pattern):
        return True
    # A repository pattern (no tag, no digest) allows every tag and digest of it.
    tagged = "@" in pattern or pattern.rfind(":") > pattern.rfind("/")
    return not tagged and fnmatchcase(_repository(image), pattern)
