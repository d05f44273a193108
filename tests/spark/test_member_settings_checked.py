"""A ReplicationApplication's settings for its members (``spark.federator.member.*`` in `sparkConf`: the
bound on a member's batches and its pace) are checked when the application is applied, at the field's
path and naming the setting, as the shared driver would read them; a misspelt member setting is refused
rather than ignored. The API reference states the defaults the driver uses."""

from __future__ import annotations

from typing import Any

import pytest

from federator.validation import check_object
from federator_contract.api.replicationapplication import (
    ReplicationApplicationSpec,
    SparkApplicationSettings,
)
from federator_spark.scheduling import (
    MEMBER_EVENTS_PER_TRIGGER,
    MEMBER_EVENTS_SETTING,
    MEMBER_TRIGGER_MS,
    MEMBER_TRIGGER_SETTING,
)


def problems(spark_conf: dict[str, str]) -> list[tuple[str, str]]:
    application: dict[str, Any] = {
        "apiVersion": "federator.io/v1alpha1",
        "kind": "ReplicationApplication",
        "metadata": {"name": "shared"},
        "spec": {"sparkConf": spark_conf},
    }
    return [(problem.path, problem.message) for problem in check_object(application).problems]


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        (MEMBER_TRIGGER_SETTING, "250ms", "a whole number of milliseconds (0: none), got '250ms'"),
        (MEMBER_TRIGGER_SETTING, "-1", "0 (none) or more milliseconds, got -1"),
        (MEMBER_EVENTS_SETTING, "lots", "a whole number of events (0: no bound), got 'lots'"),
    ],
)
def test_a_member_setting_that_is_not_a_count_is_refused_at_its_field_naming_it(
    setting: str, value: str, message: str
) -> None:
    [(path, said)] = problems({setting: value})

    assert path == "spec.sparkConf"
    assert f"{setting}: {message}" in said


def test_a_misspelt_member_setting_is_refused_with_the_settings_there_are() -> None:
    [(path, said)] = problems({"spark.federator.member.triggerInterval": "250"})

    assert path == "spec.sparkConf"
    assert (
        "'spark.federator.member.triggerInterval' is not a setting of a shared application's members" in said
    )
    assert MEMBER_TRIGGER_SETTING in said and MEMBER_EVENTS_SETTING in said


def test_member_settings_that_are_counts_pass_the_model() -> None:
    conf = {MEMBER_TRIGGER_SETTING: "250", MEMBER_EVENTS_SETTING: "0"}

    assert ReplicationApplicationSpec.model_validate({"sparkConf": conf}).spark_conf == conf


def test_the_api_reference_states_the_defaults_the_driver_uses() -> None:
    described = str(SparkApplicationSettings.model_fields["spark_conf"].description)

    assert f'(default `"{MEMBER_EVENTS_PER_TRIGGER}"`)' in described
    assert f'(default `"{MEMBER_TRIGGER_MS}"`)' in described
