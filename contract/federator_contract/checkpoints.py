"""Where a task may keep its checkpoint, and where Federator's own files go under it: what the CRD,
`federator validate` and the app agree on. No models here: the Service Bus source's Python process
reads it, and importing the models (pydantic) cost that process 0.5 s at every query start."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

LOCAL_SCHEME = "file://"
# Under the checkpoint location, next to Spark's offsets/ and commits/: commit records, the Service Bus
# spool, editor state, status.
STATE_DIR = "federator"
MEMBERS_DIR = "members"
"""Under the checkpoint location: one sub-location per followed member (positions are per namespace)."""
STATUS_FILE = "status.json"
SOURCE_BINDING_FILE = "source.json"
"""Under a query's state dir: the source its positions belong to (namespace, entity, consumer group)."""
START_POSITIONS_FILE = "start-positions.json"
"""Under a query's state dir: where an event hub source's first batch starts, until Spark committed it."""
PREVIOUS_DIR = "previous"
"""Under a query's location: checkpoints set aside by a reset of positions, one per reset."""

# Why an object-store checkpoint is refused: by the CRD (a CEL rule), `federator validate` and the app.
LOCAL_CHECKPOINTS_ONLY = (
    "only file:// checkpoints are supported for now (commit records and Service Bus spool files need a "
    "path every Spark pod mounts): use persistentVolumeClaim with a ReadWriteMany claim, or a file:// "
    "path on such a mount"
)


def checkpoint_location_problem(location: str) -> str | None:
    """Why the app cannot keep its checkpoint at `location` (a URI or a path), or None."""
    if "://" not in location or location.startswith(LOCAL_SCHEME):
        return None
    return LOCAL_CHECKPOINTS_ONLY


def local_checkpoint_path(location: str) -> Path:
    """A checkpoint location as a local path; ValueError saying why when the app cannot keep files there."""
    problem = checkpoint_location_problem(location)
    if problem is not None:
        raise ValueError(f"checkpoint location: {problem}")
    return Path(location.removeprefix(LOCAL_SCHEME))


@dataclass(frozen=True)
class CheckpointLayout:
    """Every path of a task under its checkpoint location, derived here and nowhere else.

    The *query's* location holds what is tied to the source and batch ids (Spark's offsets, the Service
    Bus spool, commit records, editor state, the translation index): a task that follows a FailoverGroup
    gets one per member, ``members/<member>``, since positions of one namespace mean nothing on another.
    What outlives a switch (the status, which member the task ran on last) stays at the task's level."""

    task_dir: Path
    member: str | None = None
    """The FailoverGroup member the source reads now, if it follows one."""
    status_override: str | None = None
    """Where the status goes instead of under the checkpoint (local mode keeps it in its state dir)."""

    @classmethod
    def at(cls, location: str, member: str | None = None, status_file: str | None = None) -> CheckpointLayout:
        """ValueError saying why when the app cannot keep files at ``location``."""
        return cls(local_checkpoint_path(location), member, status_file)

    @property
    def members_dir(self) -> Path:
        return self.task_dir / MEMBERS_DIR

    @property
    def query_dir(self) -> Path:
        return self.task_dir if self.member is None else self.member_dir(self.member)

    @property
    def query_location(self) -> str:
        """Spark's ``checkpointLocation`` for the query: always a local file (see above)."""
        return LOCAL_SCHEME + str(self.query_dir.absolute())

    def member_dir(self, member: str) -> Path:
        return self.members_dir / member

    def member_state_dir(self, member: str) -> Path:
        return self.member_dir(member) / STATE_DIR

    @property
    def state_dir(self) -> Path:
        """Federator's files of the query: commit records, replay intents, editor state."""
        return self.query_dir / STATE_DIR

    @property
    def task_state_dir(self) -> Path:
        """Federator's files of the task: the status, the member it ran on last."""
        return self.task_dir / STATE_DIR

    @property
    def status_file(self) -> Path:
        return Path(self.status_override) if self.status_override else self.task_state_dir / STATUS_FILE

    def beside_status(self, name: str) -> Path:
        """A report the operator reads next to the status (lag, translation)."""
        return self.status_file.parent / name

    @property
    def source_binding_file(self) -> Path:
        """The source the query's positions belong to: the query's, so a followed group's members each
        have their own (a member switch is not a change of source)."""
        return self.state_dir / SOURCE_BINDING_FILE

    @property
    def start_positions_file(self) -> Path:
        """The positions the query's first batch starts from, as the source read them first (the query's:
        each followed member's checkpoint starts where it starts)."""
        return self.state_dir / START_POSITIONS_FILE

    @property
    def previous_dir(self) -> Path:
        """Where a reset of positions sets the query's checkpoint aside (kept, never deleted)."""
        return self.query_dir / PREVIOUS_DIR

    @property
    def spool_dir(self) -> Path:
        """The Service Bus source's spool of received messages."""
        return self.state_dir / "servicebus"

    @property
    def translation_dir(self) -> Path:
        """The checkpoint translator's index: it names the target, so it is the query's."""
        return self.state_dir / "translation"
