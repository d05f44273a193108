"""Spark launchers: one module per Spark operator, each rendering a SparkAppPlan into its resource."""

from __future__ import annotations

from typing import Any, Protocol

from federator.planning.launchers import apache, kubeflow
from federator.planning.task import SparkAppPlan
from federator.settings import Launcher


class LauncherModule(Protocol):
    API_VERSION: str
    KIND: str
    PLURAL: str

    def render(self, plan: SparkAppPlan) -> dict[str, Any]: ...


LAUNCHERS: dict[Launcher, LauncherModule] = {"kubeflow": kubeflow, "apache": apache}


def render_spark_application(launcher: Launcher, plan: SparkAppPlan) -> dict[str, Any]:
    return LAUNCHERS[launcher].render(plan)
