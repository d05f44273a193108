"""An object is checked as the API server stores it: nulls in fields that are neither nullable nor
defaulted are pruned, then defaults applied; an optional block left empty is no block at all."""

from __future__ import annotations

import pytest
from validation_helpers import group, problems, task

from federator.validation import check_object


@pytest.mark.parametrize(
    "obj",
    [
        task(runtime=None),
        task(editors=None),
        task(provenance=None, delivery=None),
        group(failback=None, publishing=None),
    ],
    ids=["runtime", "editors", "provenance-delivery", "failback-publishing"],
)
def test_an_empty_optional_block_is_admitted_as_its_default(obj: dict) -> None:
    assert problems(obj) == []


def test_an_empty_probe_block_is_defaulted_before_the_rules_that_need_its_entity() -> None:
    spoiled = group(probe=None)
    assert problems(spoiled) == [
        "spec.probe: set probe.entity (or failback.drainEntities): the entity the health probe reads"
    ]
    assert problems(group(probe=None, failback={"drainEntities": [{"queueName": "q"}]})) == []


def test_the_admitted_object_carries_the_defaults_the_operator_reads() -> None:
    verdict = check_object(task(runtime=None, editors=None))
    assert verdict.admitted is not None
    assert verdict.admitted["spec"]["editors"] == []
    assert verdict.admitted["spec"]["runtime"]["driver"] == {"cores": 1, "memory": "1g"}


def test_a_list_whose_items_are_all_commented_out_is_a_missing_field_not_a_crash() -> None:
    assert problems(group(members=None)) == ["spec.members: required field is missing"]
    assert problems(task(targets=None)) == ["spec.targets: required field is missing"]


def test_a_null_list_item_is_not_pruned_and_is_refused() -> None:
    assert problems(task(editors=[None])) == ["spec.editors[0]: must be of type object (got NoneType None)"]
