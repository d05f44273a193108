"""The installer sets how long a ReplicationTask source's probe answer holds (`sourceProbe.intervalSeconds`);
the chart hands it to the operator as `FEDERATOR_SOURCE_PROBE_INTERVAL_SECONDS`, and the operator's
settings read from that environment are the ones its source probes use."""

from __future__ import annotations

from typing import Any

import pytest
from chart_support import CHART, RELEASE, Helm, Render, one

from federator.settings import OperatorSettings


def installed_settings(render: Render, values: dict[str, Any] | None = None) -> OperatorSettings:
    """The settings the operator reads from the environment the chart gives its container."""
    [container] = one(render(values), "Deployment")["spec"]["template"]["spec"]["containers"]
    return OperatorSettings.from_env({e["name"]: e["value"] for e in container["env"] if "value" in e})


def test_by_default_a_probe_answer_holds_a_minute(render: Render) -> None:
    assert installed_settings(render).source_probe_interval_seconds == 60


@pytest.mark.parametrize("seconds", [300, 0])
def test_the_installers_interval_reaches_the_operator(render: Render, seconds: int) -> None:
    settings = installed_settings(render, {"sourceProbe": {"intervalSeconds": seconds}})
    assert settings.source_probe_interval_seconds == seconds


@pytest.mark.parametrize("seconds", [-1, "60s", 1.5])
def test_an_interval_that_is_not_a_whole_number_of_seconds_is_refused_by_the_schema(
    chart_helm: Helm, values_file: Any, seconds: object
) -> None:
    path = str(values_file({"sourceProbe": {"intervalSeconds": seconds}}))
    template = chart_helm("template", RELEASE, str(CHART), "--values", path, check=False)
    assert template.returncode != 0, f"{seconds!r}: helm template accepted it"
    assert "values don't meet the specifications of the schema" in template.stderr, template.stderr
