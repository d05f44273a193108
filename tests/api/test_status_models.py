"""The status models read what a newer operator wrote: fields they do not know are kept, at every level, and
written back unchanged; a spec still refuses them."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from federator_contract.api.failovergroup import FailoverGroupSpec, FailoverGroupStatus
from federator_contract.api.replicationtask import ReplicationTaskStatus
from federator_contract.api.servicebusmirror import ServiceBusMirrorStatus

CONDITION = {
    "type": "Ready",
    "status": "True",
    "reason": "Active",
    "message": "",
    "observedGeneration": 3,
    "lastTransitionTime": "2026-11-01T12:00:00Z",
    "severity": "low",  # a field metav1.Condition may gain
}

NEWER_GROUP: dict[str, Any] = {
    "observedGeneration": 3,
    "conditions": [CONDITION],
    "phase": "FailedOver",
    "producerMember": "neu",
    "consumerMember": "neu",
    "producerSince": "2026-11-01T12:00:00Z",
    "probes": [{"member": "weu", "healthy": False, "consecutiveFailures": 3, "probeLatencyMs": 12}],
    "lastSwitchLoss": {"member": "neu", "time": "2026-11-01T12:00:00Z", "eventsBehind": 4, "bytesBehind": 9},
    "switchHistory": [{"member": "neu", "at": "2026-11-01T12:00:00Z"}],
}

NEWER_TASK: dict[str, Any] = {
    "conditions": [CONDITION],
    "sparkApplication": {"apiVersion": "sparkoperator.k8s.io/v1beta2", "name": "t", "driverPod": "t-driver"},
    "lag": {"eventsBehind": 3, "partitions": [{"partition": "0", "eventsBehind": 3, "bytesBehind": 70}]},
    "checkpointTranslation": {"consumerGroups": [{"consumerGroup": "$Default", "skipped": 1}]},
    "throughput": 12.5,
}

NEWER_MIRROR: dict[str, Any] = {
    "members": [{"name": "a", "state": "Provisioned", "sku": "Premium"}],
    "pairs": [{"source": "a", "target": "b", "taskName": "m-a-b", "lagSeconds": 1.0}],
    "rulesVersion": 2,
}


@pytest.mark.parametrize(
    ("model", "written"),
    [
        (FailoverGroupStatus, NEWER_GROUP),
        (ReplicationTaskStatus, NEWER_TASK),
        (ServiceBusMirrorStatus, NEWER_MIRROR),
    ],
)
def test_a_status_a_newer_operator_wrote_parses_and_is_written_back_whole(
    model: type[FailoverGroupStatus | ReplicationTaskStatus | ServiceBusMirrorStatus], written: dict[str, Any]
) -> None:
    parsed = model.model_validate(written)
    assert parsed.model_dump(mode="json", by_alias=True, exclude_unset=True) == written


def test_known_fields_of_a_newer_status_are_typed_and_unknown_ones_kept_beside_them() -> None:
    parsed = FailoverGroupStatus.model_validate(NEWER_GROUP)
    assert (parsed.producer_member, parsed.probes[0].consecutive_failures) == ("neu", 3)
    assert parsed.last_switch_loss is not None and parsed.last_switch_loss.events_behind == 4
    assert parsed.model_extra == {"switchHistory": [{"member": "neu", "at": "2026-11-01T12:00:00Z"}]}
    assert parsed.probes[0].model_extra == {"probeLatencyMs": 12}


def test_a_known_field_with_a_wrong_value_is_still_refused() -> None:
    with pytest.raises(ValidationError, match="consecutiveFailures"):
        FailoverGroupStatus.model_validate(
            {"probes": [{"member": "weu", "healthy": True, "consecutiveFailures": -1}]}
        )


def test_a_spec_still_refuses_a_field_it_does_not_know() -> None:
    spec = {
        "primaryMember": "a",
        "members": [
            {"name": m, "endpoint": f"{m}.servicebus.windows.net", "connection": {"secretRef": {"name": m}}}
            for m in ("a", "b")
        ],
        "probe": {"entity": {"queueName": "q"}},
        "colour": "blue",
    }
    with pytest.raises(ValidationError, match="colour"):
        FailoverGroupSpec.model_validate(spec)
