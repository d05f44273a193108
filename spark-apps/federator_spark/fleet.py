"""What one application's driver should run, decided from the task configs it is given: the desired
state is what its :class:`Reader` finds on every pass (in local mode its fixed config files and the files
in its task directories; in a cluster the task ConfigMaps it watches through the API server,
``federator_spark.config_watch``); the actual state is its members, one streaming query per task keyed
by ``namespace/name``. :func:`decide` turns the two into actions and does no I/O, so every rule is tested
without a JVM; ``federator_spark.host`` carries them out.

A directory may be a mounted ConfigMap: Kubernetes updates one by writing a new hidden directory and
swapping the ``..data`` symlink the visible names point through, so files are read through their
symlinks and dot-entries are never configs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

from federator_contract.taskconfig import TaskConfig, TaskConfigError
from federator_spark.config import load_task_config

BACKOFF_SECONDS = 2.0
BACKOFF_CAP_SECONDS = 300.0
PASS_SECONDS = 1.0
LOOK_SECONDS = 0.1


@dataclass(frozen=True)
class Found:
    """One config file as read this pass: its task config, or why it has none. ``key``: the task the
    file last held (its ``namespace/name``), so that a broken edit is reported against that task."""

    source: str
    config: TaskConfig | None = None
    error: str | None = None
    key: str | None = None


@dataclass(frozen=True)
class Member:
    """A task the driver runs, as the decision sees it: the config its query was started from, whether
    that query runs, and when a query that ended may start again."""

    config: TaskConfig
    running: bool = True
    retry_at: float = 0.0


@dataclass(frozen=True)
class Start:
    """Plan the task and start its query (again, after a failure: its backoff goes on)."""

    key: str
    config: TaskConfig


@dataclass(frozen=True)
class Stop:
    """Stop the task's query and its metrics endpoint; ``why`` goes in the log line."""

    key: str
    why: str


@dataclass(frozen=True)
class Report:
    """A config file the driver cannot run; ``key``: the task it last held, if any."""

    source: str
    error: str
    key: str | None = None


Action = Start | Stop | Report


def task_key(config: TaskConfig) -> str:
    return f"{config.namespace}/{config.name}"


@dataclass
class Move:
    """A following task's query moving to another member of its FailoverGroup, phase by phase (epoch
    seconds): the group's decision (the config's ``following.switchedAt``, when it says), the pass that
    saw the new config, the old query stopped, the new one started, its first batch done."""

    member: str
    decided: float | None
    seen: float
    stopped: float | None = None
    started: float | None = None

    def told(self, first_batch: float, rows: int, batch: str = "first batch done") -> str:
        """The phases in words, each from the one before: the log line of a move. ``rows``: what Spark
        counted in the first batch (an event hub's slices, a Service Bus source's messages); ``batch``:
        what its first trigger did."""
        phases = [("config seen", self.seen), ("old query stopped", self.stopped)]
        phases += [("new query started", self.started), (batch, first_batch)]
        said, last = [], self.decided
        for name, moment in phases:
            if moment is None:
                continue
            said.append(f"{name} +{moment - last:.2f}s" if last is not None else name)
            last = moment
        total = f" ({first_batch - self.decided:.2f}s after the switch)" if self.decided is not None else ""
        return f"moved to member {self.member}: " + " → ".join(said) + f", {rows} rows{total}"


def moving(old: TaskConfig, new: TaskConfig, now: float) -> Move | None:
    """The move a config change makes: None unless the new config follows another member."""
    if new.following is None or old.following is None or new.following.member == old.following.member:
        return None
    switched = new.following.switched_at
    decided = datetime.fromisoformat(switched).timestamp() if switched else None
    return Move(new.following.member, decided, now)


def decide(found: Sequence[Found], members: Mapping[str, Member], now: float) -> list[Action]:
    """The actions that bring the members to the configs found: a new task starts; a changed config
    (compared parsed, so a rewrite of the same content changes nothing) stops its query and starts it
    again; a task no file holds any more stops; a query that ended starts again once its backoff is
    over. A broken file is reported and leaves the task it last held running as it was."""
    desired, actions = _desired(found, members)
    for key, config in desired.items():
        member = members.get(key)
        if member is None:
            actions.append(Start(key, config))
        elif member.config != config:
            actions += [Stop(key, "its config changed"), Start(key, config)]
        elif not member.running and now >= member.retry_at:
            actions.append(Start(key, config))
    actions += [Stop(key, "its config is gone") for key in members if key not in desired]
    return actions


def _desired(
    found: Sequence[Found], members: Mapping[str, Member]
) -> tuple[dict[str, TaskConfig], list[Action]]:
    desired: dict[str, TaskConfig] = {}
    reports: list[Action] = []
    for item in found:
        if item.config is None:
            reports.append(Report(item.source, str(item.error), item.key))
            if item.key is not None and item.key in members:
                desired.setdefault(item.key, members[item.key].config)
            continue
        key = task_key(item.config)
        if key in desired:
            reports.append(Report(item.source, "another config file holds this task already", key))
            continue
        desired[key] = item.config
    return desired, reports


class Passes:
    """When the driver reconciles: every ``pass_seconds`` (queries that ended, backoffs that are over), and
    at once when a look at the configs (every ``look_seconds``: a few stats, or a copy of the watched
    ConfigMaps) finds them changed since the last pass. A switch of a FailoverGroup's member is a changed
    config; waiting for the next pass cost a follower up to ``pass_seconds`` before its query moved."""

    def __init__(self, pass_seconds: float = PASS_SECONDS, look_seconds: float = LOOK_SECONDS) -> None:
        self.pass_seconds = pass_seconds
        self.look_seconds = min(look_seconds, pass_seconds)
        self._last: Sequence[Found] | None = None
        self._next = 0.0

    def due(self, found: Sequence[Found], now: float) -> bool:
        """Whether a pass is due now for the configs ``found`` (then it counts as made)."""
        if self._last is not None and now < self._next and list(found) == list(self._last):
            return False
        self._last, self._next = list(found), now + self.pass_seconds
        return True


def backoff(failures: int, initial: float = BACKOFF_SECONDS, cap: float = BACKOFF_CAP_SECONDS) -> float:
    """Seconds before a task's query starts again after its ``failures``-th failure in a row."""
    return float(min(cap, initial * 2 ** max(0, failures - 1)))


def config_files(directory: Path) -> list[Path]:
    """The config files in ``directory``, by name: regular files (read through symlinks), no dot-entries
    (``..data`` and the timestamped directories of a mounted ConfigMap). A missing directory holds none."""
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except FileNotFoundError:
        return []
    return [Path(entry.path) for entry in entries if not entry.name.startswith(".") and entry.is_file()]


class Reader(Protocol):
    """Where a driver's task configs come from (files, or ConfigMaps through the API server): every call
    answers the configs as they are now, one :class:`Found` per source."""

    def read(self) -> list[Found]: ...


class Parsed:
    """The configs of a reader's sources, each parsed again only when its fingerprint changed (what it
    points to, for a file; its text, for a ConfigMap), and the task each source last held, so that a
    broken edit is reported against that task. What it keeps is bounded by the sources that exist."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[Hashable, Found]] = {}
        self._keys: dict[str, str] = {}

    def found(self, source: str, fingerprint: Hashable, load: Callable[[], TaskConfig]) -> Found:
        """``load`` parses the source (raising TaskConfigError, OSError or UnicodeDecodeError)."""
        cached = self._cache.get(source)
        if cached is not None and cached[0] == fingerprint:
            return cached[1]
        try:
            config = load()
        except (TaskConfigError, OSError, UnicodeDecodeError) as error:
            found = self.broken(source, str(error))
        else:
            self._keys[source] = task_key(config)
            found = Found(source, config=config)
        self._cache[source] = (fingerprint, found)
        return found

    def broken(self, source: str, error: str) -> Found:
        return Found(source, error=error, key=self._keys.get(source))

    def keep(self, found: Sequence[Found]) -> list[Found]:
        """Forget the sources not among ``found`` (a source gone holds no task); returns ``found``."""
        present = {item.source for item in found}
        for gone in set(self._cache) - present:
            del self._cache[gone]
        for gone in set(self._keys) - present:
            del self._keys[gone]
        return list(found)


class ConfigReader:
    """Reads the config files each pass, parsing a file again only when what it points to changed (its
    resolved path, inode, size or modification time): cheap enough to run every second."""

    def __init__(self, directories: Iterable[Path] = (), files: Iterable[Path] = ()) -> None:
        self.directories = list(directories)
        self.files = list(files)
        self._parsed = Parsed()

    def read(self) -> list[Found]:
        paths = [path for directory in self.directories for path in config_files(directory)] + self.files
        return self._parsed.keep([self._read(path) for path in paths])

    def _read(self, path: Path) -> Found:
        source = str(path)
        try:
            stat = path.stat()
            fingerprint = (os.path.realpath(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)
        except OSError as error:
            return self._parsed.broken(source, f"cannot read it: {error}")
        return self._parsed.found(source, fingerprint, lambda: load_task_config(source))
