"""One field of a stored status, read the way its status model reads it (status/results.py `status_field`):
what a pass asks of a status it does not change — the generation it was written for, whether it names a
Spark application — without validating the rest of it (its conditions, its figures) every interval."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from federator.status.results import status_field
from federator_contract.api.base import ObjectStatus
from federator_contract.api.replicationtask import ReplicationTaskStatus, SparkApplicationStatus

APP = {"apiVersion": "sparkoperator.k8s.io/v1beta2", "name": "orders", "state": "RUNNING"}


def test_a_field_is_read_by_its_wire_name_as_the_model_reads_it() -> None:
    stored = ReplicationTaskStatus.model_validate({"observedGeneration": 3, "sparkApplication": APP})
    wire = stored.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert status_field(ObjectStatus, wire, "observed_generation") == 3
    found = status_field(ReplicationTaskStatus, wire, "spark_application")
    assert isinstance(found, SparkApplicationStatus) and found == stored.spark_application


def test_an_absent_field_or_status_reads_as_the_model_default() -> None:
    assert status_field(ObjectStatus, None, "observed_generation") is None
    assert status_field(ReplicationTaskStatus, {"observedGeneration": 1}, "spark_application") is None


def test_only_the_field_asked_for_is_validated() -> None:
    """A condition another controller wrote in a shape this version does not know does not stop the
    generation check; a bad value of the field itself is refused, naming it."""
    odd = {"observedGeneration": 2, "conditions": [{"type": "Ready", "status": "Maybe"}]}
    with pytest.raises(ValidationError):
        ObjectStatus.model_validate(odd)
    assert status_field(ObjectStatus, odd, "observed_generation") == 2
    with pytest.raises(ValidationError, match="observedGeneration"):
        status_field(ObjectStatus, {"observedGeneration": "two"}, "observed_generation")
