"""The local run `bench/failover.py` drives: the manifest (a FailoverGroup of two emulator members, the
ReplicationTask that follows it into an archive and, for forced switches, one copying the primary to the
secondary), and `federator run` of it with its state dir and output."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.processes import descendants
from federator.local.drill import GroupFiles, read_json
from federator.local.drillrun import RunProcess
from federator.local.state import StateDir
from federator_contract.driverstatus import LAG_FILE

GROUP, TASK, GEO_TASK, MEMBERS = "orders", "orders-archive", "orders-geo", ("primary", "secondary")
START_SECONDS = 300.0  # a Spark JVM on a busy 2-core machine
SPARK_SUBMIT = "org.apache.spark.deploy.SparkSubmit"
PROBE_PERIOD, FAILURE_THRESHOLD = 1, 3  # the manifest's probe: a kill is seen within 4 s
DRAIN_TIMEOUT = 60  # a failback's consumers move once drained, else after this (a Warning says so)


def manifest(active: str, request: str, effectively_once: bool, mode: str = "manual") -> str:
    """The group (manual mode: only a request switches it; automatic: a member failing its probes too) and
    the task that follows it; in automatic mode also the geo task, whose lag is what a forced switch
    leaves behind (`status.switches[].eventsLeftBehind`)."""
    once = str(effectively_once).lower()
    group = f"""
apiVersion: federator.io/v1alpha1
kind: FailoverGroup
metadata: {{name: {GROUP}}}
spec:
  mode: {mode}
  primaryMember: primary
  activeMember: {active}
  switchRequest: {request}
  members:
    - {{name: primary, connection: {{emulator: {{namespace: primary}}}}, endpoint: localhost}}
    - {{name: secondary, connection: {{emulator: {{namespace: secondary}}}}, endpoint: localhost}}
  probe:
    periodSeconds: {PROBE_PERIOD}
    timeoutSeconds: 1
    failureThreshold: {FAILURE_THRESHOLD}
    entity: {{eventHubName: orders}}
  failback: {{drainTimeoutSeconds: {DRAIN_TIMEOUT}}}  # consumers return once the follower drained
---
apiVersion: federator.io/v1alpha1
kind: ReplicationTask
metadata: {{name: {TASK}}}
spec:
  source:
    eventHub:
      connection: {{failoverGroupRef: {{name: {GROUP}, resumeSkewSeconds: 5}}}}
      eventHubName: orders
      consumerGroup: replication
  targets:
    - name: archive
      eventHub: {{connection: {{emulator: {{namespace: archive}}}}, eventHubName: orders-archive}}
  delivery: {{effectivelyOnce: {once}}}
"""
    return group + (_geo_task(once) if mode == "automatic" else "")


def _geo_task(once: str) -> str:
    """Primary → secondary, into a hub of its own (a copy in `orders` would be archived again by the
    follower once it reads the secondary)."""
    return f"""---
apiVersion: federator.io/v1alpha1
kind: ReplicationTask
metadata: {{name: {GEO_TASK}}}
spec:
  source:
    eventHub:
      connection: {{emulator: {{namespace: primary}}}}
      eventHubName: orders
      consumerGroup: geo
  targets:
    - name: secondary
      eventHub: {{connection: {{emulator: {{namespace: secondary}}}}, eventHubName: {GEO_TASK}}}
  delivery: {{effectivelyOnce: {once}}}
"""


@dataclass
class LocalRun:
    """`federator run` of the manifest, in its own session; its state dir and output."""

    workdir: Path
    effectively_once: bool
    mode: str = "manual"
    run: RunProcess | None = None

    @property
    def group(self) -> GroupFiles:
        return GroupFiles(StateDir(self.state), "default", GROUP)

    def write_manifest(self, active: str, request: str) -> None:
        self.manifest.write_text(manifest(active, request, self.effectively_once, self.mode))

    @property
    def state(self) -> Path:
        return self.workdir / "state"

    @property
    def manifest(self) -> Path:
        return self.workdir / "failover.yaml"

    @property
    def log(self) -> Path:
        return self.workdir / "run.log"

    def start(self) -> None:
        self.write_manifest("primary", "bench-0")
        self.run = RunProcess([self.manifest], self.state, self.log)
        self.run.start()
        self.wait_for_output(f"default/{TASK}: Ready (Running)", START_SECONDS)
        if self.mode == "automatic":
            self.wait_for_output(f"default/{GEO_TASK}: Ready (Running)", START_SECONDS)

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        return self.run.process if self.run is not None else None

    def wait_for_output(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log.read_text(errors="replace"):
            assert self.process is not None and self.process.poll() is None, self.tail()
            if time.monotonic() > deadline:
                raise TimeoutError(f"{text!r} not in the output within {timeout:.0f} s:\n{self.tail()}")
            time.sleep(0.2)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def connection(self, member: str) -> str:
        ready = json.loads((self.state / "emulator" / "ready.json").read_text())
        return str(ready["namespaces"][member]["connectionString"])

    def endpoints(self) -> dict[str, Any] | None:
        """What the group publishes (None until it has, or while the file is replaced)."""
        return self.group.endpoints()

    def behind(self, task: str, since: float) -> int | None:
        """The events ``task`` has yet to copy from the member it reads, by its driver's lag measured at or
        after ``since`` (epoch seconds); None: not measured since, or not known."""
        lag = read_json(StateDir(self.state).status_file("default", task).parent / LAG_FILE) or {}
        measured = lag.get("measuredAt")
        if measured is None or datetime.fromisoformat(measured).timestamp() < since:
            return None
        behind = lag.get("eventsBehind")
        return int(behind) if behind is not None else None

    def jvms(self) -> set[int]:
        """The Spark JVMs running under the run now."""
        assert self.process is not None
        found = set()
        for pid in descendants(self.process.pid):
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if SPARK_SUBMIT.encode() in command:
                found.add(pid)
        return found

    def stop(self) -> None:
        if self.run is not None:
            self.run.stop()
