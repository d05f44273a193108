"""The state directory of local runs (default `.federator/`): what a second `federator run` resumes from.

```
<state>/lock                                  held while a run uses the directory
<state>/processes/<pid>                       a process group the run started, while it runs
<state>/emulator/config.yaml                  the derived emulator config of the last run
<state>/emulator/ports.json                   namespace → AMQP and HTTPS port, kept across runs
<state>/emulator/ready.json                   connection details while the emulator runs
<state>/emulator/connections/<namespace>      its connection string, owner-only, for the apps to read
<state>/emulator/data/                        durable messages (the emulator's --data-dir)
<state>/emulator/outages                      the namespaces it takes down (a drill's; removed at each start)
<state>/emulator/emulator.log
<state>/tasks/<namespace>/<name>/task.json    the task config the Spark app reads (no secret values)
<state>/tasks/<namespace>/<name>/checkpoint/  Spark offsets and Federator's commit records
<state>/tasks/<namespace>/<name>/status.json  counters the app folds in after every batch
<state>/tasks/<namespace>/<name>/app.log      the output of the task's own app (`tasks/`: a host's)
<state>/tasks/<namespace>/<name>/config-maps/<ConfigMap>/<key>   ConfigMap keys its editors read
<state>/mirrors/<namespace>/<name>/status.json    the last provisioning outcome of every member
<state>/mirrors/<namespace>/<name>/app.log        the output of the application running its tasks
<state>/mirrors/<namespace>/<name>/tasks/         links to its tasks' configs, which that host watches
<state>/applications/<namespace>/<name>/app.log   a ReplicationApplication's output (`tasks/` likewise)
<state>/groups/<namespace>/<name>/endpoints.json  what the group publishes (the ConfigMap's keys)
<state>/groups/<namespace>/<name>/status.json     the group's status, as the operator would write it
<state>/groups/<namespace>/<name>/events.log      its Events (switches, unhealthy members)
<state>/azurite/                              Azurite's blobs (checkpoint stores `emulator: {}`)
<state>/azurite/ready.json                    its connection string while it runs
```

Ports are kept because events carry their source's identity (`<host:port>/<hub>/<partition>/<seq>`):
effectively-once delivery and merge loop prevention compare it across restarts.
"""

from __future__ import annotations

import fcntl
import json
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from federator_contract.files import write_atomically

AZURITE_CONNECTION = "azuriteConnectionString"
"""Key of the run's ready details holding Azurite's connection string (while it runs)."""


class StateDirBusy(RuntimeError):
    """Another run holds the state directory."""


@dataclass(frozen=True)
class StateDir:
    root: Path

    def task_dir(self, namespace: str, name: str) -> Path:
        return self.root / "tasks" / namespace / name

    def task_config(self, namespace: str, name: str) -> Path:
        return self.task_dir(namespace, name) / "task.json"

    def checkpoint(self, namespace: str, name: str) -> Path:
        return self.task_dir(namespace, name) / "checkpoint"

    def status_file(self, namespace: str, name: str) -> Path:
        return self.task_dir(namespace, name) / "status.json"

    def config_map_file(self, namespace: str, name: str, config_map: str, key: str) -> Path:
        return self.task_dir(namespace, name) / "config-maps" / config_map / key

    def app_log(self, namespace: str, name: str) -> Path:
        return self.task_dir(namespace, name) / "app.log"

    def mirror_dir(self, namespace: str, name: str) -> Path:
        return self.root / "mirrors" / namespace / name

    def application_dir(self, namespace: str, name: str) -> Path:
        return self.root / "applications" / namespace / name

    def group_dir(self, namespace: str, name: str) -> Path:
        return self.root / "groups" / namespace / name

    @property
    def emulator_dir(self) -> Path:
        return self.root / "emulator"

    @property
    def emulator_config(self) -> Path:
        return self.emulator_dir / "config.yaml"

    @property
    def emulator_ports(self) -> Path:
        return self.emulator_dir / "ports.json"

    @property
    def emulator_ready(self) -> Path:
        return self.emulator_dir / "ready.json"

    @property
    def emulator_outages(self) -> Path:
        """The namespaces the emulator takes down, one a line (a drill's killed member)."""
        return self.emulator_dir / "outages"

    def emulator_connection_file(self, namespace: str) -> Path:
        return self.emulator_dir / "connections" / namespace

    @property
    def azurite_ready(self) -> Path:
        return self.root / "azurite" / "ready.json"

    @property
    def azurite_connection_file(self) -> Path:
        return self.root / "azurite" / "connection"

    @property
    def emulator_data(self) -> Path:
        return self.emulator_dir / "data"

    @property
    def emulator_log(self) -> Path:
        return self.emulator_dir / "emulator.log"

    @property
    def processes(self) -> Path:
        """The process groups the run started, recorded while they run (local/supervisor.py)."""
        return self.root / "processes"

    def lock(self) -> IO[str]:
        """An exclusive lock on the directory for the life of the returned file (close it to release)."""
        self.root.mkdir(parents=True, exist_ok=True)
        handle = (self.root / "lock").open("w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise StateDirBusy(
                f"another `federator run` uses {self.root}; stop it or choose another --state-dir"
            ) from None
        return handle

    def stable_ports(self, namespaces: Iterable[str]) -> dict[str, tuple[int, int]]:
        """Each namespace's AMQP and HTTPS port: the ones of earlier runs, 0 for a new namespace. The emulator
        binds free ports for those (a port chosen here could be taken before it binds it), and
        `remember_ports` keeps them for the next run."""
        ports = self._known_ports()
        return {**{name: (0, 0) for name in namespaces}, **ports}

    def remember_ports(self, ready: dict[str, Any]) -> None:
        """Keep the ports the emulator serves each namespace on (from its ready file) for the next run."""
        ports = self._known_ports()
        for name, entry in ready["namespaces"].items():
            https = urllib.parse.urlsplit(entry["httpsEndpoint"]).port
            if https is None:
                raise ValueError(f"the emulator's ready file gives namespace {name!r} no HTTPS port")
            ports[name] = (int(entry["amqpPort"]), https)
        write_atomically(self.emulator_ports, json.dumps({k: list(v) for k, v in sorted(ports.items())}))

    def _known_ports(self) -> dict[str, tuple[int, int]]:
        if not self.emulator_ports.exists():
            return {}
        known: dict[str, Any] = json.loads(self.emulator_ports.read_text(encoding="utf-8"))
        return {name: (int(p[0]), int(p[1])) for name, p in known.items()}
