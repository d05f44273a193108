"""The driver's threads that go with a task's query, started and stopped with it: the lag monitor (Event
Hubs sources) and the checkpoint translator (``spec.checkpointTranslation``). The single-task app
(``federator_spark.app``) and the shared driver (``federator_spark.host``, per member) run them through
the same :class:`Companions`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from federator_spark.lag import LagMonitor, Reached
from federator_spark.pipeline import TaskPlan
from federator_spark.plan import WritePlan
from federator_spark.sinks.eventhubs import published_sequences
from federator_spark.sinks.replay import Intents
from federator_spark.sources.eventhubs_settings import HubSourceSettings
from federator_spark.translation.translator import TranslationPlan, Translator

logger = logging.getLogger(__name__)


@dataclass
class Companions:
    """A task's lag monitor and checkpoint translator (either may be None: not for this task)."""

    monitor: LagMonitor | None = None
    translator: Translator | None = None

    @classmethod
    def of(cls, task: TaskPlan, translation: TranslationPlan | None) -> Companions:
        """The task's companions, not started yet (``translation``: ``translation_plan``'s)."""
        monitor = lag_monitor(task)
        try:
            return cls(monitor, Translator(translation) if translation is not None else None)
        except Exception:
            if monitor is not None:
                monitor.stop()  # its client is made already
            raise

    def start(self) -> None:
        for worker in (self.monitor, self.translator):
            if worker is not None:
                worker.start()

    def stop(self, final: bool) -> None:
        """``final``: the translator translates once more (its query stops for good, or for a change of
        its config: a FailoverGroup may be switching)."""
        try:
            if self.translator is not None:
                self.translator.stop(final=final)
        finally:
            if self.monitor is not None:
                self.monitor.stop()


def lag_monitor(task: TaskPlan) -> LagMonitor | None:
    """Event Hubs sources: lag per partition beside the status file (Service Bus has no partitions)."""
    source = task.source
    if not isinstance(source, HubSourceSettings):
        return None
    layout = task.layout
    return LagMonitor(
        source.connection,
        source.event_hub,
        source.consumer_group,
        layout.query_dir,
        layout.status_file,
        written_through(task.write, f"{source.connection.host}/{source.event_hub}/"),
    )


def written_through(write: WritePlan, source: str) -> Reached | None:
    """How far a batch in flight got at the targets (``lag.Reached``), read back as a replay of it would
    (sinks/replay.py): effectively-once tasks whose targets are event hubs only (elsewhere it cannot be
    told). A source partition without the batch's intent sent nothing (its intent comes before its first
    send); one with it reached the newest of its events the targets hold since the intent's tails.
    ``source``: the prefix of the events' identities (``<host>/<hub>/``)."""
    hubs = {name: target for name, target in write.endpoints.items() if target.kind == "eventHub"}
    if not write.effectively_once or write.state_dir is None or len(hubs) != len(write.endpoints):
        return None
    intents = Intents(write.state_dir)

    def reached(batch: int, committed: Mapping[str, int], ends: Mapping[str, int]) -> dict[str, int]:
        found = {}
        for partition, end in ends.items():
            start, intent = committed.get(partition, -1), intents.read(partition)
            if end <= start or intent is None or intent["batchId"] != batch:
                continue
            prefix = f"{source}{partition}/"
            sent = {
                s
                for name, tails in intent["tails"].items()
                for s in published_sequences(hubs[name], tails, prefix)
            }
            mine = [s for s in sent if start < s <= end]
            if mine:
                found[partition] = max(mine)
        return found

    return reached


class Retiring:
    """Companions being stopped, each in a thread of its own, by task: a translator's last cycle takes
    seconds that the other tasks must not wait for. A finished stop is forgotten at the next look, so
    what this holds is bounded by the tasks stopping at the moment, however many came and went."""

    def __init__(self) -> None:
        self._stopping: list[tuple[str, threading.Thread]] = []

    def retire(self, key: str, companions: Companions, *, final: bool) -> None:
        thread = threading.Thread(
            target=self._stop, args=(key, companions, final), name=f"federator-retire-{key}", daemon=True
        )
        self._stopping.append((key, thread))
        thread.start()

    def busy(self, key: str) -> bool:
        """Whether the task's companions are still stopping (a task starts again only once they are:
        one translator per task's state)."""
        return key in self.pending()

    def pending(self) -> set[str]:
        """The tasks whose companions are stopping now (the finished ones are forgotten here)."""
        self._stopping = [(key, thread) for key, thread in self._stopping if thread.is_alive()]
        return {key for key, _ in self._stopping}

    def __len__(self) -> int:
        """How many stops it holds: those going on, and those finished since the last look."""
        return len(self._stopping)

    def join(self) -> None:
        for _, thread in self._stopping:
            thread.join()
        self._stopping.clear()

    @staticmethod
    def _stop(key: str, companions: Companions, final: bool) -> None:
        try:
            companions.stop(final)
        except Exception as error:  # a thread's error would only reach stderr; the task goes on without it
            logger.warning("task %s: stopping its lag monitor and translator: %r", key, error)
