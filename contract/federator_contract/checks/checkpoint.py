"""Where a task may keep its checkpoint: a local or mounted path. Commit records, the Service Bus spool
and editor state are files the driver and the executors write there, so an object store (`abfss://`,
`s3a://`, `gs://`, `hdfs://`) does not work yet; a ReadWriteMany volume mounted by every Spark pod does."""

from __future__ import annotations

from collections.abc import Iterator

from federator_contract.api.replicationtask import ReplicationTaskSpec, Runtime
from federator_contract.checkpoints import checkpoint_location_problem
from federator_contract.checks.findings import Finding


def runtime_checkpoint_findings(runtime: Runtime, path: tuple[str | int, ...]) -> Iterator[Finding]:
    """The checkpoint of a `runtime` block (a task's, or a mirror's task template) at `path`."""
    uri = runtime.checkpoint.uri if runtime.checkpoint is not None else None
    problem = checkpoint_location_problem(uri) if uri is not None else None
    if problem is not None:
        yield Finding((*path, "checkpoint", "uri"), problem)


def checkpoint_findings(spec: ReplicationTaskSpec) -> Iterator[Finding]:
    """`runtime.checkpoint.uri` with a scheme the app cannot write to."""
    yield from runtime_checkpoint_findings(spec.runtime, ("runtime",))
