"""A Blob container holding consumers' checkpoints (the layout of ``layout.py``): list a group's
checkpoints and ownership claims, and write a checkpoint only if nobody changed it meanwhile.

Every request is counted (:class:`Counts`): the translation's cost per cycle is reported and measured.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from federator_spark.translation.layout import (
    OFFSET,
    SEQUENCE_NUMBER,
    ConsumerGroupRef,
    checkpoint_metadata,
    partition_of,
)

# The storage SDK logs every request and response at INFO: a line per blob call, every cycle.
logging.getLogger("azure.core.pipeline.policies.http_logging_policy").setLevel(logging.WARNING)


@dataclass(frozen=True)
class StoredCheckpoint:
    offset: str
    sequence_number: int
    etag: str


@dataclass
class Counts:
    """Requests to the storage account."""

    lists: int = 0
    writes: int = 0
    conflicts: int = 0  # writes refused because the blob changed since it was listed

    def add(self, other: Counts) -> None:
        self.lists += other.lists
        self.writes += other.writes
        self.conflicts += other.conflicts


@dataclass(frozen=True)
class BlobLocation:
    """Where a checkpoint store lives: a container, reached by a connection string (inline, the
    environment variable holding it, or the owner-only file local mode writes Azurite's to) or an
    account URL with a token credential (workload identity)."""

    container: str
    connection_string: str | None = field(default=None, repr=False)
    connection_string_env: str | None = None
    connection_string_file: str | None = None
    account_url: str | None = None
    client_id: str | None = None


class CheckpointBlobs:
    """One container; not thread-safe (one translator cycle at a time uses it)."""

    def __init__(self, location: BlobLocation) -> None:
        from azure.storage.blob import ContainerClient

        text = location.connection_string
        if location.connection_string_env is not None:
            text = os.environ.get(location.connection_string_env)
            if not text:
                raise RuntimeError(f"environment variable {location.connection_string_env} is not set")
        if location.connection_string_file is not None:
            text = Path(location.connection_string_file).read_text(encoding="utf-8").strip()
        if text is not None:
            self._container = ContainerClient.from_connection_string(text, location.container)
        else:
            from azure.identity import DefaultAzureCredential

            assert location.account_url is not None
            credential = DefaultAzureCredential(managed_identity_client_id=location.client_id)
            self._container = ContainerClient(location.account_url, location.container, credential=credential)
        self.counts = Counts()

    def checkpoints(self, group: ConsumerGroupRef) -> dict[str, StoredCheckpoint]:
        """The group's checkpoints by partition id; a blob without both metadata keys is not one."""
        found: dict[str, StoredCheckpoint] = {}
        for blob in self._list(group.prefix("checkpoint")):
            metadata = blob.metadata or {}
            if OFFSET in metadata and SEQUENCE_NUMBER in metadata:
                found[partition_of(blob.name)] = StoredCheckpoint(
                    str(metadata[OFFSET]), int(metadata[SEQUENCE_NUMBER]), _etag(blob.etag)
                )
        return found

    def claims(self, group: ConsumerGroupRef) -> dict[str, datetime]:
        """When each partition's ownership was last claimed."""
        return {partition_of(blob.name): blob.last_modified for blob in self._list(group.prefix("ownership"))}

    def write(
        self, group: ConsumerGroupRef, partition: str, offset: str, sequence_number: int, etag: str | None
    ) -> str | None:
        """Write a checkpoint if the blob is still as listed (``etag``; None: it did not exist); returns
        the new etag, or None when someone else changed it first."""
        from azure.core import MatchConditions
        from azure.core.exceptions import ResourceExistsError, ResourceModifiedError, ResourceNotFoundError

        blob = self._container.get_blob_client(group.checkpoint_blob(partition))
        metadata = checkpoint_metadata(offset, sequence_number)
        self.counts.writes += 1
        try:
            if etag is None:
                result = blob.upload_blob(b"", metadata=metadata, overwrite=False)  # If-None-Match: *
            else:
                result = blob.set_blob_metadata(
                    metadata, etag=etag, match_condition=MatchConditions.IfNotModified
                )
        except (ResourceExistsError, ResourceModifiedError, ResourceNotFoundError):
            self.counts.conflicts += 1
            return None
        return _etag(result["etag"])

    def _list(self, prefix: str) -> list[Any]:
        """The blobs under ``prefix``; none while the container does not exist (the consumers create it)."""
        from azure.core.exceptions import ResourceNotFoundError

        self.counts.lists += 1
        try:
            return list(self._container.list_blobs(name_starts_with=prefix, include=["metadata"]))
        except ResourceNotFoundError:
            return []

    def close(self) -> None:
        self._container.close()


def _etag(value: Any) -> str:
    """Listings and writes spell an ETag with and without its quotes."""
    return str(value).strip('"')
