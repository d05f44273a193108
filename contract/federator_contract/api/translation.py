"""Checkpoint translation: the application consumer groups whose Blob checkpoints a ReplicationTask
carries from its source event hub to its target (docs/patterns/failover.md, "What your consumers do")."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import ConfigDict, Field, StringConstraints

from federator_contract.api.base import (
    ClientId,
    DnsLabel,
    FedModel,
    SecretKeySelector,
    StatusModel,
    cel,
    exactly_one,
    list_map,
)

ConsumerGroupName = Annotated[
    str,
    StringConstraints(min_length=1, max_length=50, pattern=r"^[A-Za-z0-9$]([A-Za-z0-9._\-]*[A-Za-z0-9])?$"),
]
# A host as the consumers' Event Hubs client names it (with a port where their connection string has one).
FullyQualifiedNamespace = Annotated[
    str,
    StringConstraints(max_length=253, pattern=r"^[A-Za-z0-9]([A-Za-z0-9.\-]*[A-Za-z0-9])?(:[0-9]{1,5})?$"),
]


class BlobWorkloadIdentity(FedModel):
    """Microsoft Entra workload identity for a storage account: the pod's federated credential needs
    *Storage Blob Data Contributor* on the container."""

    blob_endpoint: Annotated[str, StringConstraints(max_length=512, pattern=r"^https://[^/\s]+/?$")]
    """The account's Blob endpoint, e.g. `https://contosockpt.blob.core.windows.net`."""
    client_id: ClientId | None = None
    """Client ID of the user-assigned managed identity. Default: the identity the service account is
    annotated with."""


class AzuriteStorage(FedModel):
    """Azurite, Microsoft's Azure Storage emulator, which local mode (`federator run`) starts. Local mode
    only: an operator in a cluster reports such a task as Stalled with reason `EmulatorOnlyInLocalMode`."""

    account: Annotated[str, StringConstraints(pattern=r"^devstoreaccount1$")] = "devstoreaccount1"
    """Azurite's account. Default: `devstoreaccount1` (its only one)."""


class BlobStoreConnection(FedModel):
    """How Federator reaches a storage account. Set exactly one of `secretRef`, `workloadIdentity` or
    `emulator`."""

    model_config = ConfigDict(json_schema_extra=cel(exactly_one("secretRef", "workloadIdentity", "emulator")))

    secret_ref: SecretKeySelector | None = None
    """A Secret key holding the storage account's connection string."""
    workload_identity: BlobWorkloadIdentity | None = None
    """Workload identity (no secret at all)."""
    emulator: AzuriteStorage | None = None
    """Azurite, started by local mode."""


class CheckpointStore(FedModel):
    """The Blob container an `azure-eventhub-checkpointstoreblob` `BlobCheckpointStore` uses."""

    container_name: Annotated[
        str, StringConstraints(min_length=3, max_length=63, pattern=r"^[a-z0-9]([a-z0-9]|-[a-z0-9])*$")
    ]
    """Name of the container."""
    connection: BlobStoreConnection
    """The storage account holding it."""


class CheckpointTranslation(FedModel):
    """Carry application consumer groups' checkpoints from the source event hub to the target, so that a
    consumer started on the target with the unmodified SDK and `BlobCheckpointStore` resumes where it
    left the source: nothing lost, repeating only what it processed after its last checkpoints (and,
    where several source partitions feed one target partition, what they interleave past it). Event
    Hubs to Event Hubs only; consumer groups of the same names must exist on the target."""

    model_config = ConfigDict(
        json_schema_extra=cel(
            (
                "self.consumerGroups.all(g, self.consumerGroups.exists_one(h, h == g))",
                "consumerGroups must be unique",
            )
        )
    )

    consumer_groups: Annotated[list[ConsumerGroupName], Field(min_length=1, max_length=32)]
    """The applications' consumer groups to translate (not the task's own)."""
    checkpoint_store: CheckpointStore
    """Where the applications keep their checkpoints for the source event hub."""
    target_checkpoint_store: CheckpointStore | None = None
    """Where they keep them for the target, when that is another container (e.g. an account in the
    secondary region). Default: `checkpointStore`."""
    target: DnsLabel | None = None
    """The event hub target translated to. Default: the task's only event hub target."""
    interval_seconds: Annotated[int, Field(ge=1, le=3600)] = 10
    """How often the translation runs; it runs once more when the application stops (at a FailoverGroup
    switch the operator restarts it). Default: 10."""
    source_fully_qualified_namespace: FullyQualifiedNamespace | None = None
    """The source namespace's host as the consumers' clients name it (it is part of the checkpoints'
    blob names). Default: the host of the task's source connection."""
    target_fully_qualified_namespace: FullyQualifiedNamespace | None = None
    """The target namespace's host as the consumers' clients will name it. Default: the host of the
    target's connection."""
    index_consumer_group: ConsumerGroupName = "$Default"
    """The consumer group on the target through which the translation reads the copies (it keeps one
    receiver per partition open). Default: `$Default`."""


class TranslatedGroup(StatusModel):
    """The last translation of one consumer group."""

    consumer_group: ConsumerGroupName
    """The consumer group."""
    source_checkpoints: Annotated[int, Field(ge=0)] = 0
    """Source partitions the group has checkpoints for (0: nothing to translate yet)."""
    partitions_written: Annotated[int, Field(ge=0)] = 0
    """Target checkpoints written in the last cycle (only those that moved are written)."""
    partitions_left_to_consumers: Annotated[int, Field(ge=0)] = 0
    """Target partitions left alone: a consumer reads or checkpointed them on the target."""


class CheckpointTranslationStatus(StatusModel):
    """What the replication app's translator did last."""

    last_cycle_time: datetime | None = None
    """When its last cycle ended."""
    consumer_groups: Annotated[
        list[TranslatedGroup], Field(max_length=32, json_schema_extra=list_map("consumerGroup"))
    ] = []
    """Per consumer group."""
