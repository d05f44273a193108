"""The translation plan of a task: which consumer groups, which hosts and hubs their checkpoints name,
where the checkpoint stores are (``spec.checkpointTranslation``, with the connections of the task config)."""

from __future__ import annotations

from federator_contract.api.translation import CheckpointStore
from federator_contract.checkpoints import CheckpointLayout
from federator_contract.driverstatus import TRANSLATION_FILE
from federator_contract.taskconfig import TaskConfig, TaskConfigError
from federator_spark.planning import connection_for
from federator_spark.translation.layout import ConsumerGroupRef
from federator_spark.translation.store import BlobLocation
from federator_spark.translation.translator import TranslationPlan


def translation_plan(config: TaskConfig, layout: CheckpointLayout) -> TranslationPlan | None:
    """The index under the query's checkpoint, the report beside the task's status."""
    spec = config.spec
    translation = spec.checkpoint_translation
    if translation is None:
        return None
    # The spec's own rules (a CEL rule and the model's validator) require an event hub source and one
    # event hub target to translate to.
    source = spec.source.event_hub
    hubs = [
        t.event_hub
        for t in spec.targets
        if t.event_hub is not None and t.name == (translation.target or t.name)
    ]
    assert source is not None and len(hubs) == 1
    target = hubs[0]
    source_connection = connection_for(config, source.connection)
    target_connection = connection_for(config, target.connection)
    source_store = blob_location(config, translation.checkpoint_store, "checkpointStore")
    target_store = (
        blob_location(config, translation.target_checkpoint_store, "targetCheckpointStore")
        if translation.target_checkpoint_store is not None
        else source_store
    )
    return TranslationPlan(
        groups=tuple(translation.consumer_groups),
        source=ConsumerGroupRef(
            translation.source_fully_qualified_namespace or source_connection.host, source.event_hub_name, ""
        ),
        target=ConsumerGroupRef(
            translation.target_fully_qualified_namespace or target_connection.host, target.event_hub_name, ""
        ),
        origin_prefix=f"{source_connection.host}/{source.event_hub_name}/",
        target_connection=target_connection,
        index_consumer_group=translation.index_consumer_group,
        source_store=source_store,
        target_store=target_store,
        interval_seconds=translation.interval_seconds,
        state_dir=str(layout.translation_dir),
        report_file=str(layout.beside_status(TRANSLATION_FILE)),
    )


def blob_location(config: TaskConfig, store: CheckpointStore, field: str) -> BlobLocation:
    connection = store.connection
    if connection.secret_ref is not None:
        return BlobLocation(
            store.container_name, connection_string_env=config.secret_env_for(connection.secret_ref)
        )
    if connection.workload_identity is not None:
        identity = connection.workload_identity
        return BlobLocation(
            store.container_name, account_url=identity.blob_endpoint.rstrip("/"), client_id=identity.client_id
        )
    if config.emulator_blob_connection_file is None:
        raise TaskConfigError(
            f"spec.checkpointTranslation.{field}: Azurite exists in local mode only "
            "(emulatorBlobConnectionFile)"
        )
    return BlobLocation(store.container_name, connection_string_file=config.emulator_blob_connection_file)
