"""Operator at scale: ReplicationTasks applied to the faithful fake API server (its own process) with the
operator running. For each size (`--tasks`, default 200 and 1,000), on a fresh server:

- time until every task is ready — its Spark application created and its status written for its
  generation (Ready, or Reconciling while the application starts: no Spark operator runs here);
- create → ready latency p50/p99; reconcile passes and API requests (the operator's and kopf's) per task;
- the operator's RSS and CPU, and the API server's CPU and its share of the CPU both processes used;
- the same counts over one idle observe interval after that: the steady-state cost per task.

Baseline, in the same run: the same creates with no operator (the API server's own cost), as a ratio.
The tasks are created and watched from a process of their own (`drive`), as a client would: not from the
operator's, whose GIL they would wait for.
`--against DIR` compares operators: DIR is another checkout (`git archive 244b270 | tar -x -C DIR`), whose
operator and contract packages run against this tree's fake API server, alternated with this tree's in each
of `--rounds`, so both meet the same server (managed fields and all) and the same load.
Profile with py-spy: `py-spy record --subprocesses -o out.txt --format raw -- python -m bench.operator_scale`.
Final line: JSON.

    .venv/bin/python -m bench.operator_scale [--tasks 200 1000] [--observe-interval 30]
        [--against DIR] [--rounds 3]
"""

from __future__ import annotations

import argparse
import copy
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp.web
import attrs
import yaml
from kmock._internal import rendering

# The faithful fake API server lives with the test support (run from the repository root: `-m bench.…`).
from tests.support.kopf_runner import running_operator
from tests.support.kube import KubeServer
from tests.support.kubeapi import FaithfulKubernetesEmulator
from tests.support.orders import orders_service_account
from tests.support.resources import declare_all

ROOT = Path(__file__).resolve().parents[1]

NS = "default"
RT = f"/apis/federator.io/v1alpha1/namespaces/{NS}/replicationtasks"
STATS = "/bench/stats"
SOURCE_SECRET = "orders-weu"
CHECKPOINT_CLAIM = "federator-checkpoints"  # the example's


@attrs.define(kw_only=True)
class CountingEmulator(FaithfulKubernetesEmulator):
    """The fake API server, counting requests by client (User-Agent) and verb, and answering `/bench/stats`
    with the counts and its own CPU time. It keeps only the request in hand in kmock's request log: nothing
    here reads the log, and matching each request against the tests' 50 kept ones was three quarters of
    the server's CPU — a cost of the fake, not of an API server."""

    REQUEST_LOG_LIMIT = 1
    _counts: Counter[str] = attrs.field(factory=Counter, init=False)

    def _KubernetesEmulator__get_obj(self, request: rendering.Request, strict: bool) -> Any:
        """kmock finds the object of a request by scanning every stored object (Events included), which
        made each request cost O(objects) and a benchmark run O(objects²). An API server looks it up by
        key; so does this, falling back to kmock's scan for requests without a namespace and name."""
        if request.name is not None and request.resource is not None and (strict or request.namespace):
            key = (request.resource, request.namespace, request.name)
            return self._objects[key] if key in self._objects else None  # noqa: SIM401 (no .get)
        found = getattr(self, "_KubernetesEmulator__get_objs")(request, strict=strict)  # noqa: B009 (mangled)
        return found[0] if found else None

    async def _handle(self, request: rendering.Request) -> aiohttp.web.StreamResponse:
        if request.url.path == STATS:
            stats = {"requests": dict(self._counts), "cpu_seconds": time.process_time()}
            return aiohttp.web.json_response(stats)
        agent = next((v for k, v in request.headers.items() if k.lower() == "user-agent"), "")
        client = (
            "kopf" if agent.startswith("kopf") else "federator" if agent.startswith("federator") else "bench"
        )
        self._counts[f"{client} {request.method.name}"] += 1
        return await super()._handle(request)


def serve() -> None:
    """Child process: the fake API server (its own interpreter, so it does not share the operator's GIL)."""
    emulator = CountingEmulator()
    declare_all(emulator.resources)
    server = KubeServer(emulator)
    server.start()
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SOURCE_SECRET},
        # Nothing listens on localhost's AMQP port: each source probe is a refused connection, answered at
        # once. (A host that does not resolve would measure the machine's DNS server instead: hundreds of
        # concurrent lookups here ran into the probe's 5 s timeout.)
        "stringData": {
            "connectionString": "Endpoint=sb://localhost/;SharedAccessKeyName=k;SharedAccessKey=eA=="
        },
    }
    server.request("POST", f"/api/v1/namespaces/{NS}/secrets", secret)
    # What every task's pods share, as in a cluster with the chart installed: the service account their
    # target's workload identity signs in as, and the checkpoint claim.
    server.request("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", orders_service_account())
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": CHECKPOINT_CLAIM},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "10Gi"}}},
    }
    server.request("POST", f"/api/v1/namespaces/{NS}/persistentvolumeclaims", claim)
    print(server.url, flush=True)
    sys.stdin.read()  # until the parent closes our stdin
    server.stop()


class ApiServer:
    """The fake API server process, driven over HTTP."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = subprocess.Popen(
            [sys.executable, "-m", "bench.operator_scale", "--serve"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        assert self.url.startswith("http"), "the fake API server did not start"

    @classmethod
    def at(cls, url: str) -> ApiServer:
        """A client of the server another process started."""
        server = cls.__new__(cls)
        server.process, server.url = None, url
        return server

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.url + path,
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=60) as response:
            return json.loads(response.read() or b"null")

    def stats(self) -> dict[str, Any]:
        found: dict[str, Any] = self.request("GET", STATS)
        return found

    def stop(self) -> None:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(30)


EXAMPLE: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "eh-replication-cluster.yaml").read_text())


def task(i: int) -> dict[str, Any]:
    """The cluster example, each task reading its own event hub (so no two tasks share a source probe)."""
    doc = copy.deepcopy(EXAMPLE)
    doc["metadata"] = {"name": f"task-{i:04d}", "namespace": NS}
    doc["spec"]["source"]["eventHub"]["eventHubName"] = f"orders-{i:04d}"
    doc["spec"]["runtime"]["checkpoint"]["persistentVolumeClaim"]["subPath"] = f"{NS}/task-{i:04d}"
    return doc


def ready(item: dict[str, Any]) -> bool:
    """Its Spark application exists and its status was written for its current generation."""
    status = item.get("status") or {}
    types = {c["type"]: c["status"] for c in status.get("conditions") or []}
    return (
        status.get("observedGeneration") == item["metadata"].get("generation")
        and bool((status.get("sparkApplication") or {}).get("name"))
        and "True" in (types.get("Ready"), types.get("Reconciling"))
    )


class ReadyWatch(threading.Thread):
    """One watch of the tasks, as a dashboard would hold it: notes when each became ready."""

    def __init__(self, server_url: str) -> None:
        super().__init__(name="bench-watch", daemon=True)
        url = urllib.parse.urlsplit(server_url)
        self.connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port)
        self.path = f"{RT}?watch=true"
        self.ready: dict[str, float] = {}
        self.started = threading.Event()

    def run(self) -> None:
        self.connection.request("GET", self.path)
        response = self.connection.getresponse()
        self.started.set()
        try:
            for line in response:
                if not line.strip():
                    continue
                item = json.loads(line)["object"]
                name = item["metadata"]["name"]
                if name not in self.ready and ready(item):
                    self.ready[name] = time.monotonic()
        except (OSError, ValueError, http.client.HTTPException):
            return  # stop() shut the socket

    def stop(self) -> None:
        if self.connection.sock is not None:
            self.connection.sock.shutdown(socket.SHUT_RDWR)
        self.join(10)
        self.connection.close()


def rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def thread_cpu_seconds(thread: threading.Thread) -> float:
    """CPU time of one thread of this process (Linux: /proc/self/task/<tid>/stat, utime + stime)."""
    try:
        fields = Path(f"/proc/self/task/{thread.native_id}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def loadavg() -> list[float]:
    return [float(v) for v in Path("/proc/loadavg").read_text().split()[:3]]


def baseline(count: int) -> float:
    server = ApiServer()
    try:
        started = time.monotonic()
        for i in range(count):
            server.request("POST", RT, task(i))
        return time.monotonic() - started
    finally:
        server.stop()


class Counts:
    """What the operator and the API server did up to a moment. The operator's CPU is this process's less
    the benchmark's own threads (creating tasks, watching them)."""

    def __init__(self, server: ApiServer, bench: list[threading.Thread]) -> None:
        from federator import metrics

        stats = server.stats()
        self.at = time.monotonic()
        self.requests = Counter({k: v for k, v in stats["requests"].items() if not k.startswith("bench ")})
        self.server_cpu = float(stats["cpu_seconds"])
        self.operator_cpu = time.process_time() - sum(thread_cpu_seconds(t) for t in bench)
        kind = {"kind": "ReplicationTask"}
        self.passes = (
            metrics.REGISTRY.get_sample_value("federator_reconcile_duration_seconds_count", kind) or 0
        )
        self.pass_seconds = (
            metrics.REGISTRY.get_sample_value("federator_reconcile_duration_seconds_sum", kind) or 0
        )

    def since(self, before: Counts, count: int) -> dict[str, Any]:
        requests = self.requests - before.requests
        server, operator = self.server_cpu - before.server_cpu, self.operator_cpu - before.operator_cpu
        passes = self.passes - before.passes
        return {
            "seconds": round(self.at - before.at, 2),
            "passes_per_task": round(passes / count, 2),
            "pass_mean_seconds": round((self.pass_seconds - before.pass_seconds) / passes, 4)
            if passes
            else None,
            "api_requests_per_task": round(sum(requests.values()) / count, 3),
            "api_requests": dict(sorted(requests.items())),
            "operator_cpu_seconds": round(operator, 2),
            "api_server_cpu_seconds": round(server, 2),
            "api_server_cpu_share": round(server / (server + operator), 3) if server + operator else None,
        }


def run(count: int, observe_interval: int) -> dict[str, Any]:
    import federator.handlers  # noqa: F401 — registers the handlers
    from federator.handlers.context import OperatorContext
    from federator.settings import OperatorSettings

    server = ApiServer()
    kubeconfig = Path(os.environ.get("TMPDIR", "/tmp")) / f"federator-bench-{os.getpid()}.kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "b",
                "clusters": [{"name": "b", "cluster": {"server": server.url}}],
                "users": [{"name": "b", "user": {"token": "bench"}}],
                "contexts": [{"name": "b", "context": {"cluster": "b", "user": "b", "namespace": NS}}],
            }
        )
    )
    os.environ["KUBECONFIG"] = str(kubeconfig)
    context = OperatorContext(
        OperatorSettings(observe_interval_seconds=observe_interval), serve_metrics=False
    )
    try:
        with running_operator(namespaces=[NS], memo=context, ready_timeout=30):
            return measure(server, count, observe_interval)
    finally:
        server.stop()
        kubeconfig.unlink(missing_ok=True)


def drive(server_url: str, count: int, deadline_seconds: float) -> None:
    """Child process: the tasks' creator and the dashboard's watch, in an interpreter of their own. In the
    operator's process they waited for its GIL: 1,000 creates took 43 s there against 2-7 s alone, so
    "ready" measured the creating thread's share of the GIL. Times are CLOCK_MONOTONIC, one clock for
    every process. Prints "watching", waits for a line on stdin, creates; prints the times as JSON."""
    server = ApiServer.at(server_url)
    watch = ReadyWatch(server_url)
    watch.start()
    watch.started.wait(30)
    print("watching", flush=True)
    sys.stdin.readline()
    created: dict[str, float] = {}
    for i in range(count):
        created[f"task-{i:04d}"] = time.monotonic()
        server.request("POST", RT, task(i))
    deadline = time.monotonic() + deadline_seconds
    while len(watch.ready) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    print(json.dumps({"created": created, "ready": dict(watch.ready)}), flush=True)
    watch.stop()


def measure(server: ApiServer, count: int, observe_interval: int) -> dict[str, Any]:
    argv = [sys.executable, "-m", "bench.operator_scale", "--drive", server.url, "--tasks", str(count)]
    driver = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert driver.stdin is not None and driver.stdout is not None
    assert driver.stdout.readline().strip() == "watching", "the bench's driver did not start"
    load_before = loadavg()
    bench = [threading.main_thread()]  # it only waits: creates and the watch run in the driver
    before = Counts(server, bench)
    driver.stdin.write("go\n")
    driver.stdin.flush()
    times = json.loads(driver.stdout.readline())
    driver.wait(30)
    created, done = times["created"], times["ready"]
    settled = Counts(server, bench)
    creating = settled.since(before, count)
    time.sleep(observe_interval)
    idle = Counts(server, bench).since(settled, count)
    latencies = [done[n] - created[n] for n in done]
    return {
        "tasks": count,
        "ready_tasks": len(done),
        "all_ready_seconds": round(max(done.values()) - before.at, 2) if done else None,
        "latency_p50_seconds": round(percentile(latencies, 0.5), 3),
        "latency_p99_seconds": round(percentile(latencies, 0.99), 3),
        **{k: v for k, v in creating.items() if k != "seconds"},
        "rss_mb": round(rss_mb(), 1),
        "idle_observe_interval": idle,
        "load_average_before": load_before,
        "load_average_after": loadavg(),
    }


def one_size(count: int, observe_interval: int) -> dict[str, Any]:
    """In its own process (fresh metrics, an RSS of this size alone): a baseline, then the operator."""
    import federator

    base = baseline(count)
    result = run(count, observe_interval)
    result["baseline_creates_seconds"] = round(base, 2)
    result["operator_package"] = str(Path(federator.__file__).parent)  # which checkout's operator ran
    total = result["all_ready_seconds"]
    result["ratio_vs_baseline"] = round(total / base, 2) if base and total else None
    return result


def operator_tree(text: str) -> Path:
    """`--against`: a checkout holding the operator's and the contract's packages."""
    tree = Path(text).resolve()
    missing = [p for p in ("operator/federator", "contract/federator_contract") if not (tree / p).is_dir()]
    if missing:
        raise argparse.ArgumentTypeError(f"--against {text}: no {' or '.join(missing)} there")
    return tree


def one_run(count: int, observe_interval: int, tree: Path | None) -> dict[str, Any]:
    """One size in its own process, with the operator of `tree` (None: this one's) first on the path."""
    argv = [sys.executable, "-m", "bench.operator_scale", "--one", "--tasks", str(count)]
    argv += ["--observe-interval", str(observe_interval)]
    env = dict(os.environ)
    if tree is not None:
        paths = [str(tree / "operator"), str(tree / "contract"), env.get("PYTHONPATH", "")]
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    output = subprocess.run(argv, cwd=ROOT, env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    result["operator"] = str(tree) if tree is not None else "this tree"
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=[200, 1000])
    parser.add_argument("--observe-interval", type=int, default=30, help="seconds (the operator's setting)")
    parser.add_argument("--against", type=operator_tree, help="another checkout's operator, alternated")
    parser.add_argument("--rounds", type=int, default=1, help="repeat every size (and operator) this often")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--drive", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    if args.drive:
        drive(args.drive, args.tasks[0], 120 + args.tasks[0] * 0.3)
        return
    if args.one:
        print(json.dumps(one_size(args.tasks[0], args.observe_interval)))
        return
    results = []
    trees: list[Path | None] = [args.against, None] if args.against else [None]
    for round_ in range(1, args.rounds + 1):
        for count in args.tasks:
            for tree in trees:
                result = one_run(count, args.observe_interval, tree) | {"round": round_}
                print(f"round {round_}, {result['operator']}: {summary(result, args.observe_interval)}")
                results.append(result)
    print(json.dumps({"observe_interval_seconds": args.observe_interval, "runs": results}))


def summary(result: dict[str, Any], observe_interval: int) -> str:
    idle = result["idle_observe_interval"]
    return (
        f"{result['ready_tasks']}/{result['tasks']} tasks ready in {result['all_ready_seconds']} s (creates "
        f"alone: {result['baseline_creates_seconds']} s); latency p50 {result['latency_p50_seconds']} s, "
        f"p99 {result['latency_p99_seconds']} s; {result['passes_per_task']} passes (mean "
        f"{result['pass_mean_seconds']} s) and {result['api_requests_per_task']} API requests per task; "
        f"CPU: operator {result['operator_cpu_seconds']} s, API server {result['api_server_cpu_seconds']} s; "
        f"RSS {result['rss_mb']} MB; idle {observe_interval} s: {idle['passes_per_task']} passes, "
        f"{idle['api_requests_per_task']} requests per task, operator CPU {idle['operator_cpu_seconds']} s; "
        f"load {result['load_average_before']} → {result['load_average_after']}"
    )


if __name__ == "__main__":
    main()
