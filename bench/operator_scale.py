"""Operator benchmark: 200 ReplicationTasks applied to the faithful fake API server with the operator
running. Prints the time until every task has its SparkApplication and a Ready or Reconciling
condition, per-task latency percentiles, reconcile pass percentiles and RSS; the baseline is the
same 200 creates with no operator (the API server's own cost). Final line: JSON.

    .venv/bin/python -m bench.operator_scale [--tasks 200]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

# The faithful fake API server lives with the test support (run from the repository root: `-m bench.…`).
from tests.support.kopf_runner import running_operator
from tests.support.kube import KubeServer
from tests.support.kubeapi import FaithfulKubernetesEmulator
from tests.support.resources import declare_all

ROOT = Path(__file__).resolve().parents[1]

NS = "default"
RT = f"/apis/federator.io/v1alpha1/namespaces/{NS}/replicationtasks"
APPS = f"/apis/sparkoperator.k8s.io/v1beta2/namespaces/{NS}/sparkapplications"


def rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def task(i: int) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((ROOT / "examples" / "eh-replication-cluster.yaml").read_text())
    doc["metadata"] = {"name": f"task-{i:04d}", "namespace": NS}
    return doc


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def serve() -> None:
    """Child process: the fake API server (its own interpreter, so it does not share the operator's GIL)."""
    emulator = FaithfulKubernetesEmulator()
    declare_all(emulator.resources)
    server = KubeServer(emulator)
    server.start()
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "orders-weu"},
        "stringData": {"connectionString": "Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=eA=="},
    }
    server.request("POST", f"/api/v1/namespaces/{NS}/secrets", secret)
    print(server.url, flush=True)
    sys.stdin.read()  # until the parent closes our stdin
    server.stop()


class ApiServer:
    """The fake API server process, driven over HTTP."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.operator_scale", "--serve"],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()
        assert self.url.startswith("http"), "the fake API server did not start"

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

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(30)


def baseline(count: int) -> float:
    server = ApiServer()
    try:
        started = time.monotonic()
        for i in range(count):
            server.request("POST", RT, task(i))
        return time.monotonic() - started
    finally:
        server.stop()


def run(count: int) -> dict[str, Any]:
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
    memo = OperatorContext(OperatorSettings(observe_interval_seconds=60), serve_metrics=False)
    rss_before = rss_mb()
    try:
        with running_operator(namespaces=[NS], memo=memo, ready_timeout=30):
            return measure(server, count, rss_before)
    finally:
        server.stop()
        kubeconfig.unlink(missing_ok=True)


def measure(server: ApiServer, count: int, rss_before: float) -> dict[str, Any]:
    from federator import metrics

    created: dict[str, float] = {}
    started = time.monotonic()
    for i in range(count):
        created[f"task-{i:04d}"] = time.monotonic()
        server.request("POST", RT, task(i))
    done: dict[str, float] = {}
    deadline = started + 120
    while len(done) < count and time.monotonic() < deadline:
        apps = {a["metadata"]["name"] for a in server.request("GET", APPS)["items"]}
        for item in server.request("GET", RT)["items"]:
            name = item["metadata"]["name"]
            types = {c["type"]: c["status"] for c in (item.get("status") or {}).get("conditions", [])}
            if (
                name not in done
                and name in apps
                and (types.get("Ready") == "True" or types.get("Reconciling") == "True")
            ):
                done[name] = time.monotonic()
        time.sleep(0.2)
    total = max(done.values()) - started if done else float("nan")
    latencies = [done[n] - created[n] for n in done]
    passes = metrics.REGISTRY.get_sample_value(
        "federator_reconcile_duration_seconds_count", {"kind": "ReplicationTask"}
    )
    pass_sum = metrics.REGISTRY.get_sample_value(
        "federator_reconcile_duration_seconds_sum", {"kind": "ReplicationTask"}
    )
    return {
        "tasks": count,
        "ready_tasks": len(done),
        "all_ready_seconds": round(total, 2),
        "latency_p50_seconds": round(percentile(latencies, 0.5), 3),
        "latency_p99_seconds": round(percentile(latencies, 0.99), 3),
        "reconcile_passes": int(passes or 0),
        "reconcile_mean_seconds": round((pass_sum or 0) / (passes or 1), 4),
        "rss_mb_process": round(rss_mb(), 1),
        "rss_mb_before_operator": round(rss_before, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return
    base = baseline(args.tasks)
    result = run(args.tasks)
    result["baseline_creates_seconds"] = round(base, 2)
    result["ratio_vs_baseline"] = round(result["all_ready_seconds"] / base, 2) if base else None
    print(
        f"{result['ready_tasks']}/{args.tasks} tasks ready in {result['all_ready_seconds']} s "
        f"(creates alone: {base:.2f} s); latency p50 {result['latency_p50_seconds']} s, "
        f"p99 {result['latency_p99_seconds']} s; RSS {result['rss_mb_process']} MB "
        f"(before operator {result['rss_mb_before_operator']} MB)"
    )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
