"""A tenant points its task's checkpoint at a path of its choosing. In a cluster no Spark pod mounts a
checkpoint URI: positions would land on the container's own file system (lost at the next restart, the
task then replaying or skipping what it had), so the operator refuses it (Stalled CheckpointNotMounted);
only a claim is mounted."""

from __future__ import annotations

import pytest
from tenant_manifests import NAMESPACE, replication_task

from federator import reasons
from federator.planning.errors import PlanningError
from federator.planning.task import plan_replication_task
from federator.settings import OperatorSettings
from federator_contract.api.replicationtask import ReplicationTaskSpec


@pytest.mark.parametrize(
    "uri", ["file:///tmp/orders", "file:///opt/spark/work-dir/orders", "file:///etc/orders"]
)
def test_a_checkpoint_uri_no_pod_mounts_is_refused_in_a_cluster(uri: str) -> None:
    spec = ReplicationTaskSpec.model_validate(replication_task(runtime={"checkpoint": {"uri": uri}})["spec"])
    with pytest.raises(PlanningError) as refused:
        plan_replication_task(name="orders", namespace=NAMESPACE, spec=spec, settings=OperatorSettings())
    assert refused.value.reason == reasons.CHECKPOINT_NOT_MOUNTED
    assert "persistentVolumeClaim" in refused.value.message
