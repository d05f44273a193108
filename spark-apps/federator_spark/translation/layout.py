"""Where `azure-eventhub-checkpointstoreblob` keeps a consumer group's state, exactly as its
``BlobCheckpointStore`` (sync and aio, 1.2.0) writes and reads it:

* a checkpoint is the empty blob
  ``{fully_qualified_namespace}/{eventhub}/{consumer_group}/checkpoint/{partition}``, the whole name
  **lower-cased**, with metadata ``offset`` and ``sequencenumber`` (strings) of the last
  event processed; a consumer resumes after ``offset`` (``x-opt-offset > '<offset>'``);
* an ownership claim is ``…/ownership/{partition}`` with metadata ``ownerid``; a running
  ``EventProcessor`` re-claims (re-writes) its partitions every load-balancing round, so the blob's
  last-modified time says whether a consumer reads the partition now.

``fully_qualified_namespace`` is the host the consumer's client connected to, with the port when its
connection string names one (the emulator's ``127.0.0.1:5673``).
"""

from __future__ import annotations

from dataclasses import dataclass

OFFSET = "offset"
SEQUENCE_NUMBER = "sequencenumber"
# The offset a checkpoint carries when no event of the partition was processed yet: a consumer resumes
# at the first event still retained (the filter `x-opt-offset > '-1'`).
BEFORE_FIRST_OFFSET = "-1"


@dataclass(frozen=True)
class ConsumerGroupRef:
    """One consumer group of one event hub, as the checkpoint store names it."""

    fully_qualified_namespace: str
    event_hub: str
    consumer_group: str

    def prefix(self, kind: str) -> str:
        """``kind`` is ``checkpoint`` or ``ownership``."""
        return f"{self.fully_qualified_namespace}/{self.event_hub}/{self.consumer_group}/{kind}/".lower()

    def checkpoint_blob(self, partition: str) -> str:
        return self.prefix("checkpoint") + partition.lower()


def partition_of(blob_name: str) -> str:
    return blob_name.rsplit("/", 1)[-1]


def checkpoint_metadata(offset: str, sequence_number: int) -> dict[str, str]:
    return {OFFSET: offset, SEQUENCE_NUMBER: str(sequence_number)}
