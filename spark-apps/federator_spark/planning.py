"""Planning a task on the driver: its write plan (targets, routing, editors, following), checked as
`federator validate` and the operator check it, and the connection each of its endpoints has. The task's
API models stay here; what reaches the executors is the plan (``plan``)."""

from __future__ import annotations

from federator_contract.api.base import EndpointConnection
from federator_contract.api.replicationtask import Endpoint
from federator_contract.checkpoints import CheckpointLayout
from federator_contract.checks import startup_findings
from federator_contract.names import UNROUTED
from federator_contract.taskconfig import TaskConfig, TaskConfigError
from federator_spark.config import checkpoint_layout
from federator_spark.connections import Connection
from federator_spark.editors.building import build_chain
from federator_spark.following import FollowPlan
from federator_spark.plan import DEAD_LETTER, TargetPlan, WritePlan
from federator_spark.provenance import LoopSettings, ProvenanceSettings
from federator_spark.routing import Router


def _target(name: str, endpoint: Endpoint, config: TaskConfig) -> TargetPlan:
    stamped = dict(endpoint.set_properties or {})
    if endpoint.event_hub is not None:
        hub = endpoint.event_hub
        connection = connection_for(config, hub.connection)
        return TargetPlan(name, "eventHub", connection, hub.event_hub_name, set_properties=stamped)
    if endpoint.service_bus is not None:
        bus = endpoint.service_bus
        entity = bus.queue_name or bus.topic_name
        assert entity is not None
        return TargetPlan(
            name,
            "serviceBus",
            connection_for(config, bus.connection),
            entity,
            bus.topic_name is not None,
            set_properties=stamped,
        )
    assert endpoint.postgres is not None
    table = endpoint.postgres
    return TargetPlan(
        name,
        "postgres",
        Connection(connection_string_env=config.secret_env_for(table.connection_secret_ref)),
        table.table,
        mode=table.mode,
        set_properties=stamped,
    )


def plan_from_task(config: TaskConfig, layout: CheckpointLayout | None = None) -> WritePlan:
    """``layout``: the task's paths, when the caller has them already (default: the config's)."""
    spec = config.spec
    # The checks `federator validate` and the operator run too: a spec they pass starts here.
    findings = startup_findings(spec)
    if findings:
        raise TaskConfigError("; ".join(str(f) for f in findings))
    targets = {t.name: _target(t.name, t, config) for t in spec.targets}
    if spec.unrouted is not None:
        targets[UNROUTED] = _target(UNROUTED, spec.unrouted, config)
    dead_letter = _target(DEAD_LETTER, spec.dead_letter, config) if spec.dead_letter else None
    provenance = spec.provenance
    loop = spec.loop_prevention
    layout = layout or checkpoint_layout(config)
    return WritePlan(
        task=config.name,
        namespace=config.namespace,
        targets=targets,
        router=Router.build({t.name: t.condition for t in spec.targets}, spec.unrouted is not None),
        editors=build_chain(spec.editors, config),
        dead_letter=dead_letter,
        provenance=ProvenanceSettings(
            provenance.enabled,
            provenance.enqueue_time_property,
            provenance.sequence_property,
            provenance.offset_property,
        ),
        loop=LoopSettings(loop.marker_property, loop.forward_replicated) if loop else None,
        effectively_once=spec.delivery.effectively_once,
        state_dir=str(layout.state_dir),
        status_file=str(layout.status_file),  # the task's, not the member's: counts go on across a switch
        following=follow_plan(config, layout),
    )


def connection_for(config: TaskConfig, endpoint: EndpointConnection) -> Connection:
    """How executors reach ``endpoint``'s namespace."""
    if endpoint.secret_ref is not None:
        return Connection(connection_string_env=config.secret_env_for(endpoint.secret_ref))
    if endpoint.workload_identity is not None:
        identity = endpoint.workload_identity
        return Connection(
            fully_qualified_namespace=identity.fully_qualified_namespace, client_id=identity.client_id
        )
    if endpoint.emulator is not None:
        path = config.emulator_connection_files.get(endpoint.emulator.namespace)
        if path is None:
            raise TaskConfigError(
                f"emulatorConnectionFiles has no connection for emulator namespace "
                f"{endpoint.emulator.namespace!r} (emulator connections exist in local mode only)"
            )
        return Connection(connection_string_file=path)
    raise TaskConfigError(
        "a failoverGroupRef connection reaches the app unresolved: the operator writes the followed "
        "member's connection into the task config"
    )


def follow_plan(config: TaskConfig, layout: CheckpointLayout) -> FollowPlan | None:
    """What the driver and the write tasks need to follow the task's FailoverGroup (None: no group)."""
    following = config.following
    if following is None:
        return None
    spec = config.spec
    by_position = spec.source.event_hub is not None
    return FollowPlan(
        member=following.member,
        skew_seconds=following.skew_seconds,
        by_position=by_position,
        covers_all_partitions=by_position and spec.runtime.max_events_per_trigger is None,
        layout=layout,
    )
